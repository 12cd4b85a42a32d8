"""``spark.readStream.format("storm-kafka")``: a Structured Streaming source that
starts from, and writes back, storm-kafka's ZooKeeper documents.

Built on PySpark's Python Data Source API (4.2+ for admission control)::

    from storm_kafka_compat.streaming.datasource import register, with_zk_commit

    register(spark)
    options = {"topic": "orders", "zkRoot": "/kafka", "id": "orders-spout",
               "zkServers": "zk1", "zkPort": "2181", "bootstrap": "kafka1:9092",
               "topology.name": "orders-topo"}
    df = spark.readStream.format("storm-kafka").options(**options).load()
    df.writeStream.foreachBatch(with_zk_commit(write_orders, options)) \\
        .option("checkpointLocation", "/ckpt/orders").start()

Rows have Spark's Kafka source schema (:data:`KAFKA_SCHEMA_DDL`). Options are
named after SpoutConfig fields (see
:func:`~storm_kafka_compat.streaming.options.job_from_options`).

Where positions come from and go to:

* ``initialOffset`` (a brand-new query only): per partition, the start-up
  decision of storm-kafka (:func:`~storm_kafka_compat.spout.startup.decide_start`)
  on the document at ``zkRoot/id/partition_N``; partitions come from the
  job's discovery (ZkHosts, StaticHosts or bootstrap servers), all through
  :class:`~storm_kafka_compat.streaming.positions.ZkPositions` over the job's
  :class:`~storm_kafka_compat.runtime.Runtime`.
* ``latestOffset``: the log end (Kafka's high watermark), capped by
  ``maxOffsetsPerTrigger`` (``ReadMaxRows``) and ``maxMessagesPerPartition``.
  A broker whose high watermark lags what it holds shows the tail late: the
  source reads up to the watermark.
* ``read``: on the executors, reads ``[start, end)`` with the engine's
  partition reader (:class:`~storm_kafka_compat.executor.reader.PartitionReader`)
  and the configured backend's client, and stops by offset, never by an empty
  poll. The job's settings travel with the pickled reader (Spark pickles a
  reader built from the same options); a partition of a batch carries its
  topic, partition, offsets and the brokers the driver learned.
* ``commit(end)``: writes the documents for ``end``. Spark calls it one batch
  late and never for the last batch, so :func:`with_zk_commit` (a
  ``foreachBatch`` wrapper) and :func:`commit_batch` write the documents for a
  batch as soon as the sink has it. Writes never move a document backwards.
"""

from __future__ import annotations

import json
import logging
import threading
from operator import attrgetter
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, Mapping, Optional, Sequence,
                    Tuple)

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from storm_kafka_compat.config import EARLIEST_TIME, LONG_MAX
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.executor.reader import (KAFKA_COLUMNS, KAFKA_SCHEMA_DDL, PartitionReader,
                                              kafka_row)
from storm_kafka_compat.errors import DataLossError, OffsetOutOfRangeError
from storm_kafka_compat.kafka.client import NO_TIMESTAMP, KafkaAccess, KafkaMessage, RecordBatch
from storm_kafka_compat.kafka.lazy import KafkaFactory
from storm_kafka_compat.kafka.worker import worker_kafka
from storm_kafka_compat.offsets.store import DocumentStore
from storm_kafka_compat.streaming.options import SOURCE_NAME, job_from_options
from storm_kafka_compat.streaming.positions import (OffsetMap, ZkPositions, batch_positions,
                                                    cap_ends, from_offset_map, to_offset_map)
from storm_kafka_compat.structs import TopicPartition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


log = logging.getLogger(__name__)

#: a record's columns, read in C over a fetch (kafka-python's records and KafkaMessage
#: have these attributes)
_KEY = attrgetter("key")
_TIMESTAMP = attrgetter("timestamp")
_TIMESTAMP_TYPE = attrgetter("timestamp_type")
_HEADERS = attrgetter("headers")

# --- executor side -----------------------------------------------------------------------

