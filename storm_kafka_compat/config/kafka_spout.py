"""storm-kafka-client's ``KafkaSpoutConfig``: fields, names, defaults, validation.

The CONFIG section ``kafkaSpout`` holds these fields under their Storm names
(camelCase; the snake_case attribute is accepted too). Defaults are Storm's
(1.1.0 through 2.8.8). ``offsetStore`` chooses where offsets live: ``kafka``
(consumer-group offsets, this section's default) or ``zookeeper`` (the legacy
spout's documents; the rest of the section is then unused).

This module is pure.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Final, Literal, Mapping, Optional, Tuple, get_args

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.kafka_spout_retry import INT_MAX, RetrySettings, TimeInterval

log = logging.getLogger(__name__)

#: where a newly assigned partition starts (storm-kafka-client's ``FirstPollOffsetStrategy``;
#: the rule is :mod:`storm_kafka_compat.spout.client.first_poll`)
FirstPollStrategy = Literal["EARLIEST", "LATEST", "UNCOMMITTED_EARLIEST", "UNCOMMITTED_LATEST"]
EARLIEST: Final = "EARLIEST"
LATEST: Final = "LATEST"
UNCOMMITTED_EARLIEST: Final = "UNCOMMITTED_EARLIEST"
UNCOMMITTED_LATEST: Final = "UNCOMMITTED_LATEST"
#: the strategies of a (non-Trident) KafkaSpout
STRATEGIES: Tuple[FirstPollStrategy, ...] = get_args(FirstPollStrategy)

#: storm-kafka-client's ``ProcessingGuarantee``
ProcessingGuarantee = Literal["AT_LEAST_ONCE", "AT_MOST_ONCE", "NO_GUARANTEE"]
AT_LEAST_ONCE: Final = "AT_LEAST_ONCE"
AT_MOST_ONCE: Final = "AT_MOST_ONCE"
NO_GUARANTEE: Final = "NO_GUARANTEE"
GUARANTEES: Tuple[ProcessingGuarantee, ...] = get_args(ProcessingGuarantee)

#: Kafka's ``auto.offset.reset``: where a partition whose position is outside the log goes
OffsetReset = Literal["earliest", "latest", "none"]
OFFSET_RESETS: Tuple[OffsetReset, ...] = get_args(OffsetReset)

#: where the section's offsets live
OffsetStoreKind = Literal["zookeeper", "kafka"]
OFFSET_STORES: Tuple[OffsetStoreKind, ...] = get_args(OffsetStoreKind)

#: (Storm name, attribute, meaning) of every ``kafkaSpout`` key, in doc order
KAFKA_SPOUT_FIELDS: Tuple[Tuple[str, str, str], ...] = (
    ("offsetStore", "offset_store", "where offsets live: kafka (consumer group) or zookeeper"),
    ("bootstrapServers", "bootstrap_servers", "Kafka bootstrap servers (host:port list)"),
    ("groupId", "group_id", "consumer group the offsets are committed to (group.id)"),
    ("topics", "topics", "topic names (NamedTopicFilter); missing topics are skipped"),
    ("topicPattern", "topic_pattern", "Java regex matched in full against every topic "
     "(PatternTopicFilter)"),
    ("firstPollOffsetStrategy", "first_poll_offset_strategy",
     "EARLIEST, LATEST, UNCOMMITTED_EARLIEST or UNCOMMITTED_LATEST"),
    ("processingGuarantee", "processing_guarantee",
     "AT_LEAST_ONCE, AT_MOST_ONCE or NO_GUARANTEE"),
    ("offsetCommitPeriodMs", "offset_commit_period_ms",
     "commit period of AT_LEAST_ONCE and NO_GUARANTEE"),
    ("maxUncommittedOffsets", "max_uncommitted_offsets",
     "per-partition bound of emitted, uncommitted offsets (AT_LEAST_ONCE)"),
    ("pollTimeoutMs", "poll_timeout_ms", "longest wait of an idle fetch"),
    ("partitionRefreshPeriodMs", "partition_refresh_period_ms",
     "period of topic and partition discovery"),
    ("emitNullTuples", "emit_null_tuples", "emit records the scheme turns into nothing"),
    ("tupleTrackingEnforced", "tuple_tracking_enforced",
     "track tuples (topology.max.spout.pending) under AT_MOST_ONCE and NO_GUARANTEE"),
    ("retry", "retry", "KafkaSpoutRetryExponentialBackoff: initialDelay, delayPeriod, "
     "maxRetries, maxDelay"),
    ("consumer", "consumer", "Kafka consumer properties, passed through"),
)
_BY_NAME: Dict[str, str] = {}
for _storm, _attr, _ in KAFKA_SPOUT_FIELDS:
    _BY_NAME[_storm] = _attr
    _BY_NAME[_attr] = _attr
_BY_NAME["props"] = "consumer"
del _storm, _attr

RETRY_KEYS: Tuple[str, ...] = ("initialDelay", "delayPeriod", "maxRetries", "maxDelay")


def missing_group_error(section: str = "kafkaSpout") -> ConfigError:
    """The error for a Kafka-store ``kafkaSpout`` without a group id.

    Storm's builder accepts a missing ``group.id`` (``KafkaSpoutConfigTest.testBasic``),
    but the spout then cannot commit (kafka-clients refuses commits without a group), so
    every guarantee fails at its first commit. Here the CONFIG is refused up front
    (docs/storm-kafka-client.md, "Differences from the Java spout").
    """
    return ConfigError(f"{section}.groupId is missing; the Kafka offset store commits to a "
                       "consumer group: set groupId (or consumer.group.id) to the group the "
                       "Storm topology used. Storm accepts a spout without one, but none of "
                       "its commits can succeed.", key=f"{section}.groupId", value=None)


@dataclass(frozen=True)
class KafkaSpoutConfig:
    """storm-kafka-client's ``KafkaSpoutConfig`` (what this engine uses of it)."""

    offset_store: OffsetStoreKind = "kafka"
    bootstrap_servers: Tuple[str, ...] = ()
    group_id: Optional[str] = None
    topics: Optional[Tuple[str, ...]] = None
    topic_pattern: Optional[str] = None
    first_poll_offset_strategy: FirstPollStrategy = UNCOMMITTED_EARLIEST
    processing_guarantee: ProcessingGuarantee = AT_LEAST_ONCE
    offset_commit_period_ms: int = 30_000
    max_uncommitted_offsets: int = 10_000_000
    poll_timeout_ms: int = 200
    partition_refresh_period_ms: int = 2_000
    emit_null_tuples: bool = False
    tuple_tracking_enforced: bool = False
    retry: RetrySettings = RetrySettings()
    consumer: Mapping[str, Any] = field(default_factory=dict)

    @property
    def uses_kafka_store(self) -> bool:
        return self.offset_store == "kafka"

    @property
    def auto_offset_reset(self) -> OffsetReset:
        """``auto.offset.reset`` as the spout uses it: ``earliest`` under
        AT_LEAST_ONCE when unset (storm-kafka-client sets it), else Kafka's
        default ``latest``."""
        value = self.consumer.get("auto.offset.reset")
        if value is None:
            return "earliest" if self.processing_guarantee == AT_LEAST_ONCE else "latest"
        return _offset_reset(value, "consumer.auto.offset.reset")

    @property
    def max_poll_records(self) -> Optional[int]:
        """``max.poll.records`` when set: caps the records fetched per partition
        per batch (the "one poll" of the maxUncommittedOffsets bound)."""
        value = self.consumer.get("max.poll.records")
        return int(value) if value is not None else None

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` is subscribed (names, or a full regex match)."""
        if self.topic_pattern is not None:
            return re.fullmatch(self.topic_pattern, topic) is not None
        return topic in (self.topics or ())


def _int(value: Any, key: str, lo: int, hi: int = 2**63 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ConfigError(f"{key} must be an integer in {lo}..{hi}, got {value!r}.",
                          key=key, value=value)
    return value


def _bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r}.", key=key, value=value)
    return value


def _choice(value: Any, key: str, allowed: Tuple[str, ...]) -> str:
    text = str(value).strip()
    up = text.upper() if allowed[0].isupper() else text.lower()
    if up not in allowed:
        hint = ""
        if "TIMESTAMP" in up:
            hint = " (the TIMESTAMP strategies are Trident-only in Storm)"
        raise ConfigError(f"{key} {value!r} is not one of {', '.join(allowed)}{hint}.",
                          key=key, value=value, allowed=allowed)
    return up


def _servers(value: Any, key: str) -> Tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items or not all(
            isinstance(s, str) and s.strip() for s in items):
        raise ConfigError(f"{key} must be 'host:port[,host:port]' or a list of them, got "
                          f"{value!r}.", key=key, value=value)
    return tuple(s.strip() for s in items)


def retry_settings_from_dict(mapping: Any, section: str = "kafkaSpout.retry") -> RetrySettings:
    """Build :class:`RetrySettings` from ``initialDelay``, ``delayPeriod``,
    ``maxRetries`` and ``maxDelay`` (intervals: ms integers or ``'2ms'``/``'10s'``)."""
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"{section} must be a mapping with {', '.join(RETRY_KEYS)}, got "
                          f"{mapping!r}.", key=section, value=mapping, allowed=RETRY_KEYS)
    values: Dict[str, Any] = {}
    for k, v in mapping.items():
        if k not in RETRY_KEYS:
            close = difflib.get_close_matches(str(k), RETRY_KEYS, n=1)
            raise ConfigError(f"unknown key {section}.{k}"
                              + (f" (did you mean {close[0]}?)" if close else "")
                              + f"; valid keys: {', '.join(RETRY_KEYS)}.",
                              key=f"{section}.{k}", value=v, allowed=RETRY_KEYS)
        if k == "maxRetries":
            values["max_retries"] = _int(v, f"{section}.{k}", 0, INT_MAX)
        else:
            attr = {"initialDelay": "initial_delay", "delayPeriod": "delay_period",
                    "maxDelay": "max_delay"}[k]
            values[attr] = TimeInterval.parse(v, f"{section}.{k}")
    return RetrySettings(**values)


def kafka_spout_config_from_dict(mapping: Any, *, section: str = "kafkaSpout",
                                 default_topic: Optional[str] = None,
                                 default_pattern: bool = False,
                                 default_servers: Tuple[str, ...] = ()) -> KafkaSpoutConfig:
    """Build and validate a :class:`KafkaSpoutConfig` from a CONFIG mapping.

    ``default_topic``/``default_pattern``/``default_servers`` come from the
    ``spout``, ``topology`` and ``hosts`` sections when the section leaves
    topics or servers out.

    Raises
    ------
    ConfigError
        Unknown keys (listing the valid ones), wrong types or values,
        ``enable.auto.commit`` in the consumer properties (rejected as Storm 2.x
        does), a Kafka store without a group id or servers, both ``topics`` and
        ``topicPattern``.
    """
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"{section} must be a mapping of KafkaSpoutConfig fields, got "
                          f"{mapping!r}.", key=section, value=mapping)
    values = _field_values(mapping, section)
    _take_consumer_properties(values, section)
    if values.get("topics") and values.get("topic_pattern"):
        raise ConfigError(f"{section}.topics and {section}.topicPattern are both given; "
                          "subscribe by names or by a pattern, not both.",
                          key=f"{section}.topicPattern", value=values["topic_pattern"])
    if not values.get("topics") and not values.get("topic_pattern") and default_topic:
        if default_pattern:
            values["topic_pattern"] = default_topic
        else:
            values["topics"] = (default_topic,)
    if not values.get("bootstrap_servers") and default_servers:
        values["bootstrap_servers"] = tuple(default_servers)
    cfg = KafkaSpoutConfig(**values)
    _check_complete(cfg, section)
    return cfg


def _name(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key} must be a non-empty string, got {value!r}.", key=key,
                          value=value)
    return value


def _pattern(value: Any, key: str) -> str:
    try:
        re.compile(_name(value, key))
    except re.error as exc:
        raise ConfigError(f"{key} {value!r} is not a valid regex ({exc}).", key=key,
                          value=value) from None
    return str(value)


def _topics(value: Any, key: str) -> Tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items or not all(
            isinstance(t, str) and t.strip() for t in items):
        raise ConfigError(f"{key} must be a topic name or a non-empty list of them, "
                          f"got {value!r}.", key=key, value=value)
    return tuple(t.strip() for t in items)


def _consumer(value: Any, key: str) -> Dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key} must be a mapping of Kafka consumer properties, got "
                          f"{value!r}.", key=key, value=value)
    return dict(value)


#: attribute -> the checker of its CONFIG value (``checker(value, key)``)
_CHECKERS: Dict[str, Callable[[Any, str], Any]] = {
    "offset_store": lambda v, key: _choice(v, key, OFFSET_STORES),
    "bootstrap_servers": _servers,
    "group_id": lambda v, key: _name(v, key).strip(),
    "topic_pattern": _pattern,
    "topics": _topics,
    "first_poll_offset_strategy": lambda v, key: _choice(v, key, STRATEGIES),
    "processing_guarantee": lambda v, key: _choice(v, key, GUARANTEES),
    "offset_commit_period_ms": lambda v, key: _int(v, key, 1),
    "poll_timeout_ms": lambda v, key: _int(v, key, 1),
    "partition_refresh_period_ms": lambda v, key: _int(v, key, 1),
    "max_uncommitted_offsets": lambda v, key: _int(v, key, 1, INT_MAX),
    "emit_null_tuples": _bool,
    "tuple_tracking_enforced": _bool,
    "retry": retry_settings_from_dict,
    "consumer": _consumer,
}


def _field_values(mapping: Mapping[Any, Any], section: str) -> Dict[str, Any]:
    """Every key of the section, checked, by attribute (unknown keys fail and list
    the valid ones; a key given under two names fails)."""
    valid = tuple(s for s, _, _ in KAFKA_SPOUT_FIELDS)
    values: Dict[str, Any] = {}
    for k, v in mapping.items():
        attr = _BY_NAME.get(k)
        key = f"{section}.{k}"
        if attr is None:
            close = difflib.get_close_matches(str(k), valid, n=1)
            raise ConfigError(f"unknown key {key}" + (f" (did you mean {close[0]}?)" if close
                                                       else "")
                              + f"; valid keys: {', '.join(valid)}.", key=key, value=v,
                              allowed=valid)
        if attr in values:
            raise ConfigError(f"{key} is given twice (under two names).", key=key, value=v)
        if v is not None:
            values[attr] = _CHECKERS[attr](v, key)
    return values


def _take_consumer_properties(values: Dict[str, Any], section: str) -> None:
    """The consumer properties the spout reads itself (``group.id``,
    ``bootstrap.servers``) move to their fields; ``enable.auto.commit`` is refused and
    ``max.poll.records``/``auto.offset.reset`` are checked."""
    consumer = dict(values.get("consumer", {}))
    if "enable.auto.commit" in consumer:
        raise ConfigError(
            f"{section}.consumer.enable.auto.commit is not allowed: the spout commits itself "
            "(as Storm 2.x, which rejects it); remove it and choose processingGuarantee "
            "(NO_GUARANTEE is the old auto-commit).", key=f"{section}.consumer.enable.auto.commit",
            value=consumer["enable.auto.commit"])
    if "group.id" in consumer:
        gid = consumer.pop("group.id")
        if values.get("group_id") not in (None, gid):
            raise ConfigError(f"{section}.groupId {values['group_id']!r} and "
                              f"{section}.consumer.group.id {gid!r} differ; give one.",
                              key=f"{section}.groupId", value=values["group_id"])
        values["group_id"] = str(gid)
    if "bootstrap.servers" in consumer:
        values.setdefault("bootstrap_servers",
                          _servers(consumer.pop("bootstrap.servers"),
                                   f"{section}.consumer.bootstrap.servers"))
    if "max.poll.records" in consumer:
        _int(consumer["max.poll.records"], f"{section}.consumer.max.poll.records", 1, INT_MAX)
    reset = consumer.get("auto.offset.reset")
    if reset is not None:
        _offset_reset(reset, f"{section}.consumer.auto.offset.reset")
    values["consumer"] = consumer


def _offset_reset(value: Any, key: str) -> OffsetReset:
    """``value`` as an :data:`OffsetReset` (any case), or a ConfigError naming it."""
    for reset in OFFSET_RESETS:
        if str(value).lower() == reset:
            return reset
    raise ConfigError(f"{key} {value!r} is not earliest, latest or none.", key=key, value=value)


def _check_complete(cfg: KafkaSpoutConfig, section: str) -> None:
    """A Kafka store needs a group, servers and a subscription; a reset policy that
    goes against the guarantee is warned about."""
    if cfg.uses_kafka_store:
        if not cfg.group_id:
            raise missing_group_error(section)
        if not cfg.bootstrap_servers:
            raise ConfigError(f"{section}.bootstrapServers is missing; set it, or use "
                              "'hosts: {bootstrap: ...}' or kafka.bootstrap_servers.",
                              key=f"{section}.bootstrapServers", value=None)
        if not cfg.topics and not cfg.topic_pattern:
            raise ConfigError(f"{section}.topics (or topicPattern) is missing.",
                              key=f"{section}.topics", value=None)
    if cfg.processing_guarantee == AT_MOST_ONCE and cfg.auto_offset_reset not in ("latest",
                                                                                  "none"):
        log.warning("%s: auto.offset.reset is %s under AT_MOST_ONCE: messages may be "
                    "processed more than once after an out-of-range reset", section,
                    cfg.auto_offset_reset)
    if cfg.processing_guarantee == AT_LEAST_ONCE and cfg.auto_offset_reset not in ("earliest",
                                                                                   "none"):
        log.warning("%s: auto.offset.reset is %s under AT_LEAST_ONCE: messages may be "
                    "skipped after an out-of-range reset", section, cfg.auto_offset_reset)


def migration_hint(start_offset_time: int, ignore_zk_offsets: bool) -> str:
    """storm-kafka's ``startOffsetTime``/``ignoreZkOffsets`` as a first-poll strategy
    (storm-kafka-client's helper table): -2 -> EARLIEST/UNCOMMITTED_EARLIEST,
    anything else -> LATEST/UNCOMMITTED_LATEST."""
    earliest = start_offset_time == -2
    if ignore_zk_offsets:
        return "EARLIEST" if earliest else "LATEST"
    return "UNCOMMITTED_EARLIEST" if earliest else "UNCOMMITTED_LATEST"


def kafka_spout_to_dict(cfg: KafkaSpoutConfig) -> Dict[str, Any]:
    """Every field under its Storm name (for ``config check``); secrets are the
    caller's to mask."""
    out: Dict[str, Any] = {}
    for storm, attr, _ in KAFKA_SPOUT_FIELDS:
        value = getattr(cfg, attr)
        if attr == "retry":
            value = {"initialDelay": str(value.initial_delay),
                     "delayPeriod": str(value.delay_period),
                     "maxRetries": value.max_retries, "maxDelay": str(value.max_delay)}
        elif isinstance(value, tuple):
            value = list(value)
        elif attr == "consumer":
            value = dict(value)
        out[storm] = value
    return out
