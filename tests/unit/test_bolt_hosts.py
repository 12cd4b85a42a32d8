"""Bolt hosts without processes: deposits by attempt, a stage answered once, tuples
pickled by columns, state saved and restored with the offsets it reflects."""

from __future__ import annotations

import pickle

from storm_kafka_compat.executor.stage_tasks import run_spout_stage, stage_layout
from storm_kafka_compat.executor.hosts.host import BoltHost, deal_slots
from storm_kafka_compat.executor.hosts.pool import HostPool
from storm_kafka_compat.executor.hosts.snapshots import StateStore
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.structs import TopicPartition
from storm_kafka_compat.topology.spec import from_spec
from storm_kafka_compat.topology.grouping import key_hash, stable_hash
from storm_kafka_compat.topology.schemes import load_scheme
from storm_kafka_compat.topology.tuples import StormTuple, TupleBatch

SPEC = {"bolts": [
    {"name": "split", "bolt": "storm_kafka_compat.workshop.bench.wordcount:SplitSentence",
     "kind": "basic", "parallelism": 2, "inputs": [{"from": "spout", "grouping": "shuffle"}]},
    {"name": "count", "bolt": "storm_kafka_compat.workshop.bench.wordcount:WordCount",
     "kind": "basic", "parallelism": 2, "inputs": [{"from": "split", "grouping": "fields",
                                                    "fields": ["word"]}]}]}


class Msg:
    def __init__(self, offset, value):
        self.topic, self.partition, self.offset, self.value = "t", 0, offset, value
        self.key = self.timestamp = self.headers = None


def _routed(lines):
    from storm_kafka_compat.executor.dag import LocalRuntime
    scheme = load_scheme("raw")
    topo = from_spec(SPEC)
    layout = stage_layout(topo)
    rt = LocalRuntime(topo, {}, spout_fields=scheme.fields)
    sp = run_spout_stage([Msg(i, s) for i, s in enumerate(lines)], scheme=scheme, topology=rt,
                         plan_filter=FetchPlan("t", 0, 0), local=frozenset(layout.stages[0]))
    by_slot = {}
    for c, t, tup in sp.routed:
        by_slot.setdefault((c, t), []).append(tup)
    return layout, by_slot


def _host(layout):
    return BoltHost(SPEC, {}, ("bytes",), layout, layout.slots[1])


def test_a_deposit_of_an_attempt_the_driver_did_not_take_is_dropped():
    layout, by_slot = _routed([b"a b a", b"b c"])
    host = _host(layout)
    host.deposit(1, ("s", 0), 0, by_slot)              # the attempt that died
    host.deposit(1, ("s", 0), 1, by_slot)              # Spark ran the task again
    answer = host.run_stage(1, 1, {("s", 0): 1})
    counts = {}
    for _slot, state in host.states.items():
        counts.update(state.bolt.counts)
    assert counts == {b"a": 2, b"b": 2, b"c": 1}       # counted once, not twice
    assert host.run_stage(1, 1, {("s", 0): 1}) is answer   # asked again: the same answer
    assert answer.failed_roots == set() and answer.errors == []


def test_deposits_sent_pickled_are_unpickled_only_for_the_attempt_the_driver_took():
    layout, by_slot = _routed([b"a b a", b"b c"])
    host = _host(layout)
    packed = {slot: TupleBatch(held) for slot, held in by_slot.items()}
    host.deposit(1, ("s", 0), 0, b"not a pickle: the attempt that died is never read")
    host.deposit(1, ("s", 0), 1, pickle.dumps(packed))
    answer = host.run_stage(1, 1, {("s", 0): 1})
    counts = {}
    for _slot, state in host.states.items():
        counts.update(state.bolt.counts)
    assert counts == {b"a": 2, b"b": 2, b"c": 1}
    assert answer.errors == [] and not host._packed


def test_tuples_pickled_by_columns_come_back_equal():
    _layout, by_slot = _routed([b"x y", b"y z z"])
    tuples = [t for held in by_slot.values() for t in held]
    back = pickle.loads(pickle.dumps(TupleBatch(tuples))).tuples
    assert back == tuples
    assert [t.anchors for t in back] == [t.anchors for t in tuples]
    assert [(t.source_component, t.source_task, t.partition, t.offset) for t in back] == \
        [(t.source_component, t.source_task, t.partition, t.offset) for t in tuples]
    assert isinstance(back[0], StormTuple)


def test_the_remembered_key_hash_is_the_stable_hash():
    for value in ("word", b"word", "éclair", 7, 1.0, None, ("a", 1)):
        assert key_hash(value) == stable_hash([value]) == key_hash(value)


def test_state_is_restored_only_where_the_offsets_match(tmp_path):
    layout, by_slot = _routed([b"a b a"])
    host = _host(layout)
    host.deposit(1, ("s", 0), 0, by_slot)
    host.run_stage(1, 1, {("s", 0): 0})
    store = StateStore(tmp_path)
    offsets = {TopicPartition("t", 0): 1}
    store.write(1, offsets, host.save(1))
    fresh = _host(layout)
    txid, saved, why = store.matching({TopicPartition("t", 0): 0})
    assert saved is None and "saved at 1, stored 0" in why
    txid, saved, why = store.matching(offsets)
    assert txid == 1 and fresh.restore(saved) == list(layout.slots[1])
    assert sum(s.bolt.counts.get(b"a", 0) for s in fresh.states.values()) == 2


def test_slots_are_dealt_in_turn():
    slots = [("count", i) for i in range(4)]
    assert deal_slots(slots, 2) == [(("count", 0), ("count", 2)), (("count", 1), ("count", 3))]
    assert deal_slots(slots, 8) == [(s,) for s in slots]


def test_hosts_stop_by_themselves_when_their_pool_closes():
    """close() asks each host process to stop and it exits on its own (status 0), not
    by the kill close() falls back to after 5 s: a host once kept waiting in accept on
    its closed listener until killed, adding 5 s a host to every run's stop."""
    layout = stage_layout(from_spec(SPEC))
    pool = HostPool(SPEC, {}, ("bytes",), layout, hosts=2)
    processes = list(pool.processes)
    pool.close()
    assert [p.returncode for p in processes] == [0, 0]
