"""The spout stage's short cuts give what its general path gives (issue 31 item 5):

* spout tuples carry no edge id where every bolt they feed acks in the call that executes
  it in a staged batch (:func:`~storm_kafka_compat.executor.process.leaf_spout`): the
  offsets failed, acked and left open are those the XOR of edge ids gives;
* a lone shuffle into a bolt of the same task puts the spout's tuples straight into that
  bolt's queues (:meth:`~storm_kafka_compat.executor.dag.TaskDispatcher.local_queues`):
  each task gets the tuples round-robin would give it, in their order, and the turn
  carries over to the next batch."""

from __future__ import annotations

import random
from typing import Any, Dict, List, Tuple

import pytest

from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.executor import process
from storm_kafka_compat.executor.dag import LocalRuntime, TaskDispatcher
from storm_kafka_compat.executor.stage_tasks import run_spout_stage, stage_layout
from storm_kafka_compat.kafka.client import KafkaMessage, RecordBatch
from storm_kafka_compat.topology.bolts import BasicBolt
from storm_kafka_compat.topology.schemes import load_scheme
from storm_kafka_compat.topology.spec import from_spec
from tests.unit.test_edge_free_trees import one_batch

#: the input each split task executed, across the instances of a run: task -> values
SPLIT_SEEN: Dict[int, List[Any]] = {}


class FailingSplit(BasicBolt):
    """Splits a sentence into words; raises on a sentence holding ``boom``."""

    def prepare(self, conf, context):
        self.task = context.task_index

    def declare_output_fields(self):
        return ("word",)

    def execute(self, t, collector):
        SPLIT_SEEN.setdefault(self.task, []).append(t.values[0])
        if "boom" in t.values[0]:
            raise ValueError("cannot split this")
        for word in t.values[0].split():
            collector.emit([word])


def spec(then_hold: bool = False) -> Dict[str, Any]:
    bolts: List[Dict[str, Any]] = [
        {"name": "split", "bolt": f"{__name__}:FailingSplit", "kind": "basic",
         "parallelism": 2, "inputs": [{"from": "spout", "grouping": "shuffle"}]},
        {"name": "count", "bolt": "tests.unit.test_edge_free_trees:BasicCount",
         "kind": "basic", "parallelism": 2,
         "inputs": [{"from": "split", "grouping": "fields", "fields": ["word"]}]}]
    if then_hold:
        bolts.append({"name": "hold", "bolt": "tests.unit.test_edge_free_trees:Holder",
                      "kind": "rich", "inputs": [{"from": "split", "grouping": "global"}]})
    return {"bolts": bolts}


LINES = ["a b", "c bad", "boom d", "e f a", "hold g", "bad", "h boom", "i"]


@pytest.mark.parametrize("then_hold", [False, True])
def test_spout_tuples_without_edge_ids_fail_ack_and_hold_the_offsets_edges_do(
        monkeypatch: pytest.MonkeyPatch, then_hold: bool):
    leaf, _counted = one_batch(spec(then_hold), LINES)
    monkeypatch.setattr(process, "leaf_spout", lambda runtime, dispatcher: False)
    edged, _counted = one_batch(spec(then_hold), LINES)
    # "bad" fails in the counting task, "boom" in the split
    assert leaf.failed == edged.failed == [1, 2, 5, 6]
    assert leaf.acked == edged.acked
    assert leaf.open_trees == edged.open_trees == ([4] if then_hold else [])


def test_the_spout_is_a_leaf_only_where_every_bolt_it_feeds_acks_in_execute():
    scheme = load_scheme("string")
    for bolts, leaf in [(spec(), True), (spec(then_hold=True), True),
                        ({"bolts": [{"name": "hold", "kind": "rich", "inputs": [
                            {"from": "spout", "grouping": "shuffle"}],
                            "bolt": "tests.unit.test_edge_free_trees:Holder"}]}, False)]:
        topo = from_spec(bolts, spout_fields=scheme.fields)
        runtime = LocalRuntime(topo, {}, spout_fields=scheme.fields)
        staged = TaskDispatcher(runtime, _Sink(), 0,
                                frozenset(stage_layout(topo).stages[0]), settles_at_end=True)
        single = TaskDispatcher(runtime, _Sink(), 0, None)
        assert process.leaf_spout(runtime, staged) is leaf
        assert process.leaf_spout(runtime, single) is False   # its acker needs the edges


