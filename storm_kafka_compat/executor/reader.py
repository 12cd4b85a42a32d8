"""The one partition reader of the executors, and the rows it gives Spark.

Every executor-side read goes through :class:`PartitionReader`: the engine's
tasks (:mod:`.task`, and the spout stage of :mod:`.stages`), the DataFrame mode
(:mod:`.dataframe`) and the Structured Streaming source
(:mod:`storm_kafka_compat.streaming.datasource`). It reads one partition from an
offset, one broker fetch per :meth:`PartitionReader.fetch`, and stops at the
plan's message cap, at an offset bound, or at the log end its first fetch
reported (a batch takes what was in the log when it started, as a Spark
micro-batch does, instead of chasing messages that arrive meanwhile).

A task's time budget (:func:`task_budget_s`) comes with the job: how long a task
fetches and processes new messages, for all its plans (:class:`TaskBudget`). Rows
for Spark have Spark's Kafka source schema (:data:`KAFKA_SCHEMA_DDL`,
:func:`kafka_row`).
"""

from __future__ import annotations

import datetime
import logging
import time
from typing import Any, Callable, Optional, Sequence, Tuple

from storm_kafka_compat.config import LATEST_TIME
from storm_kafka_compat.errors import FailedFetchError, KafkaAccessError, OffsetOutOfRangeError
from storm_kafka_compat.kafka.client import KafkaAccess, KafkaMessage, RecordBatch
from storm_kafka_compat.batch import FailureKind, FetchPlan, TaskFailure

log = logging.getLogger(__name__)

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

#: Spark's Kafka source row schema (``includeHeaders=true`` form)
KAFKA_SCHEMA_DDL = ("key binary, value binary, topic string, partition int, offset long, "
                    "timestamp timestamp, timestampType int, "
                    "headers array<struct<key: string, value: binary>>")
KAFKA_COLUMNS: Tuple[str, ...] = ("key", "value", "topic", "partition", "offset", "timestamp",
                                  "timestampType", "headers")

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def task_budget_s(trigger_interval_ms: int, commit_interval_ms: int) -> float:
    """How long one task may fetch, and then process, new messages: the CONFIG's
    ``spark.triggerInterval`` when set, else half of the spout's commit interval
    (at least :data:`MIN_TASK_BUDGET_MS`, at most :data:`FILL_BUDGET_MS`). A batch
    then lasts about that long whatever the bolt's speed, so a driver killed
    between two commits replays at most about one commit interval plus one batch
    of processing (docs/operations.md, "What a crash replays")."""
    if trigger_interval_ms:
        return trigger_interval_ms / 1000.0
    half = commit_interval_ms / 2.0
    return max(MIN_TASK_BUDGET_MS, min(FILL_BUDGET_MS, half)) / 1000.0


