"""Tuples bound for another process kept as rows (issue 31 item 5): a keyed emit appends
its row without making a StormTuple, and what arrives is what the general path sends."""

from __future__ import annotations

import pickle
from dataclasses import replace
import random
from typing import Any, List, Tuple

import pytest

from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.executor.dag import LocalRuntime, TaskDispatcher
from storm_kafka_compat.executor.stage_tasks import run_spout_stage, stage_layout
from storm_kafka_compat.kafka.client import KafkaMessage, RecordBatch
from storm_kafka_compat.topology.schemes import load_scheme
from storm_kafka_compat.topology.spec import from_spec
from storm_kafka_compat.topology.tuples import PackedValues, StormTuple, TupleBatch
from storm_kafka_compat.workshop.bench.wordcount import WORD_COUNT, sentences


def _seen(t: StormTuple) -> Tuple[Any, ...]:
    return (list(t.values), t.fields, t.stream, t.source_component, t.source_task, t.topic,
            t.partition, t.offset, dict(t.anchors), t.ack_val)


def _word_count_stage(n: int) -> Tuple[Any, List[Tuple[Any, ...]], Any]:
    topology = from_spec(WORD_COUNT)
    scheme = load_scheme("raw")
    runtime = LocalRuntime(topology, {}, spout_fields=scheme.fields)
    local = frozenset(stage_layout(topology).stages[0])
    msgs = [KafkaMessage(i, None, v, 0, 0, (), "t", 3) for i, v in enumerate(sentences(n))]
    sp = run_spout_stage(RecordBatch.of(msgs), scheme=scheme, topology=runtime,
                         plan_filter=FetchPlan("t", 3, 0, max_messages=n), local=local,
                         rng=random.Random(5))
    sent = [(c, task, _seen(t)) for c, task, t in sp.routed]
    return sp, sent, runtime.counts()


def test_keyed_emits_send_what_the_general_path_sends(monkeypatch: pytest.MonkeyPatch):
    fast, fast_sent, fast_counts = _word_count_stage(300)
    assert any(len(b) for b in fast.routes.values())
    monkeypatch.setattr(TaskDispatcher, "keyed_route", lambda self, *a: None)
    slow, slow_sent, slow_counts = _word_count_stage(300)
    assert len(fast_sent) == 1500 and sorted(fast_sent, key=repr) == sorted(slow_sent, key=repr)
    # each bolt task's tuples in the order they were emitted
    for slot in slow.routes:
        assert [_seen(t) for t in fast.routes[slot]] == [_seen(t) for t in slow.routes[slot]]
    assert fast_counts == slow_counts
    assert fast.sent_roots == slow.sent_roots == set(slow.roots)
    assert fast.pairs == slow.pairs and fast.init.keys() == slow.init.keys()


def test_a_batch_pickles_as_rows_and_joins_batches_of_other_kinds():
    a = StormTuple([b"x"], ("word",), source_component="split", source_task=0, topic="t",
                   partition=1, offset=5, anchors={7: 0})
    b = StormTuple([b"y"], ("word",), source_component="split", source_task=1, topic="t",
                   partition=2, offset=6, anchors={8: 0})
    c = StormTuple([1, 2], ("k", "v"), stream="s", source_component="other")
    first, second = TupleBatch([a]), TupleBatch([c, b])
    assert first.tuples[0] is a                     # a tuple added is handed back itself
    first.extend(second)
    back = pickle.loads(pickle.dumps(first))
    assert [_seen(t) for t in back] == [_seen(a), _seen(c), _seen(b)]
    assert len(back.heads) == 3
    back.add(a)                                     # grows after its tuples were made
    assert [t.offset for t in back] == [5, None, 6, 5]


