"""Executor-side batch processing: plan filter, schemes, bolts, acker outcome."""

from __future__ import annotations

import logging
import pickle
import random
from collections import defaultdict
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_kafka_compat.kafka.client import KafkaMessage
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.topology.bolts import (BasicBolt, FailedException, RichBolt,
                                               simple_bolt)
from storm_kafka_compat.executor.dag import LocalRuntime
from storm_kafka_compat.executor.process import BatchOutcome, as_fetch_plan, process_batch
from storm_kafka_compat.executor.stage_tasks import run_spout_stage
from tests.unit.multi_stage_reference import resolve_batch, run_stage
from storm_kafka_compat.topology.schemes import load_scheme
from storm_kafka_compat.topology.builder import Topology, TopologyBuilder
from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.topology.tuples import StormTuple


def msg(offset: int, value: Optional[bytes], key: Optional[bytes] = None,
        topic: str = "orders", partition: int = 3) -> KafkaMessage:
    return KafkaMessage(offset, key, value, 0, 0, (), topic, partition)


def msgs(offsets: Sequence[int], fmt: str = "m{}") -> List[KafkaMessage]:
    return [msg(o, fmt.format(o).encode()) for o in offsets]


STRING = load_scheme("string")


# --- plan filter ---------------------------------------------------------------------------

def _ok(tup: StormTuple) -> None:
    return None


@pytest.mark.parametrize("plan, offsets, taken, next_offset, scanned_to", [
    (FetchPlan.at(0), range(5), [(0, 5)], 5, 5),
    (FetchPlan.at(3), range(6), [(3, 6)], 6, 6),                         # wrapper set below offset
    (FetchPlan.at(0, max_messages=2), range(6), [(0, 2)], 2, 2),
    (FetchPlan.at(0, reemit={1, 4}), range(6), [(1, 2), (4, 5)], 5, 6),
    (FetchPlan.at(2, reemit={1, 4}), range(6), [(4, 5)], 5, 6),
    (FetchPlan.at(0), [0, 1, 4, 5], [(0, 2), (4, 6)], 6, 6),             # compaction gap
    (FetchPlan.at(10), range(5), [], None, 5),
    (FetchPlan.at(0), [], [], None, None),
])
def test_plan_filter(plan: FetchPlan, offsets: Any, taken: Any, next_offset: Any,
                     scanned_to: Any) -> None:
    out = process_batch(msgs(list(offsets)), scheme=STRING, bolt=_ok, plan_filter=plan)
    assert out.taken == taken
    assert out.acked == taken
    assert out.failed == []
    assert out.next_offset == next_offset
    assert out.scanned_to == scanned_to


def test_as_fetch_plan_keeps_the_manager_plan_and_reads_an_int_as_new_data() -> None:
    plan = FetchPlan("orders", 3, 10, True, (10, 12))
    assert as_fetch_plan(plan) is plan
    assert as_fetch_plan(7) == FetchPlan.at(7)
    assert FetchPlan.at(7).reemit_set is None and FetchPlan.at(7, reemit={9, 8}).reemit == (8, 9)


def test_a_bounded_plan_takes_nothing_at_or_past_its_bound() -> None:
    plan = FetchPlan("orders", 3, 10, max_messages=10, bound=13)
    out = process_batch(msgs(range(10, 16)), scheme=STRING, bolt=_ok, plan_filter=plan)
    assert out.taken == [(10, 13)] and plan.max_offset == 13
    assert [o for o in range(9, 16) if plan.takes(o)] == [10, 11, 12]


def test_manager_new_mode_plan_takes_everything() -> None:
    out = process_batch(msgs(range(10, 14)), scheme=STRING, bolt=_ok,
                        plan_filter=FetchPlan("orders", 3, 10))
    assert out.taken == [(10, 14)]


# --- simple bolt -----------------------------------------------------------------------------

def test_simple_bolt_sees_contract_tuple() -> None:
    seen: List[Tuple[Any, ...]] = []

    def bolt(t: StormTuple) -> None:
        seen.append((t.values, t.fields, t["str"], t[0], t.topic, t.partition, t.offset,
                     t.message_id))

    process_batch([msg(41, b"hi")], scheme=STRING, bolt=bolt, plan_filter=FetchPlan.at(41))
    assert seen == [(["hi"], ("str",), "hi", "hi", "orders", 3, 41, (3, 41))]


