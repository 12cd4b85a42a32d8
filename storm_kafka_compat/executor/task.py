"""What runs inside a single-stage Spark task: read the planned range, apply the
scheme, run the bolts, and return only what the driver needs.

No message passes through the driver. A task gets a list of
:class:`~storm_kafka_compat.batch.FetchPlan` (one per planned partition)
and what to read and process them with
(:class:`~storm_kafka_compat.executor.worker.TaskTools`), and yields
one :class:`~storm_kafka_compat.batch.PartitionResult` each: the offset
ranges taken, acked ranges, failed offsets, offsets whose tuple tree was still
open when the task ended (they stay pending and time out on the driver), or the
task's failure as a value. Topologies that need several Spark stages run
through :mod:`storm_kafka_compat.engine.stages` instead.

The scheme, the bolt or topology and the Kafka client are built once per Python
worker and job (:func:`~storm_kafka_compat.executor.worker.worker_parts`), so a reused
worker does not reconnect or re-import each batch.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable, Optional, Sequence, Tuple

from storm_kafka_compat.batch import (FailureKind, FetchPlan, PartitionResult, TaskFailure,
                                      TaskTiming)
from storm_kafka_compat.executor.gc_pause import collection_paused
from storm_kafka_compat.executor.process import BatchOutcome
from storm_kafka_compat.executor.reader import PartitionReader
from storm_kafka_compat.executor.worker import Processor, TaskTools
from storm_kafka_compat.offsets.ranges import append_ranges
from storm_kafka_compat.structs import merge_errors
from storm_kafka_compat.topology.schemes import MessageLike

log = logging.getLogger(__name__)

#: messages processed before the first look at the clock: small, so a slow bolt
#: (10 ms a tuple) cannot overrun the budget much before its cost is known
FIRST_CHUNK = 16

def run_task(plan: FetchPlan, tools: TaskTools, *,
             clock: Callable[[], float] = time.monotonic,
             deadline: Optional[float] = None) -> PartitionResult:
    """Read and process one plan until its end or its deadline (``clock`` time; by
    default the task budget from now: :func:`run_tasks` gives each plan the task's end).

    As a consumer loop does: one broker fetch, process it, fetch the next one
    (the client's next request is already on its way while this one is
    processed), until the plan's ``max_messages``, the log end the first fetch
    reported or the budget (the job's ``budget_s``). Processing goes in chunks sized
    from the measured cost per message, so a slow bolt stops within about one
    message of the budget; messages fetched but not reached are not taken, and
    the next batch fetches them again. A retry plan is one fetch, processed
    whole, as in storm-kafka.
    The result's ``timing`` says where the task's time went.
    """
    result = PartitionResult(plan, timing=TaskTiming(started=time.time(), worker=os.getpid()))
    started = clock()
    reader = PartitionReader.for_plan(tools.kafka, plan, client=tools.backend, clock=clock)
    messages, result.failure = reader.first_fetch()
    result.latency_ms = reader.latency_ms
    if not messages:
        return _timed(passed(reader, result), reader)
    proc = tools.processor()
    if plan.retry:
        add_outcome(result, proc(messages, plan))
        return _timed(result, reader)
    if deadline is None:
        deadline = started + tools.budget_s
    with collection_paused():
        return _timed(_read_and_process(reader, result, messages, proc, plan, deadline,
                                        clock), reader)


def _timed(result: PartitionResult, reader: PartitionReader) -> PartitionResult:
    """The task's timing completed: when it ended and its time in the client."""
    timing = result.timing
    if timing is not None:
        timing.ended = time.time()
        timing.read_s = reader.read_s
        timing.process_s = max(0.0, timing.ended - timing.started - reader.read_s)
    return result


def _read_and_process(reader: PartitionReader, result: PartitionResult,
                      messages: Sequence[MessageLike], proc: Processor, plan: FetchPlan,
                      deadline: float, clock: Callable[[], float]) -> PartitionResult:
    """:func:`run_task`'s loop: process what was read in chunks, read the next fetch,
    until the reading ends or ``deadline``."""
    per_message: Optional[float] = None
    while messages:
        _n, per_message, spent = process_chunks(result, messages, proc, plan, deadline, clock,
                                                per_message)
        if spent:
            return result
        messages = reader.fetch_more()
    return passed(reader, result)


def process_chunks(result: PartitionResult, messages: Sequence[MessageLike], proc: Processor,
                   plan: FetchPlan, deadline: float, clock: Callable[[], float],
                   per_message: Optional[float]) -> Tuple[int, Optional[float], bool]:
    """Process ``messages`` under ``plan`` in chunks sized from the measured cost per
    message (``per_message`` seconds, None before the first chunk), folding each
    chunk's outcome into ``result``, until they are done or ``deadline`` passed.

    Returns the messages processed, the cost per message measured, and whether the
    deadline passed."""
    i, n = 0, len(messages)
    while i < n:
        now = clock()
        chunk = FIRST_CHUNK if per_message is None else \
            max(1, int((deadline - now) / per_message))
        part = messages[i:i + chunk]
        add_outcome(result, proc(part, plan))
        i += len(part)
        done = clock()
        per_message = max((done - now) / len(part), 1e-7)
        if done >= deadline:
            return i, per_message, True
    return i, per_message, False


def passed(reader: PartitionReader, result: PartitionResult) -> PartitionResult:
    """A reading of new data that ended on an empty answer with the client past what
    was taken (the log ended with transaction markers or aborted records): report
    where it stands as ``scanned_to``, so that the partition's position, and its
    commit, pass those entries."""
    if result.plan.retry or reader.passed_to is None:
        return result
    reached = result.scanned_to if result.scanned_to is not None else result.plan.offset
    if reader.passed_to > reached:
        result.scanned_to = reader.passed_to
    return result


def add_outcome(result: PartitionResult, outcome: BatchOutcome) -> None:
    """Fold one chunk's :class:`~storm_kafka_compat.executor.process.BatchOutcome`
    into the task's result."""
    append_ranges(result.taken, outcome.taken)
    append_ranges(result.acked, outcome.acked)
    result.failed.extend(outcome.failed)
    result.open_trees.extend(outcome.incomplete)
    if outcome.scanned_to is not None:
        result.scanned_to = outcome.scanned_to
    result.skipped += outcome.skipped_null
    result.tuples += outcome.stage_counts.get("spout", {}).get("emitted", 0)
    if outcome.errors:
        result.errors = merge_errors(result.errors + outcome.errors)


def bolt_error(plan: FetchPlan, exc: BaseException) -> PartitionResult:
    """The result of a task whose scheme or bolts raised ``exc`` (call it in the
    ``except`` block: the traceback goes back to the driver)."""
    log.exception("task for %s/%d failed", plan.topic, plan.partition)
    return PartitionResult(plan, failure=TaskFailure.caught(
        FailureKind.BOLT_ERROR, f"{type(exc).__name__}: {exc}"))
