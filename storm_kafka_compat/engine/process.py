"""Executor-side processing of one fetched batch of one partition (pure; no Spark).

The driver calls :func:`process_batch` inside ``mapPartitions``: it filters the
fetched messages by the partition manager's plan, runs the scheme, then the
simple bolt or the whole bolt DAG in this task, tracks every tuple tree with
the XOR acker, and returns a :class:`BatchOutcome` holding offset ranges, not
per-message objects.

Single-stage (the default): every bolt of the topology runs in the task that
fetched the partition. Groupings then hold within one partition's batch.

Multi-stage (fields grouping across partitions): :func:`run_spout_stage` runs
the scheme and routes the spout tuples, :func:`run_stage` runs one bolt task
on its routed input (the driver repartitions by ``(component, task)``), and
:func:`resolve_batch` folds the returned ``(root, xor)`` pairs on the driver.

"Replay" here: a failed tree fails its Kafka offset; the partition manager
re-fetches it per the retry settings. A tree still open when the batch ends (a
rich bolt that kept a tuple without acking it) is reported separately in
:attr:`BatchOutcome.incomplete`: its offset stays pending (it blocks the
commit) and the driver fails it once ``topology.message.timeout.secs`` has
passed, as Storm's spout times out a tuple tree.
"""

from __future__ import annotations

import itertools
import logging
import random
import weakref
from dataclasses import dataclass, field
from typing import (AbstractSet, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Set, Tuple, Union)

from storm_kafka_compat.topology.acker import Acker, new_id, xor_by_root
from storm_kafka_compat.topology.bolts import (BoltRunner, FailedException, SimpleBolt,
                                               TopologyContext)
from storm_kafka_compat.topology.schemes import Scheme
from storm_kafka_compat.topology.builder import Grouping, Topology, route
from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.offsets.ranges import Range, coalesce, subtract
from storm_kafka_compat.topology.tuples import StormTuple

logger = logging.getLogger(__name__)

__all__ = ["PlanFilter", "BatchOutcome", "LocalRuntime", "SpoutStageResult", "StageResult",
           "process_batch", "run_spout_stage", "run_stage", "run_stage_group", "GroupResult",
           "resolve_batch", "as_plan_filter"]

SPOUT_COMPONENT = "spout"


# --- plan and outcome -------------------------------------------------------------

@dataclass(frozen=True)
class PlanFilter:
    """Which fetched messages are taken (storm-kafka ``fill()``).

    Attributes
    ----------
    offset : int
        The fetch offset; messages below it are skipped (compressed wrapper sets
        can return earlier offsets).
    reemit : set of int, optional
        Retry fetch: only these offsets are taken. None: new fetch, every
        offset >= ``offset`` is taken.
    max_messages : int, optional
        Stop after this many taken messages.
    """

    offset: int
    reemit: Optional[AbstractSet[int]] = None
    max_messages: Optional[int] = None


def as_plan_filter(plan: Any) -> PlanFilter:
    """Read any plan object with ``offset`` and optional ``reemit``/``max_messages``
    (and ``retry``, as :class:`storm_kafka_compat.spout.manager.FetchPlan` has;
    its ``reemit`` only counts when ``retry`` is true); an int is a new fetch from it."""
    if isinstance(plan, PlanFilter):
        return plan
    if isinstance(plan, int):
        return PlanFilter(plan)
    reemit = getattr(plan, "reemit", None)
    if getattr(plan, "retry", reemit is not None) is False:
        reemit = None  # partition.manager.FetchPlan: reemit is () in new mode
    return PlanFilter(int(plan.offset),
                      frozenset(reemit) if reemit is not None else None,
                      getattr(plan, "max_messages", None))