def test_simple_bolt_raise_fails_and_tombstones_are_acked(caplog: Any) -> None:
    batch = msgs(range(6))
    batch[2] = msg(2, None)                       # tombstone
    batch[4] = msg(4, b"boom")

    def bolt(t: StormTuple) -> None:
        if t["str"] == "boom":
            raise ValueError("bad record")
        if t.offset == 5:
            raise FailedException("retry me")

    with caplog.at_level(logging.WARNING, logger="storm_kafka_compat.executor.process"):
        out = process_batch(batch, scheme=STRING, bolt=bolt, plan_filter=FetchPlan.at(0))
    assert out.taken == [(0, 6)]
    assert out.failed == [4, 5]
    assert out.acked == [(0, 4)]
    assert out.skipped_null == 1
    [error] = out.errors                           # FailedException is not an error
    assert (error.component, error.kind, error.message, error.where()) == \
        ("bolt", "ValueError", "bad record", "orders/3@4")
    assert 'raise ValueError("bad record")' in error.traceback
    assert out.stage_counts["bolt"] == {"executed": 5, "emitted": 0, "acked": 3, "failed": 2}


def test_scheme_error_fails_the_offset() -> None:
    out = process_batch([msg(0, b"ok"), msg(1, b"\xff"), msg(2, b"ok")], scheme=STRING,
                        bolt=_ok, plan_filter=FetchPlan.at(0))
    assert out.failed == [1] and out.acked == [(0, 1), (2, 3)]


def test_all_tuples_of_a_message_share_its_fate() -> None:
    class Lines:
        fields = ("line",)

        def to_tuples(self, m: Any) -> list:
            return [] if m.value is None else [[x] for x in m.value.decode().split("|")]

    calls: List[str] = []

    def bolt(t: StormTuple) -> None:
        calls.append(t["line"])
        if t["line"] == "bad":
            raise FailedException()

    out = process_batch([msg(0, b"a|b"), msg(1, b"c|bad|d"), msg(2, b"")], scheme=Lines(),
                        bolt=bolt, plan_filter=FetchPlan.at(0))
    assert out.failed == [1]
    assert out.acked == [(0, 1), (2, 3)]
    assert calls[:2] == ["a", "b"]


def test_process_batch_needs_one_of_bolt_or_topology() -> None:
    with pytest.raises(ValueError):
        process_batch([], scheme=STRING, plan_filter=FetchPlan.at(0))


@settings(max_examples=60, deadline=None)
@given(offsets=st.lists(st.integers(0, 60), unique=True).map(sorted),
       bad=st.sets(st.integers(0, 60)), nulls=st.sets(st.integers(0, 60)),
       start=st.integers(0, 30), limit=st.one_of(st.none(), st.integers(1, 40)))
def test_simple_outcome_partitions_taken(offsets: List[int], bad: set, nulls: set, start: int,
                                         limit: Optional[int]) -> None:
    batch = [msg(o, None if o in nulls else str(o).encode()) for o in offsets]

    def bolt(t: StormTuple) -> None:
        if t.offset in bad:
            raise FailedException()

    out = process_batch(batch, scheme=STRING, bolt=bolt,
                        plan_filter=FetchPlan.at(start, max_messages=limit))
    expect_taken = [o for o in offsets if o >= start][:limit]
    assert [o for s, e in out.taken for o in range(s, e)] == expect_taken
    assert out.failed == [o for o in expect_taken if o in bad and o not in nulls]
    assert [o for s, e in out.acked for o in range(s, e)] == \
        [o for o in expect_taken if o not in out.failed]
    assert out.skipped_null == len([o for o in expect_taken if o in nulls])
    assert out.next_offset == (expect_taken[-1] + 1 if expect_taken else None)


# --- topologies ---------------------------------------------------------------------------------

class Split(BasicBolt):
    def declare_output_fields(self) -> Any:
        return ("word",)

    def execute(self, t: StormTuple, c: Any) -> None:
        for w in t["str"].split():
            c.emit([w])


class Count(BasicBolt):
    prepared = 0

    def prepare(self, conf: Any, context: Any) -> None:
        type(self).prepared += 1
        self.counts: Dict[str, int] = defaultdict(int)
        self.task = context.task_index

    def execute(self, t: StormTuple, c: Any) -> None:
        if t["word"] == "bad":
            raise FailedException("bad word")
        if t["word"] == "crash":
            raise RuntimeError("bug in bolt")
        self.counts[t["word"]] += 1


