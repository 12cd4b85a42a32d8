"""A task's new-data plans read by one consumer holding all their partitions.

A task reading its partitions in turn pays, for each partition it reaches, a consumer
switch and that consumer's first fetch (a worker keeps 8 consumers; a task held 32 at
64 partitions, 256 at 512); the careful plain job's one consumer per task fetches all
its partitions in each request. Here the worker's client opens one
:class:`~storm_kafka_compat.kafka.client.FetchGroup` over the task's partitions, each
from its plan's offset; every poll's records come back split by partition, and each
partition's :class:`~storm_kafka_compat.executor.reader.PartitionReader` settles its plan
from its share as it would from its own fetches: the start offset, the cap, the offset
bound, the log end its first answer reported, the idle check (one lookup for all the
task's idle plans), an out-of-range answer or a failed fetch as the plan's failure
(after a first answer: the end of its reading), and one
:class:`~storm_kafka_compat.batch.PartitionResult` per plan.

The task ends at its deadline (the task budget) with what it processed; the records
the client handed out and the task did not process stay with the worker's client
(:class:`~storm_kafka_compat.kafka.client.HeldRecords`) for the next task of their
partitions. A partition without any answer when the deadline passes is asked its log
end: at the end its plan is settled as an empty fetch; below it, it is left for the
next batch (``reached`` false, planned first); a lookup that fails is the plan's
failed fetch. Until some partition answers the task goes on past the deadline, up to
one fetch's deadline, as a task's first plan always starts.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence

from storm_kafka_compat.batch import (FailureKind, FetchPlan, PartitionResult, TaskFailure,
                                      TaskTiming)
from storm_kafka_compat.errors import FailedFetchError, KafkaAccessError, OffsetOutOfRangeError
from storm_kafka_compat.executor.gc_pause import collection_paused
from storm_kafka_compat.executor.reader import PartitionReader, TaskBudget
from storm_kafka_compat.executor.task import bolt_error, passed, process_chunks, run_task
from storm_kafka_compat.executor.worker import Processor, TaskTools
from storm_kafka_compat.kafka.client import MAX_FETCH_CONSUMERS, MIN_FETCH_DEADLINE_MS, RecordBatch
from storm_kafka_compat.kafka.fetch_group import FetchGroup, GroupAnswer, GroupKafka, PartitionKey

log = logging.getLogger(__name__)

#: the fewest new-data plans a task reads with one consumer: fewer each keep a consumer
#: of their own (a worker keeps :data:`~storm_kafka_compat.kafka.client.MAX_FETCH_CONSUMERS`
#: of them, with their prefetched records, so they pay no consumer switch), the path the
#: run of record measured at the plain job at 4 partitions (0.96 and 0.93, where the group
#: path measured 0.70 and 0.45 in a loaded run of 400,000 messages)
GROUP_READ_MIN_PLANS = MAX_FETCH_CONSUMERS
#: the longest single poll of a group (s): a poll returns as soon as records come, so
#: this only bounds how late the task sees its deadline while nothing arrives
GROUP_POLL_S = 0.2


class GroupRead:
    """The state of one task's group reading: a reader and a result per plan, what the
    client handed out and the task did not process, the time in the client."""

    def __init__(self, plans: Sequence[FetchPlan], kafka: GroupKafka, client: str,
                 clock: Callable[[], float]) -> None:
        self.clock = clock
        self.kafka = kafka
        self.plans: Dict[PartitionKey, FetchPlan] = {(p.topic, p.partition): p for p in plans}
        #: each partition's place among the plans: a poll's records are processed in this
        #: order, so that a partition a batch did not reach, which the driver plans first,
        #: is served first in the next (a slow bolt spending the budget on the partitions
        #: whose records came first left another unread batch after batch)
        self.order: Dict[PartitionKey, int] = {key: i for i, key in enumerate(self.plans)}
        self.readers: Dict[PartitionKey, PartitionReader] = {
            key: PartitionReader.for_plan(kafka, plan, client=client, clock=clock)
            for key, plan in self.plans.items()}
        self.results: Dict[PartitionKey, PartitionResult] = {
            key: PartitionResult(plan) for key, plan in self.plans.items()}
        self.unprocessed: Dict[PartitionKey, RecordBatch] = {}
        self.read_s = 0.0
        self.per_message: Optional[float] = None
        self.opened = clock()

    def log_ends(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """The client's log ends of ``keys``, the lookup's time counted as reading."""
        started = self.clock()
        try:
            return self.kafka.log_ends(keys)
        finally:
            self.read_s += self.clock() - started

    def idle_check(self) -> None:
        """The idle plans' check, one lookup for all: a partition whose log end is still
        its plan's offset is settled as an empty fetch; a failed lookup leaves them to
        the fetch."""
        idle = [key for key, r in self.readers.items() if r.idle]
        if not idle:
            return
        try:
            ends = self.log_ends(idle)
        except KafkaAccessError as exc:
            log.debug("log end lookup of %d partitions failed (%s); fetching", len(idle), exc)
            ends = {}
        for key in idle:
            reader = self.readers[key]
            reader.idle = False
            if ends.get(key) == reader.position:
                reader.ended(None)

    def live(self) -> Dict[PartitionKey, int]:
        """The partitions still to read, at their next offsets."""
        return {key: r.position for key, r in self.readers.items() if not r.done}

    def fail(self, key: PartitionKey, exc: Exception) -> None:
        """``key``'s fetch failed: the plan's failure before a first answer, else the
        end of its reading (what was read stands)."""
        reader, result = self.readers[key], self.results[key]
        if not reader.answered and result.failure is None:
            kind = (FailureKind.OUT_OF_RANGE if isinstance(exc, OffsetOutOfRangeError) else
                    FailureKind.FAILED_FETCH if isinstance(exc, FailedFetchError) else
                    FailureKind.CLIENT_ERROR)
            result.failure = TaskFailure(kind, str(exc))
        else:
            log.info("%s/%d: fetch at %d ended the reading: %s", key[0], key[1],
                     reader.position, exc)
        reader.done = True

    def hold(self, key: PartitionKey, batch: RecordBatch, offset: int) -> None:
        """``batch``'s records from ``offset`` on were handed out and not processed."""
        rest = batch.bounded(offset)
        if len(rest):
            held = self.unprocessed.get(key)
            self.unprocessed[key] = rest if held is None else RecordBatch.joined(held, rest)

    def process(self, group: FetchGroup, key: PartitionKey, batch: RecordBatch,
                proc: Processor, deadline: float) -> bool:
        """Settle and process ``key``'s share of a poll; True when the deadline passed."""
        reader, result = self.readers[key], self.results[key]
        if reader.done or result.failure is not None:
            self.hold(key, batch, batch.offsets[0])
            return False
        log_end = None
        if not reader.answered:
            result.latency_ms = int((self.clock() - self.opened) * 1000)
            log_end = group.fetched_log_end(*key)
        got = reader.take(batch, log_end)
        spent = False
        processed = 0
        if len(got):
            try:
                processed, self.per_message, spent = process_chunks(
                    result, got, proc, self.plans[key], deadline, self.clock, self.per_message)
            except Exception as exc:  # noqa: BLE001 - this plan's bolt error, the rest go on
                self.results[key] = bolt_error(self.plans[key], exc)
                reader.done = True
                processed = len(got)
        self.hold(key, batch, got.offsets[processed] if processed < len(got) else
                  reader.position)
        if reader.done:
            group.drop(key)
        return spent

    def answer(self, group: FetchGroup, answer: GroupAnswer, proc: Processor,
               deadline: float) -> bool:
        """One poll's answer settled; True when the deadline passed. A partition's end
        counts once its records before it are processed: not while some wait unprocessed
        (the deadline came first), nor when it is below the reader's position (an
        answer from before the client was positioned again)."""
        for key, exc in answer.errors.items():
            if key in self.readers:
                self.fail(key, exc)
        spent = False
        last = len(self.order)
        for key in sorted(answer.batches, key=lambda k: self.order.get(k, last)):
            batch = answer.batches[key]
            if spent or key not in self.readers:
                self.hold(key, batch, batch.offsets[0])
            else:
                spent = self.process(group, key, batch, proc, deadline)
        for key, stands in answer.ended.items():
            reader = self.readers.get(key)
            if reader is None or reader.done or key in self.unprocessed or (
                    stands is not None and stands < reader.position):
                continue
            if not reader.answered:
                self.results[key].latency_ms = int((self.clock() - self.opened) * 1000)
            reader.ended(stands)
            group.drop(key)
        return spent

    def unanswered(self) -> None:
        """The partitions without an answer when the task ends: at their log end settled
        as an empty fetch, below it left for the next batch, a failed lookup their
        failed fetch."""
        keys = [k for k, r in self.readers.items()
                if not r.answered and not r.done and self.results[k].failure is None]
        if not keys:
            return
        try:
            ends = self.log_ends(keys)
        except KafkaAccessError as exc:
            for key in keys:
                self.fail(key, exc)
            return
        for key in keys:
            reader = self.readers[key]
            if ends.get(key) == reader.position:
                reader.ended(None)
            else:
                self.results[key] = PartitionResult(self.plans[key], reached=False)

    def finished(self, wall_started: float) -> List[PartitionResult]:
        """The results in the plans' order; the task's timing on the first, each other
        result its worker (so the driver sees where each partition ran)."""
        ended = time.time()
        pid = os.getpid()
        out = []
        for i, (key, result) in enumerate(self.results.items()):
            reader = self.readers[key]
            if result.reached and result.failure is None:
                if not reader.done and not result.taken and not result.errors:
                    # records handed out, none processed before the deadline: not reached
                    # (nothing taken is not "caught up"); they wait with the client
                    result = self.results[key] = PartitionResult(self.plans[key],
                                                                 reached=False)
                else:
                    result = passed(reader, result)
            if i == 0:
                result.timing = TaskTiming(started=wall_started, ended=ended,
                                           read_s=self.read_s,
                                           process_s=max(0.0, ended - wall_started
                                                         - self.read_s), worker=pid)
            else:
                result.timing = TaskTiming(started=ended, ended=ended, worker=pid)
            out.append(result)
        return out


