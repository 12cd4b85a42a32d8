"""The tasks of a multi-stage batch (one Spark stage per bolt level): the spout
stage (scheme, spout tuples routed to bolt tasks, each root's initial XOR) and
a group of bolt tasks run on their routed input. :mod:`.stages` wires them into
Spark and folds the acker records on the driver. Pure; no Spark.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import (AbstractSet, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set,
                    Tuple, Union)

from storm_kafka_compat.topology.schemes import Scheme
from storm_kafka_compat.topology.builder import Topology
from storm_kafka_compat.topology.tuples import StormTuple
from storm_kafka_compat.engine.dag import LocalRuntime, _Dispatcher, _Sink, _diff_counts, _runtime
from storm_kafka_compat.engine.process import (BatchOutcome, _emit_spout, _outcome, _RangeBuilder,
                                               as_fetch_plan)


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
    plan = as_fetch_plan(plan_filter)
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
