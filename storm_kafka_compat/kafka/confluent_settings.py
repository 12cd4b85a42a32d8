"""The librdkafka settings of the confluent backend (:mod:`storm_kafka_compat.kafka.confluent`):
what a SpoutConfig and the job's ``kafka`` mapping become, decided at config time on the
driver (and by the bench's plain job, which reads with exactly these).

Storm fields and the librdkafka settings they become:

====================  ===============================  ===================================
Storm field           librdkafka                       note
====================  ===============================  ===================================
fetchSizeBytes        max.partition.fetch.bytes        a partition's byte budget in one
                                                       fetch; a larger message is still
                                                       returned (KIP-74, CONTRACT
                                                       deviation 4). fetch.max.bytes, the
                                                       whole response's, the same; for a
                                                       consumer of several partitions
                                                       at least 50 MiB (group_config)
fetchMaxWait          fetch.wait.max.ms =              Storm's default 0 becomes 100 ms, as
                      max(MIN_FETCH_MAX_WAIT_MS, v)    with kafka-python (same reasons)
minFetchByte          fetch.min.bytes = max(1, v)
bufferSizeBytes       socket.receive.buffer.bytes
socketTimeoutMs       socket.timeout.ms                also the deadline of one fetch();
                                                       must exceed fetchMaxWait
clientId              client.id                        empty -> ``storm-kafka-compat``
====================  ===============================  ===================================

Settings this adapter owns: ``group.id`` (librdkafka requires one; it is never
joined nor committed to, since partitions are assigned, not subscribed),
``enable.auto.commit`` and ``enable.auto.offset.store`` (false),
``auto.offset.reset`` (``error``: an out-of-range fetch raises
OffsetOutOfRangeError instead of jumping silently) and ``enable.partition.eof``
(true: the log end is detected without waiting). ``isolation.level`` is
``read_uncommitted`` unless the ``kafka`` mapping says otherwise (librdkafka's own
default is ``read_committed``; see :mod:`storm_kafka_compat.config.kafka_settings`). Other keys of
the job's ``kafka`` mapping are passed to librdkafka; a key written kafka-python style
(``security_protocol``) is read as its librdkafka name (``security.protocol``).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Mapping

from storm_kafka_compat.config import SpoutConfig
from storm_kafka_compat.config.kafka_settings import (MIN_FETCH_MAX_WAIT_MS, BootstrapServers,
                                                      group_fetch_max_bytes)
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.kafka.client import DEFAULT_CLIENT_ID, DEFAULT_ISOLATION_LEVEL

#: the group id librdkafka insists on; never joined, never committed to
GROUP_ID = "storm-kafka-compat-assign-only"
#: librdkafka's prefetch bound per partition, in fetches of fetchSizeBytes
PREFETCH_FETCHES = 4
#: librdkafka's pause after its prefetch queue filled (ms); see consumer_config
FETCH_QUEUE_BACKOFF_MS = 10
#: settings this adapter owns; the client mapping may not change them
RESERVED = ("group.id", "enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset",
            "enable.partition.eof", "bootstrap.servers")


def answers_list_offsets_v1(config: Mapping[str, Any]) -> bool:
    """Whether brokers of a librdkafka ``config`` answer ListOffsets v1 (Kafka 0.10.1+):
    yes unless ``api.version.request`` is off and ``broker.version.fallback`` (librdkafka's
    default 0.10.0) is older."""
    if str(config.get("api.version.request", True)).strip().lower() not in ("false", "0"):
        return True
    fallback = str(config.get("broker.version.fallback", "0.10.0"))
    return tuple(int(n) for n in re.findall(r"\d+", fallback)[:3]) >= (0, 10, 1)


def consumer_config(bootstrap_servers: BootstrapServers, spout: SpoutConfig,
                    client_config: Mapping[str, Any] = {}) -> Dict[str, Any]:
    """The librdkafka settings for ``spout`` (see the module table).

    Raises
    ------
    ConfigError
        ``socketTimeoutMs`` is not above ``fetchMaxWait``, or ``client_config``
        sets one of the settings this adapter owns. Keys librdkafka does not know
        are reported when the consumer is created.
    """
    wait_ms = max(MIN_FETCH_MAX_WAIT_MS, spout.fetch_max_wait)
    if spout.socket_timeout_ms <= wait_ms:
        raise ConfigError(
            f"socketTimeoutMs {spout.socket_timeout_ms} must be larger than fetchMaxWait "
            f"{spout.fetch_max_wait} (floored at {MIN_FETCH_MAX_WAIT_MS} ms); raise "
            "socketTimeoutMs", key="spout.socketTimeoutMs", value=spout.socket_timeout_ms)
    servers = (bootstrap_servers if isinstance(bootstrap_servers, str)
               else ",".join(bootstrap_servers))
    cfg: Dict[str, Any] = {
        "bootstrap.servers": servers,
        "client.id": spout.client_id or DEFAULT_CLIENT_ID,
        "group.id": GROUP_ID,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
        "allow.auto.create.topics": False,
        "max.partition.fetch.bytes": spout.fetch_size_bytes,
        "fetch.max.bytes": spout.fetch_size_bytes,
        # librdkafka refuses a fetch.max.bytes below message.max.bytes (a produce
        # setting, 1000000 by default) even in a consumer: a fetchSizeBytes of 64 KiB
        # failed every consumer ("`fetch.max.bytes` must be >= `message.max.bytes`")
        "message.max.bytes": max(1000, min(1_000_000, spout.fetch_size_bytes)),
        "receive.message.max.bytes": max(100_000_000, spout.fetch_size_bytes + 1_000_000),
        "fetch.wait.max.ms": wait_ms,
        "fetch.min.bytes": max(1, spout.min_fetch_byte),
        "socket.receive.buffer.bytes": spout.buffer_size_bytes,
        "socket.timeout.ms": spout.socket_timeout_ms,
        "queued.max.messages.kbytes": max(1024, PREFETCH_FETCHES * spout.fetch_size_bytes // 1024),
        # when the prefetch queue above is full librdkafka pauses the partition's
        # fetching for this long (default 1000 ms): the tasks then sat blocked on the
        # first record of the next fetch (72-83 % of task time, profiled; issue 12)
        "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
        # librdkafka reads read_committed by default, kafka-python (and storm-kafka)
        # every record: one default for both backends (kafka.settings)
        "isolation.level": DEFAULT_ISOLATION_LEVEL,
    }
    for key, value in client_config.items():
        name = key if "." in key else key.replace("_", ".")
        if name in RESERVED:
            raise ConfigError(f"kafka setting {key!r} is managed by storm-kafka-compat "
                              "(no consumer group, out-of-range must raise); remove it",
                              key=f"kafka.{key}", value=value)
        cfg[name] = value
    return cfg


def group_config(config: Mapping[str, Any]) -> Dict[str, Any]:
    """``config`` (:func:`consumer_config`'s) for a consumer assigned several partitions:
    the whole response's budget raised to
    :func:`~storm_kafka_compat.config.kafka_settings.group_fetch_max_bytes`. Settings
    that leave it to librdkafka (its default is that budget) are returned as they are;
    :func:`consumer_config`'s ``receive.message.max.bytes`` is already above it."""
    if "fetch.max.bytes" not in config:
        return dict(config)
    return {**config, "fetch.max.bytes": group_fetch_max_bytes(int(config["fetch.max.bytes"]))}
