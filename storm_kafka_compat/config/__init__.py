"""SpoutConfig/KafkaConfig of storm-kafka 1.2.x, hosts, and the job CONFIG.

Every Storm field keeps its name (camelCase, accepted as input) and default; the
Python attribute is its snake_case form (``fetchSizeBytes`` ->
``fetch_size_bytes``). Config objects are frozen. Units are in the names.

This module is pure: it imports neither kazoo, kafka-python nor pyspark.
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import re
from dataclasses import MISSING, dataclass, field
from dataclasses import fields as _dc_fields
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import yaml

from storm_kafka_compat.errors import ConfigError

#: ``kafka.api.OffsetRequest.EarliestTime()``
EARLIEST_TIME = -2
#: ``kafka.api.OffsetRequest.LatestTime()``
LATEST_TIME = -1
#: storm-kafka's ``KafkaUtils.NO_OFFSET``: the broker returned no offset
NO_OFFSET = -5
#: Java ``Long.MAX_VALUE``, the default ``maxOffsetBehind`` since 0.9.3
LONG_MAX = 2**63 - 1

DEFAULT_RETRY_MANAGER = "org.apache.storm.kafka.ExponentialBackoffMsgRetryManager"


@dataclass(frozen=True)
class Broker:
    """A Kafka broker address (storm-kafka ``Broker``; the port defaults to 9092)."""

    host: str
    port: int = 9092

    @classmethod
    def from_string(cls, text: str) -> "Broker":
        """Parse ``host`` or ``host:port`` like ``Broker.fromString``."""
        host, sep, port = text.rpartition(":")
        if not sep:
            return cls(text)
        return cls(host, int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ZkHosts:
    """Brokers discovered from Kafka's registry in ZooKeeper (storm-kafka ``ZkHosts``).

    ``broker_zk_str`` is a ZooKeeper connect string and may carry a chroot
    (``zk1:2181,zk2:2181/kafka``).
    """

    broker_zk_str: str
    broker_zk_path: str = "/brokers"
    refresh_freq_secs: int = 60


@dataclass(frozen=True)
class StaticHosts:
    """A fixed partition -> leader map (storm-kafka ``StaticHosts`` over a
    ``GlobalPartitionInformation``). Partitions iterate in ascending order."""

    partitions: Mapping[int, Broker]
    use_topic_name_for_partition_path_id: bool = False


@dataclass(frozen=True)
class BootstrapHosts:
    """KRaft-era discovery: partitions and leaders from the bootstrap servers'
    metadata, since such clusters no longer register brokers in ZooKeeper."""

    servers: Tuple[str, ...]
    refresh_freq_secs: int = 60


BrokerHosts = Union[ZkHosts, StaticHosts, BootstrapHosts]


@dataclass(frozen=True)
class SpoutConfig:
    """Every field of storm-kafka 1.2.x ``SpoutConfig``/``KafkaConfig``.

    Storm name in brackets; see docs/configuration.md for the meaning of each.
    Fields after ``retry_limit`` are this project's extensions (deviations of
    CONTRACT section 2 made explicit); their defaults keep Storm's behaviour.
    """

    hosts: BrokerHosts                                   # hosts
    topic: str                                           # topic
    zk_root: str                                         # zkRoot
    id: str                                              # id
    client_id: str = ""                                  # clientId
    fetch_size_bytes: int = 1024 * 1024                  # fetchSizeBytes
    socket_timeout_ms: int = 10000                       # socketTimeoutMs
    fetch_max_wait: int = 0                              # fetchMaxWait (ms; 0 since 1.0.1)
    min_fetch_byte: int = 0                              # minFetchByte (1.0.1+)
    buffer_size_bytes: int = 1024 * 1024                 # bufferSizeBytes
    scheme: str = "raw"                                  # scheme (a scheme name or module:callable)
    ignore_zk_offsets: bool = False                      # ignoreZkOffsets (0.9.x: forceFromStart)
    start_offset_time: int = EARLIEST_TIME               # startOffsetTime (-2, -1 or epoch ms)
    max_offset_behind: int = LONG_MAX                    # maxOffsetBehind
    use_start_offset_time_if_offset_out_of_range: bool = True  # useStartOffsetTimeIfOffsetOutOfRange
    metrics_time_bucket_size_in_secs: int = 60          # metricsTimeBucketSizeInSecs
    zk_servers: Optional[Tuple[str, ...]] = None         # zkServers (None: storm.zookeeper.servers)
    zk_port: Optional[int] = None                        # zkPort (None: storm.zookeeper.port)
    output_stream_id: Optional[str] = None               # outputStreamId
    state_update_interval_ms: int = 2000                 # stateUpdateIntervalMs
    failed_msg_retry_manager_class: str = DEFAULT_RETRY_MANAGER  # failedMsgRetryManagerClass
    retry_initial_delay_ms: int = 0                      # retryInitialDelayMs
    retry_delay_multiplier: float = 1.0                  # retryDelayMultiplier
    retry_delay_max_ms: int = 60000                      # retryDelayMaxMs
    retry_limit: int = -1                                # retryLimit (<=0: unlimited)
    # --- extensions (not Storm fields) -------------------------------------
    #: what to do with a stored document Storm would not resume from:
    #: "storm" (fall back to startOffsetTime, logged at WARN) or "fail"
    corrupt_state_policy: str = "storm"
    #: CONTRACT deviation 6 (opt-in): reset to ``latest - maxOffsetBehind``
    #: instead of the startOffsetTime offset when the stored offset is too far behind
    max_offset_behind_reset_to_window: bool = False
    #: cap on pending (fetched, not yet acked) offsets per partition; None: no cap
    max_pending_per_partition: Optional[int] = None


@dataclass(frozen=True)
class ZkAuth:
    """ZooKeeper digest credentials (``user:password``) and whether to put a
    digest ACL on the nodes this project creates."""

    scheme: str = "digest"
    credential: str = ""
    acl_on_create: bool = False

    def __repr__(self) -> str:  # never print secrets
        user = self.credential.split(":", 1)[0]
        return f"ZkAuth(scheme={self.scheme!r}, user={user!r}, acl_on_create={self.acl_on_create})"


@dataclass(frozen=True)
class TopologyConfig:
    """The Storm topology-config keys the spout honours."""

    name: str                                            # topology.name
    id: Optional[str] = None                             # the topology id written to ZooKeeper
    wildcard_match: bool = False                         # kafka.topic.wildcard.match
    zookeeper_servers: Tuple[str, ...] = ("127.0.0.1",)  # storm.zookeeper.servers
    zookeeper_port: int = 2181                           # storm.zookeeper.port
    zookeeper_session_timeout_ms: int = 20000            # storm.zookeeper.session.timeout
    zookeeper_connection_timeout_ms: int = 15000         # storm.zookeeper.connection.timeout
    zookeeper_retry_times: int = 5                       # storm.zookeeper.retry.times
    zookeeper_retry_interval_ms: int = 1000              # storm.zookeeper.retry.interval
    message_timeout_secs: int = 30                       # topology.message.timeout.secs
    max_spout_pending: Optional[int] = None              # topology.max.spout.pending
    zookeeper_auth: Optional[ZkAuth] = None             # storm.zookeeper.auth.* (digest)
    trident_tx_state_id: Optional[str] = None            # trident.txStateId (ours)
    transactional_root: str = "/transactional"           # transactional.zookeeper.root


@dataclass(frozen=True)
class SparkConfig:
    """How the Spark side runs."""

    master: str = "local[2]"
    app_name: str = "storm-kafka-compat"
    #: number of Spark tasks fetching per batch (None: one per partition, at most
    #: the default parallelism)
    tasks: Optional[int] = None
    conf: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JobConfig:
    """The whole CONFIG file: spout, hosts, topology, spark, bolts."""

    spout: SpoutConfig
    topology: TopologyConfig
    spark: SparkConfig = SparkConfig()
    #: ``module:callable`` of a simple bolt, or None when ``topology_spec`` is given
    bolt: Optional[str] = None
    #: a topology of bolts with groupings (raw mapping, interpreted by the pipeline)
    topology_spec: Optional[Mapping[str, Any]] = None
    #: the ``kafka`` mapping as written (client settings, backend, broker version);
    #: :attr:`kafka_settings` splits it by client
    kafka: Mapping[str, Any] = field(default_factory=dict)
    #: storm-kafka-client's KafkaSpoutConfig (the ``kafkaSpout`` section), or None
    #: (:class:`storm_kafka_compat.spout.client.config.KafkaSpoutConfig`)
    kafka_spout: Optional[Any] = None
    #: ``module:callable`` of a DataFrame-mode batch function (instead of bolts), or None
    dataframe: Optional[str] = None

    @functools.cached_property
    def kafka_settings(self) -> Any:
        """The ``kafka`` mapping split by client
        (:class:`storm_kafka_compat.kafka.settings.KafkaSettings`); split once, as the
        driver asks for it every batch."""
        from storm_kafka_compat.kafka.settings import kafka_settings_from_dict
        return kafka_settings_from_dict(self.kafka)

    @property
    def uses_kafka_offsets(self) -> bool:
        """Offsets live in a Kafka consumer group (``kafkaSpout.offsetStore: kafka``)."""
        return self.kafka_spout is not None and self.kafka_spout.offset_store == "kafka"


# =============================================================================
# Loading and validating CONFIG mappings
# =============================================================================
#
# Everything below turns plain mappings (parsed YAML) into the frozen objects
# above. It is pure: no I/O except ``load_job_config`` reading one file.

#: Java ``Integer.MAX_VALUE``: ceiling of Storm's ``int`` fields
INT_MAX = 2**31 - 1
#: marker for fields that have no default (constructor arguments in Storm)
REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()

#: scheme names accepted in ``spout.scheme`` (besides ``module:callable``)
SCHEME_NAMES: Tuple[str, ...] = (
    "raw",                # RawMultiScheme: one field "bytes"
    "string",             # SchemeAsMultiScheme(StringScheme): one field "str"
    "key_value",          # KeyValueSchemeAsMultiScheme over raw key/value bytes
    "string_key_value",   # KeyValueSchemeAsMultiScheme(StringKeyValueScheme)
    "message_metadata",   # MessageMetadataSchemeAsMultiScheme(StringMessageAndMetadataScheme)
    "string_with_topic",  # StringMultiSchemeWithTopic
    "record_translator",  # storm-kafka-client's DefaultRecordTranslator (String key/value)
)

#: Storm scheme class names accepted in ``spout.scheme`` and the name they stand
#: for (a KeyValue/MessageMetadata scheme named alone means its usual wrapper)
STORM_SCHEME_CLASSES: Dict[str, str] = {}
for _pkg in ("org.apache.storm", "backtype.storm", "storm"):
    STORM_SCHEME_CLASSES.update({
        f"{_pkg}.spout.RawMultiScheme": "raw",
        f"{_pkg}.spout.RawScheme": "raw",
        f"{_pkg}.kafka.StringScheme": "string",
        f"{_pkg}.kafka.StringKeyValueScheme": "string_key_value",
        f"{_pkg}.kafka.StringMessageAndMetadataScheme": "message_metadata",
        f"{_pkg}.kafka.StringMultiSchemeWithTopic": "string_with_topic",
    })
del _pkg
STORM_SCHEME_CLASSES["org.apache.storm.kafka.spout.DefaultRecordTranslator"] = \
    "record_translator"

#: retry-manager class names that mean the built-in exponential backoff
RETRY_MANAGER_NAMES: Tuple[str, ...] = (
    DEFAULT_RETRY_MANAGER,
    "storm.kafka.ExponentialBackoffMsgRetryManager",
    "ExponentialBackoffMsgRetryManager",
)

#: accepted values of ``corruptStatePolicy``
CORRUPT_STATE_POLICIES: Tuple[str, ...] = ("storm", "fail")

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_CALLABLE_RE = re.compile(rf"^{_IDENT}(\.{_IDENT})*:{_IDENT}(\.{_IDENT})*$")
_DOTTED_RE = re.compile(rf"^{_IDENT}(\.{_IDENT})+$")

#: placeholder shown instead of secrets by :func:`effective_config`
MASK = "***"
_SECRET_WORDS = ("password", "secret", "jaas", "token", "credential", "auth.payload",
                 "sasl_plain_password", "private")


def is_callable_ref(text: Any) -> bool:
    """Return True if ``text`` looks like ``package.module:callable``."""
    return isinstance(text, str) and bool(_CALLABLE_RE.match(text))


def _snake(name: str) -> str:
    """``fetchSizeBytes`` -> ``fetch_size_bytes``."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _type_name(value: Any) -> str:
    return type(value).__name__