@dataclass
class BatchOutcome:
    """What one batch did to one partition.

    Attributes
    ----------
    topic, partition : str, int
        The partition (None when the batch held no message).
    taken : list of (start, end_exclusive)
        Offsets taken from the fetch, coalesced ranges.
    acked : list of (start, end_exclusive)
        Taken offsets whose trees completed, tombstones and messages giving no tuple included.
    failed : list of int
        Taken offsets that failed (explicit fail, bolt or scheme error), ascending.
    incomplete : list of int
        Taken offsets whose tuple tree was still open at the end of the batch
        (neither acked nor failed), ascending. They are not in ``acked`` nor in
        ``failed``: the driver keeps them pending until the message timeout.
    skipped_null : int
        Messages that gave no tuple (tombstones), acked without running a bolt.
    next_offset : int, optional
        The offset after the last taken message (next to read), None when nothing
        was taken; the manager keeps ``max(emitted_to, next_offset)``.
    scanned_to : int, optional
        One past the last offset the fetch returned, taken or not (for
        ``PartitionManager.fetched(scanned_to=...)``); None for an empty fetch.
    stage_counts : dict
        Component -> counters (``executed``, ``emitted``, ``acked``, ``failed``;
        the spout: ``messages``, ``emitted``).
    """

    topic: Optional[str] = None
    partition: Optional[int] = None
    taken: List[Range] = field(default_factory=list)
    acked: List[Range] = field(default_factory=list)
    failed: List[int] = field(default_factory=list)
    skipped_null: int = 0
    next_offset: Optional[int] = None
    scanned_to: Optional[int] = None
    stage_counts: Dict[str, Dict[str, int]] = field(default_factory=dict)
    incomplete: List[int] = field(default_factory=list)

    @property
    def taken_count(self) -> int:
        return sum(e - s for s, e in self.taken)

    @property
    def acked_count(self) -> int:
        return sum(e - s for s, e in self.acked)


class _RangeBuilder:
    """Collects ascending offsets as ranges without a per-offset list."""

    __slots__ = ("ranges", "unordered", "_start", "_end", "count")

    def __init__(self) -> None:
        self.ranges: List[Range] = []
        self.unordered: List[int] = []
        self._start = -1
        self._end = -1
        self.count = 0

    def add(self, offset: int) -> None:
        self.count += 1
        if offset == self._end:
            self._end += 1
        elif offset > self._end:
            if self._end >= 0:
                self.ranges.append((self._start, self._end))
            self._start, self._end = offset, offset + 1
        else:
            self.unordered.append(offset)

    def result(self) -> List[Range]:
        ranges = self.ranges + ([(self._start, self._end)] if self._end >= 0 else [])
        if self.unordered:
            offsets = [o for s, e in ranges for o in range(s, e)] + self.unordered
            return coalesce(offsets)
        return ranges


class _Filter:
    """Iterates the taken messages of a fetch; remembers how far the fetch reached."""

    __slots__ = ("messages", "plan", "scanned_to")

    def __init__(self, messages: Iterable[Any], plan: PlanFilter) -> None:
        self.messages = messages
        self.plan = plan
        self.scanned_to: Optional[int] = None

    def __iter__(self) -> Iterator[Any]:
        plan = self.plan
        start = plan.offset
        reemit = plan.reemit
        limit = plan.max_messages
        n = 0
        top = -1
        try:
            for msg in self.messages:
                off = msg.offset
                if off > top:
                    top = off
                if off < start:
                    continue
                if reemit is not None and off not in reemit:
                    continue
                yield msg
                n += 1
                if limit is not None and n >= limit:
                    return
        finally:
            self.scanned_to = top + 1 if top >= 0 else None


# --- the in-process runtime -----------------------------------------------------------

class _Sink:
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


