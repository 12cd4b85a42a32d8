"""What runs inside a Spark task: fetch planned ranges straight from Kafka, apply
the scheme, run the bolts, and return only what the driver needs.

No message passes through the driver. A task gets a list of :class:`TaskSpec`
(one per planned partition) and yields one :class:`TaskResult` each: the offset
ranges taken, acked ranges, failed offsets, offsets whose tuple tree was still
open when the task ended (they stay pending and time out on the driver), and
fetch errors. Topologies that need several Spark stages run through
:mod:`storm_kafka_compat.engine.stages` instead, which reuses the fetch here.

Kafka clients, schemes and bolts are cached per Python worker, keyed by their
settings, so a reused worker does not reconnect or re-import each batch.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from storm_kafka_compat.config import SpoutConfig
from storm_kafka_compat.config.objects import load_object
from storm_kafka_compat.kafka.worker import worker_kafka
from storm_kafka_compat.errors import FailedFetchError, OffsetOutOfRangeError
from storm_kafka_compat.spout.manager import FetchPlan
from storm_kafka_compat.offsets.ranges import Range, append_ranges

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskSpec:
    """One partition's work for one batch (pickled to the executor)."""

    plan: FetchPlan
    bootstrap: Tuple[str, ...]
    spout: SpoutConfig
    bolt: Optional[str] = None
    topology_spec: Optional[Mapping[str, Any]] = None
    kafka_conf: Tuple[Tuple[str, Any], ...] = ()
    storm_conf: Tuple[Tuple[str, Any], ...] = ()
    #: fetch backend: "kafka-python" or "confluent" (kafka.confluent.ConfluentAccess)
    backend: str = "kafka-python"
    #: the spout's commit interval (stateUpdateIntervalMs, or storm-kafka-client's
    #: offsetCommitPeriodMs); 0: the SpoutConfig's stateUpdateIntervalMs
    commit_interval_ms: int = 0
    #: the CONFIG's spark.triggerInterval in ms; 0: derived from the commit interval
    trigger_interval_ms: int = 0


@dataclass
class TaskResult:
    """What comes back to the driver for one partition."""

    topic: str
    partition: int
    plan: FetchPlan
    taken: List[Range] = field(default_factory=list)
    acked: List[Range] = field(default_factory=list)
    failed: List[int] = field(default_factory=list)
    unacked: List[int] = field(default_factory=list)
    scanned_to: Optional[int] = None
    latency_ms: Optional[int] = None
    tuples: int = 0
    skipped: int = 0
    #: "out_of_range" | "failed_fetch" | "bolt_error" (the bolt or scheme raised) |
    #: "client_error" (the Kafka client raised something unexpected while fetching)
    error: Optional[str] = None
    error_message: str = ""
    #: the traceback of a bolt_error/client_error, logged by the driver with -v
    error_traceback: str = ""

    @property
    def key(self) -> Tuple[str, int]:
        return (self.topic, self.partition)


# --- per-worker caches -----------------------------------------------------------
_PROCESSORS: Dict[Any, Any] = {}


def _kafka_for(spec: TaskSpec) -> Any:
    return worker_kafka(spec.backend, spec.bootstrap, spec.spout, spec.kafka_conf)


def _processor_for(spec: TaskSpec) -> Callable[[List[Any], FetchPlan], Any]:
    key = (spec.spout.scheme, spec.bolt, repr(spec.topology_spec), spec.storm_conf)
    proc = _PROCESSORS.get(key)
    if proc is None:
        from storm_kafka_compat.engine.process import process_batch
        from storm_kafka_compat.topology.schemes import (EMIT_NULL_TUPLES_KEY, EmitNullTuples,
                                                         load_scheme)

        scheme = load_scheme(spec.spout.scheme)
        conf = dict(spec.storm_conf)
        if conf.get(EMIT_NULL_TUPLES_KEY):
            scheme = EmitNullTuples(scheme)
        if spec.topology_spec is not None:
            from storm_kafka_compat.topology.builder import from_spec
            topology = from_spec(spec.topology_spec)

            def proc(messages: List[Any], plan: FetchPlan) -> Any:
                return process_batch(messages, scheme=scheme, topology=topology,
                                     plan_filter=plan, now_ms=int(time.time() * 1000),
                                     conf=conf)
        else:
            if not spec.bolt:
                raise ValueError("no bolt configured: set `bolt: module:callable`")
            bolt = load_object(spec.bolt, key="bolt")

            def proc(messages: List[Any], plan: FetchPlan) -> Any:
                return process_batch(messages, scheme=scheme, bolt=bolt, plan_filter=plan)
        _PROCESSORS[key] = proc
    return proc


