"""Tuples sent to bolts that ack in execute carry no edge id in a staged batch
(issue 31 item 5): the outcome per offset is the one the XOR of edge ids gives.

The same word count runs with its counting bolt written two ways: as a basic bolt (its
input tuples carry only their roots) and as a rich bolt that acks and fails by hand
(every tuple keeps its edge id). Both fail exactly the offsets whose words the bolt
failed, ack the rest, and count the same words; a rich bolt downstream that holds its
input open keeps the tree open, as Storm's acker does."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.testing.hosts import InProcessBoltState, MemoryStates
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.topology.bolts import BasicBolt, RichBolt
from tests.unit.test_time_in_bolts import Clock, make_job

#: words seen by the counting bolts, across their instances: word -> count
COUNTED: Dict[str, int] = {}
#: tuples the holding bolt kept without acking
HELD: List[Any] = []


class Split(BasicBolt):
    def declare_output_fields(self):
        return ("word",)

    def execute(self, t, collector):
        for word in t.values[0].split():
            collector.emit([word])


class BasicCount(BasicBolt):
    """Fails (raises on) the word ``bad``; counts the others."""

    def execute(self, t, collector):
        word = t.values[0]
        if word == "bad":
            raise ValueError("a bad word")
        COUNTED[word] = COUNTED.get(word, 0) + 1


class RichCount(RichBolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, t):
        word = t.values[0]
        if word == "bad":
            self.collector.fail(t)
            return
        COUNTED[word] = COUNTED.get(word, 0) + 1
        self.collector.ack(t)


class Holder(RichBolt):
    """Keeps the tuples of the word ``hold`` without acking them (a tree left open)."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, t):
        if t.values[0] == "hold":
            HELD.append(t)
        else:
            self.collector.ack(t)


def spec(count: str, then_hold: bool = False) -> Dict[str, Any]:
    bolts: List[Dict[str, Any]] = [
        {"name": "split", "bolt": f"{__name__}:Split", "kind": "basic",
         "inputs": [{"from": "spout", "grouping": "shuffle"}]},
        {"name": "count", "bolt": f"{__name__}:{count}",
         "kind": "basic" if count == "BasicCount" else "rich", "parallelism": 2,
         "inputs": [{"from": "split", "grouping": "fields", "fields": ["word"]}]}]
    if then_hold:
        bolts.append({"name": "hold", "bolt": f"{__name__}:Holder", "kind": "rich",
                      "inputs": [{"from": "split", "grouping": "global"}]})
    return {"bolts": bolts}


class Recording(InProcessRunner):
    """The in-process runner, keeping each batch's result."""

    def __init__(self, kafka):
        super().__init__(kafka)
        self.results = []

    def run(self, plan):
        result = super().run(plan)
        self.results.append(result)
        return result


def one_batch(topology: Dict[str, Any], lines: List[str]):
    COUNTED.clear()
    HELD.clear()
    kafka = ScriptedKafka()
    kafka.create_topic("events", 1)
    kafka.append("events", 0, *[line.encode() for line in lines])
    clock = Clock()
    runner = Recording(kafka)
    pipe = Pipeline(make_job(topology), runner=runner, store=MemoryStateStore(),
                    kafka_factory=lambda boot: kafka, clock=clock, sleep=clock.sleep,
                    bolt_tasks=InProcessBoltState.factory(MemoryStates(), clock=clock.seconds))
    pipe.open()
    pipe.batch(RunOptions(max_messages_per_partition=len(lines)))
    (result,) = runner.results
    (partition,) = result.partitions
    return partition, dict(COUNTED)


LINES = ["a b", "c bad", "d e a", "bad", "f"]


@pytest.mark.parametrize("count", ["BasicCount", "RichCount"])
def test_a_bolt_of_a_later_stage_fails_exactly_the_offsets_of_its_failed_words(count):
    partition, counted = one_batch(spec(count), LINES)
    assert partition.failed == [1, 3]
    assert partition.acked == [(0, 1), (2, 3), (4, 5)]
    assert partition.open_trees == []
    assert counted == {"a": 2, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1}


