"""kafka-python's fetched record batches read straight into
:class:`~storm_kafka_compat.kafka.client.KafkaMessage` tuples.

kafka-python turns each record of a fetch into a ``DefaultRecord``, reads it back
through properties, calls a deserializer hook for its key and value and builds a
13-field ``ConsumerRecord``: about 5 us a 100-byte record on this project's
machines, most of a kafka-python task's time. :func:`install` gives one consumer
a reader that decodes each message-format v2 batch (Kafka 0.11+) in one pass over
its bytes and yields ``KafkaMessage`` tuples: about 1.2 us a record. The batch
rules stay kafka-python's own: the batch CRC, skipping control batches and, under
``read_committed``, aborted transactions, and the next fetch offset after a batch
whose last records were compacted away. Format v0 and v1 batches (Kafka 0.9 and
0.10) are read through kafka-python's own record objects. A consumer with a key or
value deserializer keeps kafka-python's reader (this project's consumers have none:
``kafka_python_settings.RESERVED``).

The decoder (:func:`decode_v2`) is pure: bytes in, messages out.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterator, List, Optional, Tuple

from storm_kafka_compat.kafka.client import (NO_TIMESTAMP, NO_TIMESTAMP_TYPE,
                                             TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME,
                                             KafkaMessage)


class CorruptBatch(ValueError):
    """A v2 batch whose record layout does not add up (raised as kafka-python's
    ``CorruptRecordError`` by the reader)."""


def _varint(buf: bytes, pos: int) -> Tuple[int, int]:
    """The zigzag varint at ``pos`` and the position after it (varints of three bytes
    or more, and headers; :func:`_read_records` reads shorter ones inline)."""
    raw, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptBatch(f"a varint at byte {pos} runs over 10 bytes")


def decode_v2(buf: bytes, pos: int, count: int, *, base_offset: int, first_timestamp: int,
              log_append_time: Optional[int], topic: str, partition: int
              ) -> List[KafkaMessage]:
    """The ``count`` records of a v2 batch whose (uncompressed) records start at
    ``pos`` of ``buf``, as messages. ``log_append_time``: the batch's max timestamp
    when the broker stamps the records (every record has it), else None.

    Raises :class:`CorruptBatch` when a record's fields do not fill its length
    exactly or bytes are left after the last record.
    """
    out: List[KafkaMessage] = []
    try:
        pos = _read_records(buf, pos, count, base_offset, first_timestamp, log_append_time,
                            topic, partition, out)
    except IndexError:
        raise CorruptBatch(f"a batch at offset {base_offset} ends inside its record "
                           f"{len(out)} of {count}") from None
    if pos != len(buf):
        raise CorruptBatch(f"{len(buf) - pos} bytes left after the {count} records of "
                           f"the batch at offset {base_offset}")
    return out


def _read_records(buf: bytes, pos: int, count: int, base_offset: int, first_timestamp: int,
                  log_append_time: Optional[int], topic: str, partition: int,
                  out: List[KafkaMessage]) -> int:
    """:func:`decode_v2`'s loop, appending to ``out``; the position after the last
    record. Varints of one and two bytes (a record under 8 KB, its offset delta under
    8,192...) are read inline, longer ones through :func:`_varint`. The five inline
    readings repeat on purpose: through a call each, the loop took 1.66 us a 100-byte
    record instead of 1.21 (tests/unit/test_kafka_python_records.py checks every path)."""
    new, km = tuple.__new__, KafkaMessage
    ts_type = (TIMESTAMP_LOG_APPEND_TIME if log_append_time is not None
               else TIMESTAMP_CREATE_TIME)
    append = out.append
    varint = _varint
    key: Optional[bytes]
    value: Optional[bytes]
    headers: Tuple[Tuple[str, Optional[bytes]], ...]
    for _ in range(count):
        b = buf[pos]
        if b < 0x80:
            length, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif buf[pos + 1] < 0x80:
            raw = (b & 0x7F) | (buf[pos + 1] << 7)
            length, pos = (raw >> 1) ^ -(raw & 1), pos + 2
        else:
            length, pos = varint(buf, pos)
        end = pos + length
        pos += 1                                       # attributes: unused
        b = buf[pos]
        if b < 0x80:
            ts_delta, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif buf[pos + 1] < 0x80:
            raw = (b & 0x7F) | (buf[pos + 1] << 7)
            ts_delta, pos = (raw >> 1) ^ -(raw & 1), pos + 2
        else:
            ts_delta, pos = varint(buf, pos)
        b = buf[pos]
        if b < 0x80:
            offset_delta, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif buf[pos + 1] < 0x80:
            raw = (b & 0x7F) | (buf[pos + 1] << 7)
            offset_delta, pos = (raw >> 1) ^ -(raw & 1), pos + 2
        else:
            offset_delta, pos = varint(buf, pos)
        b = buf[pos]
        if b < 0x80:
            size, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif buf[pos + 1] < 0x80:
            raw = (b & 0x7F) | (buf[pos + 1] << 7)
            size, pos = (raw >> 1) ^ -(raw & 1), pos + 2
        else:
            size, pos = varint(buf, pos)
        if size < 0:                                   # -1: a null key
            key = None
        else:
            key, pos = buf[pos:pos + size], pos + size
        b = buf[pos]
        if b < 0x80:
            size, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif buf[pos + 1] < 0x80:
            raw = (b & 0x7F) | (buf[pos + 1] << 7)
            size, pos = (raw >> 1) ^ -(raw & 1), pos + 2
        else:
            size, pos = varint(buf, pos)
        if size < 0:
            value = None
        else:
            value, pos = buf[pos:pos + size], pos + size
        if buf[pos] == 0:                              # no headers
            pos += 1
            headers = ()
        else:
            headers, pos = _headers(buf, pos)
        if pos != end:
            raise CorruptBatch(f"a record of {length} bytes at offset "
                               f"{base_offset + offset_delta} read {length + pos - end}")
        append(new(km, (base_offset + offset_delta, key, value,
                        first_timestamp + ts_delta if log_append_time is None
                        else log_append_time, ts_type, headers, topic, partition)))
    return pos


def _headers(buf: bytes, pos: int) -> Tuple[Tuple[Tuple[str, Optional[bytes]], ...], int]:
    count, pos = _varint(buf, pos)
    if count < 0:
        raise CorruptBatch(f"a record claims {count} headers")
    out: List[Tuple[str, Optional[bytes]]] = []
    for _ in range(count):
        size, pos = _varint(buf, pos)
        if size < 0:
            raise CorruptBatch(f"a header key claims {size} bytes")
        name = buf[pos:pos + size].decode("utf-8")
        pos += size
        size, pos = _varint(buf, pos)
        if size < 0:
            out.append((name, None))
        else:
            out.append((name, buf[pos:pos + size]))
            pos += size
    return tuple(out), pos


def install(consumer: Any) -> bool:
    """Give ``consumer`` (a ``KafkaConsumer``) this module's reader; False (nothing
    changed) when it has a key or value deserializer or its fetcher is not of the
    kafka-python 3 shape this reader was written against."""
    fetcher = getattr(consumer, "_fetcher", None)
    config = getattr(fetcher, "config", None)
    base = getattr(fetcher, "PartitionRecords", None)
    if fetcher is None or base is None or not isinstance(config, dict) or (
            config.get("key_deserializer") or config.get("value_deserializer")):
        return False
    fetcher.PartitionRecords = _reader(base)
    return True


def _reader(base: Any) -> Callable[..., Any]:
    """kafka-python's ``PartitionRecords`` built as it is, its record iterator then
    replaced by :func:`_records` (before any record was read: the iterator is lazy)."""
    def build(*args: Any, **kwargs: Any) -> Any:
        part = base(*args, **kwargs)
        records = args[2] if len(args) > 2 else kwargs["records"]
        part.record_iterator = itertools.dropwhile(
            part._maybe_skip_record, _records(part, part.topic_partition, records))
        return part
    return build


def _records(part: Any, tp: Any, records: Any) -> Iterator[Any]:
    """``part``'s records (a ``PartitionRecords``) from the fetch's ``records``
    (``MemoryRecords``), keeping its fetch offset, counts and drain as kafka-python's
    own iterator does."""
    from kafka.errors import CorruptRecordError
    from kafka.consumer.fetcher import IsolationLevel
    topic, partition = tp.topic, tp.partition
    committed_only = part.isolation_level == IsolationLevel.READ_COMMITTED
    last_v2 = None
    batch = records.next_batch()
    while batch is not None:
        if part.check_crcs and not batch.validate_crc():
            raise CorruptRecordError(f"Record batch for partition {tp} at offset "
                                     f"{batch.base_offset} failed crc check")
        if batch.magic != 2:
            yield from _legacy(part, batch, topic, partition, CorruptRecordError)
            batch = records.next_batch()
            continue
        last_v2 = batch
        part.leader_epoch = batch.leader_epoch
        if committed_only and batch.has_producer_id():
            part._consume_aborted_transactions_up_to(batch.last_offset)
            if part._contains_abort_marker(batch):
                part.aborted_producer_ids.discard(batch.producer_id)
            elif part._is_batch_aborted(batch):
                part.next_fetch_offset = batch.next_offset
                batch = records.next_batch()
                continue
        if batch.is_control_batch:
            part.next_fetch_offset = batch.next_offset
            batch = records.next_batch()
            continue
        batch._maybe_uncompress()
        stamped = batch.timestamp_type == TIMESTAMP_LOG_APPEND_TIME
        try:
            messages = decode_v2(
                bytes(batch._buffer), batch._pos, batch.records_count,
                base_offset=batch.base_offset, first_timestamp=batch.first_timestamp,
                log_append_time=batch.max_timestamp if stamped else None,
                topic=topic, partition=partition)
        except CorruptBatch as exc:
            raise CorruptRecordError(f"Found invalid record structure in {tp}: {exc}") from exc
        part.records_read += len(messages)
        part.bytes_read += batch.size_in_bytes
        for m in messages:
            part.next_fetch_offset = m[0] + 1
            yield m
        batch = records.next_batch()
    if last_v2 is not None:
        # the batch's last offset stays even when compaction removed its last records
        part.next_fetch_offset = last_v2.next_offset
    part.drain()


def _legacy(part: Any, batch: Any, topic: str, partition: int,
            corrupt: Any) -> Iterator[KafkaMessage]:
    """A format v0/v1 batch's records through kafka-python's record objects."""
    new, km = tuple.__new__, KafkaMessage
    for record in batch:
        if part.check_crcs and not record.validate_crc():
            raise corrupt(f"Record for partition {topic}-{partition} at offset "
                          f"{record.offset} failed crc check")
        part.records_read += 1
        part.bytes_read += record.size_in_bytes
        part.next_fetch_offset = record.offset + 1
        ts, ts_type = record.timestamp, record.timestamp_type
        yield new(km, (record.offset, record.key, record.value,
                       NO_TIMESTAMP if ts is None else ts,
                       NO_TIMESTAMP_TYPE if ts_type is None else ts_type,
                       tuple(record.headers) if record.headers else (), topic, partition))
