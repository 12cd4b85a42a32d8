"""The engine's column path: a fetched :class:`RecordBatch` processed by value
(``raw``, ``string``) gives exactly what the message path gives, and the batch
behaves as the list of its messages where the rest of the engine reads it."""

from __future__ import annotations

from typing import Any, List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_kafka_compat.executor.process import process_batch
from storm_kafka_compat.errors import FailedException
from storm_kafka_compat.kafka.client import KafkaMessage, RecordBatch
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.topology.schemes import load_scheme, value_tuple_of
from storm_kafka_compat.topology.tuples import StormTuple


def _messages(offsets: List[int], values: List[Optional[bytes]]) -> List[KafkaMessage]:
    return [KafkaMessage(o, None, v, -1, -1, (), "t", 3) for o, v in zip(offsets, values)]


def _bolt(seen: List[Any]):
    def bolt(t: StormTuple) -> None:
        seen.append((t.topic, t.partition, t.offset, t.values, t.fields, t.stream,
                     t.source_component, dict(t.anchors), t.message_id))
        value = t.values[0]
        text = value if isinstance(value, str) else value.decode()
        if text.startswith("fail"):
            raise FailedException("no")
        if text.startswith("boom"):
            raise ValueError("boom")
    return bolt


values_st = st.one_of(st.none(), st.sampled_from([b"ok", b"fail", b"boom", b"\xff\xfe", b""]))


@settings(max_examples=200, deadline=None)
@given(data=st.lists(st.tuples(st.integers(0, 3), values_st), max_size=30),
       scheme=st.sampled_from(["raw", "string"]), start=st.integers(0, 40),
       cap=st.one_of(st.none(), st.integers(1, 30)))
def test_the_column_path_gives_what_the_message_path_gives(data, scheme, start, cap):
    offsets, values, off = [], [], 0
    for gap, value in data:                 # ascending offsets, with compaction gaps
        off += gap + 1
        offsets.append(off)
        values.append(value)
    messages = _messages(offsets, values)
    plan = FetchPlan("t", 3, start, max_messages=cap)
    by_message: List[Any] = []
    by_column: List[Any] = []
    expected = process_batch(messages, scheme=load_scheme(scheme), bolt=_bolt(by_message),
                             plan_filter=plan)
    got = process_batch(RecordBatch.of(messages, "t", 3), scheme=load_scheme(scheme),
                        bolt=_bolt(by_column), plan_filter=plan)
    # the same errors (their tracebacks name each path's own line)
    assert [(e.key, e.count, e.where()) for e in got.errors] == \
        [(e.key, e.count, e.where()) for e in expected.errors]
    got.errors = expected.errors = []
    assert got == expected
    assert by_column == by_message


def test_a_batch_reads_as_the_list_of_its_messages_and_converts_once():
    calls = []

    def convert(records):
        calls.append(len(records))
        return _messages([r[0] for r in records], [r[1] for r in records])

    records = [(5, b"a"), (6, b"b"), (9, None)]
    batch = RecordBatch("t", 3, [5, 6, 9], [b"a", b"b", None], records, convert)
    assert len(batch) == 3 and bool(batch)
    part = batch[1:]
    assert isinstance(part, RecordBatch) and part.offsets == [6, 9] and calls == []
    assert [m.offset for m in batch] == [5, 6, 9] and batch[-1].value is None
    assert calls == [3]                                   # once, on first use
    assert [m.value for m in batch.slice(0, 2)] == [b"a", b"b"] and calls == [3]
    assert batch.bounded(6, max_offset=9).offsets == [6]
    assert batch.bounded(0, max_messages=2).offsets == [5, 6]
    assert batch.bounded(10).offsets == []


@pytest.mark.parametrize("name,fast", [("raw", True), ("string", True), ("key_value", False),
                                       ("message_metadata", False),
                                       ("record_translator", False)])
def test_only_value_schemes_take_the_column_path(name, fast):
    assert (value_tuple_of(load_scheme(name)) is not None) is fast


def test_a_subclass_of_a_value_scheme_keeps_its_own_to_tuples():
    from storm_kafka_compat.topology.schemes import StringScheme

    class Upper(StringScheme):
        def to_tuples(self, message):
            return [[message.value.decode().upper()]]

    assert value_tuple_of(Upper()) is None
    seen: List[Any] = []
    batch = RecordBatch.of(_messages([0], [b"x"]), "t", 3)
    process_batch(batch, scheme=Upper(), bolt=lambda t: seen.append(t.values),
                  plan_filter=FetchPlan("t", 3, 0))
    assert seen == [["X"]]