def fetch_plan(spec: TaskSpec, result: TaskResult, *, kafka: Any = None,
               clock: Callable[[], float] = time.monotonic,
               fill: bool = True) -> Optional[List[Any]]:
    """Fetch the messages of ``spec.plan``; on a fetch error set ``result.error``
    and return None. Sets ``result.latency_ms``.

    ``fill``: a new-data plan keeps fetching for up to :data:`FILL_SHARE` of the
    task budget (what a batch processed whole needs: the multi-stage path);
    without it, one broker fetch (:func:`run_task` fetches as it processes).
    """
    plan = spec.plan
    kafka = kafka if kafka is not None else _kafka_for(spec)
    started = clock()
    try:
        # raw: the schemes read key, value, topic, partition and offset only
        messages = kafka.fetch(plan.topic, plan.partition, plan.offset,
                               max_messages=None if plan.retry else plan.max_messages,
                               max_offset=plan.max_offset, raw=True)
    except OffsetOutOfRangeError as exc:
        result.error, result.error_message = "out_of_range", str(exc)
        return None
    except FailedFetchError as exc:
        result.error, result.error_message = "failed_fetch", str(exc)
        return None
    except Exception as exc:  # noqa: BLE001 - a client defect, reported as such
        log.exception("fetch of %s/%d at %d failed", plan.topic, plan.partition, plan.offset)
        result.error = "client_error"
        result.error_message = (f"fetching {plan.topic}/{plan.partition} at offset {plan.offset} "
                                f"failed inside the {spec.backend} client "
                                f"({type(exc).__name__}: {exc})")
        result.error_traceback = traceback.format_exc()
        return None
    result.latency_ms = int((clock() - started) * 1000)
    messages = list(messages)
    if fill and not plan.retry and messages:
        messages = _fill(kafka, plan, messages,
                         started + task_budget_s(spec) * FILL_SHARE, clock)
    return messages


def task_budget_s(spec: TaskSpec) -> float:
    """How long one task may fetch, and then process, new messages: the CONFIG's
    ``spark.triggerInterval`` when set, else half of the spout's commit interval
    (at least :data:`MIN_TASK_BUDGET_MS`, at most :data:`FILL_BUDGET_MS`). A batch
    then lasts about that long whatever the bolt's speed, so a driver killed
    between two commits replays at most about one commit interval plus one batch
    of processing (docs/operations.md, "What a crash replays")."""
    if spec.trigger_interval_ms:
        return spec.trigger_interval_ms / 1000.0
    half = (spec.commit_interval_ms or spec.spout.state_update_interval_ms) / 2.0
    return max(MIN_TASK_BUDGET_MS, min(FILL_BUDGET_MS, half)) / 1000.0


#: how long one task keeps fetching a new-data plan after the first fetch (ms).
#: One broker fetch holds about one fetchSizeBytes; a Spark job costs ~0.1 s, so
#: filling the plan up to max_messages cuts the batches by up to 20x (measured
#: by the benchmark: 460 messages per partition per batch before, on 100-byte
#: records). A retry plan is one fetch, as in storm-kafka.
FILL_BUDGET_MS = 1000
#: the share of the task budget the fill may spend fetching; the rest is left for
#: processing (a fill that took the whole budget left time for one chunk only:
#: under load the fetched messages were thrown away and fetched again)
FILL_SHARE = 0.5
#: the smallest task budget (ms), for very short commit intervals
MIN_TASK_BUDGET_MS = 100
#: messages processed before the first look at the clock: small, so a slow bolt
#: (10 ms a tuple) cannot overrun the budget much before its cost is known
FIRST_CHUNK = 16


def _fill(kafka: Any, plan: FetchPlan, messages: List[Any], deadline: float,
          clock: Callable[[], float]) -> List[Any]:
    """Keep fetching after ``messages`` until the plan's ``max_messages``, an empty
    answer (log end) or ``deadline``. An error here ends the fill: the messages
    already fetched are processed and the next batch meets the error again."""
    limit = plan.max_messages
    while (limit is None or len(messages) < limit) and clock() < deadline:
        nxt = messages[-1].offset + 1
        try:
            more = kafka.fetch(plan.topic, plan.partition, nxt,
                               max_messages=None if limit is None else limit - len(messages),
                               raw=True)
        except (OffsetOutOfRangeError, FailedFetchError) as exc:
            log.info("%s/%d: fetch at %d ended the fill: %s", plan.topic, plan.partition, nxt, exc)
            break
        if not more:
            break
        messages.extend(more)
    return messages