def run_group(plans: Sequence[FetchPlan], tools: TaskTools, *, deadline: float,
              clock: Callable[[], float] = time.monotonic) -> Iterator[PartitionResult]:
    """Read and process the new-data ``plans`` of one task with one consumer until they
    are done or ``deadline`` (``clock`` time); one result per plan, in their order."""
    wall_started = time.time()
    client = tools.kafka
    if not isinstance(client, GroupKafka):
        raise TypeError(f"{type(client).__name__} does not fetch groups")
    state = GroupRead(plans, client, tools.backend, clock)
    state.idle_check()
    live = state.live()
    if live:
        try:
            group = client.fetch_group(live)
        except KafkaAccessError as exc:
            for key in live:
                state.fail(key, exc)
        else:
            proc = tools.processor()
            _poll_until(state, group, proc, deadline, _fetch_deadline(client, state.opened))
    yield from state.finished(wall_started)


def _fetch_deadline(client: GroupKafka, opened: float) -> float:
    """How long a task waits for its group's first answer, as one fetch waits."""
    timeout_ms = getattr(client, "fetch_timeout_ms", MIN_FETCH_DEADLINE_MS)
    return opened + float(timeout_ms) / 1000.0


def _poll_until(state: GroupRead, group: FetchGroup, proc: Processor, deadline: float,
                first_deadline: float) -> None:
    """Poll the group and settle each answer until every partition is done or the
    deadline passed (past it, until a first answer or ``first_deadline``)."""
    clock = state.clock
    spent = False
    with collection_paused():
        while not spent:
            live = [k for k, r in state.readers.items()
                    if not r.done and state.results[k].failure is None
                    and state.results[k].reached]
            if not live:
                break
            now = clock()
            anyone = any(r.answered for r in state.readers.values())
            end = deadline if anyone else max(deadline, first_deadline)
            if now >= end:
                break
            t0 = clock()
            answer = group.poll(min(GROUP_POLL_S, end - now))
            state.read_s += clock() - t0
            spent = state.answer(group, answer, proc, deadline)
    state.unanswered()
    held: Dict[PartitionKey, RecordBatch] = dict(state.unprocessed)
    group.close(held)


