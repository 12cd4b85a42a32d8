"""The kafka-python reader (``kafka/kafka_python_records.py``) against kafka-python's own,
over record batches built by kafka-python's builders (the wire format, no server):
the same offsets, keys, values, timestamps and headers, the same fetch position after
a take, corrupt batches refused as kafka-python refuses them."""

from __future__ import annotations

import random
import struct
from typing import Any, List, Optional, Sequence, Tuple

import pytest

pytest.importorskip("kafka")

from kafka.consumer.fetcher import Fetcher, IsolationLevel  # noqa: E402
from kafka.errors import CorruptRecordError  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.legacy_records import LegacyRecordBatchBuilder  # noqa: E402
from kafka.record.memory_records import MemoryRecords  # noqa: E402
from kafka.record.util import calc_crc32c  # noqa: E402
from kafka.structs import TopicPartition  # noqa: E402

from storm_kafka_compat.kafka.client import KafkaMessage  # noqa: E402
from storm_kafka_compat.kafka.kafka_python_records import (CorruptBatch, _reader,  # noqa: E402
                                                           decode_v2, install)

TP = TopicPartition("t", 3)
Record = Tuple[Optional[bytes], Optional[bytes], List[Tuple[str, Optional[bytes]]]]


def v2_batch(base: int, records: Sequence[Record], *, codec: int = 0, ts0: int = 1_700_000_000_000,
             deltas: Optional[Sequence[int]] = None, producer_id: int = -1,
             transactional: bool = False) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=producer_id, producer_epoch=0 if producer_id >= 0
                                  else -1, base_sequence=0 if producer_id >= 0 else -1,
                                  batch_size=1 << 24)
    for i, (key, value, headers) in enumerate(records):
        b.append(deltas[i] if deltas else i, timestamp=ts0 + 7 * i, key=key, value=value,
                 headers=headers)
    raw = bytearray(b.build())
    struct.pack_into(">q", raw, 0, base)
    return bytes(raw)


def with_attributes(batch: bytes, bits: int) -> bytes:
    """``batch`` with attribute ``bits`` set and its CRC made good again."""
    raw = bytearray(batch)
    attrs = struct.unpack_from(">h", raw, 21)[0] | bits
    struct.pack_into(">h", raw, 21, attrs)
    struct.pack_into(">I", raw, 17, calc_crc32c(bytes(raw[21:])))
    return bytes(raw)


def theirs(data: bytes, fetch_offset: int = 0, **kw: Any) -> Tuple[List[Any], int]:
    part = Fetcher.PartitionRecords(fetch_offset, TP, MemoryRecords(data), **kw)
    return part.take(), part.next_fetch_offset


def ours(data: bytes, fetch_offset: int = 0, n: Optional[int] = None,
         **kw: Any) -> Tuple[List[Any], int]:
    part = _reader(Fetcher.PartitionRecords)(fetch_offset, TP, MemoryRecords(data), **kw)
    return part.take(n), part.next_fetch_offset


def fields(r: Any) -> Tuple[Any, ...]:
    ts = -1 if r.timestamp is None else r.timestamp
    return (r.offset, r.key, r.value, ts, r.timestamp_type, tuple(r.headers or ()),
            r.topic, r.partition)


def random_records(rng: random.Random, n: int) -> List[Record]:
    out: List[Record] = []
    for _ in range(n):
        key = None if rng.random() < 0.5 else rng.randbytes(rng.choice([0, 3, 70, 300]))
        value = None if rng.random() < 0.05 else rng.randbytes(rng.choice([0, 1, 63, 64, 100,
                                                                           9000]))
        headers = [] if rng.random() < 0.7 else [
            (f"h{j}", None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 5, 200])))
            for j in range(rng.choice([1, 2, 70]))]
        out.append((key, value, headers))
    return out


@pytest.mark.parametrize("codec", [0, 1])      # none, gzip
def test_the_same_messages_as_kafka_python_reads(codec: int) -> None:
    rng = random.Random(7 + codec)
    data = b"".join(v2_batch(base, random_records(rng, 40), codec=codec)
                    for base in (0, 40, 80))
    mine, position = ours(data)
    want, want_position = theirs(data)
    assert [fields(m) for m in mine] == [fields(r) for r in want]
    assert all(type(m) is KafkaMessage for m in mine)
    assert position == want_position == 120


def test_a_fetch_starting_inside_a_batch_and_compacted_offsets() -> None:
    """Compaction leaves offset gaps and may remove a batch's last records: the next
    fetch offset is the batch's last offset + 1 either way, and records before the
    fetch offset are not handed out."""
    records = [(b"k", b"v%d" % i, []) for i in range(5)]
    data = bytearray(v2_batch(100, records, deltas=[0, 2, 3, 7, 9]))
    struct.pack_into(">i", data, 23, 12)      # lastOffsetDelta: offsets 110-112 compacted away
    struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    mine, position = ours(bytes(data), fetch_offset=103)
    want, want_position = theirs(bytes(data), fetch_offset=103)
    assert [m.offset for m in mine] == [r.offset for r in want] == [103, 107, 109]
    assert position == want_position == 113


