"""What the Spark tasks of a staged batch run, and the records they exchange.

Every Spark record is a ``(key, value)`` pair, and one Spark task writes one record
per plan and destination, not one per tuple (Spark's shuffle costs about as much per
record as per tuple, profiled):

* ``("t", component, task)`` -> :class:`~storm_kafka_compat.topology.tuples.TupleBatch`:
  the tuples one plan of a Spark task sends to one bolt task;
* ``("a", bucket)`` -> dict root -> ``(xor, failed, origin)``: the acker messages of
  the roots with ``root % ACK_BUCKETS == bucket``, folded per root in the Spark
  task; ``origin`` is ``(topic, partition, offset)`` from the spout stage, None from
  bolt stages;
* ``("r", topic, partition)`` -> :class:`~storm_kafka_compat.batch.PartitionResult`:
  what the fetch took;
* ``("e", component, kind)`` -> :class:`~storm_kafka_compat.structs.BoltError`;
* ``("s", index)`` -> ``(attempt, work_s)`` of a hosted stage 0's Spark task: the
  attempt, and the seconds of its own work (:class:`TaskWork`).

Records other than a stage's own tuples go to one pass-through partition
(:class:`StagePartitioner`) and are forwarded unchanged, so each stage's output feeds
exactly one shuffle and no bolt runs twice. The final ``reduceByKey`` folds the acker
buckets per root (:func:`fold_records`); only roots that did not complete come back
to the driver (:func:`unresolved_roots`), which settles the batch
(:func:`~storm_kafka_compat.engine.stages.settle`).

A job without bolt hosts runs each bolt task's instance in the Python worker that runs
its stage's task (:func:`bolt_stage`); a job with hosts hands stage 0's routed tuples
to the hosts (:func:`hosted_spout_stage`), which keep one instance per bolt task.
"""

from __future__ import annotations

import logging
import time
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Tuple, Union)

from storm_kafka_compat.batch import FetchPlan, PartitionResult
from storm_kafka_compat.executor.dag import LocalRuntime
from storm_kafka_compat.executor.gc_pause import collection_paused
from storm_kafka_compat.executor.reader import FILL_SHARE, PartitionReader, TaskBudget
from storm_kafka_compat.executor.stage_tasks import (GroupResult, StageLayout, run_spout_stage,
                                                     run_stage_group)
from storm_kafka_compat.executor.task import bolt_error
from storm_kafka_compat.executor.worker import WorkerJob, worker_parts
from storm_kafka_compat.kafka.client import KafkaAccess, RecordBatch
from storm_kafka_compat.structs import BoltError
from storm_kafka_compat.topology.schemes import MessageLike
from storm_kafka_compat.topology.ticks import TickSchedule, tick_tuple
from storm_kafka_compat.topology.tuples import TupleBatch

#: the staged runner's logger: these lines are the run's
log = logging.getLogger("storm_kafka_compat.engine.stages")

Record = Tuple[Tuple[Any, ...], Any]
AckValue = Tuple[int, bool, Optional[Tuple[str, int, int]]]
#: root -> its acker messages folded (one ``("a", bucket)`` record's value)
AckBucket = Dict[int, AckValue]

#: acker buckets: a Spark task sends at most this many acker records, and the final
#: fold runs over at most this many keys
ACK_BUCKETS = 2


def stage_runtime(job: WorkerJob) -> LocalRuntime:
    """The bolt tasks of this Python worker for ``job``, prepared once."""
    def build() -> LocalRuntime:
        return LocalRuntime(worker_parts(job).topology(), dict(job.storm_conf),
                            spout_fields=worker_parts(job).scheme().fields)
    return worker_parts(job).get("stage-runtime", build)


def _worker_ticks(job: WorkerJob) -> TickSchedule:
    """The ticks of the bolt tasks this worker runs itself (a job without bolt hosts)."""
    def build() -> TickSchedule:
        assert job.layout is not None
        periods = job.layout.tick_periods()
        return TickSchedule({slot: periods[slot[0]] for stage in job.layout.slots
                             for slot in stage if slot[0] in periods})
    return worker_parts(job).get("stage-ticks", build)


def _bolt_error(plan: FetchPlan, exc: BaseException) -> Record:
    r = bolt_error(plan, exc)
    return ("r", plan.topic, plan.partition), r


def fill(reader: PartitionReader, first: Sequence[MessageLike], deadline: float
         ) -> Sequence[MessageLike]:
    """``first`` and what the reader reads after it until it is done or ``deadline``:
    a batch processed whole (a multi-stage batch) is filled up front. An error here
    ends the fill: the messages already read are processed and the next batch meets
    the error again. Fetched record batches stay one batch (the spout stage reads the
    value column of a value scheme's batch without making message objects)."""
    fetched = [first]
    while reader.clock() < deadline:
        more = reader.fetch_more()
        if not more:
            break
        fetched.append(more)
    batches = [f for f in fetched if isinstance(f, RecordBatch)]
    if len(batches) == len(fetched):
        return RecordBatch.joined(*batches)
    return [m for f in fetched for m in f]


