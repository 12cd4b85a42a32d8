"""librdkafka's messages and errors as this project's: a fetch's ``Message`` objects as
:class:`~storm_kafka_compat.kafka.client.KafkaMessage` s or a
:class:`~storm_kafka_compat.kafka.client.RecordBatch`, a ``KafkaError`` as the error of
:mod:`storm_kafka_compat.errors` the coordinator acts on (pure conversions; the
confluent backend, :mod:`storm_kafka_compat.kafka.confluent`, calls them).

Error mapping: ``OFFSET_OUT_OF_RANGE`` (``_AUTO_OFFSET_RESET``) and a KIP-320 log
truncation -> OffsetOutOfRangeError; transport errors, time-outs, unknown or leaderless
partitions and every error librdkafka flags retriable -> FailedFetchError; anything else
(authorisation, ...) -> KafkaAccessError.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple, cast

from storm_kafka_compat.errors import FailedFetchError, KafkaAccessError, OffsetOutOfRangeError
from storm_kafka_compat.kafka.client import (NO_TIMESTAMP, NO_TIMESTAMP_TYPE,
                                             TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME,
                                             KafkaMessage, RecordBatch)

log = logging.getLogger(__name__)

#: librdkafka's timestamp types (TIMESTAMP_NOT_AVAILABLE 0, CREATE_TIME 1,
#: LOG_APPEND_TIME 2) to Kafka's; a v0 message (Kafka 0.9) has none: (0, -1)
_TIMESTAMP_TYPES = {1: TIMESTAMP_CREATE_TIME, 2: TIMESTAMP_LOG_APPEND_TIME}

def _retriable_codes() -> Tuple[int, ...]:
    from confluent_kafka import KafkaError as E
    names = ("_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN", "_UNKNOWN_PARTITION",
             "_UNKNOWN_TOPIC", "UNKNOWN_TOPIC_OR_PART", "LEADER_NOT_AVAILABLE",
             "NOT_LEADER_FOR_PARTITION", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
             "_WAIT_COORD", "_RESOLVE", "_MSG_TIMED_OUT", "FENCED_LEADER_EPOCH",
             "UNKNOWN_LEADER_EPOCH", "OFFSET_NOT_AVAILABLE", "KAFKA_STORAGE_ERROR",
             "REPLICA_NOT_AVAILABLE", "BROKER_NOT_AVAILABLE", "_NODE_UPDATE",
             # a broker that left the cluster metadata (a killed leader, Kafka 0.9
             # measured): its handle is destroyed under a watermark query in flight
             "_DESTROY_BROKER")
    return tuple(getattr(E, n) for n in names if hasattr(E, n))


def map_error(error: Any, *, topic: Optional[str], partition: Optional[int],
              offset: Optional[int], what: str) -> KafkaAccessError:
    """This project's error for a librdkafka ``KafkaError`` met during ``what``."""
    from confluent_kafka import KafkaError as E
    code = error.code()
    where = f"{topic}/{partition}" if partition is not None else f"{topic}"
    kw: Dict[str, Any] = dict(topic=topic, partition=partition, offset=offset)
    text = f"{error.name()}: {error.str()}"
    if code in (E.OFFSET_OUT_OF_RANGE, E._AUTO_OFFSET_RESET):
        return OffsetOutOfRangeError(
            f"offset {offset} for {where} is out of range (OFFSET_OUT_OF_RANGE, {text}); "
            "restart from startOffsetTime or a valid offset", **kw)
    if code == getattr(E, "_LOG_TRUNCATION", None):
        return OffsetOutOfRangeError(
            f"offset {offset} for {where} is beyond the log after a truncation ({text}); "
            "restart from startOffsetTime or a valid offset", **kw)
    if code in _retriable_codes() or error.retriable():
        log.warning("%s for %s failed: %s", what, where, text)
        return FailedFetchError(
            f"{what} for {where} failed ({text}); the coordinator refreshes and the fetch "
            "is retried", **kw)
    return KafkaAccessError(
        f"{what} for {where} failed ({text}); check the topic, the ACLs and the kafka "
        "client settings", **kw)


def to_messages(records: List[Any], topic: str, partition: int,
                offset: Optional[int] = None) -> List[KafkaMessage]:
    """librdkafka ``Message`` objects of one partition to KafkaMessages.

    End-of-partition events are dropped; any other error record raises its
    mapped error (see :func:`map_error`). ``topic``/``partition`` are the
    fetched partition's (one is assigned at a time).
    """
    new = tuple.__new__
    km = KafkaMessage
    out: List[KafkaMessage] = []
    append = out.append
    for m in records:
        if m.error() is not None:
            err = m.error()
            from confluent_kafka import KafkaError
            if err.code() == KafkaError._PARTITION_EOF:
                continue
            raise map_error(err, topic=topic, partition=partition, offset=offset, what="fetch")
        ts_type, ts = m.timestamp()
        headers = m.headers()
        append(new(km, (m.offset(), m.key(), m.value(), ts if ts_type else NO_TIMESTAMP,
                        _TIMESTAMP_TYPES.get(ts_type, NO_TIMESTAMP_TYPE),
                        tuple(headers) if headers else (), topic, partition)))
    return out


def record_batch(records: List[Any], topic: str, partition: int,
                 offset: Optional[int] = None) -> RecordBatch:
    """librdkafka ``Message`` objects of one partition as a :class:`RecordBatch`
    (columns taken with one call per record and column; messages built only if a
    scheme reads more than the value). Error records are handled as
    :func:`to_messages` handles them."""
    from confluent_kafka import Message
    if any(map(Message.error, records)):       # map over the C methods: no frame a record
        from confluent_kafka import KafkaError
        kept = []
        for m in records:
            err = m.error()
            if err is None:
                kept.append(m)
            elif err.code() != KafkaError._PARTITION_EOF:
                raise map_error(err, topic=topic, partition=partition, offset=offset,
                                what="fetch")
        records = kept
    offsets = cast(List[int], list(map(Message.offset, records)))   # None only on errors
    return RecordBatch(topic, partition, offsets, list(map(Message.value, records)), records,
                       lambda recs: to_messages(list(recs), topic, partition))
