"""The XOR acker: tuple trees, anchoring, out-of-order messages, timeouts."""

from __future__ import annotations

import random
from typing import Any, List, Optional, Sequence, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_kafka_compat.topology.acker import MASK64, Acker, new_id, xor_by_root
from storm_kafka_compat.topology.bolts import OutputCollector, TopologyContext
from storm_kafka_compat.topology.tuples import StormTuple


class Harness:
    """A spout and bolt collectors wired straight to one Acker.

    ``fanout`` is the number of task copies each emit produces (0: no subscriber).
    """

    #: every copy gets an edge id (the acker completes a root once its XOR is zero)
    edge_free: frozenset = frozenset()

    def __init__(self, seed: int = 7, fanout: int = 1) -> None:
        self.rng = random.Random(seed)
        self.acker = Acker(random.Random(seed + 1))
        self.fanout = fanout
        self.delivered: List[StormTuple] = []
        self.collector = OutputCollector(
            TopologyContext("bolt", 0, 1, {"default": ("v",)}), self, self.rng)

    # Dispatcher protocol
    def targets(self, tup: StormTuple) -> List[Tuple[str, int]]:
        return [("next", i) for i in range(self.fanout)]

    def deliver(self, component: str, task: int, tup: StormTuple) -> None:
        self.delivered.append(tup)

    def keyed_route(self, source: str, source_task: int, stream: str,
                    fields: Tuple[str, ...]) -> None:
        return None   # every tuple through targets() and deliver()

    def ack_root(self, root_id: int, value: int) -> None:
        self.acker.ack(root_id, value, 100)

    def fail_root(self, root_id: int) -> None:
        self.acker.fail(root_id)

    def reset_root(self, root_id: int) -> None:
        self.acker.reset_timeout(root_id, self.now)

    now = 0

    def spout_emit(self, msg_id: Any, copies: Optional[int] = None, now_ms: int = 0
                   ) -> Tuple[int, List[StormTuple]]:
        root = self.acker.new_root_id()
        xor = 0
        out = []
        for _ in range(self.fanout if copies is None else copies):
            edge = new_id(self.rng)
            xor ^= edge
            out.append(StormTuple([msg_id], ("v",), anchors={root: edge}, offset=msg_id))
        self.acker.init(root, xor, msg_id, now_ms)
        return root, out

    def emit(self, values: Sequence[Any], anchors: Optional[Sequence[StormTuple]]
             ) -> List[StormTuple]:
        before = len(self.delivered)
        self.collector.emit(values, anchors=anchors)
        return self.delivered[before:]

    def done(self) -> List[Any]:
        return [m for m, _ in self.acker.completed()]

    def failed(self) -> List[Any]:
        return [m for m, _ in self.acker.failed()]


def test_single_tuple_ack_completes() -> None:
    h = Harness()
    _, (t,) = h.spout_emit(1)
    assert h.done() == []
    h.collector.ack(t)
    assert h.done() == [1]
    assert len(h.acker) == 0


def test_fan_out_completes_only_after_every_child() -> None:
    h = Harness(fanout=3)
    _, copies = h.spout_emit("m")
    children = []
    for c in copies:
        children += h.emit(["x"], anchors=[c])
        h.collector.ack(c)
    assert len(children) == 9
    for child in children[:-1]:
        h.collector.ack(child)
        assert h.done() == []
    h.collector.ack(children[-1])
    assert h.done() == ["m"]


def test_child_acked_before_parent_is_fine() -> None:
    h = Harness()
    _, (t,) = h.spout_emit(5)
    (child,) = h.emit(["c"], anchors=[t])
    h.collector.ack(child)
    assert h.done() == []
    h.collector.ack(t)
    assert h.done() == [5]


def test_multi_anchoring_joins_two_trees() -> None:
    h = Harness()
    _, (a,) = h.spout_emit("A")
    _, (b,) = h.spout_emit("B")
    (joined,) = h.emit(["ab"], anchors=[a, b])
    assert set(joined.anchors) == set(a.anchors) | set(b.anchors)
    h.collector.ack(a)
    h.collector.ack(b)
    assert h.done() == []          # the joined tuple holds both trees open
    h.collector.ack(joined)
    assert sorted(h.done()) == ["A", "B"]


