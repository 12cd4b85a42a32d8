"""The batch contract between the spout and the engine: the plan going out, the
result coming back. Pure; every object here is picklable.

The driver-side :class:`~storm_kafka_compat.spout.spout.Spout` makes a
:class:`BatchPlan` (one :class:`FetchPlan` per partition); an engine runner
reads and processes it on the executors and brings back a :class:`BatchResult`:
one :class:`PartitionResult` per plan, holding offset ranges (taken, acked,
failed, still open) or, when the partition's task brought nothing back, a
:class:`TaskFailure` whose kind is a :class:`FailureKind`. Nothing is decoded
from strings on the driver: the spout applies the result as it came.

"Offset" is the next offset to read, unless a name says otherwise.
"""

from __future__ import annotations

import enum
import traceback
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, Iterator, List, NamedTuple, Optional, Tuple

from storm_kafka_compat.offsets.ranges import Range, count_offsets
from storm_kafka_compat.structs import BoltError, TopicPartition, merge_errors


@dataclass(frozen=True)
class FetchPlan:
    """What one partition fetches next: the one plan type, from the managers to the
    executors' filter.

    ``offset`` is the first offset to read. In retry mode only the offsets in
    ``reemit`` (ascending) are taken, and reading may stop after the last one; in
    new mode every offset from ``offset`` is taken, at most ``max_messages``, and
    never at or past ``bound`` when one is set (storm-kafka-client's AT_MOST_ONCE
    commits ``bound`` before the fetch runs).

    ``idle`` marks a new-data plan of a partition whose last fetch brought nothing:
    its task asks the log end first (one ListOffsets round trip) and reads nothing,
    without waiting out a fetch at the log end, when the log has not grown since.
    """

    topic: str
    partition: int
    offset: int
    retry: bool = False
    reemit: Tuple[int, ...] = ()
    max_messages: Optional[int] = None
    bound: Optional[int] = None
    idle: bool = False

    @classmethod
    def at(cls, offset: int, *, reemit: Optional[Iterable[int]] = None,
           max_messages: Optional[int] = None) -> "FetchPlan":
        """A plan of no particular partition: new data from ``offset``, or with
        ``reemit`` a retry of those offsets (tests, and callers holding an offset)."""
        if reemit is not None:
            return cls("", -1, offset, True, tuple(sorted(reemit)), max_messages)
        return cls("", -1, offset, max_messages=max_messages)

    @property
    def key(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def max_offset(self) -> Optional[int]:
        """Exclusive upper bound of the offsets this plan can take, if known."""
        if self.bound is not None:
            return self.bound
        return self.reemit[-1] + 1 if self.retry and self.reemit else None

    @property
    def reemit_set(self) -> Optional[FrozenSet[int]]:
        """The offsets a retry takes; None in new mode (every offset from ``offset``)."""
        if not self.retry:
            return None
        cached: Optional[FrozenSet[int]] = self.__dict__.get("_rs")
        if cached is None:
            cached = frozenset(self.reemit)
            object.__setattr__(self, "_rs", cached)
        return cached

    def takes(self, offset: int) -> bool:
        """Whether a fetched message at ``offset`` is taken under this plan."""
        if offset < self.offset:
            return False
        if self.bound is not None and offset >= self.bound:
            return False
        reemit = self.reemit_set
        return reemit is None or offset in reemit


@dataclass(frozen=True)
class BatchPlan:
    """One batch: a fetch plan per partition that has something to fetch, and the
    batch's number in the run (what a bolt host answers a retried task by)."""

    fetches: Tuple[FetchPlan, ...] = ()
    batch: int = 0
    #: run the bolt stages even without a fetch (their ticks and windows' time are due)
    tick: bool = False

    def __len__(self) -> int:
        return len(self.fetches)

    def __iter__(self) -> Iterator[FetchPlan]:
        return iter(self.fetches)

    @property
    def retries(self) -> int:
        """Plans that re-emit failed offsets."""
        return sum(1 for p in self.fetches if p.retry)


class FailureKind(enum.Enum):
    """Why a partition's task brought back no outcome (the value is the name the
    logs and metrics have always used)."""

    #: the broker answered OFFSET_OUT_OF_RANGE (storm-kafka's TopicOffsetOutOfRangeException)
    OUT_OF_RANGE = "out_of_range"
    #: a retriable fetch failure (storm-kafka's FailedFetchException): refresh and retry
    FAILED_FETCH = "failed_fetch"
    #: the scheme or a bolt raised, or the batch's Spark job died
    BOLT_ERROR = "bolt_error"
    #: the Kafka client raised something unexpected while fetching
    CLIENT_ERROR = "client_error"

    @property
    def task_error(self) -> bool:
        """A failure of the task itself, counted towards giving the partition up
        (the fetch failures are the broker's and are retried)."""
        return self in (FailureKind.BOLT_ERROR, FailureKind.CLIENT_ERROR)

    @property
    def hint(self) -> str:
        """What to do when this kind of failure keeps coming back."""
        return _HINTS[self]


_HINTS = {
    FailureKind.OUT_OF_RANGE: "check the partition's log range (retention, a re-created topic)",
    FailureKind.FAILED_FETCH: "check that the partition's leader is reachable",
    FailureKind.BOLT_ERROR: "fix the bolt or scheme (is its module importable on the executors?)",
    FailureKind.CLIENT_ERROR: "this is not your bolt: the Kafka client failed; check the kafka "
                              "settings (api_version for brokers before 0.10) and report the "
                              "traceback that -v shows",
}


@dataclass(frozen=True)
class TaskFailure:
    """A task's failure as a value: its kind, the message, and the traceback of a
    task error (logged by the driver with -v)."""

    kind: FailureKind
    message: str
    traceback: str = ""

    @classmethod
    def caught(cls, kind: FailureKind, message: str) -> "TaskFailure":
        """The failure of the exception being handled, with its traceback (call it in
        the ``except`` block)."""
        return cls(kind, message, traceback.format_exc())


@dataclass
class TaskTiming:
    """Where one task's time went (seconds; ``started``/``ended`` are epoch times, so
    the driver can lay the tasks of a Spark job against each other and the job).

    Attributes
    ----------
    started, ended : float
        When the task began reading and when it returned its result.
    read_s : float
        Time inside the client's fetches (waiting for data included).
    process_s : float
        Time in the scheme, the tuples and the bolts.
    worker : int
        The Python worker's process id (a partition that moves between workers
        meets a cold client).
    """

    started: float
    ended: float = 0.0
    read_s: float = 0.0
    process_s: float = 0.0
    worker: int = 0


@dataclass
class PartitionResult:
    """What one partition's task brought back: offset ranges, or a failure.

    Attributes
    ----------
    plan : FetchPlan
        The plan the task ran.
    taken : list of (start, end_exclusive)
        Offsets taken from the fetch.
    acked : list of (start, end_exclusive)
        Taken offsets whose tuple trees completed.
    failed : list of int
        Taken offsets whose trees failed, ascending.
    open_trees : list of int
        Taken offsets whose tuple tree was still open when the task ended: they stay
        pending and time out on the driver after ``topology.message.timeout.secs``.
    scanned_to : int, optional
        One past the last offset the fetch returned, taken or not.
    latency_ms : int, optional
        The first fetch's latency.
    tuples, skipped : int
        Spout tuples emitted; messages that gave no tuple.
    failure : TaskFailure, optional
        Set when the task brought back no outcome (the ranges are then empty).
    timing : TaskTiming, optional
        Where the task's time went (single-stage tasks).
    reached : bool
        False when the task's budget was spent before it started this plan: nothing
        was fetched and the partition's state is unchanged (the spout plans it first
        in the next batch).
    errors : list of BoltError
        The scheme's and the bolts' exceptions in this task, by component and type.
    """

    plan: FetchPlan
    taken: List[Range] = field(default_factory=list)
    acked: List[Range] = field(default_factory=list)
    failed: List[int] = field(default_factory=list)
    open_trees: List[int] = field(default_factory=list)
    scanned_to: Optional[int] = None
    latency_ms: Optional[int] = None
    tuples: int = 0
    skipped: int = 0
    failure: Optional[TaskFailure] = None
    timing: Optional[TaskTiming] = None
    reached: bool = True
    errors: List[BoltError] = field(default_factory=list)

    @property
    def key(self) -> TopicPartition:
        return self.plan.key

    @property
    def taken_count(self) -> int:
        return count_offsets(self.taken)

    @property
    def acked_count(self) -> int:
        return count_offsets(self.acked)


class OpenRoot(NamedTuple):
    """A tuple tree still open when its batch ended: its message and the XOR of the
    acker messages still awaited (Storm's acker entry for the root)."""

    partition: TopicPartition
    offset: int
    xor: int


class LateAck(NamedTuple):
    """The acker messages a bolt sent in a later batch for a tree of an earlier one
    (a windowed bolt acks a tuple when it leaves the window), folded: their XOR, and
    whether one failed the tree."""

    xor: int
    failed: bool


@dataclass
class BatchResult:
    """What a runner brings back for a :class:`BatchPlan`: one result per plan, and
    the errors of bolts that ran in later stages (not tied to one partition's task).

    ``open_roots`` (root id -> :class:`OpenRoot`) are the trees of this batch still
    open; ``late_acks`` (root id -> :class:`LateAck`) are acks and fails for trees of
    earlier batches (multi-stage runs; the spout folds them into the trees it holds).
    ``work_s`` is the batch's own work on its critical path, in seconds, where the
    runner measured it (a staged batch with bolt hosts: the busiest Spark task's
    reading after its first fetches, processing and hand-over, then each host stage's
    slowest host; Spark's per-job cost left out)."""

    partitions: List[PartitionResult] = field(default_factory=list)
    errors: List[BoltError] = field(default_factory=list)
    open_roots: Dict[int, OpenRoot] = field(default_factory=dict)
    late_acks: Dict[int, LateAck] = field(default_factory=dict)
    work_s: Optional[float] = None

    def all_errors(self) -> List[BoltError]:
        """Every bolt and scheme error of the batch, folded by component and type."""
        return merge_errors([e for r in self.partitions for e in r.errors] + self.errors)

    def __iter__(self) -> Iterator[PartitionResult]:
        return iter(self.partitions)

    def __len__(self) -> int:
        return len(self.partitions)

    @classmethod
    def failed(cls, plan: BatchPlan, failure: TaskFailure) -> "BatchResult":
        """Every partition of ``plan`` failed with ``failure`` (the batch's job died)."""
        return cls([PartitionResult(p, failure=failure) for p in plan])