class _Dispatcher:
    """Routes emitted tuples to task queues (same task) or an outbox (later stages)."""

    def __init__(self, runtime: "LocalRuntime", sink: Any, now_ms: int,
                 local: Optional[AbstractSet[str]]) -> None:
        self.runtime = runtime
        self.sink = sink
        self.now_ms = now_ms
        self.local = local  # components run in this task; None: all
        self.queues: Dict[str, List[List[StormTuple]]] = {
            name: [[] for _ in runners] for name, runners in runtime.runners.items()}
        self.outbox: List[Tuple[str, int, StormTuple]] = []
        # acker messages go straight to the sink (one call frame less per ack)
        self.ack_root = sink.ack  # type: ignore[method-assign]
        self.fail_root = sink.fail  # type: ignore[method-assign]

    def targets(self, tup: StormTuple) -> List[Tuple[str, int]]:
        key = (tup.source_component, tup.stream)
        static = self.runtime.static_targets.get(key)
        if static is not None:
            return static
        subs = self.runtime.subs.get(key)
        if not subs:
            return []
        out: List[Tuple[str, int]] = []
        rt = self.runtime
        for target, grouping, n in subs:
            if n == 1:
                out.append((target, 0))
                continue
            key = (tup.source_component, target)
            seq = rt.seq.get(key, 0)
            rt.seq[key] = seq + 1
            for task in route(grouping, tup, n, rng=rt.shuffle_rng, seq=seq):
                out.append((target, task))
        return out

    def deliver(self, component: str, task: int, tup: StormTuple) -> None:
        if self.local is None or component in self.local:
            self.queues[component][task].append(tup)
        else:
            self.outbox.append((component, task, tup))

    def ack_root(self, root_id: int, value: int) -> None:
        self.sink.ack(root_id, value, self.now_ms)

    def fail_root(self, root_id: int) -> None:
        self.sink.fail(root_id)

    def reset_root(self, root_id: int) -> None:
        self.sink.reset_timeout(root_id, self.now_ms)


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
            if all(n == 1 or g.kind in ("global", "all") for _t, g, n in subs):
                self.static_targets[key] = [
                    (target, task) for target, g, n in subs
                    for task in (range(n) if g.kind == "all" else (0,))]
        self.spout_stream = next(iter(topology.spout_streams))
        self.spout_fields = topology.spout_streams[self.spout_stream]
        if spout_fields is not None:
            self.check_scheme_fields(spout_fields)

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

    def _bind(self, dispatcher: _Dispatcher) -> None:
        for runners in self.runners.values():
            for r in runners:
                r.collector.dispatcher = dispatcher

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
    _RUNTIMES[key] = (weakref.ref(topology, lambda _r, k=key: _RUNTIMES.pop(k, None)), rt)
    return rt


def _runtime(topology: Union[Topology, LocalRuntime], conf: Optional[Mapping[str, Any]],
             spout_fields: Optional[Sequence[str]]) -> LocalRuntime:
    if isinstance(topology, LocalRuntime):
        if spout_fields is not None:
            topology.check_scheme_fields(spout_fields)
        return topology
    return runtime_for(topology, conf, spout_fields)


def _diff_counts(after: Dict[str, Dict[str, int]], before: Dict[str, Dict[str, int]]
                 ) -> Dict[str, Dict[str, int]]:
    return {c: {k: v - before.get(c, {}).get(k, 0) for k, v in d.items()}
            for c, d in after.items()}


# --- the spout side ----------------------------------------------------------------------

def _scheme_rows(scheme: Scheme, msg: Any, fields_len: int) -> Optional[List[List[Any]]]:
    """Tuples of ``msg``, or None when the scheme raised or broke the field count."""
    try:
        rows = scheme.to_tuples(msg)
    except Exception as exc:  # Storm lets this kill the executor; we fail the offset
        logger.warning("scheme %s raised on %s/%s@%s: %r; failing the offset",
                       type(scheme).__name__, msg.topic, msg.partition, msg.offset, exc,
                       exc_info=True)
        return None
    for values in rows:
        if len(values) != fields_len:
            logger.warning("scheme %s gave %d values for %d fields on %s/%s@%s; failing the "
                           "offset", type(scheme).__name__, len(values), fields_len,
                           msg.topic, msg.partition, msg.offset)
            return None
    return rows


