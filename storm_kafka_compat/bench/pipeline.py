"""The pipeline's end-to-end rate: fetch, scheme, a trivial bolt, acks, commits.

The real :class:`~storm_kafka_compat.engine.driver.Pipeline` runs on Spark
(``local[2]``) with StaticHosts and ZooKeeper offsets until it has caught up.
Its runner is the pipeline's own Spark runner, wrapped to note when each batch
ends, so the rate is taken from the first plan to the end of the last batch
that brought data (the final empty fetch that detects "caught up" and the
shutdown commit are left out; periodic commits are in).

Warm-up: before the measured run, the same backend runs one full pipeline over
a small warm-up topic, so Spark's Python workers are forked, the modules
imported and the per-worker Kafka clients connected (they are cached per
worker and reused by the measured run). The measured run then starts from
offset 0 of the main topic under its own spout id.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from storm_kafka_compat.config import JobConfig, job_config_from_dict
from storm_kafka_compat.engine.runner import SparkRunner
from storm_kafka_compat.spout.batch import BatchPlan, BatchResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def noop_bolt(t: Any) -> None:
    """The trivial bolt: touches the value and acks."""
    t.values[0]


def bench_job(*, topic: str, partitions: int, bootstrap: str, zk_port: int, spout_id: str,
              backend: str, master: str = "local[2]", kafka: Optional[Dict[str, Any]] = None,
              bolt: str = "storm_kafka_compat.bench.pipeline:noop_bolt",
              scheme: str = "string", trigger_interval_ms: Optional[int] = None) -> JobConfig:
    """The JobConfig of a benchmark pipeline (StaticHosts, StringScheme, noop bolt);
    ``kafka`` adds to the CONFIG's ``kafka`` mapping (the brokers' ``api_version``);
    ``trigger_interval_ms`` is ``spark.triggerInterval`` (None: the default)."""
    return job_config_from_dict({
        "spout": {"topic": topic, "zkRoot": "/skc-bench", "id": spout_id, "scheme": scheme,
                  "stateUpdateIntervalMs": 2000},
        "hosts": {"static": {p: bootstrap for p in range(partitions)}},
        "topology": {"topology.name": "bench", "topology.id": f"bench-{spout_id}",
                     "storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": zk_port},
        "spark": {"master": master, "appName": "storm-kafka-compat-bench",
                  **({"triggerInterval": trigger_interval_ms} if trigger_interval_ms else {})},
        "bolt": bolt,
        "kafka": {**(kafka or {}), "backend": backend},
    })


class _TimedRunner(SparkRunner):
    """The pipeline's Spark runner, noting when batches with data end."""

    def __init__(self, spark: "SparkSession", clock: Callable[[], float]) -> None:
        super().__init__(lambda: spark)
        self.clock = clock
        self.started: float = 0.0
        self.last_data: float = 0.0
        self.batches: List[Dict[str, Any]] = []

    def run(self, plan: BatchPlan) -> BatchResult:
        t0 = self.clock()
        if not self.started:
            self.started = t0
        result = super().run(plan)
        t1 = self.clock()
        taken = sum(r.taken_count for r in result)
        failures = [r.failure for r in result if r.failure is not None]
        broken = [f.message for f in failures if f.kind.task_error]
        self.batches.append({"seconds": t1 - t0, "taken": taken,
                             "failed_fetches": len(failures) - len(broken)})
        if broken:
            raise RuntimeError(f"benchmark batch failed: {broken[0]}")
        # a failed fetch is retried by the driver, as in production; it is counted
        if taken:
            self.last_data = t1
        return result


def pipeline_rate(spark: Any, *, topic: str, partitions: int, bootstrap: str, zk_port: int,
                  backend: str, spout_id: str, expected: int,
                  kafka: Optional[Dict[str, Any]] = None,
                  trigger_interval_ms: Optional[int] = None,
                  clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """Run the pipeline over ``topic`` from offset 0 until caught up; its rate.

    Returns
    -------
    dict
        ``messages``, ``seconds`` (first plan to the end of the last batch with
        data), ``msgs_per_s``, ``batches``, ``batch_seconds`` (each Spark job),
        ``commits``, ``commit_round_trips``, ``failed_fetches`` (retried by the
        driver) and ``run_seconds`` (the whole
        ``run()``, shutdown included).
    """
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions
    job = bench_job(topic=topic, partitions=partitions, bootstrap=bootstrap, zk_port=zk_port,
                    spout_id=spout_id, backend=backend, kafka=kafka,
                    trigger_interval_ms=trigger_interval_ms)
    timed = _TimedRunner(spark, clock)
    pipe = Pipeline(job, spark=spark, runner=timed)
    t0 = clock()
    summary = pipe.run(RunOptions(until_caught_up=True))
    run_s = clock() - t0
    if summary.messages != expected:
        raise RuntimeError(f"the {backend} pipeline processed {summary.messages} messages of "
                           f"{expected} (stopped: {summary.stopped_by})")
    seconds = timed.last_data - timed.started
    return {"messages": summary.messages, "seconds": seconds,
            "msgs_per_s": summary.messages / seconds if seconds > 0 else 0.0,
            "batches": summary.batches,
            "batch_seconds": [round(b["seconds"], 3) for b in timed.batches],
            "commits": summary.commits, "commit_round_trips": summary.commit_round_trips,
            "failed_fetches": sum(b["failed_fetches"] for b in timed.batches),
            "run_seconds": run_s}