def _split_stage(messages: Any, scheme: str) -> Any:
    topology = from_spec(WORD_COUNT)
    runtime = LocalRuntime(topology, {}, spout_fields=load_scheme(scheme).fields)
    local = frozenset(stage_layout(topology).stages[0])
    return run_spout_stage(messages, scheme=load_scheme(scheme), topology=runtime,
                           plan_filter=FetchPlan("t", 3, 102, max_messages=40), local=local,
                           rng=random.Random(9)), runtime.counts()


@pytest.mark.parametrize("scheme", ["raw", "string"])
def test_a_value_scheme_over_a_fetched_batch_emits_what_it_does_over_messages(scheme: str):
    values: List[Any] = [s for s in sentences(50)]
    values[5] = None                                   # no tuple: skipped
    values[9] = b"\xff\xfe not utf-8"                  # the string scheme cannot read it
    msgs = [KafkaMessage(100 + i, None, v, 0, 0, (), "t", 3) for i, v in enumerate(values)]
    (batch, batch_counts), (listed, list_counts) = (
        _split_stage(RecordBatch.of(msgs), scheme), _split_stage(list(msgs), scheme))
    def plain(outcome: Any) -> Any:   # the same errors, told from other frames
        return replace(outcome, errors=[replace(e, traceback="") for e in outcome.errors])
    assert plain(batch.outcome) == plain(listed.outcome) and batch_counts == list_counts
    assert len(batch.outcome.errors) == (1 if scheme == "string" else 0)
    assert batch.outcome.taken == [(102, 142)]         # from the plan's offset, its cap
    assert batch.outcome.failed == ([109] if scheme == "string" else [])
    assert batch.outcome.skipped_null == 1
    assert [(c, task, _seen(t)) for c, task, t in batch.routed] == \
        [(c, task, _seen(t)) for c, task, t in listed.routed]
    assert batch.roots == listed.roots and batch.init == listed.init


@pytest.mark.parametrize("values, packed", [
    ([[b"a"], [b"bb"], ["c"], [None]], True),          # one plain value a tuple
    ([[b"k", 3], [b"j", 2.5, True], []], True),        # plain values, lists of any length
    ([(b"a",), [b"b"]], False),                        # a tuple: kept as it is
    ([[{"x": 1}], [b"b"]], False),                     # not a plain value: as it is
])
def test_values_go_by_a_plain_pickle_where_they_can_and_come_back_the_same(values, packed):
    batch = TupleBatch([StormTuple(v, tuple(f"f{i}" for i in range(len(v))),
                                   source_component="split", offset=i, anchors={i: 0})
                        for i, v in enumerate(values)])
    _rebuild, args = batch.__reduce__()
    assert isinstance(args[0], PackedValues) == packed
    back = pickle.loads(pickle.dumps(batch))
    assert [t.values for t in back] == values
    assert [type(t.values) for t in back] == [type(v) for v in values]
    assert [_seen(t)[1:] for t in back] == [_seen(t)[1:] for t in batch]


def test_shared_values_stay_shared_when_they_are_not_plain():
    shared = {"x": [1, 2]}
    batch = TupleBatch([StormTuple([shared], ("m",)), StormTuple([shared], ("m",))])
    back = pickle.loads(pickle.dumps(batch)).tuples
    assert back[0].values[0] is back[1].values[0] and back[0].values[0] == shared


def test_a_stage_leaves_nothing_of_its_tuples_in_the_runtime_it_ran_on():
    """The runtime outlives a stage in its Python worker. The dispatcher it stayed bound
    to kept the last partition's routed tuples alive until the next batch, so each of
    the worker's full collections scanned them (about 90,000 lists at 20,000 sentences
    a task); once the stage's result is dropped they are freed, and a collector used
    after the stage says so."""
    import gc

    topology = from_spec(WORD_COUNT)
    scheme = load_scheme("raw")
    runtime = LocalRuntime(topology, {}, spout_fields=scheme.fields)
    local = frozenset(stage_layout(topology).stages[0])
    msgs = [KafkaMessage(i, None, v, 0, 0, (), "t", 3) for i, v in enumerate(sentences(50))]
    sp = run_spout_stage(RecordBatch.of(msgs), scheme=scheme, topology=runtime,
                         plan_filter=FetchPlan("t", 3, 0, max_messages=50), local=local)
    rows = [batch.values for batch in sp.routes.values() if batch.values]
    assert sum(map(len, rows)) == 250
    del sp
    gc.collect()
    assert all(not [x for x in gc.get_referrers(r) if x is not rows] for r in rows)
    collector = runtime.runners["split"][0].collector
    with pytest.raises(AssertionError, match="collector used outside a batch"):
        collector.emit_to(0, [b"w"], None, "default")


