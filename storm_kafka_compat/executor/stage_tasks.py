"""The tasks of a multi-stage batch (one Spark stage per bolt level): the stage
layout of a topology, the spout stage (scheme, spout tuples routed to bolt
tasks, each root's initial XOR) and a group of bolt tasks run on their routed
input. :mod:`.stages` wires them into Spark and folds the acker records on the
driver. Pure; no Spark.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import (AbstractSet, Any, Collection, Dict, Iterable, List, Mapping, Optional,
                    Sequence, Set, Tuple, Union)

from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.structs import BoltError, ErrorTally
from storm_kafka_compat.topology.schemes import Scheme
from storm_kafka_compat.topology.builder import Topology
from storm_kafka_compat.config.stages import CROSSING_GROUPINGS, stage_levels
from storm_kafka_compat.topology.ticks import tick_freq_of
from storm_kafka_compat.topology.tuples import StormTuple, TupleBatch
from storm_kafka_compat.topology.windowing import is_windowed_factory
from storm_kafka_compat.executor.dag import (AckSink, LocalRuntime, TaskDispatcher, diff_counts,
                                           local_runtime)
from storm_kafka_compat.executor.process import (BatchOutcome, RangeBuilder, as_fetch_plan,
                                               batch_outcome, emit_spout)



# --- the layout -------------------------------------------------------------------------

@dataclass(frozen=True)
class StageLayout:
    """Which bolts run in which stage.

    Attributes
    ----------
    stages : tuple of tuple of str
        Components of each stage; stage 0 runs with the fetch.
    slots : tuple of tuple of (str, int)
        Per stage, the bolt tasks that receive tuples from earlier stages (the
        Spark partitions of that stage); empty for stage 0.
    """

    stages: Tuple[Tuple[str, ...], ...]
    slots: Tuple[Tuple[Tuple[str, int], ...], ...]
    #: component -> tick period (s) of the bolts that take ticks (:mod:`..topology.ticks`)
    ticks: Tuple[Tuple[str, float], ...] = ()

    def tick_periods(self) -> Dict[str, float]:
        return dict(self.ticks)

    def stage_of(self, component: str) -> int:
        for i, names in enumerate(self.stages):
            if component in names:
                return i
        raise KeyError(component)


def tick_periods(topology: Topology, conf: Optional[Mapping[str, Any]] = None
                 ) -> Dict[str, float]:
    """Component -> tick period (s) of each bolt that takes ticks: its entry's
    ``tick_freq_secs``, its own configuration, else the topology's key in ``conf``."""
    out: Dict[str, float] = {}
    for name, spec in topology.bolts.items():
        probe = spec.new_instance()
        period = tick_freq_of(probe, spec.tick_freq_secs, conf or {}, name)
        if period is not None:
            out[name] = period
    return out


def hosted_bolts(topology: Topology, conf: Optional[Mapping[str, Any]] = None) -> Set[str]:
    """Bolts that must be one instance per task in a bolt host whatever their grouping:
    those that take ticks and the windowed bolts (a copy per Python worker would tick
    per worker and keep a window per worker)."""
    return set(tick_periods(topology, conf)) | {
        name for name, spec in topology.bolts.items() if is_windowed_factory(spec.factory)}


def needs_stages(topology: Topology, conf: Optional[Mapping[str, Any]] = None) -> bool:
    """True when a grouping must gather tuples across partitions (fields, global, all,
    partial key, direct, custom) or a bolt must live in a bolt host (ticks, windows):
    single-stage would give each partition its own bolt task."""
    return any(g.kind in CROSSING_GROUPINGS
               for spec in topology.bolts.values() for g in spec.inputs) or bool(
        hosted_bolts(topology, conf))


def stage_layout(topology: Topology, conf: Optional[Mapping[str, Any]] = None) -> StageLayout:
    """Cut ``topology`` into stages (see :mod:`.stages`): stage 0 holds the bolts
    reachable from the spout through shuffles only; a bolt fed by a crossing
    grouping, and a bolt that takes ticks or windows, starts a new stage."""
    periods = tick_periods(topology, conf)
    hosted = set(periods) | {n for n, spec in topology.bolts.items()
                             if is_windowed_factory(spec.factory)}
    level, crossing = stage_levels(
        topology.order, {name: [(g.source, g.kind) for g in topology.bolts[name].inputs]
                         for name in topology.order}, topology.spout, hosted)
    n = max(level.values(), default=0) + 1
    stages = tuple(tuple(c for c in topology.order if level[c] == i) for i in range(n))
    slots = tuple(tuple((c, t) for c in names if crossing[c]
                        for t in range(topology.parallelism(c))) for names in stages)
    return StageLayout(stages, slots, tuple(sorted(periods.items())))


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
    routes : dict
        (component, task) -> the :class:`~storm_kafka_compat.topology.tuples.TupleBatch`
        of tuples for that bolt task of a later stage (the spout's, and those of the
        bolts run locally); :attr:`routed` lists them.
    sent_roots : set of int
        The roots of those tuples.
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
    routes: Dict[Tuple[str, int], TupleBatch]
    sent_roots: Set[int] = field(default_factory=set)
    pairs: Dict[int, int] = field(default_factory=dict)
    failed_roots: Set[int] = field(default_factory=set)
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)

    @property
    def routed(self) -> List[Tuple[str, int, StormTuple]]:
        """The routed tuples as (component, task, tuple), task by task."""
        return routed_tuples(self.routes)