# --- field table -----------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    """One configurable field: its Storm name, Python attribute, type and meaning.

    Parameters
    ----------
    storm_name : str
        The name in Storm (camelCase for SpoutConfig, dotted for topology keys).
    attr : str
        The attribute of the frozen config object.
    java_type : str
        The Java type in Storm (``int``, ``long``, ``double``, ``boolean``,
        ``String``, ``List<String>``, ``Integer``), which fixes the accepted range.
    meaning : str
        One line for documentation and ``config check``.
    versions : str
        Version notes (where the field appeared or changed its default).
    aliases : tuple of str
        Other accepted input names (0.9.x names, short keys).
    extension : bool
        True for this project's own fields (not in Storm).
    owner : type
        The dataclass that holds ``attr`` (its default is read from there).
    """

    storm_name: str
    attr: str
    java_type: str
    meaning: str
    versions: str = ""
    aliases: Tuple[str, ...] = ()
    extension: bool = False
    owner: Any = None

    @property
    def default(self) -> Any:
        """The default, read from the dataclass (``REQUIRED`` when there is none)."""
        for f in _dc_fields(self.owner):
            if f.name == self.attr:
                if f.default is not MISSING:
                    return f.default
                if f.default_factory is not MISSING:  # type: ignore[misc]
                    return f.default_factory()  # type: ignore[misc]
                return REQUIRED
        raise AttributeError(self.attr)  # pragma: no cover - table/dataclass mismatch

    @property
    def names(self) -> Tuple[str, ...]:
        """Every accepted input name: Storm name, attribute, aliases."""
        out = [self.storm_name]
        for n in (self.attr, *self.aliases):
            if n not in out:
                out.append(n)
        return tuple(out)


def _spout(storm: str, jtype: str, meaning: str, versions: str = "",
           aliases: Tuple[str, ...] = (), extension: bool = False,
           attr: Optional[str] = None) -> FieldSpec:
    return FieldSpec(storm, attr or _snake(storm), jtype, meaning, versions, aliases,
                     extension, SpoutConfig)


#: Every SpoutConfig/KafkaConfig field (``hosts`` excepted: it is the top-level
#: ``hosts`` section), in Storm's declaration order, then this project's extensions.
SPOUT_FIELDS: Tuple[FieldSpec, ...] = (
    _spout("topic", "String", "Topic to read; a Java-style regex matched against whole "
           "topic names when kafka.topic.wildcard.match is true."),
    _spout("zkRoot", "String", "ZooKeeper path under which the offset documents live; "
           "'' or '/a/b' (leading '/', no trailing '/')."),
    _spout("id", "String", "Consumer id, one path segment under zkRoot; share it to resume "
           "another topology's progress."),
    _spout("clientId", "String", "Client id sent with every fetch and offset request.",
           "constructor argument in 1.0.4-1.0.7 and 1.2.x"),
    _spout("fetchSizeBytes", "int", "Most bytes asked for per partition per fetch.",
           "see deviation 4 for messages larger than this"),
    _spout("socketTimeoutMs", "int", "Socket timeout of the Kafka connection, in ms."),
    _spout("fetchMaxWait", "int", "Longest time, in ms, the broker may hold a fetch "
           "waiting for minFetchByte bytes.", "10000 before 1.0.1, 0 from 1.0.1"),
    _spout("minFetchByte", "int", "Bytes the broker should gather before answering a fetch; "
           "0 answers at once (an idle spout polls busily).", "1.0.1+"),
    _spout("bufferSizeBytes", "int", "Socket receive buffer of the Kafka connection, in bytes."),
    _spout("scheme", "MultiScheme", "Turns a message into tuples: " + ", ".join(SCHEME_NAMES)
           + ", a Storm scheme class name, or module:callable.",
           "MessageMetadata and WithTopic schemes 1.0.0+"),
    _spout("ignoreZkOffsets", "boolean", "Start at startOffsetTime instead of the stored offset "
           "when the stored topology id differs from this one (not 'always ignore').",
           "0.9.x name: forceFromStart", aliases=("forceFromStart", "force_from_start")),
    _spout("startOffsetTime", "long", "Where to start without usable state: -2 earliest, "
           "-1 latest, or a time in epoch milliseconds.", "timestamps: see deviation 5"),
    _spout("maxOffsetBehind", "long", "How far a position may trail the reference offset before "
           "it is reset; also bounds pending and failed offsets.",
           "100000 in 0.9.2, Long.MAX_VALUE from 0.9.3 (STORM-399)"),
    _spout("useStartOffsetTimeIfOffsetOutOfRange", "boolean", "On OFFSET_OUT_OF_RANGE, move to "
           "earliest/latest (true) or keep retrying the same offset (false).",
           "deviation 1 for positions beyond the log end"),
    _spout("metricsTimeBucketSizeInSecs", "int", "Reporting period of the spout metrics, in s."),
    _spout("zkServers", "List<String>", "ZooKeeper hosts that store the offsets; unset means "
           "storm.zookeeper.servers (Storm's own ZooKeeper)."),
    _spout("zkPort", "Integer", "Port used with every zkServers host; unset means "
           "storm.zookeeper.port."),
    _spout("outputStreamId", "String", "Stream the tuples are emitted on; unset means the "
           "default stream.", "1.0.0+, emitted on a stream named after the topic until 1.0.3"),
    _spout("stateUpdateIntervalMs", "long", "Least time, in ms, between two commits of the "
           "offsets to ZooKeeper."),
    _spout("failedMsgRetryManagerClass", "String", "Retry manager: Storm's "
           "ExponentialBackoffMsgRetryManager or a Python class as module:Class.", "1.0.2+"),
    _spout("retryInitialDelayMs", "long", "Delay, in ms, before the first retry of a failed "
           "offset.", "0.10.0+"),
    _spout("retryDelayMultiplier", "double", "Growth factor of the retry delay per failure "
           "(> 0).", "0.10.0+"),
    _spout("retryDelayMaxMs", "long", "Ceiling of the retry delay, in ms.", "0.10.0+"),
    _spout("retryLimit", "int", "Re-emits allowed per failed offset before it is given up "
           "(acked); <= 0 retries forever.", "1.0.2+"),
    _spout("corruptStatePolicy", "String", "A stored document Storm would not resume from: "
           "'storm' falls back to startOffsetTime with a WARN, 'fail' stops.",
           "deviation 3", extension=True),
    _spout("maxOffsetBehindResetToWindow", "boolean", "Opt-in: a start position too far behind "
           "is reset to latest - maxOffsetBehind instead of the startOffsetTime offset.",
           "deviation 6", extension=True),
    _spout("maxPendingPerPartition", "int", "Cap on fetched but not yet acked offsets per "
           "partition; unset means no cap.", extension=True),
)

#: SpoutConfig fields that have no default and must be given
REQUIRED_SPOUT_FIELDS: Tuple[str, ...] = ("topic", "zkRoot", "id")


def _topo(storm: str, attr: str, jtype: str, meaning: str,
          aliases: Tuple[str, ...] = (), extension: bool = False) -> FieldSpec:
    return FieldSpec(storm, attr, jtype, meaning, "", aliases, extension, TopologyConfig)


#: The topology-section keys (``zookeeper_auth`` is built from the auth keys).
TOPOLOGY_FIELDS: Tuple[FieldSpec, ...] = (
    _topo("topology.name", "name", "String", "Topology name written into every offset document.",
          aliases=("name",)),
    _topo("topology.id", "id", "String", "Topology id written into the offset documents; unset "
          "means the pipeline makes one (Storm: name-counter-epoch).", aliases=("id",)),
    _topo("kafka.topic.wildcard.match", "wildcard_match", "boolean", "Treat spout.topic as a "
          "regex; offset paths gain a topic segment."),
    _topo("storm.zookeeper.servers", "zookeeper_servers", "List<String>", "Storm's ZooKeeper "
          "hosts: the offset store when spout.zkServers is unset."),
    _topo("storm.zookeeper.port", "zookeeper_port", "int", "Port of storm.zookeeper.servers."),
    _topo("storm.zookeeper.session.timeout", "zookeeper_session_timeout_ms", "int",
          "ZooKeeper session timeout, in ms."),
    _topo("storm.zookeeper.connection.timeout", "zookeeper_connection_timeout_ms", "int",
          "ZooKeeper connection timeout, in ms."),
    _topo("storm.zookeeper.retry.times", "zookeeper_retry_times", "int",
          "Retries of a failed ZooKeeper operation."),
    _topo("storm.zookeeper.retry.interval", "zookeeper_retry_interval_ms", "int",
          "Base wait between ZooKeeper retries, in ms."),
    _topo("topology.message.timeout.secs", "message_timeout_secs", "int",
          "A tuple tree not fully acked within this many seconds fails and is replayed."),
    _topo("topology.max.spout.pending", "max_spout_pending", "Integer", "Most tuples in flight "
          "per spout task; unset means unlimited."),
    _topo("trident.txStateId", "trident_tx_state_id", "String", "Moving from a Trident Kafka "
          "spout: its newStream name; a partition without a storm-kafka document resumes "
          "from Trident's state (docs/trident.md).", extension=True),
    _topo("transactional.zookeeper.root", "transactional_root", "String", "Root of "
          "Trident's transactional state (Storm default /transactional)."),
)

#: Keys of the topology section that build :class:`ZkAuth`.
AUTH_KEYS: Tuple[str, ...] = ("storm.zookeeper.auth.scheme", "storm.zookeeper.auth.payload",
                              "storm.zookeeper.topology.auth.scheme",
                              "storm.zookeeper.topology.auth.payload", "acl")
#: Keys of the topology section that hold a topology of bolts (kept raw and
#: interpreted by ``topology.builder.from_spec``).
BOLT_TOPOLOGY_KEYS: Tuple[str, ...] = ("bolts",)

SPARK_KEYS: Tuple[str, ...] = ("master", "appName", "app_name", "tasks", "conf")
HOSTS_KEYS: Tuple[str, ...] = ("zk", "brokerZkPath", "broker_zk_path", "refreshFreqSecs",
                               "refresh_freq_secs", "static", "useTopicNameForPartitionPathId",
                               "use_topic_name_for_partition_path_id", "bootstrap")
TOP_LEVEL_KEYS: Tuple[str, ...] = ("spout", "hosts", "topology", "spark", "bolt", "kafka",
                                   "kafkaSpout", "dataframe")


def _lookup(specs: Iterable[FieldSpec]) -> Dict[str, FieldSpec]:
    out: Dict[str, FieldSpec] = {}
    for spec in specs:
        for name in spec.names:
            out[name] = spec
    return out


_SPOUT_BY_NAME = _lookup(SPOUT_FIELDS)
_TOPOLOGY_BY_NAME = _lookup(TOPOLOGY_FIELDS)


# --- small checkers -----------------------------------------------------------


def _unknown_key(section: str, key: Any, valid: Sequence[str]) -> ConfigError:
    """A ConfigError for an unknown key, suggesting the closest valid name."""
    text = str(key)
    dotted = f"{section}.{text}" if section else text
    close = difflib.get_close_matches(text, list(valid), n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    where = f"the {section} section" if section else "the top level"
    return ConfigError(
        f"unknown key {dotted!r} in {where}.{hint} Valid keys: {', '.join(valid)}.",
        key=dotted, value=key, allowed=valid)


def _require_mapping(value: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key} must be a mapping of keys to values, got {value!r} "
                          f"({_type_name(value)}); write it as '{key}:' followed by indented "
                          f"'name: value' lines.", key=key, value=value)
    for k in value:
        if not isinstance(k, str) and not (key.endswith("static") and isinstance(k, int)):
            raise ConfigError(f"{key} has a non-string key {k!r}; quote it.", key=f"{key}.{k}",
                              value=k)
    return value


def _check_int(value: Any, key: str, *, lo: Optional[int] = None, hi: int = LONG_MAX,
               what: str = "an integer") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key} must be {what}, got {value!r} ({_type_name(value)}); "
                          f"write a whole number without quotes.", key=key, value=value)
    if lo is not None and value < lo:
        raise ConfigError(f"{key} must be >= {lo}, got {value}; use a value of at least {lo}.",
                          key=key, value=value)
    if value > hi:
        raise ConfigError(f"{key} must be <= {hi} (the Java type's maximum), got {value}.",
                          key=key, value=value)
    return value


def _check_bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r} ({_type_name(value)}).",
                          key=key, value=value, allowed=("true", "false"))
    return value


def _check_str(value: Any, key: str, *, empty_ok: bool = True) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {value!r} ({_type_name(value)}); "
                          f"quote the value.", key=key, value=value)
    if not empty_ok and not value.strip():
        raise ConfigError(f"{key} must not be empty; give a non-empty string.",
                          key=key, value=value)
    return value


def _check_str_list(value: Any, key: str) -> Tuple[str, ...]:
    """A list of non-empty strings; a comma-separated string is split."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"{key} must be a non-empty list of host names, got {value!r}.",
                          key=key, value=value)
    out = []
    for i, item in enumerate(value):
        out.append(_check_str(item, f"{key}[{i}]", empty_ok=False).strip())
    return tuple(out)


