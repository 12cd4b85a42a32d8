"""The kafka-python settings of the kafka-python backend
(:mod:`storm_kafka_compat.kafka.kafka_python`): what a SpoutConfig and the job's ``kafka``
mapping become, decided at config time on the driver (and by the bench's plain job,
which reads with exactly these).

Storm fields and the kafka-python settings they become:

====================  ===============================  ===================================
Storm field           kafka-python                     note
====================  ===============================  ===================================
fetchSizeBytes        max_partition_fetch_bytes        a partition's byte budget in one
                                                       fetch; a larger message is still
                                                       returned (KIP-74, CONTRACT
                                                       deviation 4). fetch_max_bytes, the
                                                       whole response's, the same; for a
                                                       consumer of several partitions
                                                       at least 50 MiB (group_config)
fetchMaxWait          fetch_max_wait_ms =              Storm's default 0 becomes 100 ms
                      max(MIN_FETCH_MAX_WAIT_MS, v)    (see MIN_FETCH_MAX_WAIT_MS)
minFetchByte          fetch_min_bytes = max(1, value)  Storm's 0 becomes 1: with no
                                                       data both answer after fetchMaxWait
bufferSizeBytes       receive_buffer_bytes
socketTimeoutMs       request_timeout_ms               also the deadline of one fetch();
                                                       must exceed fetchMaxWait
clientId              client_id                        empty -> ``storm-kafka-compat``
====================  ===============================  ===================================

``isolation_level`` is ``read_uncommitted`` unless the ``kafka`` mapping says
``read_committed`` (:mod:`storm_kafka_compat.config.kafka_settings`).

``auto_offset_reset`` is ``"none"``: kafka-python 3.0.x then has no reset policy
(``OffsetResetStrategy.NONE``) and ``poll`` raises ``OffsetOutOfRangeError`` instead of
jumping; "earliest"/"latest" would reset silently. Other settings of the job's ``kafka``
mapping (security: ``security_protocol``, ``ssl_*``, ``sasl_*``, ...) are passed through.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from storm_kafka_compat.config import SpoutConfig
from storm_kafka_compat.config.kafka_settings import (MIN_FETCH_MAX_WAIT_MS, BootstrapServers,
                                                      group_fetch_max_bytes)
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.kafka.client import DEFAULT_CLIENT_ID, DEFAULT_ISOLATION_LEVEL

#: records one poll may return when the caller sets no bound; the byte budget
#: (fetchSizeBytes) is what really bounds a fetch
DEFAULT_MAX_POLL_RECORDS = 100_000
#: settings this adapter owns; the client mapping may not change them
RESERVED = ("group_id", "enable_auto_commit", "auto_offset_reset", "bootstrap_servers",
             "key_deserializer", "value_deserializer")


def consumer_config(bootstrap_servers: BootstrapServers, spout: SpoutConfig,
                    client_config: Mapping[str, Any] = {}) -> Dict[str, Any]:
    """The ``KafkaConsumer`` settings for ``spout`` (see the module table).

    Raises
    ------
    ConfigError
        ``socketTimeoutMs`` is not above ``fetchMaxWait``, a key of
        ``client_config`` is unknown to kafka-python, or it tries to set one
        this adapter owns (``group_id``, ``auto_offset_reset``, ...).
    """
    from kafka import KafkaConsumer
    if spout.socket_timeout_ms <= max(MIN_FETCH_MAX_WAIT_MS, spout.fetch_max_wait):
        raise ConfigError(
            f"socketTimeoutMs {spout.socket_timeout_ms} must be larger than fetchMaxWait "
            f"{spout.fetch_max_wait} (kafka-python's request_timeout_ms must exceed "
            "fetch_max_wait_ms); raise socketTimeoutMs", key="spout.socketTimeoutMs",
            value=spout.socket_timeout_ms)
    cfg: Dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers,
        "client_id": spout.client_id or DEFAULT_CLIENT_ID,
        "group_id": None,
        "enable_auto_commit": False,
        "auto_offset_reset": "none",
        "allow_auto_create_topics": False,
        "max_partition_fetch_bytes": spout.fetch_size_bytes,
        "fetch_max_bytes": spout.fetch_size_bytes,
        "fetch_max_wait_ms": max(MIN_FETCH_MAX_WAIT_MS, spout.fetch_max_wait),
        "fetch_min_bytes": max(1, spout.min_fetch_byte),
        "receive_buffer_bytes": spout.buffer_size_bytes,
        "request_timeout_ms": spout.socket_timeout_ms,
        # kafka-python 3 waits bootstrap_timeout_ms (30 s) for an unreachable broker;
        # socketTimeoutMs is the operator's bound for any broker answer
        "bootstrap_timeout_ms": spout.socket_timeout_ms,
        "max_poll_records": DEFAULT_MAX_POLL_RECORDS,
        # what storm-kafka read; `kafka: {isolation_level: read_committed}` for
        # committed transactions only (kafka.settings)
        "isolation_level": DEFAULT_ISOLATION_LEVEL,
    }
    default_idle = KafkaConsumer.DEFAULT_CONFIG["connections_max_idle_ms"]
    if spout.socket_timeout_ms >= default_idle:
        cfg["connections_max_idle_ms"] = spout.socket_timeout_ms + 60_000
    for key, value in client_config.items():
        if key in RESERVED:
            raise ConfigError(f"kafka setting {key!r} is managed by storm-kafka-compat "
                              "(no consumer group, out-of-range must raise); remove it",
                              key=f"kafka.{key}", value=value)
        if key not in KafkaConsumer.DEFAULT_CONFIG:
            raise ConfigError(f"kafka setting {key!r} is not a kafka-python KafkaConsumer "
                              "setting; see kafka-python's KafkaConsumer documentation",
                              key=f"kafka.{key}", value=value)
        cfg[key] = value
    return cfg


def group_config(config: Mapping[str, Any]) -> Dict[str, Any]:
    """``config`` (:func:`consumer_config`'s) for a consumer assigned several partitions:
    the whole response's budget raised to
    :func:`~storm_kafka_compat.config.kafka_settings.group_fetch_max_bytes`. Settings
    that leave it to kafka-python (its default is that budget) are returned as they are."""
    if "fetch_max_bytes" not in config:
        return dict(config)
    return {**config, "fetch_max_bytes": group_fetch_max_bytes(int(config["fetch_max_bytes"]))}