def read_range(kafka: KafkaAccess, topic: str, partition: int, start: int, end: int, *,
               fail_on_data_loss: bool = True) -> Iterator[KafkaMessage]:
    """Every message of ``[start, end)``, reading until ``end`` (not until an empty poll).

    A fetch that returns nothing below ``end`` means the log ends early
    (truncation): the range stops there with a warning. Offsets deleted by
    retention raise :class:`DataLossError` unless ``fail_on_data_loss`` is false,
    which skips to the log start.
    """
    for fetched in read_fetches(kafka, topic, partition, start, end,
                                fail_on_data_loss=fail_on_data_loss, batch=False):
        yield from fetched


def read_fetches(kafka: KafkaAccess, topic: str, partition: int, start: int, end: int, *,
                 fail_on_data_loss: bool = True, batch: bool = True) -> Iterator[Sequence[Any]]:
    """:func:`read_range` one fetch at a time: each a
    :class:`~storm_kafka_compat.kafka.client.RecordBatch` (``batch``) or a list of
    messages."""
    reader = PartitionReader(kafka, topic, partition, start, max_offset=end,
                             stop_at_log_end=False, batch=batch)
    while reader.position < end:
        try:
            messages = reader.fetch()
        except OffsetOutOfRangeError as exc:
            pos = reader.position
            earliest = kafka.offset_for(topic, partition, EARLIEST_TIME)
            if fail_on_data_loss or earliest <= pos:
                raise DataLossError(
                    f"{topic}/{partition}: offsets {pos}..{end - 1} of this batch are no "
                    f"longer in Kafka ({exc}); set failOnDataLoss=false to skip to the log "
                    f"start {earliest}") from exc
            log.warning("%s/%d: offsets %d..%d were deleted; skipping to %d", topic, partition,
                        pos, earliest - 1, earliest)
            reader.skip_to(earliest)
            continue
        if not messages:
            log.warning("%s/%d: the log ends at %d, before the batch end %d; the rest is "
                        "not read", topic, partition, reader.position, end)
            return
        yield messages


def _or_none(value: Optional[int]) -> int:
    return NO_TIMESTAMP if value is None else value