def _check_zk_path(value: Any, key: str, *, empty_ok: bool) -> str:
    path = _check_str(value, key)
    if path == "" and empty_ok:
        return path
    if not path.startswith("/") or (len(path) > 1 and path.endswith("/")) or path == "/" \
            or "//" in path:
        fix = "/" + path.strip("/") if path.strip("/") else ('""' if empty_ok else "/brokers")
        raise ConfigError(f"{key} {path!r} is not a valid ZooKeeper path: it must start with "
                          f"'/' and must not end with '/' (Storm would build an invalid path); "
                          f"use {fix!r}.", key=key, value=path)
    return path


# --- SpoutConfig ----------------------------------------------------------------


def _check_spout_value(spec: FieldSpec, value: Any, key: str) -> Any:
    """Type- and range-check one SpoutConfig value; return the normalised value."""
    name = spec.storm_name
    if value is None and name in ("zkServers", "zkPort", "outputStreamId",
                                  "maxPendingPerPartition"):
        return None
    if name in ("topic", "id"):
        text = _check_str(value, key, empty_ok=False)
        if name == "id" and "/" in text:
            raise ConfigError(f"{key} {text!r} must be one ZooKeeper path segment without '/'; "
                              f"use {text.replace('/', '-')!r} or move the prefix into zkRoot.",
                              key=key, value=text)
        return text
    if name == "zkRoot":
        return _check_zk_path(value, key, empty_ok=True)
    if name in ("clientId", "outputStreamId"):
        return _check_str(value, key)
    if name == "scheme":
        text = _check_str(value, key)
        if text in STORM_SCHEME_CLASSES:
            return STORM_SCHEME_CLASSES[text]
        if text not in SCHEME_NAMES and not is_callable_ref(text):
            raise ConfigError(f"{key} {text!r} is not a scheme; use one of "
                              f"{', '.join(SCHEME_NAMES)}, a Storm scheme class such as "
                              f"org.apache.storm.kafka.StringScheme, or "
                              f"'package.module:callable'.",
                              key=key, value=text, allowed=SCHEME_NAMES)
        return text
    if name == "failedMsgRetryManagerClass":
        text = _check_str(value, key)
        if text in RETRY_MANAGER_NAMES:
            return DEFAULT_RETRY_MANAGER
        if not is_callable_ref(text) and not _DOTTED_RE.match(text):
            raise ConfigError(f"{key} {text!r} is not a class name; use "
                              f"{DEFAULT_RETRY_MANAGER!r} or a Python class as "
                              f"'package.module:Class'.", key=key, value=text,
                              allowed=(DEFAULT_RETRY_MANAGER, "module:callable"))
        return text
    if name == "corruptStatePolicy":
        text = _check_str(value, key)
        if text not in CORRUPT_STATE_POLICIES:
            raise ConfigError(f"{key} {text!r} is not a policy; use one of "
                              f"{', '.join(CORRUPT_STATE_POLICIES)}.", key=key, value=text,
                              allowed=CORRUPT_STATE_POLICIES)
        return text
    if name == "zkServers":
        return _check_str_list(value, key)
    if name == "zkPort":
        return _check_int(value, key, lo=1, hi=65535, what="a port number")
    if name == "retryDelayMultiplier":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{key} must be a number, got {value!r} ({_type_name(value)}).",
                              key=key, value=value)
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{key} must be a finite number > 0, got {value!r}; use 1.0 for "
                              f"a constant delay or e.g. 2.0 to double it per failure.",
                              key=key, value=value)
        return float(value)
    if spec.java_type == "boolean":
        return _check_bool(value, key)
    if name == "startOffsetTime":
        v = _check_int(value, key, what="an integer (-2, -1 or epoch milliseconds)")
        if v < 0 and v not in (EARLIEST_TIME, LATEST_TIME):
            raise ConfigError(f"{key} {v} is not valid; use -2 (earliest), -1 (latest) or a "
                              f"time in epoch milliseconds (>= 0).", key=key, value=v,
                              allowed=("-2", "-1", ">= 0"))
        return v
    if name == "retryLimit":
        return _check_int(value, key, lo=-INT_MAX - 1, hi=INT_MAX)
    hi = INT_MAX if spec.java_type == "int" else LONG_MAX
    # sizes, periods and the max-pending cap must be positive; waits and delays may be 0
    positive = name in ("fetchSizeBytes", "bufferSizeBytes", "socketTimeoutMs",
                        "metricsTimeBucketSizeInSecs", "maxPendingPerPartition")
    return _check_int(value, key, lo=1 if positive else 0, hi=hi)


