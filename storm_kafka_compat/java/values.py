"""What a Java expression evaluates to in the converter, and the Java names it knows.

A value is a plain Python value (``str``, ``int``, ``float``, ``bool``, ``None``, a
``list``), a :class:`JObject` (an object the topology builds: a ``SpoutConfig``, a
``KafkaSpoutConfig`` builder, a ``Properties`` map, a ``TopologyBuilder``), or a
placeholder written into a string: ``${kafka.topic}`` for a value the topology reads at
run time (a ``Properties``/``Config`` lookup, ``args[i]``, an environment variable), and
``${?N}`` for one that cannot be known from the source (:class:`Unknown` says why).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from storm_kafka_compat.java.source import Origin

# --- placeholders -------------------------------------------------------------------------

#: kinds of :class:`Unknown`
LOOKUP = "lookup"          # Properties/Config/System property: ${key}
ARGS = "args"              # the main method's args[i]: ${args.i}
ENV = "env"                # System.getenv("X"): ${ENV-X}, as Flux's --env-filter
UNRESOLVED = "unresolved"  # an expression the converter cannot follow
RANDOM = "random"          # UUID.randomUUID(), new Random(), ... : new on every run
TIME = "time"              # System.currentTimeMillis(), new Date(), ... : new on every run
#: the kinds a --filter/--env-filter fills
FILLABLE = (LOOKUP, ARGS, ENV)
#: the kinds whose value changes on every submission
PER_RUN = (RANDOM, TIME)

#: an opaque token: ``${?3}``
OPAQUE_RE = re.compile(r"\$\{\?(\d+)\}")


@dataclass(frozen=True)
class Unknown:
    """A value the source does not give.

    ``token`` is what is written into the value (``${kafka.topic}``, ``${?3}``);
    ``key`` the name a ``--filter`` file gives it (``kafka.topic``, ``args.0``,
    ``ENV-KAFKA_TOPIC``; None for the opaque kinds); ``default`` the value the code
    falls back to (``getProperty(key, default)``, ``args.length > 0 ? args[0] : d``).
    """

    token: str
    kind: str
    origin: Origin
    key: Optional[str] = None
    default: Any = None

    @property
    def per_run(self) -> bool:
        return self.kind in PER_RUN


# --- objects ------------------------------------------------------------------------------


@dataclass(eq=False)
class JObject:
    """An object the topology builds, as Flux would describe it: class, constructor
    arguments or factory, public fields set (``props``) and methods called, in order.

    ``entries`` holds what ``put``/``setProperty`` stored in a map (for later lookups);
    ``decls`` the spouts and bolts a ``TopologyBuilder`` declared.
    """

    class_name: str
    origin: Origin
    args: List[Any] = field(default_factory=list)
    factory: Optional[str] = None
    props: Dict[str, Any] = field(default_factory=dict)
    methods: List[Tuple[str, List[Any], Origin]] = field(default_factory=list)
    entries: Dict[str, Any] = field(default_factory=dict)
    decls: List[Any] = field(default_factory=list)
    var: Optional[str] = None

    @property
    def simple(self) -> str:
        """``org.apache.storm.kafka.spout.KafkaSpoutConfig$Builder`` ->
        ``KafkaSpoutConfig.Builder``."""
        return self.class_name.rpartition(".")[2].replace("$", ".")

    def describe(self) -> str:
        named = f" {self.var}" if self.var else ""
        return f"{self.simple}{named} ({self.origin.where})"


@dataclass(eq=False)
class Declaration:
    """A component a ``TopologyBuilder`` declared: its name, the object, its parallelism
    and ``setNumTasks``."""

    name: Any
    component: Any
    parallelism: Any
    origin: Origin
    tasks: Any = None


class SpoutDecl(Declaration):
    """``builder.setSpout(name, spout, parallelism)``."""


@dataclass(eq=False)
class BoltDecl(Declaration):
    """``builder.setBolt(name, bolt, parallelism)`` and the groupings chained on it."""

    inputs: List[Dict[str, Any]] = field(default_factory=list)
    #: ``addConfiguration(key, value)`` on the declarer (the bolt's own configuration)
    config: Dict[Any, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Submission:
    """``StormSubmitter.submitTopology(name, conf, topology)`` (or LocalCluster's)."""

    name: Any
    conf: Any
    topology: Any
    origin: Origin
    local: bool


@dataclass(frozen=True)
class ClassRef:
    """A class named in an expression (``Config``, ``KafkaSpoutConfig.Builder``)."""

    name: str       # qualified when known


@dataclass(frozen=True)
class MainArgs:
    """The ``String[] args`` of a ``main`` method."""


# --- Java names ---------------------------------------------------------------------------

#: the classes the converter knows, by package (``import pkg.*`` resolves them)
KNOWN_CLASSES: Dict[str, Tuple[str, ...]] = {
    "org.apache.storm.kafka.": ("KafkaSpout", "SpoutConfig", "ZkHosts", "StaticHosts",
                                "Broker", "StringScheme", "StringKeyValueScheme",
                                "StringMessageAndMetadataScheme", "StringMultiSchemeWithTopic",
                                "KeyValueSchemeAsMultiScheme",
                                "MessageMetadataSchemeAsMultiScheme", "KafkaConfig"),
    "org.apache.storm.kafka.trident.": ("GlobalPartitionInformation",),
    "org.apache.storm.spout.": ("SchemeAsMultiScheme", "RawMultiScheme", "RawScheme"),
    "org.apache.storm.kafka.spout.": ("KafkaSpout", "KafkaSpoutConfig",
                                      "KafkaSpoutRetryExponentialBackoff",
                                      "DefaultRecordTranslator", "FirstPollOffsetStrategy"),
    "org.apache.storm.kafka.bolt.": ("KafkaBolt",),
    "org.apache.storm.kafka.bolt.selector.": ("DefaultTopicSelector",),
    "org.apache.storm.kafka.bolt.mapper.": ("FieldNameBasedTupleToKafkaMapper",),
    "java.util.": ("Properties", "HashMap", "Map", "UUID", "Arrays", "Collections", "List",
                   "ArrayList", "Date", "Random"),
    "java.util.regex.": ("Pattern",),
}
# Storm 0.9/0.10 names of the same classes
KNOWN_CLASSES["storm.kafka."] = KNOWN_CLASSES["org.apache.storm.kafka."]
KNOWN_CLASSES["storm.kafka.trident."] = KNOWN_CLASSES["org.apache.storm.kafka.trident."]
KNOWN_CLASSES["backtype.storm.spout."] = KNOWN_CLASSES["org.apache.storm.spout."]
KNOWN_CLASSES["storm.kafka.bolt."] = KNOWN_CLASSES["org.apache.storm.kafka.bolt."]
KNOWN_CLASSES["storm.kafka.bolt.selector."] = KNOWN_CLASSES["org.apache.storm.kafka.bolt.selector."]
KNOWN_CLASSES["storm.kafka.bolt.mapper."] = KNOWN_CLASSES["org.apache.storm.kafka.bolt.mapper."]

#: the KafkaSpout classes: one CONFIG each
KAFKA_SPOUTS = ("org.apache.storm.kafka.KafkaSpout", "storm.kafka.KafkaSpout",
                "org.apache.storm.kafka.spout.KafkaSpout")
#: classes read as maps: ``put``/``setProperty`` store, ``get``/``getProperty`` look up
MAP_CLASSES = ("Properties", "HashMap", "Map", "TreeMap", "LinkedHashMap", "Config",
               "ImmutableMap.Builder")
#: methods that read a setting by name: a lookup placeholder when the map does not hold it
LOOKUP_METHODS = ("getProperty", "get", "getOrDefault", "getString", "getInt", "getLong",
                  "getBoolean", "getDouble", "getStringList", "getInteger")
#: storm Config setters and the key each sets
CONFIG_SETTERS: Dict[str, str] = {
    "setMaxSpoutPending": "topology.max.spout.pending",
    "setMessageTimeoutSecs": "topology.message.timeout.secs",
    "setNumWorkers": "topology.workers",
    "setNumAckers": "topology.acker.executors",
    "setDebug": "topology.debug",
    "setMaxTaskParallelism": "topology.max.task.parallelism",
}
#: static values of the JDK and Storm that topologies use as settings
CONSTANTS: Dict[str, Any] = {
    "Integer.MAX_VALUE": 2**31 - 1, "Integer.MIN_VALUE": -2**31,
    "Long.MAX_VALUE": 2**63 - 1, "Long.MIN_VALUE": -2**63,
    "Boolean.TRUE": True, "Boolean.FALSE": False,
}
#: static calls that give a Storm time (``startOffsetTime``)
OFFSET_TIMES: Dict[str, int] = {"OffsetRequest.EarliestTime": -2,
                                "OffsetRequest.LatestTime": -1}
#: static calls whose value is new on every run
PER_RUN_CALLS: Dict[str, str] = {
    "UUID.randomUUID": RANDOM, "Math.random": RANDOM, "RandomStringUtils.randomAlphanumeric":
    RANDOM, "ThreadLocalRandom.current": RANDOM,
    "System.currentTimeMillis": TIME, "System.nanoTime": TIME, "Instant.now": TIME,
    "LocalDateTime.now": TIME, "LocalDate.now": TIME, "ZonedDateTime.now": TIME,
    "Clock.systemUTC": TIME,
}
#: classes whose construction is new on every run
PER_RUN_CLASSES: Dict[str, str] = {"Random": RANDOM, "Date": TIME, "SecureRandom": RANDOM}
#: TimeUnit conversions to milliseconds
TIME_UNITS_MS: Dict[str, float] = {"NANOSECONDS": 1e-6, "MICROSECONDS": 1e-3,
                                   "MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60000,
                                   "HOURS": 3600000, "DAYS": 86400000}


#: Kafka client config classes: ``ConsumerConfig.GROUP_ID_CONFIG`` is ``group.id``
KAFKA_CONFIG_CLASSES = ("ConsumerConfig", "ProducerConfig", "CommonClientConfigs", "SaslConfigs",
                        "SslConfigs")
#: the constants whose key the naming rule does not give
KAFKA_CONFIG_KEYS: Dict[str, str] = {
    "KEY_DESERIALIZER_CLASS_CONFIG": "key.deserializer",
    "VALUE_DESERIALIZER_CLASS_CONFIG": "value.deserializer",
    "KEY_SERIALIZER_CLASS_CONFIG": "key.serializer",
    "VALUE_SERIALIZER_CLASS_CONFIG": "value.serializer",
    "SASL_JAAS_CONFIG": "sasl.jaas.config",
    "PARTITION_ASSIGNMENT_STRATEGY_CONFIG": "partition.assignment.strategy",
}


def kafka_config_key(constant: str) -> str:
    """``MAX_POLL_RECORDS_CONFIG`` -> ``max.poll.records`` (Kafka names its constants after
    their keys, with ``_CONFIG`` appended)."""
    if constant in KAFKA_CONFIG_KEYS:
        return KAFKA_CONFIG_KEYS[constant]
    base = constant[:-len("_CONFIG")] if constant.endswith("_CONFIG") else constant
    return base.lower().replace("_", ".")


def storm_config_key(constant: str) -> str:
    """``Config.TOPOLOGY_MAX_SPOUT_PENDING`` -> ``topology.max.spout.pending``: Storm names
    each Config constant after its key."""
    return constant.lower().replace("_", ".")


def java_string(value: Any) -> str:
    """A value as Java's string concatenation writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return f"{value:.1f}"
    if isinstance(value, list):
        return "[" + ", ".join(java_string(v) for v in value) + "]"
    return str(value)