class TaskWork:
    """The seconds of a Spark task's own work in a staged batch: reading after each
    plan's first fetch, the spout stage, the hand-over to the bolt hosts. What a
    batch's size changes; Spark's per-job cost and the first fetches it does not
    (:class:`~storm_kafka_compat.engine.pacing.BatchPacer` sizes the first batches from
    it)."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0


def spout_stage(plans: Iterable[FetchPlan], job: WorkerJob, *,
                kafka: Optional[KafkaAccess] = None,
                clock: Callable[[], float] = time.monotonic,
                hosted: bool = False, work: Optional[TaskWork] = None) -> Iterator[Record]:
    """Stage 0: read each plan, run the scheme and the local bolts; yield each
    partition's result, then the acker buckets of the open roots and the routed
    tuples, one record per bolt task, of all the plans. ``hosted``: the later stages
    run in bolt hosts, which name the offset of each root they fail, so a root whose
    tuples all went to bolts whose trees end in execute
    (:attr:`~storm_kafka_compat.executor.dag.LocalRuntime.trees_end_in_execute`)
    sends no acker record. ``work`` gathers the task's own work."""
    assert job.layout is not None
    local = frozenset(job.layout.stages[0])
    outbox = Outbox()
    budget = TaskBudget(job.budget_s * FILL_SHARE, clock)
    for plan in plans:
        key = ("r", plan.topic, plan.partition)
        fill_until = budget.deadline()
        if fill_until is None:
            yield key, PartitionResult(plan, reached=False)
            continue
        result = PartitionResult(plan)
        try:
            client = kafka if kafka is not None else worker_parts(job).kafka()
            reader = PartitionReader.for_plan(client, plan, client=job.backend, clock=clock)
            first, result.failure = reader.first_fetch()
            result.latency_ms = reader.latency_ms
            if not first:
                yield key, result
                continue
            first_s = reader.read_s
            messages = first if plan.retry else fill(reader, first, fill_until)
            runtime = stage_runtime(job)
            started = clock()
            with collection_paused():
                sp = run_spout_stage(messages, scheme=worker_parts(job).scheme(),
                                     topology=runtime, plan_filter=plan, local=local,
                                     untracked=runtime.trees_end_in_execute if hosted
                                     else frozenset())
            if work is not None:
                work.seconds += clock() - started + reader.read_s - first_s
        except Exception as exc:  # never lose the other partitions' results
            yield _bolt_error(plan, exc)
            continue
        o = sp.outcome
        result.taken = o.taken
        result.scanned_to = o.scanned_to
        result.skipped = o.skipped_null
        result.tuples = o.stage_counts.get(runtime.topology.spout, {}).get("emitted", 0)
        failed = set(o.failed)
        # a root with tuples for later stages is sent with its offset even when its XOR
        # is zero here (tuples to bolts that ack in execute carry no edge id): a bolt of
        # a later stage may still fail it; not when a bolt host would name the offset
        sent_on = sp.sent_roots
        for root, offset in sp.roots.items():
            if root in sp.failed_roots:
                failed.add(offset)
                continue
            xor = sp.init[root] ^ sp.pairs.get(root, 0)
            if xor or root in sent_on:
                outbox.ack(root, (xor, False, (plan.topic, plan.partition, offset)))
        for root, value in sp.pairs.items():     # acks of earlier batches' trees
            if root not in sp.roots:
                outbox.ack(root, (value, root in sp.failed_roots, None))
        result.failed = sorted(failed)
        result.errors = o.errors
        yield key, result
        outbox.route(sp.routes)
    yield from outbox.records()


class Outbox:
    """What a Spark task sends on: tuples gathered per bolt task (each plan's batch as it
    is: joining them copied every run of tuples, about 5 % of a word count's stage) and
    acker messages folded per root into :data:`ACK_BUCKETS` buckets, written as one
    record each."""

    def __init__(self) -> None:
        self.tuples: Dict[Tuple[str, int], List[TupleBatch]] = {}
        self.buckets: List[AckBucket] = [{} for _ in range(ACK_BUCKETS)]

    def route(self, routes: Mapping[Tuple[str, int], TupleBatch]) -> None:
        """Add each bolt task's tuples after those it already has."""
        tuples = self.tuples
        for slot, batch in routes.items():
            if len(batch):
                tuples.setdefault(slot, []).append(batch)

    def ack(self, root: int, value: AckValue) -> None:
        bucket = self.buckets[root % ACK_BUCKETS]
        held = bucket.get(root)
        bucket[root] = value if held is None else fold_acker(held, value)

    def records(self) -> Iterator[Record]:
        for (component, task), batches in self.tuples.items():
            for batch in batches:
                yield ("t", component, task), batch
        for i, bucket in enumerate(self.buckets):
            if bucket:
                yield ("a", i), bucket