def arrow_batch(fetched: RecordBatch, topic: str, partition: int) -> Any:
    """One fetch as a ``pyarrow.RecordBatch`` of :data:`KAFKA_SCHEMA_DDL`: the offsets and
    values are the fetch's own columns, the rest read off its records (a record of message
    format v0 has no timestamp: -1, as :func:`~storm_kafka_compat.executor.reader.kafka_row`
    gives)."""
    import pyarrow as pa
    records = fetched.messages()
    n = len(fetched)
    stamps = list(map(_or_none, map(_TIMESTAMP, records)))
    return pa.RecordBatch.from_arrays([
        pa.array(list(map(_KEY, records)), pa.binary()),
        pa.array(fetched.values, pa.binary()),
        pa.array([topic] * n, pa.string()),
        pa.array([partition] * n, pa.int32()),
        pa.array(fetched.offsets, pa.int64()),
        pa.array([t * 1000 for t in stamps], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        pa.array(list(map(_or_none, map(_TIMESTAMP_TYPE, records))), pa.int32()),
        pa.array([list(h) if h else [] for h in map(_HEADERS, records)], _headers_type()),
    ], names=list(KAFKA_COLUMNS))


def _headers_type() -> Any:
    import pyarrow as pa
    return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


class KafkaRange(InputPartition):
    """One partition's offsets ``[start, end)`` of one batch, and the brokers to read
    them from (pickled to an executor; the job's settings come with the reader)."""

    def __init__(self, topic: str, partition: int, start: int, end: int,
                 bootstrap: Tuple[str, ...]) -> None:
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.bootstrap = bootstrap


# --- the stream reader -----------------------------------------------------------------------

class StormKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader; see the module docstring for where offsets come from.

    ``initialOffset``, ``latestOffset``, ``partitions`` and ``commit`` run in one
    long-lived driver-side Python process and keep state; ``read`` runs on the
    executors from a pickled copy that carries no connections.
    """

    def __init__(self, options: Mapping[str, Any], *, store: Optional[DocumentStore] = None,
                 kafka_factory: Optional[KafkaFactory] = None) -> None:
        self.job, self.source = job_from_options(options)
        self._store = store
        self._kafka_factory = kafka_factory
        self._positions: Optional[ZkPositions] = None
        self._starts: Dict[TopicPartition, int] = {}
        self._target: Optional[Dict[TopicPartition, int]] = None

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_positions"] = None
        state["_store"] = None
        state["_kafka_factory"] = None
        return state

    @property
    def positions(self) -> ZkPositions:
        if self._positions is None:
            self._positions = ZkPositions(self.job, store=self._store,
                                          kafka_factory=self._kafka_factory)
        return self._positions

    def _start_for(self, info: PartitionInfo) -> int:
        if info.key not in self._starts:
            self._starts[info.key] = self.positions.start_offset(info)
        return self._starts[info.key]

    # --- offsets ---------------------------------------------------------------------------
    def initialOffset(self) -> OffsetMap:
        """Per partition, the start from ZooKeeper by storm-kafka's start-up decision."""
        infos = self.positions.partitions()
        return to_offset_map({key: self._start_for(info) for key, info in infos.items()})

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.source.max_offsets_per_trigger is None and \
                self.source.max_messages_per_partition is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.source.max_offsets_per_trigger or LONG_MAX)

    def prepareForTriggerAvailableNow(self) -> None:
        """``availableNow``: the log ends now are the query's last offsets."""
        infos = self.positions.partitions()
        self._target = self.positions.log_ends(list(infos.values()))
        log.info("availableNow target: %s", self._target)

    def latestOffset(self, start: Dict[str, Any], limit: ReadLimit) -> OffsetMap:
        infos = self.positions.partitions()
        starts = from_offset_map(start)
        for key, info in infos.items():
            if key not in starts:            # a partition discovered after the query began
                starts[key] = self._start_for(info)
        ends = self.positions.log_ends(list(infos.values()))
        if self._target is not None:
            ends = {k: min(e, self._target.get(k, e)) for k, e in ends.items()}
        ends = {k: max(e, starts[k]) for k, e in ends.items()}
        if isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows if limit.max_rows < LONG_MAX else None
            ends = cap_ends(starts, ends, max_rows=max_rows,
                            per_partition=self.source.max_messages_per_partition)
        # partitions no longer assigned keep their last position
        merged = dict(starts)
        merged.update(ends)
        return to_offset_map(merged)

    def reportLatestOffset(self) -> Optional[OffsetMap]:
        infos = self.positions.partitions()
        return to_offset_map(self.positions.log_ends(list(infos.values())))

    def partitions(self, start: Dict[str, Any], end: Dict[str, Any]) -> Sequence[KafkaRange]:
        starts, ends = from_offset_map(start), from_offset_map(end)
        infos = self.positions.partitions()          # leaders known before the bootstrap list
        bootstrap = self.positions.kafka.bootstrap
        out = []
        for key, stop in sorted(ends.items()):
            if key in starts:
                begin = starts[key]
            else:
                info = infos.get(key)
                begin = self._start_for(info) if info is not None else stop
            if stop > begin:
                out.append(KafkaRange(key[0], key[1], begin, stop, bootstrap))
        return out

    #: ``read`` yields ``pyarrow.RecordBatch`` es, one a fetch (PySpark 4's Python Data
    #: Source API takes them), instead of a Python tuple a row
    arrow = True

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaRange)
        settings = self.job.kafka_settings
        kafka = worker_kafka(settings.backend, partition.bootstrap, self.job.spout,
                             tuple(sorted(settings.for_backend().items())))
        for fetched in read_fetches(kafka, partition.topic, partition.partition,
                                    partition.start, partition.end,
                                    fail_on_data_loss=self.source.fail_on_data_loss,
                                    batch=self.arrow):
            if isinstance(fetched, RecordBatch):
                yield arrow_batch(fetched, partition.topic, partition.partition)
            else:
                yield from map(kafka_row, fetched)

    def commit(self, end: Dict[str, Any]) -> None:
        """Write the documents for ``end`` (one batch late; see :func:`with_zk_commit`)."""
        self.positions.write(from_offset_map(end))

    def stop(self) -> None:
        if self._positions is not None:
            self._positions.close()
            self._positions = None


