"""Topologies whose groupings cross partitions, run as Spark stages.

A fields, global or all grouping sends a tuple to a bolt task that must see
the tuples of every Kafka partition, so the bolts cannot all run in the task
that fetched one partition. The topology is cut into stages:

* stage 0 (one Spark task per planned partition): fetch, scheme, the spout's
  emit, and every bolt reachable through shuffle groupings only (a shuffle may
  be served by any task, so the local one serves it);
* stage k >= 1: the bolts fed by a fields/global/all grouping from stage k-1
  (or by any grouping from an earlier stage), plus the bolts they feed through
  shuffles. Its Spark partitions are the bolt tasks ``(component, task)``:
  routed tuples are repartitioned with ``partitionBy`` on the task index.

The records the stages exchange and what their Spark tasks run are
:mod:`storm_kafka_compat.executor.stage_records`; here, on the driver, the layout is cut,
the Spark job wired and the collected records settled into the batch's result
(:func:`settle`): a failed root fails its Kafka offset (replayed through the retry
manager), a root neither failed nor complete is an open tree that times out on the
driver. Roots that complete inside stage 0 never leave it.

A run keeps each bolt task of the later stages in a bolt host
(:mod:`storm_kafka_compat.executor.hosts`, :mod:`.hosted`): one instance, one state,
saved with the offsets. Without hosts (tests that run the stages in Spark alone) a bolt
task's instance lives in whichever Python worker runs its stage's task, so its state
splits across workers.

The layout is cut on the driver (:func:`layout_for`, from
:func:`~storm_kafka_compat.executor.stage_tasks.stage_layout`) and travels in the
job's :class:`~storm_kafka_compat.executor.worker.WorkerJob`; the Spark wiring is
:func:`run_stages_spark` (the staged runner of :mod:`.runner`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Dict, Iterable, Iterator, List, Optional, Set

from storm_kafka_compat.batch import (BatchPlan, BatchResult, FetchPlan, LateAck, OpenRoot,
                                      PartitionResult)
from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.executor.stage_records import (ACK_BUCKETS, Record, StagePartitioner,
                                                       bolt_stage, fold_records, left_over,
                                                       spout_stage, unresolved_roots)
from storm_kafka_compat.executor.stage_tasks import StageLayout, needs_stages, stage_layout
from storm_kafka_compat.executor.worker import WorkerJob
from storm_kafka_compat.offsets.ranges import subtract
from storm_kafka_compat.structs import BoltError, TopicPartition, merge_errors

if TYPE_CHECKING:  # pyspark is imported where Spark runs
    from pyspark import Broadcast, SparkContext

log = logging.getLogger(__name__)


def layout_for(job: JobConfig, stages: Optional[bool]) -> Optional[StageLayout]:
    """The stage layout of ``job``'s bolt topology, or None for one stage: with
    ``stages`` None when a grouping crosses partitions (fields, global, all), True
    always, False never. The topology is built (and checked) here, on the driver."""
    if job.topology_spec is None or stages is False:
        return None
    from storm_kafka_compat.topology.spec import from_spec
    from storm_kafka_compat.topology.ticks import TICK_FREQ_KEY
    topology = from_spec(job.topology_spec)
    conf = {TICK_FREQ_KEY: job.topology.tick_tuple_freq_secs}
    if not stages and not needs_stages(topology, conf):
        return None
    layout = stage_layout(topology, conf)
    log.info("the topology runs as %d Spark stages: %s", len(layout.stages),
             " | ".join(",".join(s) or "-" for s in layout.stages))
    return layout


def settle(records: Iterable[Record]) -> BatchResult:
    """Driver side: turn the results and unresolved roots into the batch's result
    (``failed``: failed roots; ``open_trees``: open trees; ``acked``: the rest)."""
    results: Dict[TopicPartition, PartitionResult] = {}
    failed: Dict[TopicPartition, Set[int]] = {}
    open_: Dict[TopicPartition, Set[int]] = {}
    open_roots: Dict[int, OpenRoot] = {}
    late: Dict[int, LateAck] = {}
    errors: List[BoltError] = []
    for key, value in records:
        if key[0] == "r":
            results[TopicPartition(key[1], key[2])] = value
        elif key[0] == "a" and value[2] is not None:
            topic, partition, offset = value[2]
            tp = TopicPartition(topic, partition)
            if value[1]:
                failed.setdefault(tp, set()).add(offset)
            elif value[0]:
                open_.setdefault(tp, set()).add(offset)
                open_roots[key[1]] = OpenRoot(tp, offset, value[0])
        elif key[0] == "l":
            late[key[1]] = LateAck(value[0], value[1])
        elif key[0] == "e":
            errors.append(value)
        elif key[0] == "t":
            log.error("tuples for %s task %s were left after the last stage; dropping them",
                      key[1], key[2])
    out = []
    for k, r in results.items():
        if r.failure is None:
            bad = set(r.failed) | failed.get(k, set())
            r.failed = sorted(bad)
            r.open_trees = sorted(open_.get(k, set()) - bad)
            r.acked = subtract(r.taken, r.failed + r.open_trees)
        out.append(r)
    kept = {root: o for root, o in open_roots.items()
            if o.partition in results and results[o.partition].failure is None
            and o.offset in results[o.partition].open_trees}
    return BatchResult(out, merge_errors(errors), open_roots=kept, late_acks=late)


def run_stages_spark(sc: "SparkContext", plan: BatchPlan, job: "Broadcast[WorkerJob]",
                     layout: StageLayout, slices: int) -> BatchResult:
    """Run the stages as one Spark job: stage 0 over the planned partitions,
    ``partitionBy`` on the bolt tasks for each later stage, ``reduceByKey`` on
    the acker buckets; only results and unresolved roots are collected. ``job`` is the
    broadcast :class:`~storm_kafka_compat.executor.worker.WorkerJob`."""
    def first(plans: Iterable[FetchPlan]) -> Iterator[Record]:
        return spout_stage(plans, job.value)

    rdd = sc.parallelize(list(plan), slices).mapPartitions(first)
    for stage in range(1, len(layout.stages)):
        part = StagePartitioner.of(layout, stage)
        rdd = (rdd.partitionBy(part.passthrough + 1, part)
               .mapPartitionsWithIndex(_bolt_stage_of(job, stage, plan.batch),
                                       preservesPartitioning=True))
    collected = (rdd.filter(lambda rec: rec[0][0] != "t" or left_over(rec))
                 .reduceByKey(fold_records, max(1, min(ACK_BUCKETS, slices)))
                 .flatMap(unresolved_roots)
                 .collect())
    return settle(collected)


def _bolt_stage_of(job: "Broadcast[WorkerJob]", stage: int, batch: int
                   ) -> Callable[[int, Iterable[Record]], Iterator[Record]]:
    def run(index: int, records: Iterable[Record]) -> Iterator[Record]:
        return bolt_stage(records, job.value, stage, batch, index)
    return run