def test_a_partial_take_leaves_the_position_after_the_last_record_taken() -> None:
    data = v2_batch(0, [(None, b"x", [])] * 10) + v2_batch(10, [(None, b"y", [])] * 10)
    part = _reader(Fetcher.PartitionRecords)(0, TP, MemoryRecords(data))
    assert [m.offset for m in part.take(13)] == list(range(13))
    assert part.next_fetch_offset == 13
    assert [m.offset for m in part.take()] == list(range(13, 20))
    assert part.next_fetch_offset == 20


def test_log_append_time_stamps_every_record_with_the_batch_time() -> None:
    data = with_attributes(v2_batch(0, [(None, b"a", []), (None, b"b", [])]), 0x08)
    mine, _ = ours(data)
    want, _ = theirs(data)
    assert [fields(m) for m in mine] == [fields(r) for r in want]
    assert {(m.timestamp, m.timestamp_type) for m in mine} == {(1_700_000_000_007, 1)}


def test_control_batches_are_skipped_and_move_the_position() -> None:
    control = with_attributes(v2_batch(5, [(struct.pack(">hh", 0, 1), b"\0\0\0\0\0\0", [])],
                                       producer_id=9, transactional=True), 0x20)
    data = v2_batch(0, [(None, b"a", [])] * 5, producer_id=9, transactional=True) + control
    mine, position = ours(data)
    want, want_position = theirs(data)
    assert [m.offset for m in mine] == [r.offset for r in want] == [0, 1, 2, 3, 4]
    assert position == want_position == 6


def test_read_committed_skips_an_aborted_transaction() -> None:
    aborted = v2_batch(0, [(None, b"a", [])] * 3, producer_id=4, transactional=True)
    marker = with_attributes(v2_batch(3, [(struct.pack(">hh", 0, 0), b"\0\0\0\0\0\0", [])],
                                      producer_id=4, transactional=True), 0x20)
    kept = v2_batch(4, [(None, b"b", [])] * 2)

    class Aborted:
        producer_id, first_offset = 4, 0

    kw = dict(isolation_level=IsolationLevel.READ_COMMITTED, aborted_transactions=[Aborted()])
    mine, position = ours(aborted + marker + kept, **kw)   # type: ignore[arg-type]
    want, want_position = theirs(aborted + marker + kept, **kw)   # type: ignore[arg-type]
    assert [m.offset for m in mine] == [r.offset for r in want] == [4, 5]
    assert position == want_position == 6


def test_legacy_message_sets_are_read_through_kafka_pythons_records() -> None:
    """Format v0 (Kafka 0.9) has no timestamp: -1, as the contract says."""
    b = LegacyRecordBatchBuilder(magic=0, compression_type=0, batch_size=1 << 20)
    for i in range(3):
        b.append(i, timestamp=None, key=b"k%d" % i, value=b"v%d" % i)
    mine, position = ours(bytes(b.build()))
    assert [fields(m) for m in mine] == [(i, b"k%d" % i, b"v%d" % i, -1, -1, (), "t", 3)
                                         for i in range(3)]
    assert position == 3


def test_a_flipped_byte_fails_the_crc_check() -> None:
    data = bytearray(v2_batch(0, [(None, b"hello", [])]))
    data[-3] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="crc"):
        ours(bytes(data))


@pytest.mark.parametrize("damage", ["truncated", "long record", "trailing bytes"])
def test_a_record_layout_that_does_not_add_up_is_refused(damage: str) -> None:
    batch = v2_batch(0, [(b"key", b"value", [("h", b"x")]), (None, b"v2", [])])
    records = batch[61:]
    if damage == "truncated":
        records = records[:-2]
    elif damage == "long record":
        records = bytes([records[0] + 2]) + records[1:]      # length +1 (zigzag)
    else:
        records = records + b"\0"
    with pytest.raises(CorruptBatch):
        decode_v2(records, 0, 2, base_offset=0, first_timestamp=0, log_append_time=None,
                  topic="t", partition=0)


def test_install_keeps_kafka_pythons_reader_for_a_consumer_with_a_deserializer() -> None:
    class Fetch:
        PartitionRecords = Fetcher.PartitionRecords

        def __init__(self, **config: Any) -> None:
            self.config = config

    class Consumer:
        def __init__(self, **config: Any) -> None:
            self._fetcher = Fetch(**config)

    plain = Consumer(key_deserializer=None, value_deserializer=None)
    decoding = Consumer(key_deserializer=None, value_deserializer=bytes.decode)
    assert install(plain) is True
    assert plain._fetcher.PartitionRecords is not Fetcher.PartitionRecords
    assert install(decoding) is False
    assert decoding._fetcher.PartitionRecords is Fetcher.PartitionRecords
    assert install(object()) is False
