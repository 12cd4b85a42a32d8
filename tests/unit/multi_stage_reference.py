"""A reference of the multi-stage fold for the tests: one bolt task run on its
routed input (:func:`run_stage`) and the driver-side fold of every stage's
``(root, xor)`` pairs into the partition's outcome (:func:`resolve_batch`),
written plainly so the production engine (:mod:`storm_kafka_compat.engine.stages`)
can be checked against it.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from storm_kafka_compat.topology.acker import xor_by_root
from storm_kafka_compat.topology.builder import Topology
from storm_kafka_compat.offsets.ranges import subtract
from storm_kafka_compat.topology.tuples import StormTuple
from storm_kafka_compat.executor.process import BatchOutcome
from storm_kafka_compat.executor.dag import LocalRuntime, TaskDispatcher, AckSink, local_runtime
from storm_kafka_compat.executor.stage_tasks import SpoutStageResult, routed_tuples


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


def run_stage(component: str, task: int, tuples: Sequence[StormTuple], *,
              topology: Union[Topology, LocalRuntime], rng: Optional[random.Random] = None,
              conf: Optional[Mapping[str, Any]] = None,
              spout_fields: Optional[Sequence[str]] = None) -> StageResult:
    """Run one bolt task on its routed input; every emit goes to the outbox.
    ``spout_fields`` (the scheme's) are needed when the topology was built without them."""
    runtime = local_runtime(topology, conf, spout_fields)
    if rng is not None:
        runtime.set_rng(rng)
    sink = AckSink()
    dispatcher = TaskDispatcher(runtime, sink, 0, frozenset())
    runtime.bind(dispatcher)
    runner = runtime.runners[component][task]
    c = runner.collector
    before = (runner.executed, c.emitted, c.acked, c.failed)
    runner.run(list(tuples))
    counts = {"executed": runner.executed - before[0], "emitted": c.emitted - before[1],
              "acked": c.acked - before[2], "failed": c.failed - before[3]}
    return StageResult(component, task, routed_tuples(dispatcher.routes), sink.pairs,
                       sink.failed, counts)


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