def test_failing_a_multi_anchored_tuple_fails_every_root() -> None:
    h = Harness()
    _, (a,) = h.spout_emit("A")
    _, (b,) = h.spout_emit("B")
    (joined,) = h.emit(["ab"], anchors=[a, b])
    h.collector.ack(a)
    h.collector.ack(b)
    h.collector.fail(joined)
    assert sorted(h.failed()) == ["A", "B"]
    assert h.done() == []


def test_dag_diamond_shared_root() -> None:
    h = Harness()
    _, (t,) = h.spout_emit("d")
    (left,) = h.emit(["l"], anchors=[t])
    (right,) = h.emit(["r"], anchors=[t])
    h.collector.ack(t)
    (bottom,) = h.emit(["b"], anchors=[left, right])
    h.collector.ack(left)
    h.collector.ack(right)
    assert h.done() == []
    h.collector.ack(bottom)
    assert h.done() == ["d"]


def test_unanchored_emit_is_not_tracked() -> None:
    h = Harness()
    _, (t,) = h.spout_emit(1)
    (free,) = h.emit(["free"], anchors=None)
    assert free.anchors == {}
    h.collector.ack(t)
    assert h.done() == [1]         # completes although `free` was never acked
    h.collector.fail(free)
    assert h.failed() == []        # and its failure replays nothing


def test_explicit_fail_deep_in_tree_fails_promptly() -> None:
    h = Harness()
    _, (t,) = h.spout_emit(9)
    (c1,) = h.emit(["1"], anchors=[t])
    (c2,) = h.emit(["2"], anchors=[c1])
    h.collector.fail(c2)
    assert h.failed() == [9]       # without waiting for t or c1
    assert len(h.acker) == 0
    h.collector.ack(t)
    h.collector.ack(c1)
    assert h.done() == []


def test_emit_to_no_subscribers_acks_at_once() -> None:
    h = Harness(fanout=0)
    root, copies = h.spout_emit("lonely")
    assert copies == []
    assert h.done() == ["lonely"]
    assert root not in h.acker


@pytest.mark.parametrize("order", ["ack_first", "fail_first"])
def test_out_of_order_messages_before_init(order: str) -> None:
    acker = Acker(random.Random(1))
    root, edge = 11, 0xDEADBEEF
    if order == "ack_first":
        acker.ack(root, edge)
        assert acker.completed() == [] and root in acker
        acker.init(root, edge, "late-init", 10)
        assert [m for m, _ in acker.completed()] == ["late-init"]
    else:
        acker.fail(root)
        assert acker.failed() == []
        acker.init(root, edge, "late-init", 10)
        assert acker.failed() == [("late-init", "failed")]
    assert len(acker) == 0


@pytest.mark.parametrize("emit_ms, expire_ms, expired", [
    (0, 999, False), (0, 1000, False), (0, 1999, False), (0, 2000, True),
    (500, 1999, False), (500, 2000, True),
    (999, 1999, False), (999, 2000, True),
    (1000, 2999, False), (1000, 3000, True),
])
def test_two_bucket_timeout_between_t_and_2t(emit_ms: int, expire_ms: int, expired: bool) -> None:
    acker = Acker(random.Random(1))
    acker.expire(0, 1000)          # first tick reference at t=0
    acker.init(1, 123, "m", emit_ms)
    out = acker.expire(expire_ms, 1000)
    assert (out == ["m"]) is expired
    age = expire_ms - emit_ms
    if expired:
        assert 1000 <= age <= 2000
    elif age >= 2000:
        pytest.fail("expired later than 2T")


@pytest.mark.parametrize("age, expired", [(999, False), (1000, True)])
def test_exact_timeout(age: int, expired: bool) -> None:
    acker = Acker(random.Random(1), exact_timeout=True)
    acker.init(1, 123, "m", 5000)
    assert (acker.expire(5000 + age, 1000) == ["m"]) is expired


def test_timeout_then_late_ack_ignored() -> None:
    h = Harness()
    h.acker.expire(0, 1000)
    root, (t,) = h.spout_emit("slow", now_ms=0)
    assert h.acker.expire(2000, 1000) == ["slow"]
    assert h.acker.failed() == [("slow", "timeout")]
    h.collector.ack(t)             # the late ack
    assert h.done() == [] and h.failed() == []
    # the stray entry is dropped silently at a later expiry
    assert h.acker.expire(10_000, 1000) == []
    assert len(h.acker) == 0


