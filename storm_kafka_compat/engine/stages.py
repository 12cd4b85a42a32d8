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

Every Spark record is a ``(key, value)`` pair:

* ``("t", component, task)`` -> :class:`StormTuple`: a tuple for a bolt task;
* ``("a", root)`` -> ``(xor, failed, origin)``: acker messages of one root,
  pre-folded per Spark task; ``origin`` is ``(topic, partition, offset)`` from
  the spout stage, None from bolt stages;
* ``("r", topic, partition)`` -> :class:`TaskResult`: what the fetch took.

Records other than a stage's own tuples go to one pass-through partition and
are forwarded unchanged, so each stage's output feeds exactly one shuffle and
no bolt runs twice. A final ``reduceByKey`` folds the acker records per root;
only roots that did not complete come back to the driver: a failed root fails
its Kafka offset (replayed through the retry manager), a root neither failed
nor complete is an open tree that times out on the driver. Roots that complete
inside stage 0 never leave it.

Bolt state lives in the Python worker that runs a task; Spark may run a bolt
task in different workers from batch to batch, so keep aggregates outside the
bolt (as a Storm topology that must survive worker restarts does).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping,
                    Optional, Tuple)

from storm_kafka_compat.engine.executor import TaskResult, TaskSpec, bolt_error, fetch_plan
from storm_kafka_compat.engine.stage_tasks import run_spout_stage, run_stage_group
from storm_kafka_compat.offsets.ranges import subtract
from storm_kafka_compat.topology.builder import Topology

log = logging.getLogger(__name__)

__all__ = ["StageLayout", "StageJob", "stage_layout", "needs_stages", "spout_stage",
           "bolt_stage", "fold_acker", "settle", "run_stages_local", "run_stages_spark"]

Record = Tuple[Tuple[Any, ...], Any]
AckValue = Tuple[int, bool, Optional[Tuple[str, int, int]]]

#: groupings that need the tuples of every partition in one place
CROSSING_GROUPINGS = ("fields", "global", "all")


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

    def stage_of(self, component: str) -> int:
        for i, names in enumerate(self.stages):
            if component in names:
                return i
        raise KeyError(component)


def needs_stages(topology: Topology) -> bool:
    """True when a grouping must gather tuples across partitions (fields,
    global or all): single-stage would give each partition its own bolt task."""
    return any(g.kind in CROSSING_GROUPINGS
               for spec in topology.bolts.values() for g in spec.inputs)


def stage_layout(topology: Topology) -> StageLayout:
    """Cut ``topology`` into stages (see the module docstring)."""
    level: Dict[str, int] = {}
    crossing: Dict[str, bool] = {}
    for name in topology.order:
        lv = 0
        for g in topology.bolts[name].inputs:
            src = 0 if g.source == topology.spout else level[g.source]
            lv = max(lv, src + (1 if g.kind in CROSSING_GROUPINGS else 0))
        level[name] = lv
    for name in topology.order:
        crossing[name] = level[name] > 0 and any(
            (0 if g.source == topology.spout else level[g.source]) < level[name]
            for g in topology.bolts[name].inputs)
    n = max(level.values(), default=0) + 1
    stages = tuple(tuple(c for c in topology.order if level[c] == i) for i in range(n))
    slots = tuple(tuple((c, t) for c in names if crossing[c]
                        for t in range(topology.parallelism(c))) for names in stages)
    return StageLayout(stages, slots)


@dataclass(frozen=True)
class StageJob:
    """What the executors need to run the stages (pickled into each task)."""

    topology_spec: Mapping[str, Any]
    scheme: str
    storm_conf: Tuple[Tuple[str, Any], ...]
    layout: StageLayout


# --- executor side -------------------------------------------------------------------

_WORKER: Dict[Any, Any] = {}


def _runtime(job: StageJob) -> Tuple[Any, Any]:
    """(LocalRuntime, scheme) of this Python worker, prepared once."""
    key = (repr(job.topology_spec), job.scheme, job.storm_conf)
    hit = _WORKER.get(key)
    if hit is None:
        from storm_kafka_compat.engine.dag import LocalRuntime
        from storm_kafka_compat.topology.schemes import load_scheme
        from storm_kafka_compat.topology.builder import from_spec

        scheme = load_scheme(job.scheme)
        runtime = LocalRuntime(from_spec(job.topology_spec), dict(job.storm_conf),
                               spout_fields=scheme.fields)
        hit = _WORKER[key] = (runtime, scheme)
    return hit