def _emit_spout(runtime: LocalRuntime, dispatcher: _Dispatcher, spout: str,
                messages: Iterable[Any], scheme: Scheme, plan: PlanFilter,
                taken: _RangeBuilder, failed: List[int], init: Callable[[int, int, int], None]
                ) -> Tuple[int, int, Optional[str], Optional[int], int, Optional[int]]:
    """Scheme + spout emit for every taken message. Returns (skipped, emitted
    tuples, topic, partition, last taken offset, scanned_to)."""
    fields = runtime.spout_fields
    stream = runtime.spout_stream
    nfields = len(fields)
    rng = runtime.rng
    bits = rng.getrandbits
    skipped = 0
    emitted = 0
    topic: Optional[str] = None
    partition: Optional[int] = None
    last = -1
    targets = dispatcher.targets
    deliver = dispatcher.deliver
    filt = _Filter(messages, plan)
    for msg in filt:
        off = msg.offset
        taken.add(off)
        last = off
        topic, partition = msg.topic, msg.partition
        rows = _scheme_rows(scheme, msg, nfields)
        if rows is None:
            failed.append(off)
            continue
        if not rows:
            skipped += 1
            continue
        root = bits(64) or new_id(rng)
        xor = 0
        for values in rows:
            emitted += 1
            proto = StormTuple(values, fields, stream=stream, source_component=spout,
                               topic=topic, partition=partition, offset=off)
            for i, (component, task) in enumerate(targets(proto)):
                copy_ = proto if i == 0 else StormTuple(
                    values, fields, stream=stream, source_component=spout, topic=topic,
                    partition=partition, offset=off)
                edge = bits(64) or new_id(rng)
                copy_.anchors = {root: edge}
                xor ^= edge
                deliver(component, task, copy_)
        init(root, xor, off)
    return skipped, emitted, topic, partition, last, filt.scanned_to


# --- single stage ---------------------------------------------------------------------------

def process_batch(messages: Iterable[Any], *, scheme: Scheme,
                  topology: Union[Topology, LocalRuntime, None] = None,
                  bolt: Optional[Callable[[StormTuple], Any]] = None,
                  plan_filter: Any, rng: Optional[random.Random] = None, now_ms: int = 0,
                  conf: Optional[Mapping[str, Any]] = None) -> BatchOutcome:
    """Process one fetched batch of one partition in this task.

    Parameters
    ----------
    messages : iterable
        Fetched messages in offset order (objects with key, value, topic,
        partition, offset).
    scheme : Scheme
        Turns each message into tuples.
    topology : Topology or LocalRuntime, optional
        The bolt DAG, run entirely in this task.
    bolt : callable, optional
        A simple bolt (instead of ``topology``): ``bolt(tuple)``; return acks,
        raise fails. Its return value is ignored here.
    plan_filter : PlanFilter or plan-like
        The partition manager's plan (``offset``, ``reemit``, ``max_messages``).
    rng : random.Random, optional
        Source of root and edge ids.
    now_ms : int
        The batch's time, for the acker.
    conf : mapping, optional
        Topology configuration for ``prepare``.

    Returns
    -------
    BatchOutcome
    """
    plan = as_plan_filter(plan_filter)
    if (topology is None) == (bolt is None):
        raise ValueError("process_batch needs exactly one of topology= or bolt=")
    if bolt is not None:
        return _process_simple(messages, scheme, bolt, plan)
    runtime = _runtime(topology, conf, scheme.fields)
    if rng is not None:
        runtime.set_rng(rng)
    acker = Acker(runtime.rng)
    dispatcher = _Dispatcher(runtime, acker, now_ms, None)
    runtime._bind(dispatcher)
    before = runtime.counts()
    taken = _RangeBuilder()
    failed: List[int] = []
    spout = runtime.topology.spout
    skipped, emitted, topic, partition, last, scanned = _emit_spout(
        runtime, dispatcher, spout, messages, scheme, plan, taken, failed,
        lambda root, xor, off: acker.init(root, xor, off, now_ms))
    for name in runtime.topology.order:
        queues = dispatcher.queues[name]
        for task, runner in enumerate(runtime.runners[name]):
            if queues[task]:
                batch, queues[task] = queues[task], []
                runner.run(batch)
    failed.extend(msg_id for msg_id, _reason in acker.failed())
    incomplete = acker.drop_pending()
    if incomplete:
        logger.info("%d tuple trees of %s/%s were still open at the end of the batch; "
                    "they time out on the driver unless acked", len(incomplete), topic,
                    partition)
    acker.completed()
    counts = _diff_counts(runtime.counts(), before)
    counts[spout] = {"messages": taken.count, "emitted": emitted}
    return _outcome(topic, partition, taken, failed, skipped, last, scanned, counts,
                    incomplete)