def spout_config_from_dict(mapping: Mapping[str, Any], *, hosts: BrokerHosts,
                           section: str = "spout") -> SpoutConfig:
    """Build a :class:`SpoutConfig` from Storm (camelCase) or snake_case names.

    Parameters
    ----------
    mapping : Mapping
        The ``spout`` section. ``forceFromStart`` (0.9.x) is accepted as an alias
        of ``ignoreZkOffsets``.
    hosts : ZkHosts, StaticHosts or BootstrapHosts
        Built from the top-level ``hosts`` section (see :func:`hosts_from_dict`).
    section : str
        Prefix used in error keys.

    Returns
    -------
    SpoutConfig

    Raises
    ------
    ConfigError
        Unknown key, wrong type, out-of-range value, missing required field, or
        the same field given twice under different names with different values.
    """
    _require_mapping(mapping, section)
    valid = [spec.storm_name for spec in SPOUT_FIELDS] + ["forceFromStart"]
    values: Dict[str, Any] = {}
    given_as: Dict[str, str] = {}
    for raw_key, value in mapping.items():
        spec = _SPOUT_BY_NAME.get(raw_key)
        if spec is None:
            if raw_key == "hosts":
                raise ConfigError(f"{section}.hosts: hosts is a top-level section, not a spout "
                                  f"field; move it out of {section}.", key=f"{section}.hosts",
                                  value=value)
            raise _unknown_key(section, raw_key, valid)
        key = f"{section}.{raw_key}"
        checked = _check_spout_value(spec, value, key)
        if spec.attr in values and values[spec.attr] != checked:
            raise ConfigError(f"{key} ({checked!r}) contradicts {section}.{given_as[spec.attr]} "
                              f"({values[spec.attr]!r}); they are the same field, keep one.",
                              key=key, value=value)
        values[spec.attr] = checked
        given_as[spec.attr] = raw_key
    for name in REQUIRED_SPOUT_FIELDS:
        if _SPOUT_BY_NAME[name].attr not in values:
            raise ConfigError(f"{section}.{name} is required (a SpoutConfig constructor "
                              f"argument); add it to the {section} section.",
                              key=f"{section}.{name}", value=None)
    return SpoutConfig(hosts=hosts, **values)


