"""Tick tuples (issue 35): Storm's shape, the schedule (at most one per period per
task, injected clock), where the period comes from, which bolts move to a bolt host
because of it, and the host handing a tick to a task before its tuples."""

from __future__ import annotations

import pytest

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.executor.stage_tasks import stage_layout
from storm_kafka_compat.errors import ConfigError, TopologyError
from storm_kafka_compat.executor.hosts.host import BoltHost
from storm_kafka_compat.testing.clock import ManualClock
from storm_kafka_compat.topology.bolts import BasicBolt
from storm_kafka_compat.topology.spec import from_spec
from storm_kafka_compat.topology.ticks import (SYSTEM_COMPONENT, TICK_FREQ_KEY, TICK_STREAM,
                                               TickSchedule, is_tick, tick_freq_of, tick_tuple)
from storm_kafka_compat.topology.tuples import StormTuple, TupleBatch

SEEN = []


class Plain(BasicBolt):
    def declare_output_fields(self):
        return ("str",)

    def execute(self, t, collector):
        SEEN.append(("plain", is_tick(t)))


class Ticking(BasicBolt):
    """Acks its ticks like any input (a BasicBolt acks what it returns from)."""

    def component_configuration(self):
        return {TICK_FREQ_KEY: 5}

    def execute(self, t, collector):
        SEEN.append(("ticking", t.values[0] if is_tick(t) else t.values[0]))


def test_a_tick_is_storms():
    t = tick_tuple(5)
    assert (t.source_component, t.stream, t.source_task, t.fields, t.values) == (
        SYSTEM_COMPONENT, TICK_STREAM, -1, ("rate_secs",), [5])
    assert is_tick(t) and not t.anchors and not is_tick(StormTuple([1], ("a",)))


def test_at_most_one_tick_per_period_and_missed_ones_are_not_made_up():
    clock = ManualClock(100.0)
    ticks = TickSchedule({"a": 2.0, "b": 0.5}, clock)
    assert ticks.due("a") is None and ticks.due("b") is None   # the first period starts
    assert ticks.due("c") is None                               # no ticks for it
    clock.now = 101.0
    assert ticks.due("a") is None and ticks.due("b") == 0.5
    assert ticks.due("b") is None                               # once per period
    clock.now = 102.0
    assert ticks.due("a") == 2.0
    clock.now = 109.0                                           # seven periods late
    assert ticks.due("a") == 2.0 and ticks.due("a") is None     # one tick, not three
    clock.now = 110.9
    assert ticks.due("a") is None
    clock.now = 111.0
    assert ticks.due("a") == 2.0
    assert ticks.next_due() == 101.5                            # b, not asked since


@pytest.mark.parametrize("entry, own, topology, expected", [
    (None, None, None, None), (None, None, 10, 10.0), (None, 3, 10, 3.0), (1, 3, 10, 1.0)])
def test_the_bolts_own_setting_wins(entry, own, topology, expected):
    class Bolt(BasicBolt):
        def get_component_configuration(self):
            return {TICK_FREQ_KEY: own} if own else None
    conf = {TICK_FREQ_KEY: topology} if topology else {}
    assert tick_freq_of(Bolt(), entry, conf) == expected


def test_a_bad_period_is_refused():
    with pytest.raises(TopologyError, match="must be a number of seconds > 0"):
        tick_freq_of(Plain(), 0, {})
    with pytest.raises(ConfigError, match="tick.tuple.freq.secs"):
        job_config_from_dict({"spout": {"topic": "t", "zkRoot": "/r", "id": "i"},
                              "hosts": {"bootstrap": "k:9092"},
                              "topology": {"name": "n", TICK_FREQ_KEY: -1}})


def spec(tick_entry=None):
    plain = {"name": "plain", "bolt": "tests.unit.test_ticks:Plain", "kind": "basic",
             "inputs": [{"from": "spout", "grouping": "shuffle"}]}
    ticking = {"name": "ticking", "bolt": "tests.unit.test_ticks:Ticking", "kind": "basic",
               "parallelism": 2, "inputs": [{"from": "plain", "grouping": "shuffle"}]}
    if tick_entry is not None:
        plain["tick_freq_secs"] = tick_entry
    return {"bolts": [plain, ticking]}


def test_a_bolt_on_ticks_lives_in_a_host_whatever_its_grouping():
    topology = from_spec(spec(), spout_fields=("str",))
    layout = stage_layout(topology)
    assert layout.stages == (("plain",), ("ticking",))
    assert layout.slots[1] == (("ticking", 0), ("ticking", 1))
    assert layout.tick_periods() == {"ticking": 5.0}
    # the topology's key: every bolt takes ticks, so every bolt is hosted
    every = stage_layout(topology, {TICK_FREQ_KEY: 2})
    assert every.stages == ((), ("plain",), ("ticking",))
    assert every.tick_periods() == {"plain": 2.0, "ticking": 5.0}
    assert stage_layout(from_spec(spec(1), spout_fields=("str",))).tick_periods() == {
        "plain": 1.0, "ticking": 5.0}


def test_the_host_hands_a_due_tick_first_and_acking_it_sends_nothing():
    SEEN.clear()
    clock = ManualClock(0.0)
    layout = stage_layout(from_spec(spec(), spout_fields=("str",)))
    host = BoltHost(spec(), {}, ("str",), layout, layout.slots[1], clock=clock)
    t = StormTuple(["x"], ("str",), source_component="plain", anchors={7: 11})
    host.run(1, 1, ("ticking", 0), [])
    clock.now = 5.0
    res = host.run(2, 1, ("ticking", 0), [TupleBatch([t])])
    assert SEEN == [("ticking", 5), ("ticking", "x")]
    assert res.pairs == {7: 11}                    # only the tuple's ack; the tick's is nothing
    # a retried task: the same answer
    assert host.run(2, 1, ("ticking", 0), [TupleBatch([t])]) is res
    assert host.dirty == {("ticking", 0)}
    host.save(1)
    assert host.dirty == set()