def word_count(split_par: int = 2, count_par: int = 3) -> Topology:
    b = TopologyBuilder().set_spout("kafka", ("str",))
    b.set_bolt("split", Split, split_par).shuffle_grouping("kafka")
    b.set_bolt("count", Count, count_par).fields_grouping("split", ["word"])
    return b.build()


def test_word_count_acks_and_fails_per_message(caplog: Any) -> None:
    topo = word_count()
    rt = LocalRuntime(topo, rng=random.Random(1))
    batch = [msg(0, b"a b a"), msg(1, b"b bad"), msg(2, None), msg(3, b"c crash"), msg(4, b"")]
    with caplog.at_level(logging.WARNING):
        out = process_batch(batch, scheme=STRING, topology=rt, plan_filter=FetchPlan.at(0))
    assert out.failed == [1, 3]
    assert out.acked == [(0, 1), (2, 3), (4, 5)]
    assert out.skipped_null == 1                  # the tombstone; "" gives a tuple, no words
    [error] = out.errors
    assert (error.component, error.kind, error.message, error.where()) == \
        ("count", "RuntimeError", "bug in bolt", "orders/3@3")
    counts: Dict[str, int] = defaultdict(int)
    tasks_of: Dict[str, set] = defaultdict(set)
    for runner in rt.runners["count"]:
        for w, n in runner.bolt.counts.items():
            counts[w] += n
            tasks_of[w].add(runner.context.task_index)
    assert counts == {"a": 2, "b": 2, "c": 1}
    assert all(len(t) == 1 for t in tasks_of.values())     # fields grouping
    assert out.stage_counts["kafka"] == {"messages": 5, "emitted": 4}
    assert out.stage_counts["split"]["executed"] == 4
    assert out.stage_counts["count"] == {"executed": 7, "emitted": 0, "acked": 5, "failed": 2}


def test_bolts_prepared_once_per_runtime_across_batches() -> None:
    Count.prepared = 0
    topo = word_count(1, 2)
    for i in range(3):
        out = process_batch([msg(i, b"x y")], scheme=STRING, topology=topo,
                            plan_filter=FetchPlan.at(i))
        assert out.acked == [(i, i + 1)]
    assert Count.prepared == 2


class Holder(RichBolt):
    """Acks odd offsets, keeps even ones (never acked: incomplete at batch end),
    emits an unanchored side tuple for every input."""

    def declare_output_fields(self) -> Any:
        return {"default": ("str",), "side": ("note",)}

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        super().prepare(conf, context, collector)
        self.held: List[StormTuple] = []

    def execute(self, t: StormTuple) -> None:
        self.collector.emit(["side"], stream="side")          # unanchored, no subscriber
        if t.offset % 2:
            self.collector.emit([t["str"]], anchors=[t])
            self.collector.ack(t)
        else:
            self.held.append(t)


class Fail3(RichBolt):
    def execute(self, t: StormTuple) -> None:
        if t.offset == 3:
            self.collector.fail(t)
        else:
            self.collector.ack(t)


class SideSink(RichBolt):
    seen: List[Any] = []

    def execute(self, t: StormTuple) -> None:
        SideSink.seen.append(t.values)
        # never acked: unanchored tuples do not hold any tree open


def test_rich_bolts_incomplete_and_unanchored() -> None:
    b = TopologyBuilder().set_spout("kafka", ("str",))
    b.set_bolt("hold", Holder).shuffle_grouping("kafka")
    b.set_bolt("f3", Fail3, 2).shuffle_grouping("hold")
    b.set_bolt("side", SideSink).all_grouping("hold", stream="side")
    SideSink.seen = []
    out = process_batch(msgs(range(1, 7)), scheme=STRING, topology=b.build(),
                        plan_filter=FetchPlan.at(1), rng=random.Random(3))
    assert out.failed == [3]                      # failed downstream
    assert out.incomplete == [2, 4, 6]            # held, never acked: open, not failed
    assert out.acked == [(1, 2), (5, 6)]
    assert len(SideSink.seen) == 6


def test_simple_bolt_returns_are_emitted_downstream() -> None:
    got: List[Tuple[str, int]] = []

    def upper(t: StormTuple) -> list:
        return [[t["str"].upper()], [t["str"] + "!"]]

    def record(t: StormTuple) -> None:
        got.append((t["u"], t.offset))
        if t["u"] == "b!":
            raise ValueError("nope")

    b = TopologyBuilder().set_spout("kafka", ("str",))
    b.set_bolt("up", simple_bolt(upper, ("u",))).shuffle_grouping("kafka")
    b.set_bolt("rec", record).shuffle_grouping("up")
    out = process_batch([msg(0, b"a"), msg(1, b"b")], scheme=STRING, topology=b.build(),
                        plan_filter=FetchPlan.at(0))
    assert sorted(got) == [("A", 0), ("B", 1), ("a!", 0), ("b!", 1)]
    assert out.failed == [1] and out.acked == [(0, 1)]


