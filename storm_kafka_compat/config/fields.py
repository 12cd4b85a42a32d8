"""The field tables of SpoutConfig and the topology keys (Storm name, type, default,
meaning, versions) and the small checkers every section parser uses.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import MISSING, dataclass
from dataclasses import fields as _dc_fields
from typing import Any, Dict, Iterable, Literal, Mapping, Optional, Sequence, Tuple, Type, get_args

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.model import (LONG_MAX, REQUIRED, SCHEME_NAMES, SpoutConfig,
                                             TopologyConfig)


_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_CALLABLE_RE = re.compile(rf"^{_IDENT}(\.{_IDENT})*:{_IDENT}(\.{_IDENT})*$")
DOTTED_RE = re.compile(rf"^{_IDENT}(\.{_IDENT})+$")

#: placeholder shown instead of secrets by :func:`effective_config`
MASK = "***"
SECRET_WORDS = ("password", "secret", "jaas", "token", "credential", "auth.payload",
                 "sasl_plain_password", "private")


def is_callable_ref(text: Any) -> bool:
    """Return True if ``text`` looks like ``package.module:callable``."""
    return isinstance(text, str) and bool(_CALLABLE_RE.match(text))


def _snake(name: str) -> str:
    """``fetchSizeBytes`` -> ``fetch_size_bytes``."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def type_name(value: Any) -> str:
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
                if f.default_factory is not MISSING:
                    return f.default_factory()
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
    _spout("corruptStatePolicy", "String", "A stored document Storm would not resume from "
           "(or with a negative offset, or naming another partition): 'storm' falls back to "
           "startOffsetTime with a WARN (resumes, for another partition's), 'fail' stops.",
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
    _topo("topology.tick.tuple.freq.secs", "tick_tuple_freq_secs", "Integer", "Every bolt task "
          "gets a tick tuple this often, in seconds (a bolt's own setting wins); unset means "
          "no ticks."),
    _topo("trident.txStateId", "trident_tx_state_id", "String", "Moving from a Trident Kafka "
          "spout: its newStream name; a partition without a storm-kafka document resumes "
          "from Trident's state (docs/trident.md).", extension=True),
    _topo("transactional.zookeeper.root", "transactional_root", "String", "Root of "
          "Trident's transactional state (Storm default /transactional)."),
    _topo("topology.state.dir", "state_dir", "String", "Where the bolt tasks' state is saved "
          "with the offsets at each commit (a directory on the driver's machine; default "
          "~/.local/state/storm-kafka-compat/<zkRoot>/<id>); see docs/bolts-and-acker.md.",
          extension=True),
    _topo("topology.bolt.hosts", "bolt_hosts", "Integer", "Processes holding the bolt tasks "
          "behind fields, global and all groupings (default: one per task, at most the "
          "driver's cores).", extension=True),
)

#: Keys of the topology section that build :class:`ZkAuth`.
AUTH_KEYS: Tuple[str, ...] = ("storm.zookeeper.auth.scheme", "storm.zookeeper.auth.payload",
                              "storm.zookeeper.topology.auth.scheme",
                              "storm.zookeeper.topology.auth.payload", "acl")
#: Keys of the topology section that hold a topology of bolts (kept raw and
#: interpreted by ``topology.spec.from_spec``).
BOLT_TOPOLOGY_KEYS: Tuple[str, ...] = ("bolts",)
#: the keys of one ``topology.bolts`` entry
BOLT_ENTRY_KEYS: Tuple[str, ...] = ("name", "bolt", "kind", "parallelism", "inputs",
                                     "output_fields", "properties", "shell", "resources",
                                     "tick_freq_secs")

SPARK_KEYS: Tuple[str, ...] = ("master", "appName", "app_name", "tasks", "conf", "pyFiles",
                               "py_files", "triggerInterval", "trigger_interval")
#: how the ``hosts`` section finds the brokers: storm-kafka's ZkHosts and StaticHosts, or
#: a bootstrap list (storm-kafka-client)
HostsKind = Literal["zk", "static", "bootstrap"]
HOSTS_KINDS: Tuple[HostsKind, ...] = get_args(HostsKind)
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


SPOUT_BY_NAME = _lookup(SPOUT_FIELDS)
TOPOLOGY_BY_NAME = _lookup(TOPOLOGY_FIELDS)


# --- small checkers -----------------------------------------------------------


def unknown_key(section: str, key: Any, valid: Sequence[str]) -> ConfigError:
    """A ConfigError for an unknown key, suggesting the closest valid name."""
    text = str(key)
    dotted = f"{section}.{text}" if section else text
    close = difflib.get_close_matches(text, list(valid), n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    where = f"the {section} section" if section else "the top level"
    return ConfigError(
        f"unknown key {dotted!r} in {where}.{hint} Valid keys: {', '.join(valid)}.",
        key=dotted, value=key, allowed=valid)


def require_mapping(value: Any, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key} must be a mapping of keys to values, got {value!r} "
                          f"({type_name(value)}); write it as '{key}:' followed by indented "
                          f"'name: value' lines.", key=key, value=value)
    for k in value:
        if not isinstance(k, str) and not (key.endswith("static") and isinstance(k, int)):
            raise ConfigError(f"{key} has a non-string key {k!r}; quote it.", key=f"{key}.{k}",
                              value=k)
    return value


