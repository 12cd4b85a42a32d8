"""The bolt DAG inside one task: the dispatcher that routes tuples by grouping, the
acker sink that folds ``(root, xor)`` messages, :class:`LocalRuntime` (the bolt
instances of a topology prepared once per Python worker) and the spout side
(scheme rows to anchored spout tuples). Pure; no Spark.
"""

from __future__ import annotations

import logging
import random
import weakref
from typing import (AbstractSet, Any, Dict, FrozenSet, List, Mapping, Optional, Protocol,
                    Sequence, Set, Tuple, Union)

from storm_kafka_compat.config.stages import SHUFFLES
from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.structs import BoltError
from storm_kafka_compat.topology.bolts import BoltRunner, KeyedRoute, TopologyContext
from storm_kafka_compat.topology.builder import Topology
from storm_kafka_compat.topology.grouping import (Grouping, PartialKeyBalance, key_hash,
                                                  new_custom_grouping, route)
from storm_kafka_compat.topology.tuples import StormTuple, TupleBatch

logger = logging.getLogger(__name__)

# --- the in-process runtime -----------------------------------------------------------

class AckSink:
    """Acker messages of one stage: (root, xor) folded, failed and reset roots."""

    __slots__ = ("pairs", "failed", "reset")

    def __init__(self) -> None:
        self.pairs: Dict[int, int] = {}
        self.failed: Set[int] = set()
        self.reset: Set[int] = set()

    def ack(self, root: int, value: int, now_ms: Optional[int] = None) -> None:
        self.pairs[root] = self.pairs.get(root, 0) ^ value

    def fail(self, root: int) -> None:
        self.failed.add(root)

    def reset_timeout(self, root: int, now_ms: int) -> None:
        self.reset.add(root)


class RootSink(Protocol):
    """Where a task's acker messages go: the XOR acker of a single-stage batch
    (:class:`~storm_kafka_compat.topology.acker.Acker`) or a stage's :class:`AckSink`."""

    def ack(self, root_id: int, value: int, now_ms: Optional[int] = None) -> None: ...

    def fail(self, root_id: int) -> None: ...

    def reset_timeout(self, root_id: int, now_ms: int) -> None: ...


def trees_end_in(acking: AbstractSet[str],
                 subs: Mapping[Tuple[str, str], Sequence[Tuple[str, Any, int]]]
                 ) -> FrozenSet[str]:
    """The bolts of ``acking`` (bolts that ack in execute) from which every
    subscription, to the end of the topology, reaches only bolts of ``acking``."""
    ends = set(acking)
    changed = True
    while changed:
        changed = False
        for (source, _stream), targets in subs.items():
            if source in ends and any(t not in ends for t, _g, _n in targets):
                ends.discard(source)
                changed = True
    return frozenset(ends)