def _outcome(topic: Optional[str], partition: Optional[int], taken: _RangeBuilder,
             failed: List[int], skipped: int, last: int, scanned: Optional[int],
             counts: Dict[str, Dict[str, int]], incomplete: Iterable[int] = ()) -> BatchOutcome:
    taken_ranges = taken.result()
    failed_sorted = sorted(set(failed))
    open_sorted = sorted(set(incomplete) - set(failed_sorted))
    return BatchOutcome(topic=topic, partition=partition, taken=taken_ranges,
                        acked=subtract(taken_ranges, failed_sorted + open_sorted),
                        failed=failed_sorted, skipped_null=skipped,
                        next_offset=(last + 1) if last >= 0 else None, scanned_to=scanned,
                        stage_counts=counts, incomplete=open_sorted)


def _process_simple(messages: Iterable[Any], scheme: Scheme, bolt: Callable[[StormTuple], Any],
                    plan: PlanFilter) -> BatchOutcome:
    """The common case: one simple bolt, no acker needed (one tuple tree per message
    of depth one: the message is acked iff every one of its tuples returned)."""
    if isinstance(bolt, SimpleBolt):
        bolt = bolt.function
    fields = scheme.fields
    nfields = len(fields)
    taken = _RangeBuilder()
    failed: List[int] = []
    skipped = executed = 0
    topic: Optional[str] = None
    partition: Optional[int] = None
    last = -1
    name = getattr(bolt, "__qualname__", repr(bolt))
    filt = _Filter(messages, plan)
    for msg in filt:
        off = msg.offset
        taken.add(off)
        last = off
        topic, partition = msg.topic, msg.partition
        rows = _scheme_rows(scheme, msg, nfields)
        if rows is None:
            failed.append(off)
            continue
        if not rows:
            skipped += 1
            continue
        for values in rows:
            executed += 1
            try:
                bolt(StormTuple(values, fields, source_component=SPOUT_COMPONENT, topic=topic,
                                partition=partition, offset=off))
            except FailedException:
                failed.append(off)
                break
            except Exception as exc:
                logger.warning("bolt %s raised on %s/%s@%s: %r; failing the offset", name,
                               topic, partition, off, exc, exc_info=True)
                failed.append(off)
                break
    scanned = filt.scanned_to
    nfailed = len(set(failed))
    counts = {SPOUT_COMPONENT: {"messages": taken.count, "emitted": executed},
              "bolt": {"executed": executed, "emitted": 0,
                       "acked": taken.count - skipped - nfailed, "failed": nfailed}}
    return _outcome(topic, partition, taken, failed, skipped, last, scanned, counts)


# --- multi-stage (one Spark stage per bolt level) -------------------------------------------