class TaskBudget:
    """One task's time budget for the plans it works through in turn: each plan reads
    as far as it goes (its ``max_messages``, the log end its first fetch reported)
    until the task's end, and a plan not started by then is left for the next batch
    (:attr:`~storm_kafka_compat.batch.PartitionResult.reached` false), where
    the spout plans it first. The task ends about ``budget_s`` after it started
    whatever the partitions it holds, and each plan it starts pays its partition's
    consumer switch and first fetch once (a few to tens of milliseconds) for as much
    as the budget lets it read. An equal share per plan paid that cost for a few
    thousand messages when a task held tens of partitions (64 partitions: 0.16-0.24 of
    the plain job, measured).

    Parameters
    ----------
    budget_s : float
        The task's budget (:func:`task_budget_s`).
    clock : callable
        Monotonic seconds.
    """

    def __init__(self, budget_s: float, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.end = clock() + budget_s
        self.started = False

    def deadline(self) -> Optional[float]:
        """The next plan's deadline (the task's end), or None when the budget is spent
        and the plan is to be left for the next batch; the first plan always starts."""
        if self.started and self.clock() >= self.end:
            return None
        self.started = True
        return self.end


def kafka_row(m: KafkaMessage) -> Tuple[Any, ...]:
    """A KafkaMessage as a row of :data:`KAFKA_SCHEMA_DDL`."""
    ts = _EPOCH + datetime.timedelta(milliseconds=m.timestamp)
    headers = [(k, v) for k, v in m.headers] if m.headers else []
    return (m.key, m.value, m.topic, m.partition, m.offset, ts, m.timestamp_type, headers)


class PartitionReader:
    """One partition's reading on an executor.

    Parameters
    ----------
    kafka : KafkaAccess
        The worker's client.
    topic, partition : str, int
    offset : int
        The next offset to read.
    max_messages : int, optional
        Stop after this many messages (over every fetch).
    max_offset : int, optional
        Never read at or past this offset.
    batch : bool
        Read :class:`~storm_kafka_compat.kafka.client.RecordBatch` es (columns of
        offsets and values beside the client's own records: what the engine's tasks
        process) instead of lists of
        :class:`~storm_kafka_compat.kafka.client.KafkaMessage`.
    stop_at_log_end : bool
        Stop at the log end the first fetch reported.
    idle : bool
        The partition was at its log end last time (:attr:`FetchPlan.idle
        <storm_kafka_compat.batch.FetchPlan.idle>`): the first fetch asks the
        log end first and answers nothing, without waiting for data, when
        :attr:`position` is still there. A failed lookup falls back to the fetch.
    client : str
        The client's name, for failure messages (the ``backend``).
    clock : callable returning seconds
        Monotonic; for the first fetch's latency.
    """

    def __init__(self, kafka: KafkaAccess, topic: str, partition: int, offset: int, *,
                 max_messages: Optional[int] = None, max_offset: Optional[int] = None,
                 batch: bool = False, stop_at_log_end: bool = True, idle: bool = False,
                 client: str = "Kafka",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.kafka = kafka
        self.topic = topic
        self.partition = partition
        #: the next offset to read
        self.position = offset
        self.max_messages = max_messages
        self.max_offset = max_offset
        self.batch = batch
        self.stop_at_log_end = stop_at_log_end
        self.idle = idle
        self.client = client
        self.clock = clock
        #: messages the fetches returned so far
        self.count = 0
        #: the log end the first fetch reported (None before it, or when not kept)
        self.log_end: Optional[int] = None
        #: how long the first fetch took (ms)
        self.latency_ms: Optional[int] = None
        #: where the client stands after an empty answer, when that is past
        #: :attr:`position`: the log ended with entries no consumer receives
        #: (transaction markers, aborted records under read_committed)
        self.passed_to: Optional[int] = None
        #: seconds spent in the client's fetches so far (waiting for data included)
        self.read_s = 0.0
        self.done = False
        self._fetches = 0

    @classmethod
    def for_plan(cls, kafka: KafkaAccess, plan: FetchPlan, *, batch: bool = True,
                 client: str = "Kafka",
                 clock: Callable[[], float] = time.monotonic) -> "PartitionReader":
        """The reader of a fetch plan: a new-data plan reads from its offset, at most
        ``max_messages``; a retry plan up to its last re-emitted offset."""
        return cls(kafka, plan.topic, plan.partition, plan.offset,
                   max_messages=None if plan.retry else plan.max_messages,
                   max_offset=plan.max_offset, batch=batch,
                   idle=plan.idle and not plan.retry, client=client, clock=clock)

    def _finished(self) -> bool:
        """Nothing more to read after a first fetch (which always happens)."""
        if self._fetches == 0:
            return False
        if self.max_messages is not None and self.count >= self.max_messages:
            return True
        if self.max_offset is not None and self.position >= self.max_offset:
            return True
        return self.log_end is not None and self.position >= self.log_end

    def fetch(self) -> Sequence[Any]:
        """The next broker fetch from :attr:`position` (a ``RecordBatch`` or a list of
        messages, as :attr:`batch` says); empty once the reading is done (the cap, the
        bound, the first fetch's log end, or an empty answer).

        Raises
        ------
        OffsetOutOfRangeError, FailedFetchError
            As the client raises them (and any error of the client's own).
        """
        if self.done or self._finished():
            self.done = True
            return []
        if self._fetches == 0 and self.idle and self._still_at_log_end():
            # the lookup stands in for the first fetch: an empty answer at the log end
            self._fetches = 1
            if self.stop_at_log_end:
                self.log_end = self.position
            self.done = True
            return []
        limit = None if self.max_messages is None else self.max_messages - self.count
        started = self.clock()
        messages: Sequence[Any]
        if self.batch:
            messages = self.kafka.fetch_batch(self.topic, self.partition, self.position,
                                              max_messages=limit, max_offset=self.max_offset)
        else:
            messages = list(self.kafka.fetch(self.topic, self.partition, self.position,
                                             max_messages=limit, max_offset=self.max_offset))
        self.read_s += self.clock() - started
        if self._fetches == 0:
            self.latency_ms = int((self.clock() - started) * 1000)
            if self.stop_at_log_end:
                self.log_end = self.kafka.fetched_log_end(self.topic, self.partition)
        self._fetches += 1
        if not messages:
            self.done = True
            stands = self.kafka.fetched_position(self.topic, self.partition)
            if stands is not None and stands > self.position:
                self.passed_to = stands
            return []
        self.position = (messages.offsets[-1] if isinstance(messages, RecordBatch)
                         else messages[-1].offset) + 1
        self.count += len(messages)
        return messages

    @property
    def answered(self) -> bool:
        """The first fetch (or the idle check standing in for it) has answered."""
        return self._fetches > 0

    def take(self, batch: RecordBatch, log_end: Optional[int] = None) -> RecordBatch:
        """What :meth:`fetch` would return of ``batch``, records of this partition that
        another client call fetched (a group consumer holding all of a task's
        partitions): bounded by :attr:`position`, the cap and the offset bound, and
        counted. ``log_end`` is the log end the client reported with a first answer.
        Reading is done once the cap, the bound or the first answer's log end is
        reached."""
        if self.done:
            return batch.slice(0, 0)
        if self._fetches == 0 and self.stop_at_log_end:
            self.log_end = log_end
        self._fetches += 1
        limit = None if self.max_messages is None else self.max_messages - self.count
        got = batch.bounded(self.position, max_messages=limit, max_offset=self.max_offset)
        if len(got):
            self.position = got.offsets[-1] + 1
            self.count += len(got)
        if self._finished():
            self.done = True
        return got

    def ended(self, stands: Optional[int]) -> None:
        """The client answered that this partition has nothing more (its log end), and
        stands at ``stands`` (past entries no consumer receives when beyond
        :attr:`position`): as an empty answer of :meth:`fetch`."""
        if self._fetches == 0 and self.stop_at_log_end:
            self.log_end = self.position
        self._fetches += 1
        self.done = True
        if stands is not None and stands > self.position:
            self.passed_to = stands

    def _still_at_log_end(self) -> bool:
        """The idle check: True when the log end is :attr:`position` (nothing new);
        False when the log grew, when the position is past the end (the fetch's
        out-of-range answer decides) or when the lookup fails (the fetch retries it)."""
        started = self.clock()
        try:
            end = self.kafka.offset_for(self.topic, self.partition, LATEST_TIME)
        except KafkaAccessError as exc:
            log.debug("%s/%d: log end lookup failed (%s); fetching", self.topic,
                      self.partition, exc)
            return False
        finally:
            self.read_s += self.clock() - started
        return end == self.position

    def first_fetch(self) -> Tuple[Sequence[Any], Optional[TaskFailure]]:
        """:meth:`fetch` as a task's first fetch does it: a failure comes back as a
        value (out of range, a failed fetch, or the client's own defect)."""
        try:
            return self.fetch(), None
        except OffsetOutOfRangeError as exc:
            return [], TaskFailure(FailureKind.OUT_OF_RANGE, str(exc))
        except FailedFetchError as exc:
            return [], TaskFailure(FailureKind.FAILED_FETCH, str(exc))
        except Exception as exc:  # noqa: BLE001 - a client defect, reported as such
            log.exception("fetch of %s/%d at %d failed", self.topic, self.partition,
                          self.position)
            return [], TaskFailure.caught(
                FailureKind.CLIENT_ERROR,
                f"fetching {self.topic}/{self.partition} at offset {self.position} failed "
                f"inside the {self.client} client ({type(exc).__name__}: {exc})")

    def fetch_more(self) -> Sequence[Any]:
        """:meth:`fetch` after a task's first fetch: an out-of-range answer or a failed
        fetch ends the reading (``[]``). What was read stands; the next batch meets the
        error again."""
        try:
            return self.fetch()
        except (OffsetOutOfRangeError, FailedFetchError) as exc:
            log.info("%s/%d: fetch at %d ended the reading: %s", self.topic, self.partition,
                     self.position, exc)
            self.done = True
            return []

    def skip_to(self, offset: int) -> None:
        """Go on reading from ``offset`` (offsets below it were deleted)."""
        self.position = offset
        self.done = False
