"""DataFrame mode: a user function gets each batch as a DataFrame with Spark's
Kafka source schema; returning acks the batch, raising fails it, and it may
return the rows that failed so that only those are retried.

It is one of the driver loop's runners (:mod:`.runner`): from CONFIG,
``dataframe: myjob.batches:write_orders`` (instead of ``bolt``), or in Python::

    pipeline = Pipeline(job, runner=DataFrameRunner(spark, write_orders))

What one batch costs: the executors fetch the planned ranges straight from
Kafka into a cached DataFrame (no message passes through the driver); one
aggregation brings back, per partition, the lowest and highest offset taken,
their count and the fetch status; the user function runs on the driver
against the cached DataFrame (its actions run on the executors). Offsets
reach the driver only when a partition's offsets are not contiguous (retries,
compacted topics) and for the failed rows the function returns.

The function's outcome:

* returns ``None`` (or anything that is not a DataFrame or a list of rows):
  every offset of the batch is acked;
* raises: every offset of the batch fails and is retried per the retry
  settings (``retryInitialDelayMs``, ``retryDelayMultiplier``,
  ``retryDelayMaxMs``, ``retryLimit``); the exception is logged;
* returns a DataFrame with ``topic``, ``partition`` and ``offset`` columns, or
  a list of ``(topic, partition, offset)``: those offsets fail, the rest are
  acked.

A retried batch holds only the offsets due for retry of each partition.
"""

from __future__ import annotations

import logging
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Set,
                    Tuple, Union)

from storm_kafka_compat.batch import (BatchPlan, BatchResult, FailureKind, FetchPlan,
                                      PartitionResult, TaskFailure)
from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.engine.runner import SparkRunner
from storm_kafka_compat.executor.reader import (KAFKA_COLUMNS, KAFKA_SCHEMA_DDL, PartitionReader,
                                                kafka_row)
from storm_kafka_compat.executor.worker import WorkerJob, worker_parts
from storm_kafka_compat.offsets.ranges import Range, coalesce, count_offsets, subtract
from storm_kafka_compat.structs import TopicPartition

if TYPE_CHECKING:
    from pyspark import StorageLevel
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: the Kafka columns plus one status row per planned partition (``_status`` true)
INTERNAL_SCHEMA_DDL = (KAFKA_SCHEMA_DDL + ", _status boolean, _error string, "
                       "_error_message string, _scanned_to long, _latency_ms long")


def fetch_rows(plans: Iterable[FetchPlan], job: WorkerJob) -> Iterator[Tuple[Any, ...]]:
    """The ``mapPartitions`` function: the taken messages of every plan as rows of
    :data:`INTERNAL_SCHEMA_DDL` (one fetch each), then one status row for the plan."""
    for plan in plans:
        error = message = None
        scanned_to = None
        reader = PartitionReader.for_plan(worker_parts(job).kafka(), plan, batch=False,
                                          client=job.backend)
        messages, failure = reader.first_fetch()
        for m in messages:
            if plan.takes(m.offset):
                yield kafka_row(m) + (False, None, None, None, None)
        if messages:
            scanned_to = messages[-1].offset + 1
        if failure is not None:
            error, message = failure.kind.value, failure.message
        yield (None, None, plan.topic, plan.partition, None, None, None, None,
               True, error, message, scanned_to, reader.latency_ms)


def failed_offsets(returned: Any) -> Optional[Set[Tuple[str, int, int]]]:
    """The ``(topic, partition, offset)`` a function returned as failed, or None."""
    if returned is None:
        return None
    if hasattr(returned, "select") and hasattr(returned, "collect"):
        rows = returned.select("topic", "partition", "offset").collect()
        return {(r["topic"], int(r["partition"]), int(r["offset"])) for r in rows}
    if isinstance(returned, (list, tuple, set, frozenset)):
        out = set()
        for item in returned:
            if isinstance(item, dict):
                out.add((item["topic"], int(item["partition"]), int(item["offset"])))
            else:
                topic, partition, offset = item[0], item[1], item[2]
                out.add((topic, int(partition), int(offset)))
        return out
    return None