def check_int(value: Any, key: str, *, lo: Optional[int] = None, hi: int = LONG_MAX,
               what: str = "an integer") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key} must be {what}, got {value!r} ({type_name(value)}); "
                          f"write a whole number without quotes.", key=key, value=value)
    if lo is not None and value < lo:
        raise ConfigError(f"{key} must be >= {lo}, got {value}; use a value of at least {lo}.",
                          key=key, value=value)
    if value > hi:
        raise ConfigError(f"{key} must be <= {hi} (the Java type's maximum), got {value}.",
                          key=key, value=value)
    return value


def check_bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r} ({type_name(value)}).",
                          key=key, value=value, allowed=("true", "false"))
    return value


def check_str(value: Any, key: str, *, empty_ok: bool = True) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {value!r} ({type_name(value)}); "
                          f"quote the value.", key=key, value=value)
    if not empty_ok and not value.strip():
        raise ConfigError(f"{key} must not be empty; give a non-empty string.",
                          key=key, value=value)
    return value


def check_bolt_ref(value: Any, key: str = "bolt", *,
                   error: Type[ConfigError] = ConfigError) -> str:
    """Validate a ``module:callable`` bolt reference and return it, stripped; a bad one
    raises ``error`` (a topology's entries raise TopologyError)."""
    text = check_str(value, key, empty_ok=False)
    if not is_callable_ref(text.strip()):
        raise error(f"{key} {text!r} is not 'package.module:callable'; name the module "
                    f"and the function or class, e.g. 'myjob.bolts:count_words'.",
                    key=key, value=text)
    return text.strip()


def check_str_list(value: Any, key: str, what: str = "host names") -> Tuple[str, ...]:
    """A list of non-empty strings; a comma-separated string is split."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"{key} must be a non-empty list of {what}, got {value!r}.",
                          key=key, value=value)
    out = []
    for i, item in enumerate(value):
        out.append(check_str(item, f"{key}[{i}]", empty_ok=False).strip())
    return tuple(out)


def check_zk_path(value: Any, key: str, *, empty_ok: bool) -> str:
    path = check_str(value, key)
    if path == "" and empty_ok:
        return path
    if not path.startswith("/") or (len(path) > 1 and path.endswith("/")) or path == "/" \
            or "//" in path:
        fix = "/" + path.strip("/") if path.strip("/") else ('""' if empty_ok else "/brokers")
        raise ConfigError(f"{key} {path!r} is not a valid ZooKeeper path: it must start with "
                          f"'/' and must not end with '/' (Storm would build an invalid path); "
                          f"use {fix!r}.", key=key, value=path)
    return path


_INTERVAL_UNITS = {"ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "sec": 1000,
                   "second": 1000, "seconds": 1000, "min": 60_000, "minute": 60_000,
                   "minutes": 60_000}
_INTERVAL_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$")
#: the shortest trigger interval: below it a batch is all Spark overhead
MIN_TRIGGER_INTERVAL_MS = 10


def parse_interval_ms(value: Any, key: str) -> int:
    """A trigger interval as Spark writes one (``"2 seconds"``, ``"500 ms"``,
    ``"1 minute"``) or an integer of milliseconds, in milliseconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{key} must be milliseconds or a duration such as \"2 seconds\", "
                          f"got {value!r}", key=key, value=value)
    if isinstance(value, int):
        ms = value
    else:
        match = _INTERVAL_RE.match(str(value).lower())
        if not match or match.group(2) not in _INTERVAL_UNITS:
            raise ConfigError(f"{key} {value!r} is not a duration: write milliseconds (2000) "
                              "or a number and a unit (\"500 ms\", \"2 seconds\", "
                              "\"1 minute\")", key=key, value=value)
        ms = int(float(match.group(1)) * _INTERVAL_UNITS[match.group(2)])
    if ms < MIN_TRIGGER_INTERVAL_MS:
        raise ConfigError(f"{key} {value!r} is shorter than {MIN_TRIGGER_INTERVAL_MS} ms; a batch "
                          "that short is all Spark overhead: raise it, or leave it out for "
                          "the default (half the commit interval, 100 ms to 1 s)",
                          key=key, value=value)
    return ms


#: Storm class names a CONFIG topology or a Flux file may name for the KafkaBolt
#: (:mod:`storm_kafka_compat.topology.kafka_bolt`)
STORM_KAFKA_BOLT_CLASSES = (
    "org.apache.storm.kafka.bolt.KafkaBolt",      # storm-kafka 1.x and storm-kafka-client
    "storm.kafka.bolt.KafkaBolt",                 # storm-kafka 0.9.x/0.10.x
)
