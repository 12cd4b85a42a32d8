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

from storm_kafka_compat.batch import BatchPlan, BatchResult
from storm_kafka_compat.config import JobConfig, job_config_from_dict
from storm_kafka_compat.engine.bolt_state import host_address
from storm_kafka_compat.engine.runner import SparkRunner, StagedSparkRunner
from storm_kafka_compat.topology.schemes import MessageLike

if TYPE_CHECKING:
    from storm_kafka_compat.engine.report import RunSummary
    from pyspark.sql import SparkSession


def noop_bolt(t: Any) -> None:
    """The trivial bolt: touches the value and acks."""
    t.values[0]


class OffsetScheme:
    """The multi-stage benchmark's scheme: the value's bytes (not decoded, as in the
    single-stage figures) and the message's offset, the grouping key."""

    fields = ("bytes", "offset")

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value
        return [] if value is None else [[value, message.offset]]


#: the multi-stage benchmark topology: the spout's tuples (:class:`OffsetScheme`) go by
#: a fields grouping on the offset to two tasks of a trivial bolt, so every tuple
#: crosses a Spark shuffle, as in a topology that counts per key
MULTI_STAGE = {"scheme": "storm_kafka_compat.workshop.bench.pipeline:OffsetScheme", "bolts": [
    {"name": "count", "bolt": "storm_kafka_compat.workshop.bench.pipeline:noop_bolt",
     "kind": "simple", "parallelism": 2, "inputs": [{"from": "spout", "grouping": "fields",
                                                     "fields": ["offset"]}]}]}


def bench_job(*, topic: str, partitions: int, bootstrap: str, zk_port: int, spout_id: str,
              backend: str, master: str = "local[2]", kafka: Optional[Dict[str, Any]] = None,
              bolt: str = "storm_kafka_compat.workshop.bench.pipeline:noop_bolt",
              scheme: str = "raw", trigger_interval_ms: Optional[int] = None,
              multi_stage: bool = False,
              topology_spec: Optional[Dict[str, Any]] = None) -> JobConfig:
    """The JobConfig of a benchmark pipeline (StaticHosts, the raw scheme, noop bolt:
    the bolt gets the value's bytes, as the plain job's per-message function does);
    ``kafka`` adds to the CONFIG's ``kafka`` mapping (the brokers' ``api_version``);
    ``trigger_interval_ms`` is ``spark.triggerInterval`` (None: the default);
    ``multi_stage`` runs :data:`MULTI_STAGE` instead of the bolt, ``topology_spec``
    the given bolts (and topology keys)."""
    topology: Dict[str, Any] = {
        "topology.name": "bench", "topology.id": f"bench-{spout_id}",
        "storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": zk_port}
    bolts: Dict[str, Any] = {"bolt": bolt}
    if multi_stage:
        scheme = str(MULTI_STAGE["scheme"])
        topology["bolts"] = MULTI_STAGE["bolts"]
        bolts = {}
    elif topology_spec is not None:
        topology.update(topology_spec)
        bolts = {}
    return job_config_from_dict({
        # a root per run: every run starts anew, and run's check for a spout id that
        # has no documents while others under its root do would warn every round
        "spout": {"topic": topic, "zkRoot": f"/skc-bench/{spout_id}", "id": spout_id,
                  "scheme": scheme, "stateUpdateIntervalMs": 2000},
        "hosts": {"static": {p: bootstrap for p in range(partitions)}},
        "topology": topology,
        "spark": {"master": master, "appName": "storm-kafka-compat-bench",
                  **({"triggerInterval": trigger_interval_ms} if trigger_interval_ms else {})},
        **bolts,
        "kafka": {**(kafka or {}), "backend": backend},
    })