def run_task(spec: TaskSpec, *, kafka: Any = None, processor: Any = None,
             clock: Callable[[], float] = time.monotonic) -> TaskResult:
    """Fetch and process one plan until its end or the task budget.

    As a consumer loop does: one broker fetch, process it, fetch the next one
    (the client's next request is already on its way while this one is
    processed), until the plan's ``max_messages``, the log end or the budget
    (:func:`task_budget_s`). Processing goes in chunks sized from the measured
    cost per message, so a slow bolt stops within about one message of the
    budget; messages fetched but not reached are not taken, and the next batch
    fetches them again. Fetching stops at the log end the first fetch reported
    (:meth:`~storm_kafka_compat.kafka.client.KafkaAccess.fetched_log_end`): under
    live traffic a task does not chase what arrives while it runs, so batches stay
    short and those messages wait less. A retry plan is one fetch, processed whole, as in
    storm-kafka. ``kafka``/``processor`` are injectable for tests.
    """
    plan = spec.plan
    result = TaskResult(plan.topic, plan.partition, plan)
    started = clock()
    kafka = kafka if kafka is not None else _kafka_for(spec)
    messages = fetch_plan(spec, result, kafka=kafka, clock=clock, fill=False)
    if not messages:
        if messages is not None:
            _passed_invisible(kafka, plan, result)
        return result
    proc = processor if processor is not None else _processor_for(spec)
    if plan.retry:
        _add_outcome(result, proc(messages, plan))
        return result
    deadline = started + task_budget_s(spec)
    limit = plan.max_messages
    # the log end when the task started: messages arriving later are the next batch's
    end = kafka.fetched_log_end(plan.topic, plan.partition)
    fetched = 0
    per_message: Optional[float] = None
    while messages:
        i, n = 0, len(messages)
        while i < n:
            now = clock()
            chunk = FIRST_CHUNK if per_message is None else \
                max(1, int((deadline - now) / per_message))
            part = messages[i:i + chunk]
            _add_outcome(result, proc(part, plan))
            i += len(part)
            done = clock()
            per_message = max((done - now) / len(part), 1e-7)
            if done >= deadline:
                return result
        fetched += n
        if limit is not None and fetched >= limit:
            break
        nxt = messages[-1].offset + 1
        if end is not None and nxt >= end:
            break
        try:
            messages = kafka.fetch(plan.topic, plan.partition, nxt,
                                   max_messages=None if limit is None else limit - fetched,
                                   max_offset=plan.max_offset, raw=True)
        except (OffsetOutOfRangeError, FailedFetchError) as exc:
            # what was processed stands; the next batch meets the error again
            log.info("%s/%d: fetch at %d ended the task: %s", plan.topic, plan.partition,
                     nxt, exc)
            break
        if not messages:
            _passed_invisible(kafka, plan, result)
    return result


def _passed_invisible(kafka: Any, plan: FetchPlan, result: TaskResult) -> None:
    """After a fetch of new data that returned nothing: when the client's position
    stands past what was taken (the log ended with entries no consumer receives:
    transaction markers, aborted records under read_committed), report it as
    ``scanned_to`` so that the partition's position, and its commit, pass them."""
    if plan.retry:
        return
    position = kafka.fetched_position(plan.topic, plan.partition)
    reached = result.scanned_to if result.scanned_to is not None else plan.offset
    if position is not None and position > reached:
        result.scanned_to = position


def _add_outcome(result: TaskResult, outcome: Any) -> None:
    """Fold one chunk's :class:`~storm_kafka_compat.engine.process.BatchOutcome`
    into the task's result."""
    append_ranges(result.taken, outcome.taken)
    append_ranges(result.acked, outcome.acked)
    result.failed.extend(outcome.failed)
    result.unacked.extend(outcome.incomplete)
    if outcome.scanned_to is not None:
        result.scanned_to = outcome.scanned_to
    result.skipped += outcome.skipped_null
    result.tuples += outcome.stage_counts.get("spout", {}).get("emitted", 0)


def run_tasks(specs: Iterable[TaskSpec]) -> Iterator[TaskResult]:
    """The ``mapPartitions`` function: every spec of this Spark partition in turn."""
    for spec in specs:
        try:
            yield run_task(spec)
        except Exception as exc:  # never lose the other partitions' results
            yield bolt_error(spec, exc)


def bolt_error(spec: TaskSpec, exc: BaseException) -> TaskResult:
    """The result of a task whose scheme or bolts raised ``exc`` (call it in the
    ``except`` block: the traceback goes back to the driver)."""
    log.exception("task for %s/%d failed", spec.plan.topic, spec.plan.partition)
    r = TaskResult(spec.plan.topic, spec.plan.partition, spec.plan)
    r.error, r.error_message = "bolt_error", f"{type(exc).__name__}: {exc}"
    r.error_traceback = traceback.format_exc()
    return r