class TaskDispatcher:
    """Routes emitted tuples to task queues (same task) or an outbox (later stages)."""

    def __init__(self, runtime: "LocalRuntime", sink: RootSink, now_ms: int,
                 local: Optional[AbstractSet[str]], settles_at_end: bool = False,
                 untracked: AbstractSet[str] = frozenset()) -> None:
        self.runtime = runtime
        self.sink = sink
        self.now_ms = now_ms
        self.local = local  # components run in this task; None: all
        #: components a bolt's anchored emit reaches without an edge id of its own
        #: (:meth:`~storm_kafka_compat.topology.bolts.OutputCollector.emit_to`): with
        #: ``settles_at_end`` (a staged batch, whose roots are judged once every stage
        #: ran) the bolts that ack or fail each input in the call that executes it;
        #: none for an acker that completes a root as soon as its XOR is zero
        self.edge_free: AbstractSet[str] = runtime.acks_in_execute if settles_at_end \
            else frozenset()
        self.queues: Dict[str, List[List[StormTuple]]] = {
            name: [[] for _ in runners] for name, runners in runtime.runners.items()}
        #: the tuples for bolt tasks of later stages, per task, in their order
        self.routes: Dict[Tuple[str, int], TupleBatch] = {}
        #: the roots of those tuples, but for those sent to ``untracked`` bolts of later
        #: stages (bolt hosts that name the offset of a root they fail:
        #: :attr:`LocalRuntime.trees_end_in_execute`), which need no acker record
        self.sent_roots: Set[int] = set()
        self.untracked = untracked
        # acker messages go straight to the sink (one call frame less per ack)
        self.ack_root = sink.ack  # type: ignore[method-assign]
        self.fail_root = sink.fail  # type: ignore[method-assign]

    def targets(self, tup: StormTuple, direct: Optional[int] = None) -> List[Tuple[str, int]]:
        key = (tup.source_component, tup.stream)
        if direct is None:
            keyed = self.runtime.keyed_targets.get(key)
            if keyed is not None:                 # one fields grouping on one field
                target, i, n = keyed
                return [(target, key_hash(tup.values[i]) % n)]
            static = self.runtime.static_targets.get(key)
            if static is not None:
                return static
            shuffled = self.runtime.shuffled_targets.get(key)
            if shuffled is not None:              # one shuffle: round-robin or drawn
                target, n = shuffled
                rt = self.runtime
                if rt.shuffle_rng is not None:
                    return [(target, rt.shuffle_rng.randrange(n))]
                return [(target, rt.next_seq(key[0], target) % n)]
        subs = self.runtime.subs.get(key)
        if not subs:
            return []
        out: List[Tuple[str, int]] = []
        rt = self.runtime
        for target, grouping, n in subs:
            if (grouping.kind == "direct") != (direct is not None):
                raise ValueError(direct_mismatch(tup, target, direct))
            if direct is not None:
                if not 0 <= direct < n:
                    raise ValueError(f"emit_direct to task {direct} of {target!r}, which has "
                                     f"{n} tasks (0..{n - 1})")
                out.append((target, direct))
                continue
            if n == 1 and grouping.kind != "custom":
                out.append((target, 0))
                continue
            for task in route(grouping, tup, n, rng=rt.shuffle_rng,
                              seq=rt.next_seq(tup.source_component, target),
                              chooser=rt.chooser(grouping, tup.source_task, target, n)):
                out.append((target, task))
        return out

    def local_queues(self, source: str, stream: str
                     ) -> Optional[Tuple[str, List[List[StormTuple]]]]:
        """The bolt a stream reaches, and its tasks' queues, when the stream's only
        subscription is a round-robin shuffle (:meth:`LocalRuntime.next_seq`) into a bolt
        run in this task: its tuples can go straight to the queues. None: route each with
        :meth:`targets` and :meth:`deliver`."""
        shuffled = self.runtime.shuffled_targets.get((source, stream))
        if shuffled is None or self.runtime.shuffle_rng is not None:
            return None
        target = shuffled[0]
        if self.local is not None and target not in self.local:
            return None
        return target, self.queues[target]

    def deliver(self, component: str, task: int, tup: StormTuple) -> None:
        if self.local is None or component in self.local:
            self.queues[component][task].append(tup)
        else:
            self.route_batch(component, task).add(tup)
            if component not in self.untracked:
                self.sent_roots.update(tup.anchors)

    def route_batch(self, component: str, task: int) -> TupleBatch:
        """The batch of tuples for ``component``'s task ``task`` of a later stage."""
        batch = self.routes.get((component, task))
        if batch is None:
            batch = self.routes[(component, task)] = TupleBatch()
        return batch

    def keyed_route(self, source: str, source_task: int, stream: str,
                    fields: Tuple[str, ...]) -> Optional[KeyedRoute]:
        keyed = self.runtime.keyed_targets.get((source, stream))
        if keyed is None or self.local is None:
            return None
        target, index, n = keyed
        if target in self.local or target not in self.edge_free:
            return None
        batches = [self.route_batch(target, task) for task in range(n)]
        bare = len(fields) == 1
        if not bare:
            for b in batches:
                b.all_bare = False
        return KeyedRoute(index, n, (tuple(fields), stream, source, source_task, bare),
                          batches, set() if target in self.untracked else self.sent_roots)

    def ack_root(self, root_id: int, value: int) -> None:
        self.sink.ack(root_id, value, self.now_ms)

    def fail_root(self, root_id: int) -> None:
        self.sink.fail(root_id)

    def reset_root(self, root_id: int) -> None:
        self.sink.reset_timeout(root_id, self.now_ms)


def direct_mismatch(tup: StormTuple, target: str, direct: Optional[int]) -> str:
    if direct is None:
        return (f"{tup.source_component!r} emitted on stream {tup.stream!r} with emit(), but "
                f"{target!r} subscribes to it with a direct grouping; use emit_direct(task, ...)")
    return (f"{tup.source_component!r} used emit_direct on stream {tup.stream!r}, but "
            f"{target!r} subscribes to it without a direct grouping; use emit() or give "
            f"{target!r} a direct grouping")