class _TimedRunner(SparkRunner):
    """The pipeline's Spark runner, noting when batches with data end and where each
    batch's time went (:func:`batch_breakdown`)."""

    def __init__(self, spark: "SparkSession", clock: Callable[[], float],
                 deal_on: Optional[str] = None) -> None:
        super().__init__(lambda: spark, deal_on=deal_on)
        self.spark_session = spark
        self.clock = clock
        self.started: float = 0.0
        self.last_data: float = 0.0
        self.batches: List[Dict[str, Any]] = []
        self._workers: Dict[Any, int] = {}

    def run(self, plan: BatchPlan) -> BatchResult:
        t0 = self.clock()
        wall0 = time.time()
        if not self.started:
            self.started = t0
        result = super().run(plan)
        t1 = self.clock()
        wall1 = time.time()
        taken = sum(r.taken_count for r in result)
        failures = [r.failure for r in result if r.failure is not None]
        broken = [f.message for f in failures if f.kind.task_error]
        moved = 0
        for r in result:
            if r.timing is not None:
                before = self._workers.get(r.key)
                moved += before is not None and before != r.timing.worker
                self._workers[r.key] = r.timing.worker
        dealer = self.dealer.dealer if self.dealer is not None else None
        self.batches.append({
            "seconds": t1 - t0, "taken": taken, "failed_fetches": len(failures) - len(broken),
            "submitted": wall0, "returned": wall1, "moved": moved,
            "dealt": (dealer.swapped, dealer.kept, dealer.late) if dealer else (0, 0, 0),
            "tasks": [(r.timing.started, r.timing.ended, r.timing.read_s, r.timing.process_s)
                      for r in result if r.timing is not None]})
        if broken:
            raise RuntimeError(f"benchmark batch failed: {broken[0]}")
        # a failed fetch is retried by the driver, as in production; it is counted
        if taken:
            self.last_data = t1
        return result


class _TimedStagedRunner(_TimedRunner, StagedSparkRunner):
    """The staged runner (a topology whose groupings cross partitions), timed alike."""