class DataFrameRunner(SparkRunner):
    """The runner of the DataFrame mode: hands each batch to ``function`` as a
    DataFrame. It sends the job to the workers, cancels and releases as the Spark
    runner does; a failed Spark job is not caught here (the run ends with it).

    Parameters
    ----------
    spark : SparkSession or callable returning one
        A callable is called on first use (the CLI passes a lazy getter).
    function : callable(DataFrame) -> None | DataFrame | list
        See the module docstring for what its outcome means.
    slices : int, optional
        Spark tasks that fetch a batch; default one per planned partition, at
        most ``defaultParallelism``.
    storage_level : StorageLevel, optional
        How the fetched batch is cached (default ``MEMORY_AND_DISK``); Kafka is
        read once per batch, and a lost block is fetched again by offset.
    """

    #: the function gets each batch whole: the driver sizes batches by time
    #: (engine.pacing) so that a crash replays about one commit interval
    whole_batches = True

    def __init__(self, spark: Union["SparkSession", Callable[[], "SparkSession"]],
                 function: Callable[["DataFrame"], Any], *, slices: Optional[int] = None,
                 storage_level: Optional["StorageLevel"] = None) -> None:
        super().__init__(spark if callable(spark) else lambda: spark, tasks=slices)
        self.function = function
        self.storage_level = storage_level
        self.batches = 0
        self.failed_batches = 0

    @classmethod
    def from_config(cls, job: JobConfig, spark: Callable[[], "SparkSession"]
                    ) -> "DataFrameRunner":
        """The runner of a CONFIG's ``dataframe: module:callable``."""
        from storm_kafka_compat.config.objects import load_object

        if job.dataframe is None:
            raise ValueError("the job names no `dataframe: module:callable`")
        function = load_object(job.dataframe, key="dataframe")
        return cls(spark, function, slices=job.spark.tasks)

    def run(self, plan: BatchPlan) -> BatchResult:
        if not len(plan):
            return BatchResult()
        from pyspark import StorageLevel

        job = self.job
        rdd = self.spark_context.parallelize(list(plan), self.slices(plan)).mapPartitions(
            lambda it: fetch_rows(it, job.value))
        fetched = self._spark().createDataFrame(rdd, INTERNAL_SCHEMA_DDL)
        fetched = fetched.persist(self.storage_level or StorageLevel.MEMORY_AND_DISK)
        try:
            return self._outcome(plan, fetched)
        finally:
            fetched.unpersist()

    def _outcome(self, plan: BatchPlan, fetched: "DataFrame") -> BatchResult:
        """The status per partition, the offsets taken, the function's outcome."""
        by_key = _status(fetched)
        taken = _taken(fetched, by_key)
        total = sum(int(r["n"]) for k, r in by_key.items() if k in taken)
        failed = self._call(fetched, taken, total) if total else {}
        return BatchResult([_result(p, by_key.get(p.key), taken.get(p.key, []),
                                    failed.get(p.key, set())) for p in plan])

    def _call(self, fetched: "DataFrame", taken: Dict[TopicPartition, List[Range]],
              total: int) -> Dict[TopicPartition, Set[int]]:
        """Run the function on the batch; the offsets that failed."""
        from pyspark.sql import functions as F

        batch = fetched.where(~F.col("_status")).select(*KAFKA_COLUMNS)
        self.batches += 1
        try:
            returned = self.function(batch)
        except Exception:
            self.failed_batches += 1
            log.exception("the DataFrame function failed on a batch of %d messages; "
                          "every offset of the batch fails and is retried", total)
            return {key: {o for s, e in ranges for o in range(s, e)}
                    for key, ranges in taken.items()}
        failed: Dict[TopicPartition, Set[int]] = {}
        for topic, partition, offset in failed_offsets(returned) or ():
            key = TopicPartition(topic, partition)
            if any(s <= offset < e for s, e in taken.get(key, ())):
                failed.setdefault(key, set()).add(offset)
            else:
                log.warning("the DataFrame function returned %s/%d offset %d as failed, but "
                            "it is not in this batch; ignoring it", topic, partition, offset)
        return failed


def _status(fetched: "DataFrame") -> Dict[TopicPartition, Any]:
    """One aggregated row per partition: messages, lowest and highest offset, fetch status."""
    from pyspark.sql import functions as F

    data = ~F.col("_status")
    stats = fetched.groupBy("topic", "partition").agg(
        F.count(F.when(data, 1)).alias("n"),
        F.min(F.when(data, F.col("offset"))).alias("lo"),
        F.max(F.when(data, F.col("offset"))).alias("hi"),
        F.max("_scanned_to").alias("scanned_to"),
        F.max("_latency_ms").alias("latency_ms"),
        F.first("_error", ignorenulls=True).alias("error"),
        F.first("_error_message", ignorenulls=True).alias("error_message"),
    ).collect()
    return {TopicPartition(r["topic"], int(r["partition"])): r for r in stats}


def _taken(fetched: "DataFrame", by_key: Dict[TopicPartition, Any]
           ) -> Dict[TopicPartition, List[Range]]:
    """The offsets taken per partition: one range when they are contiguous; the
    offsets themselves come to the driver only where they are not."""
    from pyspark.sql import functions as F

    taken: Dict[TopicPartition, List[Range]] = {}
    for key, r in by_key.items():
        if r["error"] is not None or not r["n"]:
            continue
        lo, hi, n = int(r["lo"]), int(r["hi"]), int(r["n"])
        if hi - lo + 1 == n:
            taken[key] = [(lo, hi + 1)]
            continue
        rows = fetched.where(~F.col("_status") & (F.col("topic") == key.topic) &
                             (F.col("partition") == key.partition)).select("offset").collect()
        taken[key] = coalesce(int(row["offset"]) for row in rows)
    return taken


def _result(plan: FetchPlan, status: Any, taken: List[Range], failed: Set[int]
            ) -> PartitionResult:
    if status is None:
        return PartitionResult(plan, failure=TaskFailure(FailureKind.BOLT_ERROR,
                                                         "no status came back"))
    if status["error"] is not None:
        return PartitionResult(plan, failure=TaskFailure(FailureKind(status["error"]),
                                                         status["error_message"] or ""))
    return PartitionResult(plan, taken=taken, acked=subtract(taken, failed),
                           failed=sorted(failed), scanned_to=status["scanned_to"],
                           latency_ms=status["latency_ms"],
                           tuples=count_offsets(taken))