def test_a_keyed_stream_of_one_field_crosses_as_bare_values_and_comes_back_as_lists(
        monkeypatch: pytest.MonkeyPatch):
    """A word count's words go under a bare head (each list of one word as the word) and
    pickle as one memo-less run of values; what the host unpickles is what the general
    path sends, lists again."""
    from storm_kafka_compat.topology.tuples import BareValues
    fast, _sent, _counts = _word_count_stage(200)
    monkeypatch.setattr(TaskDispatcher, "keyed_route", lambda self, *a: None)
    slow, _sent, _counts = _word_count_stage(200)
    for slot, batch in fast.routes.items():
        assert all(head[4] for head in batch.heads)
        assert isinstance(batch.__reduce__()[1][0], BareValues)
        back = pickle.loads(pickle.dumps(batch)).tuples
        assert [_seen(t) for t in back] == [_seen(t) for t in slow.routes[slot]]
        assert {type(t.values) for t in back} == {list}


class _TupleSplit:
    """Emits each word as a tuple, every third as a list: a bare route keeps the tuples'
    type (through the general path) and the order of both."""

    def declare_output_fields(self) -> Tuple[str, ...]:
        return ("word",)

    def execute(self, t: Any, collector: Any) -> None:
        for i, word in enumerate(t.values[0].split()):
            collector.emit([word] if i % 3 == 0 else (word,))


def _tuple_split_stage(lines: List[bytes]) -> Any:
    import sys
    import types
    module = types.ModuleType("skc_test_tuple_split")
    module.TupleSplit = _TupleSplit  # type: ignore[attr-defined]
    sys.modules["skc_test_tuple_split"] = module
    spec = {"bolts": [dict(WORD_COUNT["bolts"][0], bolt="skc_test_tuple_split:TupleSplit",
                           kind="basic"), WORD_COUNT["bolts"][1]]}
    topology = from_spec(spec)
    scheme = load_scheme("raw")
    runtime = LocalRuntime(topology, {}, spout_fields=scheme.fields)
    local = frozenset(stage_layout(topology).stages[0])
    msgs = [KafkaMessage(i, None, v, 0, 0, (), "t", 3) for i, v in enumerate(lines)]
    return run_spout_stage(RecordBatch.of(msgs), scheme=scheme, topology=runtime,
                           plan_filter=FetchPlan("t", 3, 0, max_messages=len(lines)),
                           local=local, rng=random.Random(3))


def test_values_that_are_not_a_list_keep_their_type_and_their_order_on_a_bare_route(
        monkeypatch: pytest.MonkeyPatch):
    lines = list(sentences(40))
    fast = _tuple_split_stage(lines)
    monkeypatch.setattr(TaskDispatcher, "keyed_route", lambda self, *a: None)
    slow = _tuple_split_stage(lines)
    got = []
    for slot, batch in fast.routes.items():       # each task's tuples in emit order
        back = pickle.loads(pickle.dumps(batch)).tuples
        assert [_seen(t) for t in back] == [_seen(t) for t in slow.routes[slot]]
        got.extend((t.offset, t.values) for t in back)
    words = [(off, w, i) for off, s in enumerate(lines) for i, w in enumerate(s.split())]
    assert sorted(got, key=repr) == sorted(
        ((off, [w] if i % 3 == 0 else (w,)) for off, w, i in words), key=repr)
