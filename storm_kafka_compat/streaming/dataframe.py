"""DataFrame mode: a user function gets each batch as a DataFrame with Spark's
Kafka source schema; returning acks the batch, raising fails it, and it may
return the rows that failed so that only those are retried.

It plugs into the driver loop as its batch executor::

    pipeline = Pipeline(job, executor=DataFrameExecutor(spark, write_orders))

or, from CONFIG, ``dataframe: myjob.batches:write_orders`` (instead of ``bolt``).

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
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from storm_kafka_compat.errors import FailedFetchError, OffsetOutOfRangeError
from storm_kafka_compat.offsets.ranges import Range, coalesce, subtract
from storm_kafka_compat.streaming.datasource import KAFKA_COLUMNS, KAFKA_SCHEMA_DDL, kafka_row
from storm_kafka_compat.engine.executor import TaskResult, TaskSpec

log = logging.getLogger(__name__)

Key = Tuple[str, int]

#: the Kafka columns plus one status row per planned partition (``_status`` true)
INTERNAL_SCHEMA_DDL = (KAFKA_SCHEMA_DDL + ", _status boolean, _error string, "
                       "_error_message string, _scanned_to long, _latency_ms long")


def fetch_rows(specs: Iterable[TaskSpec]) -> Iterator[Tuple[Any, ...]]:
    """The ``mapPartitions`` function: the taken messages of every spec as rows of
    :data:`INTERNAL_SCHEMA_DDL`, then one status row for the spec."""
    from storm_kafka_compat.engine.executor import _kafka_for

    for spec in specs:
        plan = spec.plan
        error = message = None
        scanned_to = latency = None
        started = time.monotonic()
        try:
            kafka = _kafka_for(spec)
            messages = kafka.fetch(plan.topic, plan.partition, plan.offset,
                                   max_messages=None if plan.retry else plan.max_messages,
                                   max_offset=plan.max_offset)
            latency = int((time.monotonic() - started) * 1000)
            for m in messages:
                if plan.takes(m.offset):
                    yield kafka_row(m) + (False, None, None, None, None)
            if messages:
                scanned_to = messages[-1].offset + 1
        except OffsetOutOfRangeError as exc:
            error, message = "out_of_range", str(exc)
        except FailedFetchError as exc:
            error, message = "failed_fetch", str(exc)
        except Exception as exc:  # never lose the other partitions' status
            log.exception("fetch for %s/%d failed", plan.topic, plan.partition)
            error, message = "client_error", (
                f"fetching {plan.topic}/{plan.partition} at offset {plan.offset} failed inside "
                f"the {spec.backend} client ({type(exc).__name__}: {exc})")
        yield (None, None, plan.topic, plan.partition, None, None, None, None,
               True, error, message, scanned_to, latency)


def _failed_offsets(returned: Any) -> Optional[Set[Key]]:
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


class DataFrameExecutor:
    """A batch executor for :class:`~storm_kafka_compat.engine.driver.Pipeline`
    that hands each batch to ``function`` as a DataFrame.

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

    def __init__(self, spark: Any, function: Callable[[Any], Any], *,
                 slices: Optional[int] = None, storage_level: Any = None) -> None:
        self._spark = spark
        self.function = function
        self.slices = slices
        self.storage_level = storage_level
        self.batches = 0
        self.failed_batches = 0

    @classmethod
    def from_config(cls, job: Any) -> "DataFrameExecutor":
        """The executor of a CONFIG's ``dataframe: module:callable`` (Spark from ``job.spark``)."""
        from storm_kafka_compat.config.objects import load_object
        from storm_kafka_compat.engine.spark import get_spark

        function = load_object(job.dataframe, key="dataframe")
        return cls(lambda: get_spark(job.spark), function, slices=job.spark.tasks)

    @property
    def spark(self) -> Any:
        if callable(self._spark) and not hasattr(self._spark, "sparkContext"):
            self._spark = self._spark()
        return self._spark

    def __call__(self, specs: List[TaskSpec]) -> List[TaskResult]:
        if not specs:
            return []
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        spark = self.spark
        sc = spark.sparkContext
        slices = min(len(specs), self.slices or sc.defaultParallelism)
        rdd = sc.parallelize(specs, slices).mapPartitions(fetch_rows)
        fetched = spark.createDataFrame(rdd, INTERNAL_SCHEMA_DDL)
        fetched = fetched.persist(self.storage_level or StorageLevel.MEMORY_AND_DISK)
        try:
            return self._run(specs, fetched, F)
        finally:
            fetched.unpersist()

    def _run(self, specs: List[TaskSpec], fetched: Any, F: Any) -> List[TaskResult]:
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
        by_key = {(r["topic"], int(r["partition"])): r for r in stats}
        taken: Dict[Key, List[Range]] = {}
        gapped = []
        for key, r in by_key.items():
            if r["error"] is not None or not r["n"]:
                continue
            lo, hi, n = int(r["lo"]), int(r["hi"]), int(r["n"])
            if hi - lo + 1 == n:
                taken[key] = [(lo, hi + 1)]
            else:
                gapped.append(key)
        for key in gapped:      # offsets only, and only where they are not contiguous
            rows = fetched.where(data & (F.col("topic") == key[0]) &
                                 (F.col("partition") == key[1])).select("offset").collect()
            taken[key] = coalesce(int(row["offset"]) for row in rows)

        failed: Dict[Key, Set[int]] = {}
        total = sum(int(r["n"]) for k, r in by_key.items() if k in taken)
        if total:
            batch = fetched.where(data).select(*KAFKA_COLUMNS)
            self.batches += 1
            try:
                returned = self.function(batch)
            except Exception:
                self.failed_batches += 1
                log.exception("the DataFrame function failed on a batch of %d messages; "
                              "every offset of the batch fails and is retried", total)
                failed = {key: {o for s, e in ranges for o in range(s, e)}
                          for key, ranges in taken.items()}
            else:
                for topic, partition, offset in _failed_offsets(returned) or ():
                    key = (topic, partition)
                    if any(s <= offset < e for s, e in taken.get(key, ())):
                        failed.setdefault(key, set()).add(offset)
                    else:
                        log.warning("the DataFrame function returned %s/%d offset %d as "
                                    "failed, but it is not in this batch; ignoring it",
                                    topic, partition, offset)
        results = []
        for spec in specs:
            plan = spec.plan
            key = (plan.topic, plan.partition)
            result = TaskResult(plan.topic, plan.partition, plan)
            r = by_key.get(key)
            if r is None:
                result.error, result.error_message = "bolt_error", "no status came back"
                results.append(result)
                continue
            if r["error"] is not None:
                result.error, result.error_message = r["error"], r["error_message"] or ""
                results.append(result)
                continue
            result.latency_ms = r["latency_ms"]
            result.scanned_to = r["scanned_to"]
            ranges = taken.get(key, [])
            bad = failed.get(key, set())
            result.taken = ranges
            result.acked = subtract(ranges, bad)
            result.failed = sorted(bad)
            result.tuples = sum(e - s for s, e in ranges)
            results.append(result)
        return results