def _bolt_error(spec: TaskSpec, exc: BaseException) -> Record:
    r = bolt_error(spec, exc)
    return ("r", r.topic, r.partition), r


def spout_stage(specs: Iterable[TaskSpec], job: StageJob, *, kafka: Any = None,
                clock: Callable[[], float] = time.monotonic) -> Iterator[Record]:
    """Stage 0: fetch each plan, run the scheme and the local bolts; yield the
    partition's result, the acker records of open roots and the routed tuples."""
    local = frozenset(job.layout.stages[0])
    for spec in specs:
        plan = spec.plan
        result = TaskResult(plan.topic, plan.partition, plan)
        key = ("r", plan.topic, plan.partition)
        try:
            messages = fetch_plan(spec, result, kafka=kafka, clock=clock)
            if not messages:
                yield key, result
                continue
            runtime, scheme = _runtime(job)
            sp = run_spout_stage(messages, scheme=scheme, topology=runtime, plan_filter=plan,
                                 local=local)
        except Exception as exc:  # never lose the other partitions' results
            yield _bolt_error(spec, exc)
            continue
        o = sp.outcome
        result.taken = o.taken
        result.scanned_to = o.scanned_to
        result.skipped = o.skipped_null
        result.tuples = o.stage_counts.get(runtime.topology.spout, {}).get("emitted", 0)
        failed = set(o.failed)
        open_roots: List[Record] = []
        for root, offset in sp.roots.items():
            if root in sp.failed_roots:
                failed.add(offset)
                continue
            xor = sp.init[root] ^ sp.pairs.get(root, 0)
            if xor:
                open_roots.append((("a", root), (xor, False, (plan.topic, plan.partition,
                                                               offset))))
        result.failed = sorted(failed)
        yield key, result
        yield from open_roots
        for component, task, tup in sp.routed:
            yield ("t", component, task), tup


def bolt_stage(records: Iterable[Record], job: StageJob, stage: int) -> Iterator[Record]:
    """Stage ``stage`` >= 1: run this stage's tuples on their bolt tasks and
    forward every other record unchanged."""
    names = frozenset(job.layout.stages[stage])
    inputs: List[Tuple[str, int, Any]] = []
    for key, value in records:
        if key[0] == "t" and key[1] in names:
            inputs.append((key[1], key[2], value))
        else:
            yield key, value
    if not inputs:
        return
    runtime, _scheme = _runtime(job)
    res = run_stage_group(inputs, topology=runtime, local=names)
    for component, task, tup in res.routed:
        yield ("t", component, task), tup
    for root, value in res.pairs.items():
        yield ("a", root), (value, root in res.failed_roots, None)
    for root in res.failed_roots.difference(res.pairs):
        yield ("a", root), (0, True, None)


def fold_acker(a: AckValue, b: AckValue) -> AckValue:
    """Fold two acker records of one root (associative and commutative)."""
    return (a[0] ^ b[0], a[1] or b[1], a[2] if a[2] is not None else b[2])


def unresolved(record: Record) -> bool:
    """Keep results and the roots (from a spout stage) that did not complete."""
    key, value = record
    if key[0] == "r":
        return True
    if key[0] == "a":
        return value[2] is not None and (value[1] or value[0] != 0)
    return False


def settle(records: Iterable[Record]) -> List[TaskResult]:
    """Driver side: turn the results and unresolved roots into final TaskResults
    (``failed``: failed roots; ``unacked``: open trees; ``acked``: the rest)."""
    results: Dict[Tuple[str, int], TaskResult] = {}
    failed: Dict[Tuple[str, int], set] = {}
    open_: Dict[Tuple[str, int], set] = {}
    for key, value in records:
        if key[0] == "r":
            results[(key[1], key[2])] = value
        elif key[0] == "a" and value[2] is not None:
            topic, partition, offset = value[2]
            if value[1]:
                failed.setdefault((topic, partition), set()).add(offset)
            elif value[0]:
                open_.setdefault((topic, partition), set()).add(offset)
        elif key[0] == "t":
            log.error("tuple for %s task %s was left after the last stage; dropping it",
                      key[1], key[2])
    out = []
    for k, r in results.items():
        if r.error is None:
            bad = set(r.failed) | failed.get(k, set())
            r.failed = sorted(bad)
            r.unacked = sorted(open_.get(k, set()) - bad)
            r.acked = subtract(r.taken, r.failed + r.unacked)
        out.append(r)
    return out