@dataclass
class SpoutStageResult:
    """The spout side of one partition's batch in multi-stage mode.

    Attributes
    ----------
    outcome : BatchOutcome
        ``taken``, ``skipped_null``, ``next_offset`` and scheme failures.
    roots : dict
        Root id -> offset.
    init : dict
        Root id -> XOR of the spout's edge ids.
    routed : list of (component, task, StormTuple)
        Tuples for bolt tasks of later stages (the spout's, and those of the
        bolts run locally).
    pairs : dict
        Root id -> XOR of the acker messages of the bolts run locally.
    failed_roots : set of int
        Roots a locally run bolt failed.
    counts : dict
        Component -> counters of the bolts run locally.
    """

    outcome: BatchOutcome
    roots: Dict[int, int]
    init: Dict[int, int]
    routed: List[Tuple[str, int, StormTuple]]
    pairs: Dict[int, int] = field(default_factory=dict)
    failed_roots: Set[int] = field(default_factory=set)
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)


@dataclass
class StageResult:
    """One bolt task's run in multi-stage mode: tuples for later stages and the
    acker messages, folded per root."""

    component: str
    task: int
    routed: List[Tuple[str, int, StormTuple]]
    pairs: Dict[int, int]
    failed_roots: Set[int]
    counts: Dict[str, int]


def run_spout_stage(messages: Iterable[Any], *, scheme: Scheme,
                    topology: Union[Topology, LocalRuntime], plan_filter: Any,
                    rng: Optional[random.Random] = None,
                    local: AbstractSet[str] = frozenset(),
                    conf: Optional[Mapping[str, Any]] = None) -> SpoutStageResult:
    """Scheme and spout emit for one partition.

    Tuples for the bolts in ``local`` (bolts that can run where the partition
    was fetched, e.g. behind a shuffle grouping) are executed here, in
    topological order; every other tuple is routed to the outbox.
    """
    plan = as_plan_filter(plan_filter)
    runtime = _runtime(topology, conf, scheme.fields)
    if rng is not None:
        runtime.set_rng(rng)
    sink = _Sink()
    dispatcher = _Dispatcher(runtime, sink, 0, frozenset(local))
    if local:
        runtime._bind(dispatcher)
    roots: Dict[int, int] = {}
    init: Dict[int, int] = {}

    def _init(root: int, xor: int, off: int) -> None:
        roots[root] = off
        init[root] = xor

    taken = _RangeBuilder()
    failed: List[int] = []
    spout = runtime.topology.spout
    before = runtime.counts()
    skipped, emitted, topic, partition, last, scanned = _emit_spout(
        runtime, dispatcher, spout, messages, scheme, plan, taken, failed, _init)
    _drain(runtime, dispatcher, local)
    counts = {c: v for c, v in _diff_counts(runtime.counts(), before).items() if c in local}
    outcome = _outcome(topic, partition, taken, failed, skipped, last, scanned,
                       {spout: {"messages": taken.count, "emitted": emitted}, **counts})
    return SpoutStageResult(outcome, roots, init, dispatcher.outbox, sink.pairs, sink.failed,
                            counts)


def _drain(runtime: LocalRuntime, dispatcher: _Dispatcher, local: AbstractSet[str]) -> None:
    """Run the queued tuples of the ``local`` components in topological order (a
    component only delivers locally to later ones, so one pass empties every queue)."""
    for name in runtime.topology.order:
        if name not in local:
            continue
        queues = dispatcher.queues[name]
        for task, runner in enumerate(runtime.runners[name]):
            if queues[task]:
                batch, queues[task] = queues[task], []
                runner.run(batch)


@dataclass
class GroupResult:
    """One Spark task of a bolt stage: tuples for later stages and the acker
    messages folded per root."""

    routed: List[Tuple[str, int, StormTuple]]
    pairs: Dict[int, int]
    failed_roots: Set[int]
    counts: Dict[str, Dict[str, int]]