class _Sink:
    def ack(self, root: int, value: int, now_ms: Any = None) -> None: ...

    def fail(self, root: int) -> None: ...

    def reset_timeout(self, root: int, now_ms: int) -> None: ...


def _stages(batches: List[List[str]]) -> Tuple[Dict[Any, List[Any]], Any, Dict[int, List[Any]]]:
    """Each batch's spout stage on one runtime: what each bolt task of the later stage got
    (offset, word), the round-robin positions after, what each split task executed."""
    SPLIT_SEEN.clear()
    scheme = load_scheme("string")
    topo = from_spec(spec())
    runtime = LocalRuntime(topo, {}, spout_fields=scheme.fields)
    local = frozenset(stage_layout(topo).stages[0])
    routed: Dict[Any, List[Any]] = {}
    start = 0
    for lines in batches:
        msgs = [KafkaMessage(start + i, None, line.encode(), 0, 0, (), "t", 0)
                for i, line in enumerate(lines)]
        sp = run_spout_stage(RecordBatch.of(msgs), scheme=scheme, topology=runtime,
                             plan_filter=FetchPlan("t", 0, start, max_messages=len(lines)),
                             local=local, rng=random.Random(1))
        for component, task, t in sp.routed:
            routed.setdefault((component, task), []).append((t.offset, t.values))
        start += len(lines)
    return routed, dict(runtime.seq), {k: list(v) for k, v in SPLIT_SEEN.items()}


def test_the_spouts_tuples_go_to_the_local_bolts_queues_as_round_robin_sends_them(
        monkeypatch: pytest.MonkeyPatch):
    batches = [LINES[:3], LINES[3:], ["j k", "l"]]   # odd sizes: the turn carries over
    fast = _stages(batches)
    monkeypatch.setattr(TaskDispatcher, "local_queues", lambda self, source, stream: None)
    general = _stages(batches)
    assert fast == general
    routed, seq, seen = fast
    assert seq == {("spout", "split"): 10}
    assert seen[0] == ["a b", "boom d", "hold g", "h boom", "j k"]
    assert sum(len(v) for v in routed.values()) == 14     # the words of the 8 split
    assert sorted(routed) == [("count", 0), ("count", 1)]


def _keyed_stage(messages: Any) -> Tuple[Any, Any]:
    """The spout straight into a counting bolt by a fields grouping on its one field (a
    topology that counts per key): what each task of the bolt gets, and the roots."""
    scheme = load_scheme("string")
    topo = from_spec({"bolts": [
        {"name": "count", "bolt": "tests.unit.test_edge_free_trees:BasicCount",
         "kind": "basic", "parallelism": 2,
         "inputs": [{"from": "spout", "grouping": "fields", "fields": ["str"]}]}]})
    runtime = LocalRuntime(topo, {}, spout_fields=scheme.fields)
    sp = run_spout_stage(messages, scheme=scheme, topology=runtime,
                         plan_filter=FetchPlan("t", 0, 0, max_messages=len(messages)),
                         local=frozenset(stage_layout(topo).stages[0]), rng=random.Random(4))
    got = {slot: [(t.values, t.offset, t.topic, t.partition, list(t.anchors.values()),
                   t.source_component, t.fields) for t in batch]
           for slot, batch in sp.routes.items()}
    return got, (sorted(sp.roots.values()), len(sp.sent_roots),
                 set(sp.init.values()), set(sp.pairs.values()))


@pytest.mark.parametrize("batched", [True, False])
def test_the_spouts_keyed_tuples_reach_their_tasks_as_the_general_path_sends_them(
        monkeypatch: pytest.MonkeyPatch, batched: bool):
    words = ["a", "b", "a", "c", "d", "b", "e"]
    msgs = [KafkaMessage(i, None, w.encode(), 0, 0, (), "t", 0) for i, w in enumerate(words)]
    fast = _keyed_stage(RecordBatch.of(msgs) if batched else msgs)
    monkeypatch.setattr(process, "spout_route", lambda runtime, dispatcher, leaf: None)
    general = _keyed_stage(RecordBatch.of(msgs) if batched else msgs)
    assert fast == general
    routed, (offsets, sent, xors, pairs) = fast
    assert sorted(t[0] for ts in routed.values() for t in ts) == sorted([w] for w in words)
    # every tuple one root and no edge id: nothing for the acker but the roots sent on
    assert offsets == list(range(7)) and sent == 7 and xors == {0} and pairs == set()
    assert all(t[4] == [0] for ts in routed.values() for t in ts)