# --- hosts ------------------------------------------------------------------------


def split_chroot(connect: str) -> Tuple[str, str]:
    """Split a ZooKeeper connect string into hosts and chroot.

    ``"zk1:2181,zk2:2181/kafka"`` -> ``("zk1:2181,zk2:2181", "/kafka")``; without a
    chroot (or with ``"/"``) the chroot is ``""``.

    Raises
    ------
    ConfigError
        No host, or a chroot that ZooKeeper would reject (trailing ``/``, ``//``).
    """
    text = connect.strip()
    slash = text.find("/")
    hosts, chroot = (text, "") if slash < 0 else (text[:slash], text[slash:])
    if chroot == "/":
        chroot = ""
    if not hosts or any(not h.strip() for h in hosts.split(",")):
        raise ConfigError(f"ZooKeeper connect string {connect!r} has an empty host; write "
                          f"'host:port[,host:port...][/chroot]'.", key="hosts.zk", value=connect)
    if chroot and (chroot.endswith("/") or "//" in chroot):
        raise ConfigError(f"chroot {chroot!r} of {connect!r} is not a valid ZooKeeper path; "
                          f"use {'/' + chroot.strip('/')!r}.", key="hosts.zk", value=connect)
    return hosts, chroot


def _first(mapping: Mapping[str, Any], *names: str) -> Tuple[Optional[str], Any]:
    for n in names:
        if n in mapping:
            return n, mapping[n]
    return None, None


def hosts_from_dict(mapping: Mapping[str, Any], *, section: str = "hosts") -> BrokerHosts:
    """Build the broker hosts from the ``hosts`` section.

    Exactly one of:

    - ``zk: "h1:2181,h2:2181/chroot"`` (ZkHosts) with optional ``brokerZkPath``
      (default ``/brokers``) and ``refreshFreqSecs`` (default 60);
    - ``static: {0: "host:port", ...}`` (StaticHosts) with optional
      ``useTopicNameForPartitionPathId`` (default false);
    - ``bootstrap: "h:p,h2:p"`` or a list (KRaft-era discovery) with optional
      ``refreshFreqSecs``.

    Raises
    ------
    ConfigError
        Unknown key, none or several kinds, or a malformed value.
    """
    _require_mapping(mapping, section)
    for k in mapping:
        if k not in HOSTS_KEYS:
            raise _unknown_key(section, k, ("zk", "brokerZkPath", "refreshFreqSecs", "static",
                                            "useTopicNameForPartitionPathId", "bootstrap"))
    kinds = [k for k in ("zk", "static", "bootstrap") if k in mapping]
    if len(kinds) != 1:
        raise ConfigError(f"{section} must have exactly one of zk, static or bootstrap, got "
                          f"{kinds or 'none'}; keep the one that describes your cluster.",
                          key=section, value=kinds, allowed=("zk", "static", "bootstrap"))
    kind = kinds[0]
    allowed_extra = {"zk": {"brokerZkPath", "broker_zk_path", "refreshFreqSecs",
                            "refresh_freq_secs"},
                     "static": {"useTopicNameForPartitionPathId",
                                "use_topic_name_for_partition_path_id"},
                     "bootstrap": {"refreshFreqSecs", "refresh_freq_secs"}}[kind]
    for k in mapping:
        if k != kind and k not in allowed_extra:
            raise ConfigError(f"{section}.{k} does not apply to {kind} hosts; remove it "
                              f"(allowed with {kind}: {', '.join(sorted(allowed_extra))}).",
                              key=f"{section}.{k}", value=mapping[k],
                              allowed=sorted(allowed_extra))
    rk, refresh = _first(mapping, "refreshFreqSecs", "refresh_freq_secs")
    refresh_secs = 60 if rk is None else _check_int(refresh, f"{section}.{rk}", lo=1,
                                                    hi=INT_MAX)
    if kind == "zk":
        connect = _check_str(mapping["zk"], f"{section}.zk", empty_ok=False).strip()
        split_chroot(connect)
        pk, path = _first(mapping, "brokerZkPath", "broker_zk_path")
        broker_path = "/brokers" if pk is None else _check_zk_path(path, f"{section}.{pk}",
                                                                   empty_ok=False)
        return ZkHosts(connect, broker_path, refresh_secs)
    if kind == "static":
        table = _require_mapping(mapping["static"], f"{section}.static")
        if not table:
            raise ConfigError(f"{section}.static is empty; map each partition number to its "
                              f"leader, e.g. {{0: 'kafka1:9092'}}.", key=f"{section}.static",
                              value=dict(table))
        partitions: Dict[int, Broker] = {}
        for p, addr in table.items():
            pkey = f"{section}.static.{p}"
            try:
                num = int(p) if not isinstance(p, bool) else None
            except (TypeError, ValueError):
                num = None
            if num is None or num < 0:
                raise ConfigError(f"{pkey}: partition {p!r} must be a number >= 0.", key=pkey,
                                  value=p)
            partitions[num] = _broker(addr, pkey)
        uk, use = _first(mapping, "useTopicNameForPartitionPathId",
                         "use_topic_name_for_partition_path_id")
        use_topic = False if uk is None else _check_bool(use, f"{section}.{uk}")
        return StaticHosts(dict(sorted(partitions.items())), use_topic)
    servers = _check_str_list(mapping["bootstrap"], f"{section}.bootstrap")
    for i, s in enumerate(servers):
        _broker(s, f"{section}.bootstrap[{i}]")
    return BootstrapHosts(servers, refresh_secs)


def _broker(addr: Any, key: str) -> Broker:
    if isinstance(addr, Mapping):
        host = _check_str(addr.get("host"), f"{key}.host", empty_ok=False)
        port = _check_int(addr.get("port", 9092), f"{key}.port", lo=1, hi=65535)
        return Broker(host, port)
    text = _check_str(addr, key, empty_ok=False).strip()
    try:
        broker = Broker.from_string(text)
    except ValueError:
        raise ConfigError(f"{key} {text!r} is not 'host' or 'host:port' with a numeric port.",
                          key=key, value=text) from None
    if not broker.host or not 0 < broker.port <= 65535:
        raise ConfigError(f"{key} {text!r} is not 'host' or 'host:port' (port 1-65535).",
                          key=key, value=text)
    return broker


# --- topology --------------------------------------------------------------------


def _check_topology_value(spec: FieldSpec, value: Any, key: str) -> Any:
    attr = spec.attr
    if attr == "name":
        return _check_str(value, key, empty_ok=False)
    if attr == "id":
        return None if value is None else _check_str(value, key, empty_ok=False)
    if attr in ("trident_tx_state_id", "transactional_root"):
        return None if value is None else _check_str(value, key, empty_ok=False)
    if attr == "wildcard_match":
        return _check_bool(value, key)
    if attr == "zookeeper_servers":
        return _check_str_list(value, key)
    if attr == "zookeeper_port":
        return _check_int(value, key, lo=1, hi=65535, what="a port number")
    if attr == "max_spout_pending":
        return None if value is None else _check_int(value, key, lo=1, hi=INT_MAX)
    if attr == "zookeeper_retry_times":
        return _check_int(value, key, lo=0, hi=INT_MAX)
    return _check_int(value, key, lo=1, hi=INT_MAX)  # timeouts and intervals