def run_tasks(plans: Iterable[FetchPlan], tools: TaskTools,
              clock: Callable[[], float] = time.monotonic) -> Iterator[PartitionResult]:
    """A Spark task's reading: the plans of its Spark partition in turn, each
    as far as it goes until the task budget is spent, the rest left for the next batch
    (:class:`~storm_kafka_compat.executor.reader.TaskBudget`), with the worker's
    ``tools`` (:meth:`~storm_kafka_compat.executor.worker.WorkerParts.tools`).

    When the worker's client fetches groups
    (:class:`~storm_kafka_compat.kafka.client.GroupKafka`, both shipped adapters) and
    the task holds at least :data:`GROUP_READ_MIN_PLANS` new-data plans, those are read
    together by one consumer
    (:func:`run_group`), after the retry plans."""
    budget = TaskBudget(tools.budget_s, clock)
    plans = list(plans)
    fresh: List[FetchPlan] = []
    if len(plans) > 1:
        kafka = tools.kafka
        if isinstance(kafka, GroupKafka) and kafka.reads_groups():
            fresh = [p for p in plans if not p.retry]
            if len(fresh) < GROUP_READ_MIN_PLANS:
                fresh = []
    for plan in plans:
        if fresh and not plan.retry:
            continue
        deadline = budget.deadline()
        if deadline is None:
            yield PartitionResult(plan, reached=False)
            continue
        try:
            yield run_task(plan, tools, clock=clock, deadline=deadline)
        except Exception as exc:  # never lose the other partitions' results
            yield bolt_error(plan, exc)
    if fresh:
        deadline = budget.deadline()
        if deadline is None:
            for plan in fresh:
                yield PartitionResult(plan, reached=False)
            return
        yield from run_group(fresh, tools, deadline=deadline, clock=clock)
