"""The groupings issue 35 adds: local-or-shuffle and none (shuffles), partial key
(two choices), direct (emit_direct), custom (a CustomStreamGrouping named by
module:Class); where each runs (stages) and what build() rejects."""

from __future__ import annotations

import collections
import pytest

from storm_kafka_compat.executor.dag import AckSink, LocalRuntime, TaskDispatcher
from storm_kafka_compat.executor.stage_tasks import stage_layout
from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.topology.bolts import BasicBolt, RichBolt
from storm_kafka_compat.topology.builder import TopologyBuilder
from storm_kafka_compat.topology.spec import from_spec
from storm_kafka_compat.topology.grouping import (CustomStreamGrouping, Grouping,
                                                  PartialKeyBalance, canonical_grouping,
                                                  stable_hash)
from storm_kafka_compat.topology.tuples import StormTuple


class Sink(BasicBolt):
    def execute(self, t, collector):
        pass


class Evens(CustomStreamGrouping):
    """Sends a number to the task of its parity."""

    def prepare(self, context, stream, target_tasks):
        self.targets = target_tasks

    def choose_tasks(self, task_id, values):
        return [self.targets[values[0] % 2]]


class Router(RichBolt):
    """emit_direct to the task the value names."""

    def declare_output_fields(self):
        return ("n",)

    def execute(self, t):
        self.collector.emit_direct(int(t.values[0]) % 3, [int(t.values[0])], anchors=[t])
        self.collector.ack(t)


def dispatcher(topology) -> TaskDispatcher:
    rt = LocalRuntime(topology)
    d = TaskDispatcher(rt, AckSink(), 0, None)
    rt.bind(d)
    return d


def spout_tuple(*values) -> StormTuple:
    return StormTuple(list(values), ("n",), source_component="kafka")


def test_partial_key_sends_a_key_to_at_most_two_tasks_and_balances_them():
    balance = PartialKeyBalance(8)
    picks = collections.defaultdict(collections.Counter)
    load = collections.Counter()
    by_fields = collections.Counter()
    for i in range(4000):
        key = "hot" if i % 2 else f"k{i % 50}"
        task = balance.choose([key])
        picks[key][task] += 1
        load[task] += 1
        by_fields[stable_hash([key]) % 8] += 1
    assert all(len(tasks) <= 2 for tasks in picks.values())
    hot = sorted(picks["hot"].values())
    assert len(hot) == 2 and hot[0] > 0.4 * sum(hot)     # the hot key shared by two tasks
    assert max(load.values()) < 0.65 * max(by_fields.values())   # fields: 2000+ on one


def test_routes_of_the_new_groupings():
    b = TopologyBuilder().set_spout("kafka", ("n",))
    b.set_bolt("local", Sink, 3).local_or_shuffle_grouping("kafka")
    b.set_bolt("none", Sink, 3).none_grouping("kafka")
    b.set_bolt("pk", Sink, 4).partial_key_grouping("kafka", ["n"])
    b.set_bolt("custom", Sink, 2).custom_grouping("kafka", "tests.unit.test_groupings:Evens")
    d = dispatcher(b.build())
    got = collections.defaultdict(list)
    for n in range(6):
        for component, task in d.targets(spout_tuple(n)):
            got[component].append(task)
    assert got["local"] == [0, 1, 2, 0, 1, 2] and got["none"] == [0, 1, 2, 0, 1, 2]
    assert got["custom"] == [0, 1, 0, 1, 0, 1]
    assert len(got["pk"]) == 6 and set(got["pk"]) <= set(range(4))


def test_emit_direct_reaches_the_named_task_and_only_direct_subscribers():
    b = TopologyBuilder().set_spout("kafka", ("n",))
    b.set_bolt("router", Router).shuffle_grouping("kafka")
    b.set_bolt("target", Sink, 3).direct_grouping("router")
    topology = b.build()
    rt = LocalRuntime(topology)
    d = TaskDispatcher(rt, AckSink(), 0, None)
    rt.bind(d)
    for n in (4, 5, 9):
        t = spout_tuple(n)
        t.anchors = {n: n}
        rt.runners["router"][0].run([t])
    delivered = [(task, [x.values[0] for x in q]) for task, q in enumerate(d.queues["target"])]
    assert delivered == [(0, [9]), (1, [4]), (2, [5])]
    with pytest.raises(ValueError, match="with emit\\(\\), but 'target' subscribes"):
        d.targets(StormTuple([1], ("n",), source_component="router"))
    with pytest.raises(ValueError, match="emit_direct to task 7"):
        d.targets(StormTuple([1], ("n",), source_component="router"), 7)


