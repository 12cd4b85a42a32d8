"""The frozen config objects (brokers, hosts, SpoutConfig, topology, Spark, the job) and
Storm's constants (offset times, limits, scheme and retry-manager names).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Literal, Mapping, Optional, Tuple, Union, get_args

from storm_kafka_compat.config.kafka_settings import KafkaSettings, kafka_settings_from_dict
from storm_kafka_compat.config.kafka_spout import KafkaSpoutConfig

if TYPE_CHECKING:  # the spec's module checks its entries with the field checkers
    from storm_kafka_compat.config.topology_spec import TopologySpec


#: ``kafka.api.OffsetRequest.EarliestTime()``
EARLIEST_TIME = -2
#: ``kafka.api.OffsetRequest.LatestTime()``
LATEST_TIME = -1
#: storm-kafka's ``KafkaUtils.NO_OFFSET``: the broker returned no offset
NO_OFFSET = -5
#: Java ``Long.MAX_VALUE``, the default ``maxOffsetBehind`` since 0.9.3
LONG_MAX = 2**63 - 1
#: new messages per partition per batch (``run --max-messages``): large enough that the
#: task's time budget, not this cap, ends a batch when data is plentiful. Each batch is
#: a Spark job (about 70 ms of scheduling) and a barrier where a task waits for the
#: slowest: with 100,000 a confluent task read its two partitions in about 0.25 s, so
#: a fifth of a batch was scheduling (bench, 4M x 100 B, Kafka 3.9: 11 batches, 0.75 of
#: the plain job; 1,000,000: 4 batches, 0.86). Storm's spout has no such cap
#: (``topology.max.spout.pending`` bounds what is in flight, when set)
DEFAULT_MAX_MESSAGES_PER_PARTITION = 1_000_000

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
    #: zkRoot and id name the ZooKeeper documents; None for a storm-kafka-client job
    #: whose offsets live in a Kafka consumer group (kafkaSpout.offsetStore: kafka)
    zk_root: Optional[str]                               # zkRoot
    id: Optional[str]                                    # id
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
    # useStartOffsetTimeIfOffsetOutOfRange
    use_start_offset_time_if_offset_out_of_range: bool = True
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
    corrupt_state_policy: "CorruptStatePolicy" = "storm"
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


#: storm.zookeeper.servers when nothing sets it (Storm's defaults.yaml)
DEFAULT_STORM_ZOOKEEPER: Tuple[str, ...] = ("127.0.0.1",)


@dataclass(frozen=True)
class TopologyConfig:
    """The Storm topology-config keys the spout honours."""

    name: str                                            # topology.name
    id: Optional[str] = None                             # the topology id written to ZooKeeper
    wildcard_match: bool = False                         # kafka.topic.wildcard.match
    zookeeper_servers: Tuple[str, ...] = DEFAULT_STORM_ZOOKEEPER  # storm.zookeeper.servers
    zookeeper_port: int = 2181                           # storm.zookeeper.port
    zookeeper_session_timeout_ms: int = 20000            # storm.zookeeper.session.timeout
    zookeeper_connection_timeout_ms: int = 15000         # storm.zookeeper.connection.timeout
    zookeeper_retry_times: int = 5                       # storm.zookeeper.retry.times
    zookeeper_retry_interval_ms: int = 1000              # storm.zookeeper.retry.interval
    message_timeout_secs: int = 30                       # topology.message.timeout.secs
    max_spout_pending: Optional[int] = None              # topology.max.spout.pending
    tick_tuple_freq_secs: Optional[int] = None           # topology.tick.tuple.freq.secs
    zookeeper_auth: Optional[ZkAuth] = None             # storm.zookeeper.auth.* (digest)
    trident_tx_state_id: Optional[str] = None            # trident.txStateId (ours)
    transactional_root: str = "/transactional"           # transactional.zookeeper.root
    state_dir: Optional[str] = None                      # topology.state.dir (ours)
    bolt_hosts: Optional[int] = None                     # topology.bolt.hosts (ours)


@dataclass(frozen=True)
class SparkConfig:
    """How the Spark side runs."""

    master: str = "local[2]"
    app_name: str = "storm-kafka-compat"
    #: number of Spark tasks fetching per batch (None: one per partition, at most
    #: the default parallelism)
    tasks: Optional[int] = None
    conf: Mapping[str, str] = field(default_factory=dict)
    #: Python files, packages (directories) and .zip/.egg/.whl archives the executors
    #: import (the bolt modules); relative paths are relative to the CONFIG file
    py_files: Tuple[str, ...] = ()
    #: how long one batch's tasks fetch and process new messages, in ms (Spark's
    #: trigger interval); None: half the spout's commit interval, 100 ms to 1 s.
    #: Longer batches mean fewer Spark jobs (throughput) against more latency and
    #: more to replay after a crash (docs/performance.md, docs/operations.md)
    trigger_interval_ms: Optional[int] = None


@dataclass(frozen=True)
class JobConfig:
    """The whole CONFIG file: spout, hosts, topology, spark, bolts."""

    spout: SpoutConfig
    topology: TopologyConfig
    spark: SparkConfig = SparkConfig()
    #: ``module:callable`` of a simple bolt, or None when ``topology_spec`` is given
    bolt: Optional[str] = None
    #: a topology of bolts with groupings (``topology.bolts``), or None
    topology_spec: Optional[TopologySpec] = None
    #: the ``kafka`` mapping as written (client settings, backend, broker version);
    #: :attr:`kafka_settings` splits it by client
    kafka: Mapping[str, Any] = field(default_factory=dict)
    #: storm-kafka-client's KafkaSpoutConfig (the ``kafkaSpout`` section), or None
    kafka_spout: Optional[KafkaSpoutConfig] = None
    #: ``module:callable`` of a DataFrame-mode batch function (instead of bolts), or None
    dataframe: Optional[str] = None

    @functools.cached_property
    def kafka_settings(self) -> KafkaSettings:
        """The ``kafka`` mapping split by client; split once, as the driver asks for it
        every batch."""
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
    "record_with_headers",  # record_translator plus the record's timestamp and headers
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

#: what ``corruptStatePolicy`` may say: fall back as Storm does, or stop the run
CorruptStatePolicy = Literal["storm", "fail"]
CORRUPT_STATE_POLICIES: Tuple[CorruptStatePolicy, ...] = get_args(CorruptStatePolicy)
