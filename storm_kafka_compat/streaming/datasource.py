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
named after SpoutConfig fields (see :func:`job_from_options`).

Where positions come from and go to:

* ``initialOffset`` (a brand-new query only): per partition, the start-up
  decision of storm-kafka (:func:`~storm_kafka_compat.spout.startup.decide_start`)
  on the document at ``zkRoot/id/partition_N``; partitions come from the
  coordinator the hosts call for (ZkHosts, StaticHosts or bootstrap servers).
* ``latestOffset``: the log end (Kafka's high watermark), capped by
  ``maxOffsetsPerTrigger`` (``ReadMaxRows``) and ``maxMessagesPerPartition``.
  tansu's high watermark is exact only when every record batch holds one
  record (``servers.tansu.produce_exact``); with batched producers it lags
  and the source does not see the tail until the watermark moves.
* ``read``: on the executors, fetches ``[start, end)`` with kafka-python and
  stops by offset, never by an empty poll.
* ``commit(end)``: writes the documents for ``end``. Spark calls it one batch
  late and never for the last batch, so :func:`with_zk_commit` (a
  ``foreachBatch`` wrapper) and :func:`commit_batch` write the documents for a
  batch as soon as the sink has it. Writes never move a document backwards.
"""

from __future__ import annotations

import datetime
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from storm_kafka_compat.config import (
    AUTH_KEYS,
    EARLIEST_TIME,
    LATEST_TIME,
    LONG_MAX,
    SPOUT_FIELDS,
    TOPOLOGY_FIELDS,
    JobConfig,
    SpoutConfig,
    job_config_from_dict,
    parse_yaml,
)
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.kafka.worker import worker_kafka
from storm_kafka_compat.errors import ConfigError, DataLossError, OffsetOutOfRangeError
from storm_kafka_compat.spout.startup import StartDecision, decide_start, outside_log
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.runtime import Runtime
from storm_kafka_compat.spout.assignment import Assignment

log = logging.getLogger(__name__)

#: the ``format()`` name (a Python source may not be called ``kafka``: Spark's own wins)
SOURCE_NAME = "storm-kafka"

#: Spark's Kafka source row schema (``includeHeaders=true`` form)
KAFKA_SCHEMA_DDL = ("key binary, value binary, topic string, partition int, offset long, "
                    "timestamp timestamp, timestampType int, "
                    "headers array<struct<key: string, value: binary>>")
KAFKA_COLUMNS: Tuple[str, ...] = ("key", "value", "topic", "partition", "offset", "timestamp",
                                  "timestampType", "headers")

Key = Tuple[str, int]
#: Spark offsets of this source: ``{"topic": {"0": next offset, ...}}`` (Spark's
#: KafkaSourceOffset JSON form)
OffsetMap = Dict[str, Dict[str, int]]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


# --- options --------------------------------------------------------------------------

@dataclass(frozen=True)
class SourceOptions:
    """Options of the source that are not SpoutConfig or topology fields."""

    #: most new offsets per partition per batch (None: no cap)
    max_messages_per_partition: Optional[int] = None
    #: most new offsets per batch over all partitions (Spark's name; ``ReadMaxRows``)
    max_offsets_per_trigger: Optional[int] = None
    #: raise when planned offsets were deleted (Spark's default), else skip them
    fail_on_data_loss: bool = True


_HOSTS_OPTIONS = {"zk": "zk", "brokerzkpath": "brokerZkPath", "refreshfreqsecs": "refreshFreqSecs",
                  "static": "static", "usetopicnameforpartitionpathid":
                  "useTopicNameForPartitionPathId", "bootstrap": "bootstrap",
                  "kafka.bootstrap.servers": "bootstrap"}
_SOURCE_OPTIONS = ("maxMessagesPerPartition", "maxOffsetsPerTrigger", "failOnDataLoss", "config")


def _option_names() -> Dict[str, Tuple[str, Any]]:
    """lower-cased option name -> (section, spec or canonical name)."""
    out: Dict[str, Tuple[str, Any]] = {}
    for spec in SPOUT_FIELDS:
        for n in spec.names:
            out[n.lower()] = ("spout", spec)
    for spec in TOPOLOGY_FIELDS:
        for n in spec.names:
            if n not in ("name", "id"):       # "id" is the spout id; use topology.name/id
                out[n.lower()] = ("topology", spec)
    for n in AUTH_KEYS:
        out[n.lower()] = ("auth", n)
    for low, canonical in _HOSTS_OPTIONS.items():
        out[low] = ("hosts", canonical)
    for n in _SOURCE_OPTIONS:
        out[n.lower()] = ("source", n)
    return out


def _typed(text: Any, java_type: str, key: str) -> Any:
    """Turn an option string into the value the config loader checks."""
    if not isinstance(text, str):
        return text
    value = text.strip()
    try:
        if java_type in ("int", "long", "Integer"):
            return int(value)
        if java_type == "double":
            return float(value)
    except ValueError:
        raise ConfigError(f"option {key}={text!r} must be a number", key=key, value=text) from None
    if java_type == "boolean":
        if value.lower() not in ("true", "false"):
            raise ConfigError(f"option {key}={text!r} must be true or false", key=key,
                              value=text, allowed=("true", "false"))
        return value.lower() == "true"
    return text


def _client_value(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        return text


def _static_table(text: str) -> Dict[str, str]:
    """``{"0": "h:p"}`` JSON or ``0=h:p,1=h:p``."""
    text = text.strip()
    if text.startswith("{"):
        table = json.loads(text)
        return {str(k): v for k, v in table.items()}
    out = {}
    for item in text.split(","):
        p, sep, addr = item.partition("=")
        if not sep:
            raise ConfigError(f"option static={text!r}: write partition=host:port pairs "
                              f"separated by commas, or JSON {{\"0\": \"host:port\"}}",
                              key="static", value=text)
        out[p.strip()] = addr.strip()
    return out


def job_from_options(options: Mapping[str, Any]) -> Tuple[JobConfig, SourceOptions]:
    """Build the job and source settings from data source options.

    Options (case-insensitive, all strings as Spark passes them):

    * every SpoutConfig field by its Storm name: ``topic``, ``zkRoot``, ``id``,
      ``zkServers`` (comma-separated), ``zkPort``, ``startOffsetTime``,
      ``ignoreZkOffsets``, ``maxOffsetBehind``, ``fetchSizeBytes``, ...;
    * hosts: ``zk`` (the broker registry's connect string, with ``brokerZkPath``
      and ``refreshFreqSecs``), ``static`` (``0=host:port,1=host:port`` or JSON),
      or ``bootstrap`` / ``kafka.bootstrap.servers``;
    * topology keys: ``topology.name`` (required), ``topology.id``,
      ``kafka.topic.wildcard.match``, ``storm.zookeeper.*``;
    * ``kafka.<setting>``: kafka-python client settings (security etc.);
    * ``maxMessagesPerPartition``, ``maxOffsetsPerTrigger``, ``failOnDataLoss``;
    * ``config``: a CONFIG YAML file; the other options override its fields.

    Raises
    ------
    ConfigError
        Unknown option (the message lists the valid ones) or a bad value.
    """
    names = _option_names()
    base: Dict[str, Any] = {}
    config_path = next((v for k, v in options.items() if k.lower() == "config"), None)
    if config_path:
        with open(config_path, encoding="utf-8") as fh:
            loaded = parse_yaml(fh.read(), source=str(config_path))
        if not isinstance(loaded, Mapping):
            raise ConfigError(f"option config={config_path!r}: the file is not a CONFIG mapping",
                              key="config", value=config_path)
        base = {k: dict(v) if isinstance(v, Mapping) else v for k, v in loaded.items()}
    spout: Dict[str, Any] = dict(base.get("spout") or {})
    topology: Dict[str, Any] = dict(base.get("topology") or {})
    kafka: Dict[str, Any] = dict(base.get("kafka") or {})
    hosts: Dict[str, Any] = {}
    source: Dict[str, str] = {}
    for raw_key, text in options.items():
        low = raw_key.lower()
        if low == "config":
            continue
        if low.startswith("kafka.") and low not in names:
            kafka[raw_key[len("kafka."):]] = _client_value(text)
            continue
        entry = names.get(low)
        if entry is None:
            valid = sorted({s.storm_name for s in SPOUT_FIELDS} | set(_HOSTS_OPTIONS.values())
                           | {"topology.name", "topology.id", "kafka.<client setting>"}
                           | set(_SOURCE_OPTIONS))
            raise ConfigError(f"unknown option {raw_key!r} for format({SOURCE_NAME!r}); valid "
                              f"options: {', '.join(valid)}", key=raw_key, value=text,
                              allowed=valid)
        section, what = entry
        if section in ("spout", "topology"):
            target = spout if section == "spout" else topology
            for name in what.names:          # an option overrides the file's field
                target.pop(name, None)
            target[what.storm_name] = _typed(text, what.java_type, raw_key)
        elif section == "auth":
            topology[what] = _typed(text, "boolean", raw_key) if what == "acl" else text
        elif section == "hosts":
            if what == "static":
                hosts[what] = _static_table(text)
            elif what == "refreshFreqSecs":
                hosts[what] = _typed(text, "int", raw_key)
            elif what == "useTopicNameForPartitionPathId":
                hosts[what] = _typed(text, "boolean", raw_key)
            else:
                hosts[what] = text
        else:
            source[what] = text
    if hosts:
        kinds = [k for k in ("zk", "static", "bootstrap") if k in hosts]
        merged = dict(base.get("hosts") or {}) if not kinds else {}
        merged.update(hosts)
        hosts = merged
    else:
        hosts = dict(base.get("hosts") or {})
    d = {"spout": spout, "hosts": hosts or None, "topology": topology or None}
    if kafka:
        d["kafka"] = kafka
    if base.get("spark") is not None:
        d["spark"] = base["spark"]
    job = job_config_from_dict(d)

    def count(name: str) -> Optional[int]:
        if name not in source:
            return None
        value = _typed(source[name], "long", name)
        if value < 1:
            raise ConfigError(f"option {name}={value} must be >= 1", key=name, value=value)
        return value

    fail = _typed(source.get("failOnDataLoss", "true"), "boolean", "failOnDataLoss")
    return job, SourceOptions(count("maxMessagesPerPartition"), count("maxOffsetsPerTrigger"), fail)


# --- offset arithmetic (pure) ---------------------------------------------------------------

def to_offset_map(positions: Mapping[Key, int]) -> OffsetMap:
    """``{(topic, p): n}`` -> Spark's JSON form ``{"topic": {"p": n}}``."""
    out: OffsetMap = {}
    for (topic, partition), offset in sorted(positions.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def from_offset_map(offsets: Optional[Mapping[str, Mapping[str, int]]]) -> Dict[Key, int]:
    """Spark's JSON form -> ``{(topic, p): n}``."""
    return {(topic, int(p)): int(o) for topic, parts in (offsets or {}).items()
            for p, o in parts.items()}


def cap_ends(starts: Mapping[Key, int], ends: Mapping[Key, int], *,
             max_rows: Optional[int] = None,
             per_partition: Optional[int] = None) -> Dict[Key, int]:
    """Batch end per partition: the log end, capped.

    ``per_partition`` caps each partition's share; ``max_rows`` caps the total,
    split over the partitions in proportion to their backlog as Spark's Kafka
    source does (a partition with a backlog gets at least one offset, so a
    small partition never starves; the total may then exceed ``max_rows`` by
    at most the number of partitions). Ends never go below starts.
    """
    out: Dict[Key, int] = {}
    backlog: Dict[Key, int] = {}
    for key, end in ends.items():
        start = starts.get(key, end)
        n = max(0, end - start)
        if per_partition is not None:
            n = min(n, per_partition)
        backlog[key] = n
    total = sum(backlog.values())
    for key, n in backlog.items():
        start = starts.get(key, ends[key])
        if max_rows is not None and total > max_rows and n > 0:
            n = max(1, int(n * max_rows / total))
        out[key] = start + n
    return out


def batch_positions(max_offsets: Mapping[Key, int]) -> Dict[Key, int]:
    """Highest offset read per partition -> the next offset to read (the document offset)."""
    return {key: int(o) + 1 for key, o in max_offsets.items()}


# --- ZooKeeper positions (driver side) -----------------------------------------------------

class ZkPositions:
    """Partitions, start decisions and document writes for one job (driver side).

    Parameters
    ----------
    job : JobConfig
    runtime : Runtime, optional
        The job's store, Kafka access and discovery; built from ``job`` and
        ``parts`` (``store``, ``kafka_factory``, ``topology_id``,
        ``registry_reader``) when omitted, and then closed by :meth:`close`.
    """

    def __init__(self, job: JobConfig, *, runtime: Optional[Runtime] = None, **parts: Any) -> None:
        self.job = job
        self._owns_runtime = runtime is None
        self.runtime = runtime if runtime is not None else Runtime(job, **parts)
        self.store = self.runtime.store
        self.kafka = self.runtime.kafka
        self.topology_id = self.runtime.topology_id
        # the discovery's partitions, re-asked every refreshFreqSecs; no managers here
        self.assignment = Assignment(self.runtime.discovery(), manager_factory=self._learn)
        self.decisions: Dict[Key, StartDecision] = {}
        self._lock = threading.Lock()

    def _learn(self, info: PartitionInfo) -> PartitionInfo:
        self.kafka.learn(info.leader)
        return info

    def partitions(self, now_ms: Optional[int] = None) -> Dict[Key, PartitionInfo]:
        """The partitions the discovery finds (refreshed every ``refreshFreqSecs``)."""
        import time
        self.assignment.maybe_refresh(int(time.monotonic() * 1000) if now_ms is None else now_ms)
        return dict(self.assignment.managed())

    def path(self, info: PartitionInfo) -> str:
        return self.runtime.zk_path(info)

    def start_offset(self, info: PartitionInfo) -> int:
        """storm-kafka's start-up decision for ``info``, kept to the log's range.

        A start beyond the log end (topic re-created) moves to the end, one
        below the log start moves to the start; both are logged at WARN.
        """
        path = self.path(info)
        stored = self.store.read(path)
        decision = decide_start(
            stored, topology_id=self.topology_id, config=self.job.spout,
            offset_for=lambda t: self.kafka.offset_for(info.topic, info.partition, t), where=path)
        log.info("%s/%d at %s: %s", info.topic, info.partition, path, decision.reason)
        self.decisions[info.key] = decision
        start = decision.start_offset
        earliest = self.kafka.offset_for(info.topic, info.partition, EARLIEST_TIME)
        latest = self.kafka.offset_for(info.topic, info.partition, LATEST_TIME)
        # the spout meets such a start at its first fetch (OFFSET_OUT_OF_RANGE) and
        # moves as outside_log says; a Spark source must plan valid ranges, so the
        # same rule is applied here before the first batch
        outside = outside_log(start, earliest, latest)
        if outside is not None and outside.moves_to is not None:
            log.warning("%s/%d: %s", info.topic, info.partition, outside.note)
            start = outside.moves_to
        elif start < 0:
            start = latest
        return start

    def log_ends(self, infos: Sequence[PartitionInfo]) -> Dict[Key, int]:
        """Kafka's log end (high watermark) per partition."""
        return {i.key: self.kafka.offset_for(i.topic, i.partition, LATEST_TIME) for i in infos}

    def document(self, info: PartitionInfo, offset: int) -> bytes:
        return encode_document(topology_id=self.topology_id, topology_name=self.job.topology.name,
                               offset=offset, partition=info.partition,
                               broker_host=info.leader.host, broker_port=info.leader.port,
                               topic=info.topic)

    def write(self, positions: Mapping[Key, int]) -> Dict[Key, int]:
        """Write the documents for ``positions`` (next offsets to read).

        A document is written only when it changes, and a document this
        topology id wrote is never moved backwards (Spark's late ``commit()``
        must not undo a sink-side write). Returns what was written.
        """
        with self._lock:
            infos = self.partitions()
            paths = {key: self.path(infos[key]) for key in positions if key in infos}
            stored_docs = self.store.read_many(list(paths.values()))
            docs: Dict[str, bytes] = {}
            written: Dict[Key, int] = {}
            for key, offset in sorted(positions.items()):
                info = infos.get(key)
                if info is None:
                    log.warning("%s/%d is not assigned any more; its position %d is not "
                                "written", key[0], key[1], offset)
                    continue
                path = paths[key]
                stored = stored_docs.get(path)
                if stored is not None and stored.offset is not None and (
                        stored.offset == offset or (stored.offset > offset and
                                                    stored.topology_id == self.topology_id)):
                    continue
                docs[path] = self.document(info, offset)
                written[key] = offset
            if docs:
                self.store.write_many(docs)
                log.info("wrote %d documents: %s", len(docs), written)
            return written

    def close(self) -> None:
        self.assignment.release()
        if self._owns_runtime:
            self.runtime.close()


# --- executor side -----------------------------------------------------------------------

def kafka_row(m: Any) -> Tuple[Any, ...]:
    """A KafkaMessage as a row of :data:`KAFKA_SCHEMA_DDL`."""
    ts = _EPOCH + datetime.timedelta(milliseconds=m.timestamp)
    headers = [(k, v) for k, v in m.headers] if m.headers else []
    return (m.key, m.value, m.topic, m.partition, m.offset, ts, m.timestamp_type, headers)


def read_range(kafka: Any, topic: str, partition: int, start: int, end: int, *,
               fail_on_data_loss: bool = True) -> Iterator[Any]:
    """Every message of ``[start, end)``, fetching until ``end`` (not until an empty poll).

    A fetch that returns nothing below ``end`` means the log ends early
    (truncation): the range stops there with a warning. Offsets deleted by
    retention raise :class:`DataLossError` unless ``fail_on_data_loss`` is false,
    which skips to the log start.
    """
    pos = start
    while pos < end:
        try:
            messages = kafka.fetch(topic, partition, pos, max_offset=end)
        except OffsetOutOfRangeError as exc:
            earliest = kafka.offset_for(topic, partition, EARLIEST_TIME)
            if fail_on_data_loss or earliest <= pos:
                raise DataLossError(
                    f"{topic}/{partition}: offsets {pos}..{end - 1} of this batch are no "
                    f"longer in Kafka ({exc}); set failOnDataLoss=false to skip to the log "
                    f"start {earliest}") from exc
            log.warning("%s/%d: offsets %d..%d were deleted; skipping to %d", topic, partition,
                        pos, earliest - 1, earliest)
            pos = earliest
            continue
        if not messages:
            log.warning("%s/%d: the log ends at %d, before the batch end %d; the rest is "
                        "not read", topic, partition, pos, end)
            return
        for m in messages:
            if m.offset >= end:
                return
            yield m
        pos = messages[-1].offset + 1


class KafkaRange(InputPartition):
    """One partition's offsets ``[start, end)`` of one batch (pickled to an executor)."""

    def __init__(self, topic: str, partition: int, start: int, end: int,
                 bootstrap: Tuple[str, ...], spout: SpoutConfig,
                 kafka_conf: Tuple[Tuple[str, Any], ...], fail_on_data_loss: bool,
                 backend: str = "kafka-python") -> None:
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.bootstrap = bootstrap
        self.spout = spout
        self.kafka_conf = kafka_conf
        self.fail_on_data_loss = fail_on_data_loss
        self.backend = backend


# --- the stream reader -----------------------------------------------------------------------

class StormKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader; see the module docstring for where offsets come from.

    ``initialOffset``, ``latestOffset``, ``partitions`` and ``commit`` run in one
    long-lived driver-side Python process and keep state; ``read`` runs on the
    executors from a pickled copy that carries no connections.
    """

    def __init__(self, options: Mapping[str, Any], *, store: Any = None,
                 kafka_factory: Optional[Callable[[List[str]], Any]] = None) -> None:
        self.job, self.source = job_from_options(options)
        self._store = store
        self._kafka_factory = kafka_factory
        self._positions: Optional[ZkPositions] = None
        self._starts: Dict[Key, int] = {}
        self._target: Optional[Dict[Key, int]] = None

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
        backend = self.job.kafka_settings.backend
        kafka_conf = tuple(sorted(self.job.kafka_settings.for_backend(backend).items()))
        out = []
        for key, stop in sorted(ends.items()):
            if key in starts:
                begin = starts[key]
            else:
                info = infos.get(key)
                begin = self._start_for(info) if info is not None else stop
            if stop > begin:
                out.append(KafkaRange(key[0], key[1], begin, stop, bootstrap, self.job.spout,
                                      kafka_conf, self.source.fail_on_data_loss, backend))
        return out

    def read(self, partition: KafkaRange) -> Iterator[Tuple[Any, ...]]:
        kafka = worker_kafka(partition.backend, partition.bootstrap, partition.spout,
                             partition.kafka_conf)
        for m in read_range(kafka, partition.topic, partition.partition, partition.start,
                            partition.end, fail_on_data_loss=partition.fail_on_data_loss):
            yield kafka_row(m)

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


def register(spark: Any) -> None:
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


def batch_max_offsets(df: Any) -> Dict[Key, int]:
    """Highest offset per ``(topic, partition)`` in ``df`` (an aggregation; only one
    row per partition reaches the driver)."""
    from pyspark.sql import functions as F
    rows = df.groupBy("topic", "partition").agg(F.max("offset").alias("max_offset")).collect()
    return {(r["topic"], int(r["partition"])): int(r["max_offset"]) for r in rows
            if r["max_offset"] is not None}


def commit_batch(batch: Any, options: Mapping[str, Any], *,
                 positions: Optional[ZkPositions] = None) -> Dict[Key, int]:
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
        offsets = {(str(t), int(p)): int(o) for (t, p), o in batch.items()}
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
    def run(df: Any, batch_id: int) -> None:
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