def topology_config_from_dict(mapping: Mapping[str, Any], *,
                              section: str = "topology") -> TopologyConfig:
    """Build a :class:`TopologyConfig` from Storm topology-config keys.

    Accepts ``topology.name`` (or ``name``), ``topology.id`` (or ``id``),
    ``kafka.topic.wildcard.match``, ``storm.zookeeper.*``,
    ``topology.message.timeout.secs``, ``topology.max.spout.pending``, the digest
    auth keys ``storm.zookeeper.auth.scheme``/``storm.zookeeper.auth.payload``
    (``user:password``) and our ``acl`` flag. ``bolts`` (a topology of bolts)
    is skipped here: :func:`job_config_from_dict` keeps it.

    Raises
    ------
    ConfigError
        Unknown key, wrong type or value, missing ``topology.name``.
    """
    _require_mapping(mapping, section)
    valid = [s.storm_name for s in TOPOLOGY_FIELDS] + ["name", "id"] + list(AUTH_KEYS) \
        + list(BOLT_TOPOLOGY_KEYS)
    values: Dict[str, Any] = {}
    given_as: Dict[str, str] = {}
    for raw_key, value in mapping.items():
        if raw_key in BOLT_TOPOLOGY_KEYS or raw_key in AUTH_KEYS:
            continue
        spec = _TOPOLOGY_BY_NAME.get(raw_key)
        if spec is None:
            raise _unknown_key(section, raw_key, valid)
        key = f"{section}.{raw_key}"
        checked = _check_topology_value(spec, value, key)
        if spec.attr in values and values[spec.attr] != checked:
            raise ConfigError(f"{key} ({checked!r}) contradicts {section}.{given_as[spec.attr]} "
                              f"({values[spec.attr]!r}); keep one.", key=key, value=value)
        values[spec.attr] = checked
        given_as[spec.attr] = raw_key
    if "name" not in values:
        raise ConfigError(f"{section}.name (topology.name) is required: it is written into "
                          f"every offset document; add 'name: <topology name>'.",
                          key=f"{section}.name", value=None)
    auth = _zk_auth_from_dict(mapping, section)
    return TopologyConfig(zookeeper_auth=auth, **values)


def _zk_auth_from_dict(mapping: Mapping[str, Any], section: str) -> Optional[ZkAuth]:
    sk, scheme = _first(mapping, "storm.zookeeper.auth.scheme",
                        "storm.zookeeper.topology.auth.scheme")
    pk, payload = _first(mapping, "storm.zookeeper.auth.payload",
                         "storm.zookeeper.topology.auth.payload")
    acl = False if "acl" not in mapping else _check_bool(mapping["acl"], f"{section}.acl")
    if sk is not None:
        _check_str(scheme, f"{section}.{sk}")
        if scheme != "digest":
            raise ConfigError(f"{section}.{sk} {scheme!r} is not supported; only 'digest' "
                              f"authentication is.", key=f"{section}.{sk}", value=scheme,
                              allowed=("digest",))
    if pk is None:
        if acl:
            raise ConfigError(f"{section}.acl is true but no storm.zookeeper.auth.payload "
                              f"('user:password') is given; add the credentials or drop acl.",
                              key=f"{section}.acl", value=True)
        return None
    cred = _check_str(payload, f"{section}.{pk}")
    user, sep, _ = cred.partition(":")
    if not sep or not user:
        shown = f"{user}:{MASK}" if sep else MASK  # never echo what may be a password
        raise ConfigError(f"{section}.{pk} must be 'user:password' (digest), got {shown!r}.",
                          key=f"{section}.{pk}", value=MASK)
    return ZkAuth("digest", cred, acl)


# --- spark, bolts, kafka ----------------------------------------------------------------


def spark_config_from_dict(mapping: Mapping[str, Any], *, section: str = "spark") -> SparkConfig:
    """Build :class:`SparkConfig` from ``master``, ``appName``/``app_name``, ``tasks``, ``conf``.

    ``conf`` values are turned into strings (booleans as ``true``/``false``).
    """
    _require_mapping(mapping, section)
    for k in mapping:
        if k not in SPARK_KEYS:
            raise _unknown_key(section, k, ("master", "appName", "tasks", "conf"))
    values: Dict[str, Any] = {}
    if "master" in mapping:
        values["master"] = _check_str(mapping["master"], f"{section}.master", empty_ok=False)
    ak, app = _first(mapping, "appName", "app_name")
    if ak is not None:
        values["app_name"] = _check_str(app, f"{section}.{ak}", empty_ok=False)
    if mapping.get("tasks") is not None:
        values["tasks"] = _check_int(mapping["tasks"], f"{section}.tasks", lo=1, hi=INT_MAX)
    if mapping.get("conf") is not None:
        conf = _require_mapping(mapping["conf"], f"{section}.conf")
        out: Dict[str, str] = {}
        for k, v in conf.items():
            if isinstance(v, bool):
                out[k] = "true" if v else "false"
            elif isinstance(v, (str, int, float)):
                out[k] = str(v)
            else:
                raise ConfigError(f"{section}.conf.{k} must be a scalar (Spark settings are "
                                  f"strings), got {v!r}.", key=f"{section}.conf.{k}", value=v)
        values["conf"] = out
    return SparkConfig(**values)


def check_bolt_ref(value: Any, key: str = "bolt") -> str:
    """Validate a ``module:callable`` bolt reference and return it."""
    text = _check_str(value, key, empty_ok=False)
    if not is_callable_ref(text.strip()):
        raise ConfigError(f"{key} {text!r} is not 'package.module:callable'; name the module "
                          f"and the function or class, e.g. 'myjob.bolts:count_words'.",
                          key=key, value=text)
    return text.strip()


def _kafka_bolts_inherit(spec: Optional[Dict[str, Any]], kafka: Mapping[str, Any]
                         ) -> Optional[Dict[str, Any]]:
    """KafkaBolt entries without their own ``kafka`` property get the job's ``kafka``
    section (the pinned ``api_version`` above all) for their producer."""
    if spec is None or not kafka:
        return spec
    bolts = []
    for b in spec.get("bolts") or []:
        if isinstance(b, Mapping) and _storm_bolt_class(b.get("bolt")):
            props = dict(b.get("properties") or {})
            props.setdefault("kafka", dict(kafka))
            b = {**b, "properties": props}
        bolts.append(b)
    return {**spec, "bolts": bolts}


def _storm_bolt_class(value: Any) -> bool:
    """True for a Storm bolt class the pipeline provides (``KafkaBolt``)."""
    from storm_kafka_compat.topology.kafka_bolt import STORM_KAFKA_BOLT_CLASSES
    return value in STORM_KAFKA_BOLT_CLASSES


def _topology_spec(mapping: Mapping[str, Any], section: str) -> Optional[Dict[str, Any]]:
    present = {k: mapping[k] for k in BOLT_TOPOLOGY_KEYS if k in mapping}
    if not present:
        return None
    bolts = present.get("bolts")
    if not isinstance(bolts, list) or not bolts:
        raise ConfigError(f"{section}.bolts must be a non-empty list of bolts, got {bolts!r}; "
                          f"or use a top-level 'bolt: module:callable' for a single bolt.",
                          key=f"{section}.bolts", value=bolts)
    for i, bolt in enumerate(bolts):
        if not isinstance(bolt, Mapping):
            raise ConfigError(f"{section}.bolts[{i}] must be a mapping with name, bolt "
                              f"(module:callable) and optional inputs, got {bolt!r}.",
                              key=f"{section}.bolts[{i}]", value=bolt)
        if "bolt" in bolt and not _storm_bolt_class(bolt["bolt"]):
            check_bolt_ref(bolt["bolt"], f"{section}.bolts[{i}].bolt")
    return dict(present)