def test_bolt_emitting_wrong_arity_fails_the_tuple() -> None:
    def two(t: StormTuple) -> list:
        return [["only-one"]]

    b = TopologyBuilder().set_spout("kafka", ("str",))
    b.set_bolt("two", simple_bolt(two, ("a", "b"))).shuffle_grouping("kafka")
    b.set_bolt("sink", _ok).shuffle_grouping("two")
    out = process_batch([msg(0, b"x")], scheme=STRING, topology=b.build(),
                        plan_filter=FetchPlan.at(0))
    assert out.failed == [0]


def test_spout_stream_without_subscriber_acks_at_once() -> None:
    # the spout emits on its first declared stream; nobody subscribes to it
    b = TopologyBuilder().set_spout("kafka", {"default": ("str",), "other": ("str",)})
    b.set_bolt("never", Fail3).shuffle_grouping("kafka", stream="other")
    out = process_batch(msgs(range(3)), scheme=STRING, topology=b.build(),
                        plan_filter=FetchPlan.at(0))
    assert out.failed == [] and out.acked == [(0, 3)]
    assert out.stage_counts["never"]["executed"] == 0


# --- multi-stage ---------------------------------------------------------------------------

def _run_multi_stage(topo: Topology, batch: List[KafkaMessage], seed: int) -> BatchOutcome:
    """What the driver does with one Spark stage per bolt: route, repartition, fold."""
    rt = LocalRuntime(topo, rng=random.Random(seed))
    spout = run_spout_stage(batch, scheme=STRING, topology=rt, plan_filter=FetchPlan.at(0))
    inbox: Dict[Tuple[str, int], List[StormTuple]] = defaultdict(list)
    for comp, task, tup in spout.routed:
        inbox[(comp, task)].append(pickle.loads(pickle.dumps(tup)))   # crosses a shuffle
    results = []
    for name in topo.order:
        for task in range(topo.parallelism(name)):
            res = run_stage(name, task, inbox.pop((name, task), []), topology=rt)
            results.append(res)
            for comp, t2, tup in res.routed:
                inbox[(comp, t2)].append(pickle.loads(pickle.dumps(tup)))
    assert not inbox
    return resolve_batch(spout, results)


@settings(max_examples=25, deadline=None)
@given(words=st.lists(st.lists(st.sampled_from(["a", "b", "bad", "c"]), max_size=4),
                      min_size=1, max_size=12),
       seed=st.integers(0, 1000))
def test_multi_stage_matches_single_stage(words: List[List[str]], seed: int) -> None:
    batch = [msg(i, " ".join(ws).encode()) for i, ws in enumerate(words)]
    single = process_batch(batch, scheme=STRING, topology=LocalRuntime(word_count()),
                           plan_filter=FetchPlan.at(0), rng=random.Random(seed))
    multi = _run_multi_stage(word_count(), batch, seed)
    assert multi.failed == single.failed == [i for i, ws in enumerate(words) if "bad" in ws]
    assert multi.acked == single.acked
    assert multi.taken == single.taken
    assert multi.stage_counts["count"]["executed"] == sum(len(ws) for ws in words)


def test_storm_tuple_pickles_with_acker_state() -> None:
    t = StormTuple(["v"], ("str",), stream="s", source_component="c", source_task=2,
                   topic="orders", partition=3, offset=9, anchors={1: 2})
    t.ack_val = 77
    u = pickle.loads(pickle.dumps(t))
    assert u == t and u.anchors == {1: 2} and u.ack_val == 77 and u.source_task == 2
    assert u.get("missing", "d") == "d" and u.as_dict() == {"str": "v"}
    with pytest.raises(KeyError, match="not one of"):
        u["missing"]