def test_reset_timeout_postpones_expiry() -> None:
    h = Harness()
    h.acker.expire(0, 1000)
    _, (t,) = h.spout_emit("long", now_ms=0)
    h.acker.expire(1500, 1000)
    h.now = 1500
    h.collector.reset_timeout(t)
    assert h.acker.expire(2500, 1000) == []     # would have expired at 2000
    assert h.acker.expire(3000, 1000) == ["long"]


def test_reset_timeout_exact_mode() -> None:
    acker = Acker(random.Random(1), exact_timeout=True)
    acker.init(1, 5, "a", 0)
    acker.init(2, 5, "b", 100)
    acker.reset_timeout(1, 900)
    assert acker.expire(1100, 1000) == ["b"]
    assert acker.expire(1900, 1000) == ["a"]


def test_completion_latency_reported() -> None:
    acker = Acker(random.Random(1))
    acker.init(1, 0b101, "m", 1000)
    acker.ack(1, 0b101, 1250)
    assert acker.completed() == [("m", 250)]


def test_xor_by_root_folds_pairs_in_any_order() -> None:
    pairs = [(1, 0b1100), (2, 7), (1, 0b1010), (2, 7), (3, 0)]
    assert xor_by_root(pairs) == {1: 0b0110, 2: 0, 3: 0}
    assert xor_by_root(reversed(pairs)) == xor_by_root(pairs)
    merged = xor_by_root(list(xor_by_root(pairs[:2]).items()) + pairs[2:])
    assert merged == xor_by_root(pairs)


def test_ids_are_nonzero_64_bit() -> None:
    class Zeroes(random.Random):
        calls = 0

        def getrandbits(self, k: int) -> int:
            self.calls += 1
            return 0 if self.calls < 3 else MASK64

    assert new_id(Zeroes()) == MASK64
    rng = random.Random(3)
    assert all(0 < new_id(rng) <= MASK64 for _ in range(1000))


# --- property: a tree completes iff every anchored tuple is acked ---------------------------

@st.composite
def trees(draw: Any) -> Tuple[int, List[List[int]], List[bool]]:
    """A random DAG of tuples: nodes 0..copies-1 are spout copies; each later node
    lists the earlier nodes it is anchored to (possibly none: unanchored)."""
    copies = draw(st.integers(1, 3))
    n = draw(st.integers(copies, 25))
    parents: List[List[int]] = [[] for _ in range(copies)]
    for i in range(copies, n):
        parents.append(draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)))
    acked = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return copies, parents, acked


@settings(max_examples=150, deadline=None)
@given(tree=trees(), seed=st.integers(0, 2**32), order_seed=st.integers(0, 2**32))
def test_tree_completes_iff_every_anchored_tuple_is_acked(tree: Any, seed: int,
                                                          order_seed: int) -> None:
    n_copies, parents, acked = tree
    h = Harness(seed=seed)
    _, nodes = h.spout_emit("root", copies=n_copies)
    tracked = [True] * n_copies
    for i in range(n_copies, len(parents)):
        anchors = [nodes[j] for j in parents[i]]
        (child,) = h.emit(["x"], anchors=anchors or None)
        nodes.append(child)
        tracked.append(any(tracked[j] for j in parents[i]))
    # ack in a random order; anchoring is complete before any ack (emits precede acks)
    order = list(range(len(nodes)))
    random.Random(order_seed).shuffle(order)
    for i in order:
        if acked[i]:
            h.collector.ack(nodes[i])
    expected = all(acked[i] for i in range(len(nodes)) if tracked[i])
    assert (h.done() == ["root"]) is expected


def test_sparse_expire_calls_do_not_expire_young_roots() -> None:
    acker = Acker(random.Random(1))
    acker.expire(0, 1000)
    acker.init(1, 9, "young", 5000)
    assert acker.expire(5001, 1000) == []
    assert acker.expire(6999, 1000) == []
    assert acker.expire(7000, 1000) == ["young"]