def _kafka_settings(value: Any, section: str = "kafka") -> Dict[str, Any]:
    from storm_kafka_compat.kafka.settings import kafka_settings_from_dict
    mapping = dict(_require_mapping(value, section))
    kafka_settings_from_dict(mapping, section)          # raises ConfigError when malformed
    return mapping


# --- placeholders left by Flux ------------------------------------------------------------

#: a Flux ``${key}`` / ``${ENV-NAME}`` placeholder
PLACEHOLDER_RE = re.compile(r"\$\{([^}]+)\}")


def find_placeholders(obj: Any, where: str = "") -> List[Tuple[str, str]]:
    """``(dotted key, placeholder)`` for every ``${...}`` left in a string value of
    ``obj`` (a CONFIG mapping), in document order."""
    out: List[Tuple[str, str]] = []
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            out.extend(find_placeholders(v, f"{where}.{k}" if where else str(k)))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.extend(find_placeholders(v, f"{where}[{i}]"))
    elif isinstance(obj, str):
        out.extend((where, m.group(0)) for m in PLACEHOLDER_RE.finditer(obj))
    return out


def placeholder_fix(placeholder: str) -> str:
    """How Flux substitutes ``placeholder`` and the ``config convert`` flag that does it."""
    name = PLACEHOLDER_RE.fullmatch(placeholder)
    key = name.group(1) if name else placeholder
    if key.startswith("ENV-"):
        return (f"environment variable {key[4:]}: set it and run 'config convert "
                f"--env-filter' on the Flux file")
    return (f"key {key!r} of a properties file: run 'config convert --filter FILE' on the "
            f"Flux file")


def _reject_placeholders(d: Mapping[str, Any]) -> None:
    found = find_placeholders(d)
    if not found:
        return
    listed = "; ".join(f"{where} holds {ph} ({placeholder_fix(ph)})" for where, ph in found)
    raise ConfigError(f"{len(found)} Flux placeholder(s) were never substituted: {listed}. "
                      f"Substitute them, or write the values into the CONFIG.",
                      key=found[0][0], value=found[0][1])


# --- the whole job --------------------------------------------------------------------


def job_config_from_dict(d: Mapping[str, Any]) -> JobConfig:
    """Build and validate the whole CONFIG (see docs/configuration.md).

    Top-level keys: ``spout`` (required), ``hosts`` (required), ``topology``
    (required: at least ``name``), ``spark``, ``bolt`` and ``kafka``. A topology
    of bolts is given as ``topology.bolts`` and kept raw in
    :attr:`JobConfig.topology_spec` as ``{"bolts": [...]}`` (the form
    ``topology.builder.from_spec`` reads).

    Raises
    ------
    ConfigError
        On the first problem found, with ``key`` dotted from the top.
    """
    if not isinstance(d, Mapping):
        raise ConfigError(f"the config must be a mapping with sections "
                          f"{', '.join(TOP_LEVEL_KEYS)}, got {_type_name(d)}.", key="",
                          value=d, allowed=TOP_LEVEL_KEYS)
    for k in d:
        if k not in TOP_LEVEL_KEYS:
            raise _unknown_key("", k, TOP_LEVEL_KEYS)
    _reject_placeholders(d)
    client_section = d.get("kafkaSpout")
    if client_section is not None:
        d = _client_mode_defaults(d, client_section)
    for k in ("spout", "hosts", "topology"):
        if d.get(k) is None:
            raise ConfigError(f"section {k!r} is missing; the config needs spout, hosts and "
                              f"topology (see docs/configuration.md).", key=k, value=None,
                              allowed=TOP_LEVEL_KEYS)
    hosts = hosts_from_dict(d["hosts"])
    spout = spout_config_from_dict(d["spout"], hosts=hosts)
    topology = topology_config_from_dict(d["topology"])
    spec = _topology_spec(d["topology"], "topology")
    spark = spark_config_from_dict(d["spark"]) if d.get("spark") is not None else SparkConfig()
    bolt = check_bolt_ref(d["bolt"]) if d.get("bolt") is not None else None
    if bolt is not None and spec is not None:
        raise ConfigError("both 'bolt' and 'topology.bolts' are given; use 'bolt' for a single "
                          "bolt or 'topology.bolts' for a topology, not both.", key="bolt",
                          value=bolt)
    kafka = _kafka_settings(d["kafka"]) if d.get("kafka") is not None else {}
    spec = _kafka_bolts_inherit(spec, kafka)
    dataframe = check_bolt_ref(d["dataframe"], "dataframe") if d.get("dataframe") is not None \
        else None
    if dataframe is not None and (bolt is not None or spec is not None):
        raise ConfigError("both 'dataframe' and bolts are given; a DataFrame-mode job has no "
                          "bolts: keep 'dataframe' or the bolts, not both.", key="dataframe",
                          value=dataframe)
    if isinstance(hosts, StaticHosts) and topology.wildcard_match:
        raise ConfigError("topology.kafka.topic.wildcard.match needs zk or bootstrap hosts; "
                          "static hosts name one topic (use "
                          "hosts.useTopicNameForPartitionPathId for the topic path segment).",
                          key="topology.kafka.topic.wildcard.match", value=True)
    if topology.wildcard_match:
        try:
            re.compile(spout.topic)
        except re.error as exc:
            raise ConfigError(f"spout.topic {spout.topic!r} is not a valid regex ({exc}), and "
                              f"kafka.topic.wildcard.match is true; fix the pattern or turn "
                              f"wildcard matching off.", key="spout.topic",
                              value=spout.topic) from None
    kafka_spout = None
    if client_section is not None:
        kafka_spout, spout = _kafka_spout_config(client_section, spout, topology, kafka)
    return JobConfig(spout=spout, topology=topology, spark=spark, bolt=bolt,
                     topology_spec=spec, kafka=kafka, kafka_spout=kafka_spout,
                     dataframe=dataframe)


def _client_mode_defaults(d: Mapping[str, Any], section: Any) -> Dict[str, Any]:
    """A ``kafkaSpout`` section with the Kafka store may stand without ``spout``
    and ``hosts``: they are derived from its topics, group and servers."""
    out = dict(d)
    if not isinstance(section, Mapping) or str(section.get("offsetStore", "kafka")) != "kafka":
        return out
    servers = section.get("bootstrapServers") or section.get("bootstrap_servers")
    if out.get("hosts") is None and servers:
        out["hosts"] = {"bootstrap": servers}
    topics = section.get("topics")
    topic = section.get("topicPattern") or section.get("topic_pattern") or (
        topics if isinstance(topics, str) else (topics[0] if topics else None))
    consumer = section.get("consumer")
    group = section.get("groupId") or section.get("group_id") or (
        consumer.get("group.id") if isinstance(consumer, Mapping) else None)
    if not group:
        # the section's own validation names the problem (an unknown key such as
        # 'groupid', or the missing group) before a derived section could hide it
        from storm_kafka_compat.spout.client.config import kafka_spout_config_from_dict, missing_group_error
        kafka_spout_config_from_dict(section, default_servers=("unused:0",))
        raise missing_group_error()
    derived = {"topic": topic, "zkRoot": "/storm-kafka-client", "id": str(group)}
    spout = out.get("spout")
    if spout is None and topic:
        out["spout"] = derived
    elif isinstance(spout, Mapping) and topic:
        # a spout section giving only the scheme or fetch sizes: the rest is derived
        given = {spec.storm_name for spec in SPOUT_FIELDS for n in spec.names if n in spout}
        out["spout"] = {**{k: v for k, v in derived.items() if k not in given}, **spout}
    return out