# --- the two engines -------------------------------------------------------------------

def run_stages_local(specs: List[TaskSpec], job: StageJob, *, kafka: Any = None
                     ) -> List[TaskResult]:
    """Every stage in this process, partitioned as Spark would (:class:`InProcess`)."""
    records: List[Record] = list(spout_stage(specs, job, kafka=kafka))
    for stage in range(1, len(job.layout.stages)):
        slots = {s: i for i, s in enumerate(job.layout.slots[stage])}
        parts: List[List[Record]] = [[] for _ in range(len(slots) + 1)]
        for rec in records:
            parts[_Partitioner(slots)(rec[0]) % len(parts)].append(rec)
        records = [out for part in parts for out in bolt_stage(part, job, stage)]
    folded: Dict[Tuple[Any, ...], Any] = {}
    for key, value in records:
        if key[0] == "a" and key in folded:
            folded[key] = fold_acker(folded[key], value)
        else:
            folded[key] = value
    return settle([r for r in folded.items() if unresolved(r)])


class _Partitioner:
    """Spark partition of a record: a tuple of this stage goes to its task's
    partition, everything else to the pass-through partition (the last one)."""

    def __init__(self, slots: Mapping[Tuple[str, int], int]) -> None:
        self.slots = dict(slots)
        self.passthrough = len(self.slots)

    def __call__(self, key: Tuple[Any, ...]) -> int:
        if key[0] == "t":
            i = self.slots.get((key[1], key[2]))
            if i is not None:
                return i
        return self.passthrough


def run_stages_spark(sc: Any, specs: List[TaskSpec], job: StageJob,
                     slices: Optional[int] = None) -> List[TaskResult]:
    """Run the stages as one Spark job: stage 0 over the planned partitions,
    ``partitionBy`` on the bolt tasks for each later stage, ``reduceByKey`` on
    the roots; only results and unresolved roots are collected."""
    slices = slices or len(specs)
    rdd = sc.parallelize(specs, slices).mapPartitions(
        lambda it, _job=job: spout_stage(it, _job))
    for stage in range(1, len(job.layout.stages)):
        slots = {s: i for i, s in enumerate(job.layout.slots[stage])}
        rdd = (rdd.partitionBy(len(slots) + 1, _Partitioner(slots))
               .mapPartitions(lambda it, _job=job, _s=stage: bolt_stage(it, _job, _s),
                              preservesPartitioning=True))
    collected = (rdd.filter(lambda rec: rec[0][0] != "t" or _left(rec))
                 .reduceByKey(_fold_any, max(1, min(2, slices)))
                 .filter(unresolved)
                 .collect())
    return settle(collected)


def _left(record: Record) -> bool:
    log.error("tuple for %s task %s was left after the last stage; dropping it",
              record[0][1], record[0][2])
    return False


def _fold_any(a: Any, b: Any) -> Any:
    return fold_acker(a, b)


def build_stage_job(topology_spec: Mapping[str, Any], scheme: str,
                    storm_conf: Mapping[str, Any], topology: Topology) -> StageJob:
    """The :class:`StageJob` of a topology (built on the driver)."""
    return StageJob(topology_spec, scheme, tuple(sorted(storm_conf.items())),
                    stage_layout(topology))


__all__ += ["build_stage_job", "unresolved", "CROSSING_GROUPINGS"]


class InProcess:
    """A batch executor that runs every task in this process, without Spark: the
    single-stage tasks or every stage of a multi-stage topology, partitioned as
    Spark would (tests of the loop, the planning benchmark).

    ``Pipeline(job, executor=InProcess())``; the pipeline gives it its Kafka
    access and stage plan.
    """

    def __init__(self) -> None:
        self.kafka: Any = None
        self.stage_job: Optional[StageJob] = None

    def __call__(self, specs: List[TaskSpec]) -> List[TaskResult]:
        if self.stage_job is not None:
            return run_stages_local(specs, self.stage_job, kafka=self.kafka)
        from storm_kafka_compat.engine.executor import run_task
        return [run_task(s, kafka=self.kafka) for s in specs]
