"""The project's own Spark front ends beside Spark's ``format("kafka")``.

Two ways a Spark user reaches this project's reading without the Storm engine:

* ``spark.readStream.format("storm-kafka")`` (:mod:`storm_kafka_compat.streaming.datasource`),
  a Python Data Source whose ``read()`` yields Arrow batches, run as Spark's own source is
  in :func:`~storm_kafka_compat.workshop.bench.spark_kafka.streaming_rate`: ``availableNow``, a
  checkpoint, ``foreachBatch``, each batch's values through ``mapInArrow``
  (:func:`storm_source_rate`);
* the DataFrame mode (:mod:`storm_kafka_compat.engine.dataframe`): the pipeline's driver
  loop handing each batch to a user function as a DataFrame, here the same ``mapInArrow``
  count (:func:`dataframe_rate`).

Both read the main topic from offset 0 under a new spout id, with the configured
backend, and call the plain job's per-message function once per value.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from storm_kafka_compat.workshop.bench.analysis import summarize
from storm_kafka_compat.workshop.bench.spark_kafka import arrow_count, available_now_rate
from storm_kafka_compat.batch import BatchPlan, BatchResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def source_options(*, topic: str, bootstrap: str, zk_port: int, spout_id: str,
                   backend: str, kafka: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    """The ``format("storm-kafka")`` options of the benchmark topic: the pipeline's
    settings (the ZooKeeper of the run, the backend and its client settings), under a
    zkRoot of its own per run (as the pipeline's runs: no run sees another id's
    documents under its root, and none is warned of them)."""
    options = {"topic": topic, "zkRoot": f"/skc-bench-source/{spout_id}", "id": spout_id,
               "zkServers": "127.0.0.1", "zkPort": str(zk_port), "bootstrap": bootstrap,
               "topology.name": "bench", "kafka.backend": backend}
    for key, value in (kafka or {}).items():
        options[f"kafka.{key}"] = value if isinstance(value, str) else repr(value)
    return options


def storm_source_rate(spark: "SparkSession", *, options: Dict[str, str], expected: int,
                      clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """A Structured Streaming query over ``format("storm-kafka")`` from the start until
    it has read everything available (``availableNow``), each batch's values through
    ``mapInArrow``; its rate."""
    from storm_kafka_compat.streaming.datasource import register
    register(spark)
    stream = spark.readStream.format("storm-kafka").options(**options).load()
    return available_now_rate(stream, f"format(\"storm-kafka\") {options.get('kafka.backend')}",
                              expected, clock)


def count_batch(df: Any) -> None:
    """The DataFrame mode's function: the batch's values through ``mapInArrow`` (returning
    None acks the batch)."""
    arrow_count(df)


def dataframe_rate(spark: "SparkSession", *, topic: str, partitions: int, bootstrap: str,
                   zk_port: int, backend: str, spout_id: str, expected: int,
                   kafka: Optional[Dict[str, Any]] = None,
                   clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """The DataFrame mode over ``topic`` from offset 0 until caught up, its function
    :func:`count_batch`; the rate from the first batch to the end of the last batch
    with data, as the pipeline's."""
    from storm_kafka_compat.workshop.bench.pipeline import bench_job, read_once
    from storm_kafka_compat.engine.dataframe import DataFrameRunner
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions

    class Timed(DataFrameRunner):
        started = 0.0
        last_data = 0.0

        def run(self, plan: BatchPlan) -> BatchResult:
            t0 = clock()
            self.started = self.started or t0
            result = super().run(plan)
            if sum(r.taken_count for r in result):
                self.last_data = clock()
            return result

    job = bench_job(topic=topic, partitions=partitions, bootstrap=bootstrap, zk_port=zk_port,
                    spout_id=spout_id, backend=backend, kafka=kafka)
    runner = Timed(spark, count_batch)
    summary = Pipeline(job, spark=spark, runner=runner).run(RunOptions(until_caught_up=True))
    replayed = read_once(f"the {backend} DataFrame mode", summary, expected)
    seconds = runner.last_data - runner.started
    return {"messages": expected, "replayed": replayed, "seconds": seconds,
            "msgs_per_s": expected / seconds if seconds > 0 else 0.0,
            "batches": summary.batches}


def frontend_figures(spark: "SparkSession", servers: Any, *, backends: List[str], partitions: int,
                     messages: int, warmup_messages: int, repeat: int, topic: str,
                     warmup_topic: str, stamp: int, log_line: Callable[[str], None]
                     ) -> Dict[str, Dict[str, Any]]:
    """The project's Spark front ends over ``topic`` (the bench's embedded ``servers``),
    per backend, ``repeat`` rounds alternating, after one warm-up run of each over
    ``warmup_topic``: figure -> backend -> min/median/max."""
    runs: Dict[str, Dict[str, List[Dict[str, Any]]]] = {
        k: {b: [] for b in backends} for k in ("storm_source", "dataframe")}

    def one(backend: str, topic_: str, expected: int, tag: str) -> Dict[str, Dict[str, Any]]:
        opts = source_options(topic=topic_, bootstrap=servers.bootstrap,
                              zk_port=servers.zk.port, spout_id=f"source-{tag}-{backend}-{stamp}",
                              backend=backend, kafka=servers.kafka)
        return {"storm_source": storm_source_rate(spark, options=opts, expected=expected),
                "dataframe": dataframe_rate(
                    spark, topic=topic_, partitions=partitions, bootstrap=servers.bootstrap,
                    zk_port=servers.zk.port, backend=backend, kafka=servers.kafka,
                    spout_id=f"dataframe-{tag}-{backend}-{stamp}", expected=expected)}

    for backend in backends:
        log_line(f"warm-up: format(\"storm-kafka\") and the DataFrame mode, {backend}")
        one(backend, warmup_topic, warmup_messages * partitions, "warmup")
    for round_ in range(repeat):
        for backend in backends:
            log_line(f"format(\"storm-kafka\") and the DataFrame mode: {backend}, "
                     f"{messages:,} messages (round {round_ + 1})")
            for kind, figure in one(backend, topic, messages, str(round_)).items():
                runs[kind][backend].append(figure)
    return {k: {b: summarize(r) for b, r in by.items()} for k, by in runs.items()}