def bolt_stage(records: Iterable[Record], job: WorkerJob, stage: int, batch: int,
               index: Optional[int] = None) -> Iterator[Record]:
    """Stage ``stage`` >= 1 of batch ``batch`` for a job without bolt hosts (each worker
    its own instances; a job with hosts runs :mod:`~storm_kafka_compat.engine.hosted`):
    run this stage's tuples on their bolt tasks and forward every other record
    unchanged. ``index`` is the Spark partition: the bolt task
    ``layout.slots[stage][index]`` is called even without input (its ticks); the last
    one is the pass-through."""
    assert job.layout is not None
    names = frozenset(job.layout.stages[stage])
    slots = job.layout.slots[stage]
    inputs: Dict[Tuple[str, int], List[Any]] = {}
    if index is not None and index < len(slots):
        inputs[slots[index]] = []
    for key, value in records:
        if key[0] == "t" and key[1] in names:
            inputs.setdefault((key[1], key[2]), []).extend(value)
        else:
            yield key, value
    for slot, tuples in inputs.items():
        period = _worker_ticks(job).due(slot)
        if period is not None:
            tuples = [tick_tuple(period), *tuples]
        res = run_stage_group({slot: tuples}, topology=stage_runtime(job), local=names)
        yield from _group_records(res)


def _group_records(res: GroupResult) -> Iterator[Record]:
    outbox = Outbox()
    outbox.route(res.routes)
    for root, value in res.pairs.items():
        outbox.ack(root, (value, root in res.failed_roots, None))
    for root in res.failed_roots.difference(res.pairs):
        outbox.ack(root, (0, True, None))
    for error in res.errors:
        yield ("e", error.component, error.kind), error
    yield from outbox.records()


def fold_acker(a: AckValue, b: AckValue) -> AckValue:
    """Fold two acker records of one root (associative and commutative)."""
    return (a[0] ^ b[0], a[1] or b[1], a[2] if a[2] is not None else b[2])


#: what the final ``reduceByKey`` folds: an acker bucket, or a bolt error's tally
Folded = Union[AckBucket, BoltError]


def fold_records(a: Folded, b: Folded) -> Folded:
    """The final ``reduceByKey``'s function: two acker buckets folded root by root
    (the larger one is updated and returned), or two errors of one kind added up."""
    if isinstance(a, BoltError):
        assert isinstance(b, BoltError)
        return a.merged(b)
    assert not isinstance(b, BoltError)
    if len(a) < len(b):
        a, b = b, a
    for root, value in b.items():
        held = a.get(root)
        a[root] = value if held is None else fold_acker(held, value)
    return a


def unresolved_roots(record: Record) -> Iterator[Record]:
    """A partition's result as it is, and per root of an acker bucket that did not
    complete (failed, or a tree still open) one ``(("a", root), value)`` record. A
    root without an origin has no spout-stage message in this batch: it is a tree of
    an earlier batch that a bolt acked or failed late (a window's tuple leaving it), one
    ``(("l", root), (xor, failed))`` record for the driver, which holds that tree open."""
    key, value = record
    if key[0] in ("r", "e"):
        yield record
    elif key[0] == "a":
        for root, v in value.items():
            if v[2] is not None:
                if v[1] or v[0] != 0:
                    yield ("a", root), v
            elif v[1] or v[0] != 0:
                yield ("l", root), (v[0], v[1])


class StagePartitioner:
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

    @classmethod
    def of(cls, layout: StageLayout, stage: int) -> "StagePartitioner":
        return cls({s: i for i, s in enumerate(layout.slots[stage])})


def left_over(record: Record) -> bool:
    log.error("tuples for %s task %s were left after the last stage; dropping them",
              record[0][1], record[0][2])
    return False


def hosted_spout_stage(index: int, plans: Iterable[FetchPlan], job: WorkerJob, batch: int,
                       attempt: int, *, kafka: Optional[KafkaAccess] = None,
                       clock: Callable[[], float] = time.monotonic) -> Iterator[Record]:
    """Executor side: stage 0 of Spark partition ``index`` (attempt ``attempt``); its
    routed tuples deposited in their hosts, everything else yielded, then
    ``(("s", index), (attempt, work_s))``."""
    assert job.hosts is not None, "a hosted stage needs the job's bolt hosts"
    routed = Outbox()
    work = TaskWork()
    # held off from the first plan to the deposit, not per plan: a collection at the
    # end of each plan's stage scanned every tuple routed so far, and they are all
    # freed by reference counting once deposited
    with collection_paused():
        for key, value in spout_stage(plans, job, kafka=kafka, hosted=True, work=work):
            if key[0] == "t":
                routed.route({(key[1], key[2]): value})
            else:
                yield key, value
        started = clock()
        if routed.tuples:
            job.hosts.deposit(batch, ("s", index), attempt, routed.tuples)
        routed.tuples.clear()
        work.seconds += clock() - started
    yield ("s", index), (attempt, work.seconds)