def test_a_tree_held_open_by_a_rich_bolt_stays_open_beside_edge_free_leaves():
    partition, _counted = one_batch(spec("BasicCount", then_hold=True),
                                    ["a b", "hold c", "d"])
    assert partition.open_trees == [1] and partition.failed == []
    assert partition.acked == [(0, 1), (2, 3)]
    assert [t.values[0] for t in HELD] == ["hold"]


def test_edge_free_leaves_carry_their_roots_without_an_edge_id():
    """What makes it cheaper: the count bolt's inputs carry {root: 0}, and the split's
    ack sends nothing for them."""
    from storm_kafka_compat.executor.stage_tasks import run_spout_stage, stage_layout
    from storm_kafka_compat.executor.dag import LocalRuntime
    from storm_kafka_compat.batch import FetchPlan
    from storm_kafka_compat.kafka.client import KafkaMessage
    from storm_kafka_compat.topology.spec import from_spec
    from storm_kafka_compat.topology.schemes import load_scheme
    scheme = load_scheme("string")
    topo = from_spec(spec("BasicCount", then_hold=True), spout_fields=scheme.fields)
    layout = stage_layout(topo)
    rt = LocalRuntime(topo, {}, spout_fields=scheme.fields)
    sp = run_spout_stage([KafkaMessage(0, None, b"x hold", 0, 0, (), "t", 0)], scheme=scheme,
                         topology=rt, plan_filter=FetchPlan("t", 0, 0),
                         local=frozenset(layout.stages[0]))
    (root,) = sp.roots
    by_target = {(c, t.values[0]): t.anchors for c, _task, t in sp.routed}
    assert by_target[("count", "x")] == {root: 0} == by_target[("count", "hold")]
    assert by_target[("hold", "x")][root] != 0 and by_target[("hold", "hold")][root] != 0
    # the root's XOR after the spout stage is what the rich bolt's two tuples opened
    assert sp.init[root] ^ sp.pairs[root] == \
        by_target[("hold", "x")][root] ^ by_target[("hold", "hold")][root]


def test_a_root_whose_tree_ends_in_execute_sends_no_acker_record_to_the_driver():
    """With bolt hosts, a root whose tuples all went to bolts whose trees end in execute
    is not among the roots stage 0 reports (a host names the offset of one it fails);
    a rich bolt anywhere downstream keeps the record."""
    import pickle

    from storm_kafka_compat.batch import FetchPlan
    from storm_kafka_compat.executor.dag import LocalRuntime
    from storm_kafka_compat.executor.hosts.host import StageAnswer, origins_of
    from storm_kafka_compat.executor.stage_tasks import run_spout_stage, stage_layout
    from storm_kafka_compat.kafka.client import KafkaMessage
    from storm_kafka_compat.topology.schemes import load_scheme
    from storm_kafka_compat.topology.spec import from_spec
    from storm_kafka_compat.topology.tuples import TupleBatch
    scheme = load_scheme("string")
    msgs = [KafkaMessage(i, None, line.encode(), 0, 0, (), "t", 0)
            for i, line in enumerate(["a b", "c hold"])]
    sent = {}
    for name, topology in [("basic", spec("BasicCount")), ("rich", spec("RichCount")),
                           ("hold", spec("BasicCount", then_hold=True))]:
        topo = from_spec(topology, spout_fields=scheme.fields)
        rt = LocalRuntime(topo, {}, spout_fields=scheme.fields)
        sp = run_spout_stage(msgs, scheme=scheme, topology=rt, plan_filter=FetchPlan("t", 0, 0),
                             local=frozenset(stage_layout(topo).stages[0]),
                             untracked=rt.trees_end_in_execute)
        sent[name] = (sorted(rt.trees_end_in_execute), len(sp.sent_roots), len(sp.roots))
        if name == "basic":
            routed = [t for _c, _task, t in sp.routed]
    assert sent == {"basic": (["count", "split"], 0, 2), "rich": ([], 2, 2),
                    "hold": (["count"], 2, 2)}
    # the host names the offset of the roots it failed, and says so through a pickle
    root = next(iter(routed[-1].anchors))
    answer = StageAnswer()
    answer.failed_roots = {root}
    answer.origins = origins_of({root}, [[TupleBatch(routed)]])
    assert pickle.loads(pickle.dumps(answer)).origins == {root: ("t", 0, 1)}
