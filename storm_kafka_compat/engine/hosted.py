"""A batch of a topology whose bolt tasks live in bolt hosts
(:mod:`storm_kafka_compat.executor.hosts`): one Spark stage, then the hosts' stages driven
from the driver.

* stage 0, one Spark task per slice of plans
  (:func:`~storm_kafka_compat.executor.stage_records.hosted_spout_stage`, executor
  side): fetch, scheme, the spout's emit and the shuffle-reached bolts, as in
  :func:`~storm_kafka_compat.executor.stage_records.spout_stage`; the tuples for the bolt tasks
  of later stages go straight to their hosts (deposited, tagged with the Spark
  partition and its attempt); the partitions' results, the acker buckets of the open
  roots and the attempt come back to the driver;
* stages 1 and later (:func:`run_hosted`, driver side): every host runs what was
  deposited for the stage by the attempts the driver took (a task Spark ran again
  after its worker died deposited again: only the attempt whose results came back
  counts); what a stage sends on is deposited for the next one; the acker messages
  are folded on the driver with stage 0's, and the roots that did not complete fail
  or stay open as in the staged runner (:func:`~storm_kafka_compat.engine.stages.settle`).
  A root whose tuples all went to bolts whose trees end in execute has no acker record
  from stage 0 (nothing of it can stay open); a host that fails it names its offset.

No Spark shuffle carries the tuples: one Spark stage a batch instead of one per bolt
level plus the acker fold, and each tuple is pickled once on its way to its task.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping

from storm_kafka_compat.batch import BatchResult
from storm_kafka_compat.engine.stages import settle
from storm_kafka_compat.executor.hosts.client import TaskHosts
from storm_kafka_compat.executor.hosts.host import Slot, Source
from storm_kafka_compat.executor.stage_records import (AckValue, Record, fold_acker,
                                                       unresolved_roots)
from storm_kafka_compat.executor.stage_tasks import StageLayout
from storm_kafka_compat.topology.tuples import TupleBatch


def run_hosted(records: Iterable[Record], layout: StageLayout, batch: int,
               hosts: TaskHosts) -> BatchResult:
    """Driver side: stage 0's ``records`` (from every Spark task), then each host stage
    in turn; the batch's result."""
    acker: Dict[int, AckValue] = {}
    kept: List[Record] = []
    sources: Dict[Source, int] = {}
    # the batch's own work on its critical path: the busiest Spark task's, then each
    # host stage's slowest host (they run at once)
    tasks_work = [0.0]
    stages_work = 0.0
    for key, value in records:
        if key[0] == "s":
            sources[("s", key[1])] = value[0]
            tasks_work.append(value[1])
        elif key[0] == "a":
            _fold(acker, value)
        else:
            kept.append((key, value))
    for stage in range(1, len(layout.stages)):
        routed: Dict[Slot, List[Any]] = {}
        answers = hosts.run_stage(batch, stage, sources)
        stages_work += max((a.seconds for a in answers), default=0.0)
        for answer in answers:
            origins = answer.origins
            _fold(acker, {root: (x, root in answer.failed_roots, origins.get(root))
                          for root, x in answer.pairs.items()})
            _fold(acker, {root: (0, True, origins.get(root))
                          for root in answer.failed_roots.difference(answer.pairs)})
            kept.extend((("e", e.component, e.kind), e) for e in answer.errors)
            for component, task, tup in answer.routed:
                routed.setdefault((component, task), []).append(tup)
        if routed:
            hosts.deposit(batch, ("d", stage), 0,
                          {slot: TupleBatch(held) for slot, held in routed.items()})
            sources[("d", stage)] = 0
    result = settle(kept + list(unresolved_roots((("a", 0), acker))))
    result.work_s = max(tasks_work) + stages_work
    return result


def _fold(acker: Dict[int, AckValue], bucket: Mapping[int, AckValue]) -> None:
    for root, value in bucket.items():
        held = acker.get(root)
        acker[root] = value if held is None else fold_acker(held, value)