class StormKafkaDataSource(DataSource):
    """``format("storm-kafka")``: storm-kafka's spout as a Structured Streaming source."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return KAFKA_SCHEMA_DDL

    def streamReader(self, schema: Any) -> StormKafkaStreamReader:
        return StormKafkaStreamReader(self.options)


def register(spark: "SparkSession") -> None:
    """Register ``format("storm-kafka")`` with ``spark``."""
    spark.dataSource.register(StormKafkaDataSource)


# --- sink-side commit -------------------------------------------------------------------------

_POSITIONS: Dict[str, ZkPositions] = {}
_POSITIONS_LOCK = threading.Lock()


def _positions_for(options: Mapping[str, Any]) -> ZkPositions:
    key = json.dumps(sorted((str(k).lower(), str(v)) for k, v in options.items()))
    with _POSITIONS_LOCK:
        positions = _POSITIONS.get(key)
        if positions is None:
            job, _ = job_from_options(options)
            positions = _POSITIONS[key] = ZkPositions(job)
        return positions


def batch_max_offsets(df: "DataFrame") -> Dict[TopicPartition, int]:
    """Highest offset per ``(topic, partition)`` in ``df`` (an aggregation; only one
    row per partition reaches the driver)."""
    from pyspark.sql import functions as F
    rows = df.groupBy("topic", "partition").agg(F.max("offset").alias("max_offset")).collect()
    return {TopicPartition(r["topic"], int(r["partition"])): int(r["max_offset"]) for r in rows
            if r["max_offset"] is not None}


def commit_batch(batch: Any, options: Mapping[str, Any], *,
                 positions: Optional[ZkPositions] = None) -> Dict[TopicPartition, int]:
    """Write the storm-kafka documents for a processed batch.

    Parameters
    ----------
    batch : DataFrame or mapping
        The batch DataFrame (columns ``topic``, ``partition``, ``offset``): each
        partition's document gets its highest offset + 1; or a mapping
        ``{(topic, partition): next offset}``.
    options : mapping
        The source options (the same ones given to ``readStream``).
    positions : ZkPositions, optional
        Reused connections; by default one per process and options.

    Returns
    -------
    dict
        ``{(topic, partition): offset}`` of the documents written (unchanged or
        older positions are not written).
    """
    if isinstance(batch, Mapping):
        offsets = {TopicPartition(str(t), int(p)): int(o) for (t, p), o in batch.items()}
    else:
        offsets = batch_positions(batch_max_offsets(batch))
    return (positions or _positions_for(options)).write(offsets)


def with_zk_commit(function: Callable[[Any, int], Any], options: Mapping[str, Any], *,
                   cache: bool = True) -> Callable[[Any, int], None]:
    """Wrap a ``foreachBatch`` function so each batch's documents reach ZooKeeper
    right after the function succeeds (Spark's own ``commit()`` comes a batch
    late and never for the last batch).

    The batch is cached while the function and the offset aggregation scan it,
    so Kafka is read once. When the function raises, nothing is written and
    Spark fails the query (it re-runs the batch from its checkpoint on restart).
    """
    def run(df: "DataFrame", batch_id: int) -> None:
        if cache:
            df = df.persist()
        try:
            function(df, batch_id)
            written = commit_batch(df, options)
            log.info("batch %d: documents written for %s", batch_id, written)
        finally:
            if cache:
                df.unpersist()
    return run