def test_a_direct_stream_takes_only_direct_groupings():
    b = TopologyBuilder().set_spout("kafka", ("n",))
    b.set_bolt("router", Router).shuffle_grouping("kafka")
    b.set_bolt("a", Sink).direct_grouping("router")
    b.set_bolt("b", Sink).shuffle_grouping("router")
    with pytest.raises(TopologyError, match="a direct stream takes only direct groupings"):
        b.build()


def test_custom_grouping_choosing_a_missing_task_is_an_error():
    class Wild(CustomStreamGrouping):
        def choose_tasks(self, task_id, values):
            return [5]

    import sys
    sys.modules[__name__].Wild = Wild  # type: ignore[attr-defined]
    b = TopologyBuilder().set_spout("kafka", ("n",))
    b.set_bolt("x", Sink, 2).custom_grouping("kafka", f"{__name__}:Wild")
    with pytest.raises(TopologyError, match="chose task\\(s\\) \\[5\\]"):
        dispatcher(b.build()).targets(spout_tuple(1))


@pytest.mark.parametrize("kind, crossing", [
    ("shuffle", False), ("local_or_shuffle", False), ("none", False), ("localOrShuffle", False),
    ("fields", True), ("partial_key", True), ("partialKey", True), ("global", True),
    ("all", True), ("direct", True), ("custom", True)])
def test_which_groupings_start_a_stage(kind, crossing):
    inputs = {"from": "spout", "grouping": kind}
    if canonical_grouping(kind) in ("fields", "partial_key"):
        inputs["fields"] = ["n"]
    if kind == "custom":
        inputs["custom"] = "tests.unit.test_groupings:Evens"
    spec = {"bolts": [{"name": "x", "bolt": "tests.unit.test_groupings:Sink", "kind": "basic",
                       "parallelism": 2, "inputs": [inputs]}]}
    layout = stage_layout(from_spec(spec, spout_fields=("n",)))
    assert layout.stages == ((((), ("x",)) if crossing else (("x",),)))


def test_config_inputs_accept_storms_spellings_and_custom():
    spec = {"bolts": [{"name": "x", "bolt": "tests.unit.test_groupings:Sink", "kind": "basic",
                       "parallelism": 2, "inputs": [
                           {"from": "spout", "grouping": "CUSTOM",
                            "custom": "tests.unit.test_groupings:Evens"}]}]}
    g = from_spec(spec, spout_fields=("n",)).bolts["x"].inputs[0]
    assert g == Grouping("custom", "spout", custom="tests.unit.test_groupings:Evens")



@pytest.mark.parametrize("kind", ["shuffle", "local_or_shuffle", "none"])
def test_a_lone_shuffle_subscription_routes_as_the_general_route_does(kind):
    """The dispatcher's shortcut for a stream with one shuffled subscriber gives the tasks
    :func:`route` gives: round-robin per (source, target), or drawn from the runtime's
    shuffle generator when it has one."""
    import random

    from storm_kafka_compat.topology.grouping import Grouping, route
    b = TopologyBuilder().set_spout("kafka", ("n",))
    getattr(b.set_bolt("only", Sink, 3), f"{kind}_grouping")("kafka")
    d = dispatcher(b.build())
    assert ("kafka", "default") in d.runtime.shuffled_targets
    got = [task for n in range(7) for _c, task in d.targets(spout_tuple(n))]
    assert got == [route(Grouping(kind, "kafka"), spout_tuple(n), 3, seq=n)[0]
                   for n in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    d.runtime.shuffle_rng = random.Random(5)
    drawn = [task for n in range(20) for _c, task in d.targets(spout_tuple(n))]
    again = random.Random(5)
    assert drawn == [again.randrange(3) for _ in range(20)]