def test_topology_without_spout_fields_takes_the_schemes() -> None:
    b = TopologyBuilder().set_spout("spout", None)
    b.set_bolt("count", Count, 2).fields_grouping("spout", ["word"])
    topo = b.build()

    class Words:
        fields = ("word",)

        def to_tuples(self, m: Any) -> list:
            return [[w] for w in m.value.decode().split()]

    out = process_batch([msg(0, b"x y"), msg(1, b"bad")], scheme=Words(), topology=topo,
                        plan_filter=FetchPlan.at(0))
    assert out.acked == [(0, 1)] and out.failed == [1]
    with pytest.raises(TopologyError, match="fields grouping on"):
        process_batch([msg(0, b"x")], scheme=STRING, topology=word_count_unbound(),
                      plan_filter=FetchPlan.at(0))


def word_count_unbound() -> Topology:
    b = TopologyBuilder().set_spout("spout", None)
    b.set_bolt("count", Count).fields_grouping("spout", ["word"])
    return b.build()


def test_scheme_fields_must_match_declared_spout_fields() -> None:
    rt = LocalRuntime(word_count())
    with pytest.raises(TopologyError, match=r"scheme gives fields \['bytes'\]"):
        process_batch([msg(0, b"x")], scheme=load_scheme("raw"), topology=rt,
                      plan_filter=FetchPlan.at(0))


class Router(BasicBolt):
    """Sends short words to "default", long ones to "long"; reports odd offsets."""

    def declare_output_fields(self) -> Any:
        return {"default": ("w",), "long": ("w", "n")}

    def execute(self, t: StormTuple, c: Any) -> None:
        c.reset_timeout(t)
        for w in t["str"].split():
            if len(w) > 3:
                c.emit([w, len(w)], stream="long")
            else:
                c.emit([w])
        if t.offset == 1:
            from storm_kafka_compat.topology.bolts import ReportedFailedException
            raise ReportedFailedException("reported")


def test_streams_and_reported_failures(caplog: Any) -> None:
    got: Dict[str, List[Any]] = defaultdict(list)

    def short(t: StormTuple) -> None:
        got["short"].append(t["w"])

    def long_(t: StormTuple) -> None:
        got["long"].append((t["w"], t["n"]))

    b = TopologyBuilder().set_spout("spout", ("str",))
    b.set_bolt("router", Router).shuffle_grouping("spout")
    b.set_bolt("short", short).shuffle_grouping("router")
    b.set_bolt("long", long_).shuffle_grouping("router", stream="long")
    with caplog.at_level(logging.WARNING, logger="storm_kafka_compat.topology.bolts"):
        out = process_batch([msg(0, b"ab abcd"), msg(1, b"xyz")], scheme=STRING,
                            topology=b.build(), plan_filter=FetchPlan.at(0))
    assert got == {"short": ["ab", "xyz"], "long": [("abcd", 4)]}
    assert out.failed == [1] and out.acked == [(0, 1)]
    assert "reported" in caplog.text


@settings(max_examples=300, deadline=None)
@given(gaps=st.lists(st.integers(min_value=1, max_value=3), max_size=40),
       first=st.integers(min_value=0, max_value=20),
       start=st.integers(min_value=0, max_value=120),
       bound=st.one_of(st.none(), st.integers(min_value=0, max_value=130)),
       limit=st.one_of(st.none(), st.integers(min_value=0, max_value=50)))
def test_the_sliced_take_is_the_filter_for_every_new_data_plan(gaps, first, start, bound,
                                                              limit) -> None:
    """take() bisects an ordered fetch; it must take exactly what the per-message
    filter takes and report the same scanned_to (gaps: a compacted topic)."""
    from storm_kafka_compat.executor.process import _Filter, take
    offsets, o = [], first
    for g in gaps:
        offsets.append(o)
        o += g
    msgs = [KafkaMessage(x, None, b"v", -1, -1, (), "t", 0) for x in offsets]
    plan = FetchPlan("t", 0, start, max_messages=limit, bound=bound)
    filt = _Filter(msgs, plan)
    expected = list(filt)
    taken, scanned = take(msgs, plan)
    assert taken == expected
    assert scanned == filt.scanned_to


def test_a_gapped_fetch_gives_one_taken_range_per_run_and_acks_them() -> None:
    msgs = [KafkaMessage(x, None, b"v", -1, -1, (), "t", 0) for x in (5, 6, 7, 10, 11, 20)]
    out = process_batch(msgs, scheme=load_scheme("raw"), bolt=lambda t: None,
                        plan_filter=FetchPlan("t", 0, 6, max_messages=4))
    assert out.taken == [(6, 8), (10, 12)]
    assert out.acked == [(6, 8), (10, 12)]
    assert (out.next_offset, out.scanned_to) == (12, 12)