def _kafka_spout_config(section: Any, spout: SpoutConfig, topology: TopologyConfig,
                        kafka: Mapping[str, Any]) -> Tuple[Any, SpoutConfig]:
    """The ``kafkaSpout`` section; with the Kafka store the driver's commit
    interval becomes ``offsetCommitPeriodMs``."""
    from dataclasses import replace

    from storm_kafka_compat.spout.client.config import kafka_spout_config_from_dict
    hosts = spout.hosts
    servers: Tuple[str, ...] = ()
    if isinstance(hosts, BootstrapHosts):
        servers = tuple(hosts.servers)
    else:
        configured = kafka.get("bootstrap_servers") or kafka.get("bootstrap.servers")
        if configured:
            servers = tuple(configured.split(",") if isinstance(configured, str) else configured)
    cfg = kafka_spout_config_from_dict(section, default_topic=spout.topic,
                                       default_pattern=topology.wildcard_match,
                                       default_servers=servers)
    if cfg.uses_kafka_store:
        spout = replace(spout, state_update_interval_ms=cfg.offset_commit_period_ms)
    return cfg, spout


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode,
                       deep: bool = False) -> Dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: Dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: let the base constructor complain
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"found duplicate key {key!r}", key_node.start_mark)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_mapping)


def parse_yaml(text: str, *, source: str = "<string>") -> Any:
    """Parse YAML safely, rejecting duplicate keys; errors name ``source`` and the line.

    Raises
    ------
    ConfigError
    """
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}:{where} is not valid YAML: {problem}; fix the file.",
                          key=None, value=source) from None


def load_job_config(path: Union[str, "os.PathLike[str]"]) -> JobConfig:
    """Read a CONFIG YAML file and build the :class:`JobConfig`.

    Raises
    ------
    ConfigError
        The file cannot be read, is not valid YAML, or does not validate; the
        message names the file.
    """
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"cannot read config file {source}: {reason}; check the path.",
                          key=None, value=source) from None
    data = parse_yaml(text, source=source)
    if data is None:
        raise ConfigError(f"config file {source} is empty; it needs spout, hosts and topology "
                          f"sections.", key=None, value=source)
    try:
        return job_config_from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}", key=exc.key, value=exc.value,
                          allowed=exc.allowed) from None


# --- effective config -------------------------------------------------------------


def is_secret_key(key: str) -> bool:
    """True if a settings key names a secret (password, JAAS config, token...)."""
    low = key.lower()
    return any(word in low for word in _SECRET_WORDS)


def mask_secrets(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """Copy of ``settings`` with secret values replaced by ``"***"`` (recursively)."""
    out: Dict[str, Any] = {}
    for k, v in settings.items():
        if is_secret_key(str(k)):
            out[k] = MASK
        elif isinstance(v, Mapping):
            out[k] = mask_secrets(v)
        else:
            out[k] = v
    return out


def offset_store_servers(spout: SpoutConfig, topology: TopologyConfig) -> Tuple[str, ...]:
    """ZooKeeper ``host:port`` list that stores the offsets.

    ``zkServers``/``zkPort`` when set, else ``storm.zookeeper.servers``/``port``
    (Storm's own ZooKeeper, as storm-kafka does).
    """
    servers = spout.zk_servers if spout.zk_servers is not None else topology.zookeeper_servers
    port = spout.zk_port if spout.zk_port is not None else topology.zookeeper_port
    return tuple(f"{s}:{port}" for s in servers)


def _hosts_dict(hosts: BrokerHosts) -> Dict[str, Any]:
    if isinstance(hosts, ZkHosts):
        return {"zk": hosts.broker_zk_str, "brokerZkPath": hosts.broker_zk_path,
                "refreshFreqSecs": hosts.refresh_freq_secs}
    if isinstance(hosts, StaticHosts):
        return {"static": {p: str(b) for p, b in hosts.partitions.items()},
                "useTopicNameForPartitionPathId": hosts.use_topic_name_for_partition_path_id}
    return {"bootstrap": list(hosts.servers), "refreshFreqSecs": hosts.refresh_freq_secs}


def spout_to_dict(spout: SpoutConfig) -> Dict[str, Any]:
    """Every SpoutConfig field under its Storm name (lists for tuples)."""
    out: Dict[str, Any] = {}
    for spec in SPOUT_FIELDS:
        value = getattr(spout, spec.attr)
        out[spec.storm_name] = list(value) if isinstance(value, tuple) else value
    return out


def topology_to_dict(topology: TopologyConfig, *, mask: bool = True) -> Dict[str, Any]:
    """Every topology key under its Storm name; the digest credential masked."""
    out: Dict[str, Any] = {}
    for spec in TOPOLOGY_FIELDS:
        value = getattr(topology, spec.attr)
        out[spec.storm_name] = list(value) if isinstance(value, tuple) else value
    auth = topology.zookeeper_auth
    if auth is not None:
        out["storm.zookeeper.auth.scheme"] = auth.scheme
        out["storm.zookeeper.auth.payload"] = MASK if mask else auth.credential
        out["acl"] = auth.acl_on_create
    return out


def effective_config(job: JobConfig) -> Dict[str, Any]:
    """The configuration as the job will use it, for ``config check``.

    Nested like CONFIG, Storm names, every default filled in, secrets shown as
    ``"***"``. ``spout.zkServers``/``zkPort`` show what is used: Storm's
    ZooKeeper (``storm.zookeeper.*``) when they were unset.
    """
    spout = spout_to_dict(job.spout)
    if job.spout.zk_servers is None:
        spout["zkServers"] = list(job.topology.zookeeper_servers)
    if job.spout.zk_port is None:
        spout["zkPort"] = job.topology.zookeeper_port
    topology = topology_to_dict(job.topology)
    if job.topology_spec is not None:
        topology.update(job.topology_spec)
    out: Dict[str, Any] = {
        "spout": spout,
        "hosts": _hosts_dict(job.spout.hosts),
        "topology": topology,
        "spark": {"master": job.spark.master, "appName": job.spark.app_name,
                  "tasks": job.spark.tasks, "conf": mask_secrets(job.spark.conf)},
    }
    if job.bolt is not None:
        out["bolt"] = job.bolt
    if job.dataframe is not None:
        out["dataframe"] = job.dataframe
    out["kafka"] = mask_secrets(job.kafka)
    if job.kafka_spout is not None:
        from storm_kafka_compat.spout.client.config import kafka_spout_to_dict
        client = kafka_spout_to_dict(job.kafka_spout)
        client["consumer"] = mask_secrets(client["consumer"])
        out["kafkaSpout"] = client
    return out


def config_warnings(job: JobConfig) -> List[str]:
    """Advice about legal but surprising settings, one sentence each."""
    out: List[str] = []
    if job.uses_kafka_offsets and job.spout.scheme == "raw":
        out.append("kafkaSpout with spout.scheme raw: bolts get one field, the value bytes; "
                   "storm-kafka-client's default RecordTranslator emits (topic, partition, "
                   "offset, key, value): set spout.scheme: record_translator to keep that "
                   "tuple shape.")
    if job.spout.zk_servers is None and not job.uses_kafka_offsets:
        out.append("spout.zkServers is unset: offsets are stored in Storm's ZooKeeper "
                   f"({','.join(offset_store_servers(job.spout, job.topology))}), as "
                   "storm-kafka does (STORM-692).")
    if job.spout.fetch_max_wait == 0 and job.spout.min_fetch_byte == 0:
        out.append("fetchMaxWait and minFetchByte are both 0: an idle partition is polled "
                   "without pause (Storm 1.0.1+ defaults).")
    if job.spout.max_offset_behind != LONG_MAX and not job.spout.max_offset_behind_reset_to_window:
        out.append(f"maxOffsetBehind is {job.spout.max_offset_behind}: a stored offset further "
                   "behind than that is reset to the startOffsetTime offset, skipping data "
                   "(STORM-399); maxOffsetBehindResetToWindow keeps the last window instead.")
    return out