class LocalRuntime:
    """The bolt tasks of a topology, prepared once and reused batch after batch.

    Parameters
    ----------
    topology : Topology
        The validated topology.
    conf : mapping, optional
        Passed to every bolt's ``prepare``.
    rng : random.Random, optional
        Source of edge ids.
    shuffle_rng : random.Random, optional
        Shuffle grouping draws from it; None: deterministic round-robin.
    spout_fields : sequence of str, optional
        The scheme's fields; required when the topology was built without
        them, checked against them otherwise.

    Raises
    ------
    TopologyError
        The spout's fields are unknown or differ from ``spout_fields``.
    """

    def __init__(self, topology: Topology, conf: Optional[Mapping[str, Any]] = None,
                 rng: Optional[random.Random] = None,
                 shuffle_rng: Optional[random.Random] = None,
                 spout_fields: Optional[Sequence[str]] = None) -> None:
        if not topology.spout_fields_declared:
            if spout_fields is None:
                raise TopologyError(
                    f"the fields of spout {topology.spout!r} are not known; pass the "
                    f"scheme's fields (spout_fields=scheme.fields)", key="spout.scheme")
            topology = topology.with_spout_fields(tuple(spout_fields))
        self.topology = topology
        self.conf = dict(conf or {})
        self.rng = rng if rng is not None else random.Random()
        self.shuffle_rng = shuffle_rng
        self.seq: Dict[Tuple[str, str], int] = {}
        #: per emitting task and subscription: partial-key balances, custom groupings
        self.choosers: Dict[Tuple[str, str, int, str], Any] = {}
        self.runners: Dict[str, List[BoltRunner]] = {}
        for name in topology.order:
            spec = topology.bolts[name]
            self.runners[name] = [
                BoltRunner(spec.new_instance(),
                           TopologyContext(name, i, spec.parallelism, dict(spec.output_fields)),
                           self.conf, self.rng)
                for i in range(spec.parallelism)]
        self.subs: Dict[Tuple[str, str], List[Tuple[str, Grouping, int]]] = {
            key: [(target, g, topology.parallelism(target)) for target, g in subs]
            for key, subs in topology.subscribers.items()}
        # subscriptions whose tasks do not depend on the tuple: targets computed once
        self.static_targets: Dict[Tuple[str, str], List[Tuple[str, int]]] = {}
        for key, subs in self.subs.items():
            if all((n == 1 and g.kind not in ("direct", "custom")) or g.kind in ("global", "all")
                   for _t, g, n in subs):
                self.static_targets[key] = [
                    (target, task) for target, g, n in subs
                    for task in (range(n) if g.kind == "all" else (0,))]
        #: (source, stream) whose only subscription is a fields grouping on one field:
        #: (target, the field's index, tasks), the routing of a word count
        self.keyed_targets: Dict[Tuple[str, str], Tuple[str, int, int]] = {}
        for key, subs in self.subs.items():
            if len(subs) == 1 and subs[0][1].kind == "fields" and \
                    len(subs[0][1].fields) == 1 and subs[0][2] > 1:
                target, g, n = subs[0]
                fields = (topology.spout_streams.get(key[1]) if key[0] == topology.spout
                          else topology.bolts[key[0]].output_fields.get(key[1]))
                if fields and g.fields[0] in fields:
                    self.keyed_targets[key] = (target, list(fields).index(g.fields[0]), n)
        #: (source, stream) whose only subscription is a shuffle (as routed by
        #: :func:`~storm_kafka_compat.topology.grouping.route`) of several tasks: (target, tasks)
        self.shuffled_targets: Dict[Tuple[str, str], Tuple[str, int]] = {
            key: (subs[0][0], subs[0][2]) for key, subs in self.subs.items()
            if len(subs) == 1 and subs[0][1].kind in SHUFFLES and subs[0][2] > 1}
        #: bolts whose every task acks or fails each input in the call that executes it
        #: (basic bolts without a batch end): nothing of such a tuple stays open after
        #: its task ran
        self.acks_in_execute = frozenset(
            name for name, runners in self.runners.items()
            if runners and all(r.acks_in_execute for r in runners))
        #: bolts that ack in execute and whose every emit reaches only such bolts, to
        #: the end of the topology: a tree sent to them stays one root a tuple, with
        #: no edge id, and a bolt host can name the offset of any it fails
        self.trees_end_in_execute = trees_end_in(self.acks_in_execute, self.subs)
        self.spout_stream = next(iter(topology.spout_streams))
        self.spout_fields = topology.spout_streams[self.spout_stream]
        if spout_fields is not None:
            self.check_scheme_fields(spout_fields)

    def next_seq(self, source: str, target: str) -> int:
        """The round-robin position of the next shuffled tuple from ``source`` to ``target``."""
        key = (source, target)
        seq = self.seq.get(key, 0)
        self.seq[key] = seq + 1
        return seq

    def chooser(self, grouping: Grouping, source_task: int, target: str, n: int) -> Any:
        """The emitting task's partial-key balance or custom grouping of a subscription
        (made on first use), None for the other groupings."""
        if grouping.kind not in ("partial_key", "custom"):
            return None
        key = (grouping.source, grouping.stream, source_task, target)
        held = self.choosers.get(key)
        if held is None:
            held = self.choosers[key] = (PartialKeyBalance(n) if grouping.kind == "partial_key"
                                         else new_custom_grouping(grouping, source_task, n))
        return held

    def check_scheme_fields(self, fields: Sequence[str]) -> None:
        """Raise TopologyError unless ``fields`` are the spout's fields."""
        if tuple(fields) != self.spout_fields:
            raise TopologyError(
                f"the scheme gives fields {list(fields)} but spout {self.topology.spout!r} "
                f"declares {list(self.spout_fields)}; declare the scheme's fields on the spout "
                f"(or build the topology without spout fields)", key="spout.scheme",
                value=list(fields), allowed=self.spout_fields)

    def set_rng(self, rng: random.Random) -> None:
        """Use ``rng`` for edge ids from now on."""
        self.rng = rng
        for runners in self.runners.values():
            for r in runners:
                r.collector.rng = rng

    def cleanup(self) -> None:
        """Call every bolt's ``cleanup``."""
        for runners in self.runners.values():
            for r in runners:
                r.cleanup()

    def bind(self, dispatcher: Optional[TaskDispatcher]) -> None:
        """Have every bolt task send to ``dispatcher`` (None: to nothing, after a stage:
        the runtime outlives the stage in the Python worker, and a dispatcher left bound
        kept the stage's routed tuples alive until the next batch)."""
        for runners in self.runners.values():
            for r in runners:
                r.collector.bind(dispatcher)

    def take_errors(self) -> List[BoltError]:
        """The bolts' errors recorded since the last call (see
        :meth:`~storm_kafka_compat.topology.bolts.BoltRunner.record_error`)."""
        return [e for runners in self.runners.values() for r in runners
                for e in r.take_errors()]

    def counts(self) -> Dict[str, Dict[str, int]]:
        """Cumulative counters per component."""
        out: Dict[str, Dict[str, int]] = {}
        for name, runners in self.runners.items():
            out[name] = {
                "executed": sum(r.executed for r in runners),
                "emitted": sum(r.collector.emitted for r in runners),
                "acked": sum(r.collector.acked for r in runners),
                "failed": sum(r.collector.failed for r in runners)}
        return out