def pipeline_rate(spark: "SparkSession", *, topic: str, partitions: int, bootstrap: str,
                  zk_port: int, backend: str, spout_id: str, expected: int,
                  kafka: Optional[Dict[str, Any]] = None,
                  trigger_interval_ms: Optional[int] = None, multi_stage: bool = False,
                  topology_spec: Optional[Dict[str, Any]] = None,
                  clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """Run the pipeline over ``topic`` from offset 0 until caught up; its rate
    (``multi_stage``: the :data:`MULTI_STAGE` topology).

    Returns
    -------
    dict
        ``messages``, ``seconds`` (first plan to the end of the last batch with
        data), ``msgs_per_s``, ``batches``, ``batch_seconds`` (each Spark job),
        ``commits``, ``commit_round_trips``, ``failed_fetches`` (retried by the
        driver), ``start`` (the first batches against the rest, :func:`start_and_steady`)
        and ``run_seconds`` (the whole ``run()``, shutdown included).
    """
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions
    job = bench_job(topic=topic, partitions=partitions, bootstrap=bootstrap, zk_port=zk_port,
                    spout_id=spout_id, backend=backend, kafka=kafka,
                    trigger_interval_ms=trigger_interval_ms, multi_stage=multi_stage,
                    topology_spec=topology_spec)
    staged = multi_stage or topology_spec is not None
    timed = (_TimedStagedRunner if staged else _TimedRunner)(spark, clock, host_address(job))
    pipe = Pipeline(job, spark=spark, runner=timed)
    t0 = clock()
    summary = pipe.run(RunOptions(until_caught_up=True))
    run_s = clock() - t0
    replayed = read_once(f"the {backend} pipeline", summary, expected)
    seconds = timed.last_data - timed.started
    slots = int(spark.sparkContext.defaultParallelism)
    return {"messages": expected, "replayed": replayed, "seconds": seconds,
            "breakdown": batch_breakdown([b for b in timed.batches if b["taken"]], slots),
            "msgs_per_s": expected / seconds if seconds > 0 else 0.0,
            "batches": summary.batches,
            "batch_seconds": [round(b["seconds"], 3) for b in timed.batches],
            "commits": summary.commits, "commit_round_trips": summary.commit_round_trips,
            "failed_fetches": sum(b["failed_fetches"] for b in timed.batches),
            "start": start_and_steady(timed.batches), "run_seconds": run_s}


#: the batches with data a run's start is measured over (:func:`start_and_steady`)
FIRST_BATCHES = 5


def start_and_steady(batches: List[Dict[str, Any]], first: int = FIRST_BATCHES
                     ) -> Dict[str, Any]:
    """How fast a run starts: messages a second over its first ``first`` batches with
    data (from the first one's submission to the end of the last of them), and over the
    batches with data after them (from there to the end of the last), wall time with the
    driver's time between the batches; ``first_over_steady`` is their ratio. A run of
    ``first`` batches or fewer has no steady part (None)."""
    data = [b for b in batches if b["taken"]]
    out: Dict[str, Any] = {"first_batches": min(first, len(data)), "first_msgs_per_s": None,
                           "steady_msgs_per_s": None, "first_over_steady": None}
    if len(data) <= first:
        return out
    head, rest = data[:first], data[first:]
    head_s = head[-1]["returned"] - head[0]["submitted"]
    rest_s = rest[-1]["returned"] - head[-1]["returned"]
    if head_s <= 0 or rest_s <= 0:
        return out
    out["first_msgs_per_s"] = sum(b["taken"] for b in head) / head_s
    out["steady_msgs_per_s"] = sum(b["taken"] for b in rest) / rest_s
    out["first_over_steady"] = out["first_msgs_per_s"] / out["steady_msgs_per_s"]
    return out


def read_once(what: str, summary: "RunSummary", expected: int) -> int:
    """Check a bench run over a topic of ``expected`` messages from offset 0: every
    partition committed to its end and at least ``expected`` processed. Returns the
    messages processed again (a batch replayed after a failed Spark job, as the
    at-least-once contract allows); the rate is taken over ``expected``.

    Raises RuntimeError naming the shortfall otherwise.
    """
    committed = sum(p.committed for p in summary.partitions)
    if summary.messages < expected or committed != expected:
        raise RuntimeError(f"{what} processed {summary.messages} messages of {expected} and "
                           f"committed to {committed} (stopped: {summary.stopped_by})")
    return summary.messages - expected


def batch_breakdown(batches: List[Dict[str, Any]], slots: int) -> Dict[str, Any]:
    """Where the batches' wall time went, summed over ``batches`` (seconds).

    ``jobs``: the Spark jobs; ``driver``: between one job's end and the next's start
    (applying results, planning, commits, metrics); ``to_first_task``: from a job's
    submission to its first task's start (scheduling, the plans' trip);
    ``after_last_task``: from the last task's end to the job's return (the results'
    trip); ``read``/``process``: inside the tasks, in the client's fetches and in the
    scheme, tuples and bolts; ``idle_slots``: slot time no task used
    (``slots`` x the jobs' time less the tasks' time: tasks waiting for the slowest
    partition); ``partition_moves``: tasks that ran on another Python worker than
    their partition's previous task (a cold client); ``dealt``: the plan dealer's
    tasks over the run, dealt another task's group, dealt their own, and late
    (:mod:`~storm_kafka_compat.engine.dealing`).
    """
    out: Dict[str, Any] = {"batches": len(batches), "slots": slots, "jobs": 0.0, "driver": 0.0,
           "to_first_task": 0.0, "after_last_task": 0.0, "read": 0.0, "process": 0.0,
           "idle_slots": 0.0, "partition_moves": 0}
    previous_end: Optional[float] = None
    for b in batches:
        job = b["returned"] - b["submitted"]
        out["jobs"] += job
        if previous_end is not None:
            out["driver"] += max(0.0, b["submitted"] - previous_end)
        previous_end = b["returned"]
        tasks = b["tasks"]
        if tasks:
            out["to_first_task"] += max(0.0, min(t[0] for t in tasks) - b["submitted"])
            out["after_last_task"] += max(0.0, b["returned"] - max(t[1] for t in tasks))
            busy = sum(t[1] - t[0] for t in tasks)
            out["read"] += sum(t[2] for t in tasks)
            out["process"] += sum(t[3] for t in tasks)
            out["idle_slots"] += max(0.0, slots * job - busy)
        out["partition_moves"] += b["moved"]
    if batches:
        swapped, kept, late = batches[-1].get("dealt", (0, 0, 0))
        out["dealt"] = {"swapped": swapped, "kept": kept, "late": late}
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}
