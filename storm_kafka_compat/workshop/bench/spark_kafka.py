"""Spark's own Kafka source beside the pipeline: what a Spark user would pick instead.

``spark.read.format("kafka")`` with ``startingOffsets``/``endingOffsets`` JSON (one
Spark partition per Kafka partition), read the fastest way a Spark user would: the
value column crosses to Python in Arrow batches (``mapInArrow``,
:func:`arrow_rate`), where the plain job's per-message function
(:func:`storm_kafka_compat.workshop.bench.plain.handle`) is called once per value. Beside it, as
labelled second rows: the same read Row by Row (``rdd.mapPartitions`` over pickled
rows, :func:`batch_rate`), and the source's JVM-only ``count()``
(:func:`count_rate`): no Python at all, the machine's ceiling for the source. A
Structured Streaming query (``spark.readStream.format("kafka")``,
``trigger(availableNow=True)``, a checkpoint so that Spark keeps its offsets,
``foreachBatch``) hands each batch's values to the same function through
``mapInArrow`` (:func:`streaming_rate`). The source needs a 0.11+ broker and its jars on
``spark.jars`` (``spark-sql-kafka-0-10``, from Maven Central).

Its consumer is configured like the pipeline's: the same byte budget per fetch
(``fetchSizeBytes``), fetch wait and isolation level (:func:`source_options`).
"""

from __future__ import annotations

import json
import tempfile
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping

from storm_kafka_compat.workshop.bench.plain import handle, rate_of
from storm_kafka_compat.config import SpoutConfig
from storm_kafka_compat.config.kafka_settings import MIN_FETCH_MAX_WAIT_MS
from storm_kafka_compat.kafka.client import DEFAULT_ISOLATION_LEVEL

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def source_options(bootstrap: str, spout: SpoutConfig) -> Dict[str, str]:
    """The ``kafka.*`` options that give Spark's Java consumer the pipeline's settings."""
    return {"kafka.bootstrap.servers": bootstrap,
            "kafka.max.partition.fetch.bytes": str(spout.fetch_size_bytes),
            "kafka.fetch.max.bytes": str(spout.fetch_size_bytes),
            "kafka.fetch.max.wait.ms": str(max(MIN_FETCH_MAX_WAIT_MS, spout.fetch_max_wait)),
            "kafka.fetch.min.bytes": str(max(1, spout.min_fetch_byte)),
            "kafka.isolation.level": DEFAULT_ISOLATION_LEVEL}


def _offsets(topic: str, offsets: Mapping[int, int]) -> str:
    return json.dumps({topic: {str(p): o for p, o in sorted(offsets.items())}})


def count_values(rows: Iterable[Any]) -> Iterator[int]:
    """The ``mapPartitions`` function: the per-message function over every row."""
    yield sum(handle(row.value) for row in rows)


def count_arrow(batches: Iterable[Any]) -> Iterator[Any]:
    """The ``mapInArrow`` function: the per-message function over every value of each
    Arrow batch of the value column; one row, the count, per Spark partition."""
    import pyarrow as pa
    total = 0
    for batch in batches:
        total += sum(map(handle, batch.column(0).to_pylist()))
    yield pa.RecordBatch.from_pydict({"n": [total]}, schema=pa.schema([("n", pa.int64())]))


def arrow_count(df: Any) -> int:
    """``df``'s values through :func:`count_arrow`, summed on the driver."""
    rows = df.select("value").mapInArrow(count_arrow, "n long").collect()
    return int(sum(r["n"] for r in rows))


def _batch_frame(spark: "SparkSession", topic: str, ends: Mapping[int, int],
                 options: Mapping[str, str]) -> Any:
    return (spark.read.format("kafka").options(**options).option("subscribe", topic)
            .option("startingOffsets", _offsets(topic, {p: 0 for p in ends}))
            .option("endingOffsets", _offsets(topic, ends)).load())


def arrow_rate(spark: "SparkSession", *, topic: str, ends: Mapping[int, int],
               options: Mapping[str, str],
               clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """``spark.read.format("kafka")`` from offset 0 to ``ends``, the values handed to the
    per-message function through ``mapInArrow``; its rate."""
    t0 = clock()
    messages = arrow_count(_batch_frame(spark, topic, ends, options))
    return rate_of("Spark's Kafka source (batch, mapInArrow)", messages, sum(ends.values()),
                   clock() - t0)


def count_rate(spark: "SparkSession", *, topic: str, ends: Mapping[int, int],
               options: Mapping[str, str],
               clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """``spark.read.format("kafka")`` from offset 0 to ``ends`` and ``count()``: the JVM
    reads and counts, no Python; its rate (the source's ceiling on this machine)."""
    t0 = clock()
    messages = _batch_frame(spark, topic, ends, options).count()
    return rate_of("Spark's Kafka source (batch, JVM-only count())", messages,
                   sum(ends.values()), clock() - t0)


def batch_rate(spark: "SparkSession", *, topic: str, ends: Mapping[int, int],
               options: Mapping[str, str],
               clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """``spark.read.format("kafka")`` from offset 0 to ``ends``, every row pickled to
    Python (``rdd.mapPartitions``, the slowest way; a labelled second row); its rate."""
    t0 = clock()
    df = _batch_frame(spark, topic, ends, options)
    messages = df.select("value").rdd.mapPartitions(count_values).sum()
    return rate_of("Spark's Kafka source (batch, Row by Row)", messages, sum(ends.values()),
                   clock() - t0)


def streaming_rate(spark: "SparkSession", *, topic: str, ends: Mapping[int, int],
                   options: Mapping[str, str],
                   clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """A Structured Streaming query over ``topic`` from offset 0 until it has read
    everything available (``availableNow``), its offsets in a checkpoint, each batch's
    values through ``mapInArrow``; its rate."""
    stream = (spark.readStream.format("kafka").options(**options).option("subscribe", topic)
              .option("startingOffsets", _offsets(topic, {p: 0 for p in ends})).load())
    return available_now_rate(stream, "Spark's Kafka source (Structured Streaming, mapInArrow)",
                              sum(ends.values()), clock)


def available_now_rate(stream: Any, name: str, expected: int,
                       clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """The rate of a streaming DataFrame read until everything available is read
    (``availableNow``, a checkpoint of its own), each batch's values through
    ``mapInArrow``; the batches and each one's seconds with it."""
    counts: List[int] = []
    batches: List[float] = []

    def each_batch(frame: Any, batch_id: int) -> None:
        started = clock()
        counts.append(arrow_count(frame))
        batches.append(round(clock() - started, 3))

    with tempfile.TemporaryDirectory(prefix="skc-bench-checkpoint-") as checkpoint:
        t0 = clock()
        query = (stream.writeStream.foreachBatch(each_batch)
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()
        seconds = clock() - t0
    result = rate_of(name, sum(counts), expected, seconds)
    result["batches"] = len(batches)
    result["batch_seconds"] = batches
    return result


#: the rows of Spark's own Kafka source, each way it is read
SOURCE_KINDS = ("arrow", "batch", "count", "streaming")


def source_round(spark: "SparkSession", topic: str, ends: Dict[int, int], options: Dict[str, str]
                 ) -> Dict[str, Dict[str, Any]]:
    """One round of Spark's own source over ``topic``, each way it is read
    (:data:`SOURCE_KINDS`)."""
    return {"arrow": arrow_rate(spark, topic=topic, ends=ends, options=options),
            "batch": batch_rate(spark, topic=topic, ends=ends, options=options),
            "count": count_rate(spark, topic=topic, ends=ends, options=options),
            "streaming": streaming_rate(spark, topic=topic, ends=ends, options=options)}