_RUNTIMES: Dict[int, Tuple["weakref.ref[Topology]", LocalRuntime]] = {}


def runtime_for(topology: Topology, conf: Optional[Mapping[str, Any]] = None,
                spout_fields: Optional[Sequence[str]] = None) -> LocalRuntime:
    """The cached :class:`LocalRuntime` of ``topology`` in this process (bolts are
    prepared once per Python worker, as Storm prepares them once per task).
    ``spout_fields`` (the scheme's) bind or check the spout's fields."""
    hit = _RUNTIMES.get(id(topology))
    if hit is not None and hit[0]() is topology:
        if spout_fields is not None:
            hit[1].check_scheme_fields(spout_fields)
        return hit[1]
    rt = LocalRuntime(topology, conf, spout_fields=spout_fields)
    key = id(topology)

    def forget(_ref: "weakref.ref[Topology]") -> None:
        _RUNTIMES.pop(key, None)

    _RUNTIMES[key] = (weakref.ref(topology, forget), rt)
    return rt


def local_runtime(topology: Union[Topology, LocalRuntime], conf: Optional[Mapping[str, Any]],
             spout_fields: Optional[Sequence[str]]) -> LocalRuntime:
    if isinstance(topology, LocalRuntime):
        if spout_fields is not None:
            topology.check_scheme_fields(spout_fields)
        return topology
    return runtime_for(topology, conf, spout_fields)


def diff_counts(after: Dict[str, Dict[str, int]], before: Dict[str, Dict[str, int]]
                 ) -> Dict[str, Dict[str, int]]:
    return {c: {k: v - before.get(c, {}).get(k, 0) for k, v in d.items()}
            for c, d in after.items()}