def run_spout_stage(messages: Iterable[Any], *, scheme: Scheme,
                    topology: Union[Topology, LocalRuntime], plan_filter: Union[FetchPlan, int],
                    rng: Optional[random.Random] = None,
                    local: AbstractSet[str] = frozenset(),
                    conf: Optional[Mapping[str, Any]] = None,
                    untracked: AbstractSet[str] = frozenset()) -> SpoutStageResult:
    """Scheme and spout emit for one partition.

    Tuples for the bolts in ``local`` (bolts that can run where the partition
    was fetched, e.g. behind a shuffle grouping) are executed here, in
    topological order; every other tuple is routed to the outbox. The roots of
    tuples routed to ``untracked`` bolts are not in ``sent_roots`` (bolt hosts
    report what those fail with its offset).
    """
    plan = as_fetch_plan(plan_filter)
    runtime = local_runtime(topology, conf, scheme.fields)
    if rng is not None:
        runtime.set_rng(rng)
    sink = AckSink()
    dispatcher = TaskDispatcher(runtime, sink, 0, frozenset(local), settles_at_end=True,
                                untracked=untracked)
    if local:
        runtime.bind(dispatcher)
    roots: Dict[int, int] = {}
    init: Dict[int, int] = {}

    def _init(root: int, xor: int, off: int) -> None:
        roots[root] = off
        init[root] = xor

    taken = RangeBuilder()
    failed: List[int] = []
    spout = runtime.topology.spout
    before = runtime.counts()
    errors = ErrorTally()
    try:
        skipped, emitted, topic, partition, last, scanned = emit_spout(
            runtime, dispatcher, spout, messages, scheme, plan, taken, failed, _init, errors)
        _drain(runtime, dispatcher, local)
    finally:
        if local:
            runtime.bind(None)
    counts = {c: v for c, v in diff_counts(runtime.counts(), before).items() if c in local}
    outcome = batch_outcome(topic, partition, taken, failed, skipped, last, scanned,
                            {spout: {"messages": taken.count, "emitted": emitted}, **counts},
                            (), errors.take() + runtime.take_errors())
    return SpoutStageResult(outcome, roots, init, dispatcher.routes, dispatcher.sent_roots,
                            sink.pairs, sink.failed, counts)


def _drain(runtime: LocalRuntime, dispatcher: TaskDispatcher, local: AbstractSet[str],
           given: Optional[Dict[Tuple[str, int], Collection[StormTuple]]] = None) -> None:
    """Run the queued tuples of the ``local`` components in topological order (a
    component only delivers locally to later ones, so one pass empties every queue);
    a task's ``given`` tuples (a stage's input) before those queued for it."""
    for name in runtime.topology.order:
        if name not in local:
            continue
        queues = dispatcher.queues[name]
        for task, runner in enumerate(runtime.runners[name]):
            held = given.pop((name, task), None) if given else None
            if held is not None and not len(held):
                held = None
            queued = queues[task]
            if queued:
                queues[task] = []
                held = queued if held is None else [*held, *queued]
            if held is not None:
                runner.run(held)


@dataclass
class GroupResult:
    """One Spark task of a bolt stage: tuples for later stages and the acker
    messages folded per root."""

    routes: Dict[Tuple[str, int], TupleBatch]
    pairs: Dict[int, int]
    failed_roots: Set[int]
    counts: Dict[str, Dict[str, int]]
    errors: List[BoltError] = field(default_factory=list)

    @property
    def routed(self) -> List[Tuple[str, int, StormTuple]]:
        """The routed tuples as (component, task, tuple), task by task."""
        return routed_tuples(self.routes)


def routed_tuples(routes: Mapping[Tuple[str, int], TupleBatch]
                  ) -> List[Tuple[str, int, StormTuple]]:
    """``routes`` as (component, task, tuple), task by task."""
    return [(c, t, tup) for (c, t), batch in routes.items() for tup in batch]


def run_stage_group(inputs: Mapping[Tuple[str, int], Collection[StormTuple]], *,
                    topology: Union[Topology, LocalRuntime], local: AbstractSet[str],
                    rng: Optional[random.Random] = None,
                    conf: Optional[Mapping[str, Any]] = None,
                    spout_fields: Optional[Sequence[str]] = None) -> GroupResult:
    """Run routed tuples (bolt task ``(component, task)`` -> its tuples, in order) on
    their bolt tasks, and the bolts of ``local`` fed by them in this task; other emits
    go to the outbox."""
    runtime = local_runtime(topology, conf, spout_fields)
    if rng is not None:
        runtime.set_rng(rng)
    sink = AckSink()
    local = frozenset(local)
    dispatcher = TaskDispatcher(runtime, sink, 0, local, settles_at_end=True)
    runtime.bind(dispatcher)
    before = runtime.counts()
    for component, task in inputs:
        if component not in local:
            raise ValueError(f"tuples for {component!r} task {task} reached a stage running "
                             f"{sorted(local)}; the stage layout is wrong")
    try:
        _drain(runtime, dispatcher, local, dict(inputs))
    finally:
        runtime.bind(None)
    counts = {c: v for c, v in diff_counts(runtime.counts(), before).items() if c in local}
    return GroupResult(dispatcher.routes, sink.pairs, sink.failed, counts, runtime.take_errors())