def run_stage_group(inputs: Iterable[Tuple[str, int, StormTuple]], *,
                    topology: Union[Topology, LocalRuntime], local: AbstractSet[str],
                    rng: Optional[random.Random] = None,
                    conf: Optional[Mapping[str, Any]] = None,
                    spout_fields: Optional[Sequence[str]] = None) -> GroupResult:
    """Run routed tuples ``(component, task, tuple)`` on their bolt tasks, and the
    bolts of ``local`` fed by them in this task; other emits go to the outbox."""
    runtime = _runtime(topology, conf, spout_fields)
    if rng is not None:
        runtime.set_rng(rng)
    sink = _Sink()
    local = frozenset(local)
    dispatcher = _Dispatcher(runtime, sink, 0, local)
    runtime._bind(dispatcher)
    before = runtime.counts()
    for component, task, tup in inputs:
        if component not in local:
            raise ValueError(f"tuple for {component!r} task {task} reached a stage running "
                             f"{sorted(local)}; the stage layout is wrong")
        dispatcher.queues[component][task].append(tup)
    _drain(runtime, dispatcher, local)
    counts = {c: v for c, v in _diff_counts(runtime.counts(), before).items() if c in local}
    return GroupResult(dispatcher.outbox, sink.pairs, sink.failed, counts)


def run_stage(component: str, task: int, tuples: Sequence[StormTuple], *,
              topology: Union[Topology, LocalRuntime], rng: Optional[random.Random] = None,
              conf: Optional[Mapping[str, Any]] = None,
              spout_fields: Optional[Sequence[str]] = None) -> StageResult:
    """Run one bolt task on its routed input; every emit goes to the outbox.
    ``spout_fields`` (the scheme's) are needed when the topology was built without them."""
    runtime = _runtime(topology, conf, spout_fields)
    if rng is not None:
        runtime.set_rng(rng)
    sink = _Sink()
    dispatcher = _Dispatcher(runtime, sink, 0, frozenset())
    runtime._bind(dispatcher)
    runner = runtime.runners[component][task]
    c = runner.collector
    before = (runner.executed, c.emitted, c.acked, c.failed)
    runner.run(list(tuples))
    counts = {"executed": runner.executed - before[0], "emitted": c.emitted - before[1],
              "acked": c.acked - before[2], "failed": c.failed - before[3]}
    return StageResult(component, task, dispatcher.outbox, sink.pairs, sink.failed, counts)


def resolve_batch(spout: SpoutStageResult, stages: Iterable[StageResult]) -> BatchOutcome:
    """Fold the stages' ``(root, xor)`` pairs (driver side) into the partition's outcome.

    A root is complete when the XOR of its init and every pair is 0 and no stage
    failed it; a failed root fails its offset; a root neither complete nor failed
    is reported in ``incomplete`` (it times out on the driver).
    """
    stages = list(stages)
    # init, the pairs of the bolts that ran with the spout, then every stage's pairs
    total = xor_by_root(itertools.chain(spout.init.items(), spout.pairs.items(),
                                        *(st.pairs.items() for st in stages)))
    failed_roots: Set[int] = set(spout.failed_roots)
    counts = dict(spout.outcome.stage_counts)
    for st in stages:
        failed_roots |= st.failed_roots
        agg = counts.setdefault(st.component, {})
        for k, v in st.counts.items():
            agg[k] = agg.get(k, 0) + v
    failed = list(spout.outcome.failed)
    incomplete: List[int] = []
    for root, off in spout.roots.items():
        if root in failed_roots:
            failed.append(off)
        elif total.get(root, 0) != 0:
            incomplete.append(off)
    o = spout.outcome
    failed_sorted = sorted(set(failed))
    open_sorted = sorted(set(incomplete) - set(failed_sorted))
    return BatchOutcome(topic=o.topic, partition=o.partition, taken=o.taken,
                        acked=subtract(o.taken, failed_sorted + open_sorted),
                        failed=failed_sorted, skipped_null=o.skipped_null,
                        next_offset=o.next_offset, scanned_to=o.scanned_to,
                        stage_counts=counts, incomplete=open_sorted)


__all__ += ["runtime_for", "xor_by_root"]
