"""Reading a task's partitions with one consumer: the group contract the engine's
group task reads through (:class:`GroupKafka`, :class:`FetchGroup`, what one poll
brought), the records split by partition, and the bookkeeping across tasks both
adapters share (:class:`HeldRecords`, :class:`GroupFetchBase`).

This module is pure: it imports neither kafka-python nor confluent-kafka.
"""

from __future__ import annotations

import logging
import time
from itertools import groupby
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Protocol,
                    Sequence, Tuple, runtime_checkable)

from storm_kafka_compat.kafka.client import KafkaAccess, RecordBatch

log = logging.getLogger(__name__)


#: a partition as the fetch groups key it
PartitionKey = Tuple[str, int]


class GroupAnswer:
    """What one poll of a :class:`FetchGroup` brought, split by partition.

    Attributes
    ----------
    batches : dict
        Partition -> its records of this poll (a :class:`RecordBatch`, ascending).
    ended : dict
        Partition -> where the client stands at that partition's log end (None when it
        does not say): the partition has nothing more until the log grows.
    errors : dict
        Partition -> this project's error for it (an out-of-range position, a failed
        fetch); the group fetches that partition no more.
    """

    __slots__ = ("batches", "ended", "errors")

    def __init__(self) -> None:
        self.batches: Dict[PartitionKey, RecordBatch] = {}
        self.ended: Dict[PartitionKey, Optional[int]] = {}
        self.errors: Dict[PartitionKey, Exception] = {}

    def __bool__(self) -> bool:
        return bool(self.batches or self.ended or self.errors)


@runtime_checkable
class FetchGroup(Protocol):
    """One consumer holding all of a task's partitions, each from its own offset: one
    broker fetch serves every partition, and the records come back split by partition
    (:class:`GroupAnswer`). A task settles each partition's plan from its share."""

    def poll(self, timeout_s: float) -> GroupAnswer:
        """What the client holds or receives within ``timeout_s``; an empty answer when
        nothing came."""
        ...

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """The log end the latest fetch of this partition reported (None: unknown)."""
        ...

    def drop(self, key: PartitionKey) -> None:
        """Read this partition no more in this group (its reading is settled); what
        the client hands out of it from now on is held for the next group."""
        ...

    def close(self, unprocessed: Mapping[PartitionKey, "RecordBatch"]) -> None:
        """End the group. ``unprocessed``: records :meth:`poll` handed out that the task
        did not process; the next group starting at their first offset gets them first
        (the consumer stays with its access object, positioned after them)."""
        ...


@runtime_checkable
class GroupKafka(KafkaAccess, Protocol):
    """A :class:`KafkaAccess` that also fetches many partitions with one consumer."""

    def reads_groups(self) -> bool:
        """Whether a task's partitions are read by one consumer on these brokers (else
        partition by partition, as a single-plan task always is)."""
        ...

    def fetch_group(self, positions: Mapping[PartitionKey, int]) -> FetchGroup:
        """The group of ``positions``' partitions, each to be read from its offset (the
        next offset to read)."""
        ...

    def log_ends(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """The log end of each of ``keys``, asked of the brokers in one go.

        Raises
        ------
        FailedFetchError
            The brokers could not be asked.
        """
        ...

    def log_starts(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """The log start of each of ``keys``, asked of the brokers in one go (a partition
        whose answer is missing is left out, as :meth:`log_ends` does).

        Raises
        ------
        FailedFetchError
            The brokers could not be asked.
        """
        ...


def split_by_partition(partitions: Sequence[Any], records: Sequence[Any]
                       ) -> List[Tuple[Any, Sequence[Any]]]:
    """Interleaved records split by partition, each partition's in their order:
    ``partitions[i]`` is the partition (any hashable key) of ``records[i]``. Returns
    (partition, records) pairs, one per partition, in the order each partition first
    appears. A client hands a fetch's records of one partition together, so runs are
    found and sliced, not records appended one by one."""
    out: Dict[Any, Any] = {}
    start = 0
    for p, run in groupby(partitions):
        end = start + len(list(run))
        part = records[start:end]
        got = out.get(p)
        if got is None:
            out[p] = part
        elif isinstance(got, list):
            got.extend(part)
        else:
            out[p] = [*got, *part]
        start = end
    return list(out.items())


#: records handed out of the partitions a task no longer reads that a group holds before
#: it pauses them (two polls' worth; a pause drops what the client prefetched)
HOLD_BEFORE_PAUSE = 20_000


class HeldRecords:
    """A group consumer's bookkeeping across tasks, per partition: the next offset the
    client will hand out (:attr:`handed`) and records it handed out that no task
    processed (:attr:`kept`). A task stops at its deadline or a plan's cap with records
    in hand; the next task of that partition starts at the first of them, so they are
    served again instead of seeking the consumer back and fetching them anew."""

    def __init__(self) -> None:
        #: partition -> the next offset the client hands out
        self.handed: Dict[PartitionKey, int] = {}
        #: partition -> records handed out and not processed, ascending
        self.kept: Dict[PartitionKey, RecordBatch] = {}

    def start(self, key: PartitionKey, offset: int) -> bool:
        """A group reads ``key`` from ``offset`` (the next offset to read): True when the
        client continues there (kept records from ``offset`` on are served first); False
        when it must be positioned at ``offset`` (nothing kept is of use)."""
        kept = self.kept.pop(key, None)
        handed = self.handed.get(key)
        if kept is not None and len(kept) and handed is not None and \
                kept.offsets[0] <= offset < handed:
            rest = kept.bounded(offset)
            if len(rest):
                self.kept[key] = rest
            return True
        if handed == offset:
            return True
        self.handed[key] = offset
        return False

    def received(self, key: PartitionKey, batch: RecordBatch) -> None:
        """The client handed out ``batch`` (not empty)."""
        self.handed[key] = batch.offsets[-1] + 1

    def passed(self, key: PartitionKey, offset: int) -> None:
        """The client stands at ``offset`` without handing out records (it passed
        entries no consumer receives)."""
        self.handed[key] = max(offset, self.handed.get(key, offset))

    def keep(self, key: PartitionKey, batch: RecordBatch) -> None:
        """Hold ``batch`` (records handed out, not processed) for the next task; it goes
        before what is held already (records the client handed out later)."""
        if not len(batch):
            return
        held = self.kept.get(key)
        self.kept[key] = batch if held is None else RecordBatch.joined(batch, held)

    def add(self, key: PartitionKey, batch: RecordBatch) -> None:
        """Hold ``batch`` after what is held already (records of a partition its task
        no longer reads, handed out by the client all the same)."""
        if not len(batch):
            return
        held = self.kept.get(key)
        self.kept[key] = batch if held is None else RecordBatch.joined(held, batch)

    def take(self, keys: Iterable[PartitionKey]) -> Dict[PartitionKey, RecordBatch]:
        """The kept records of ``keys`` (removed from here)."""
        return {k: self.kept.pop(k) for k in keys if k in self.kept}

    def forget(self, key: PartitionKey) -> None:
        """Nothing is known of ``key``'s position (an error, or unassigned)."""
        self.handed.pop(key, None)
        self.kept.pop(key, None)


class GroupFetchBase:
    """What both adapters' fetch groups share (each subclasses it): held records are
    served before the client is asked, records of partitions the task no longer reads
    are held for the next task, an error ends its partition's reading in the group.

    A variant implements :meth:`receive` (ask the client, hand each partition's records
    to :meth:`hand`), :meth:`pause` and ``fetched_log_end``.

    A partition the task stops reading (its plan done, or the task's end) is not paused:
    a pause drops what the client prefetched for it (librdkafka purges the partition's
    fetch queue; kafka-python discards a paused partition's completed fetches), and
    the next task on this worker reads it on from there. Its records handed out
    meanwhile are held; once such records reach :data:`HOLD_BEFORE_PAUSE` in the group,
    each partition handing out more is paused, as is every partition of the worker's
    client that the next group does not read. A partition whose fetch failed is paused
    at once (a client would go on answering it with the error).

    A partition has ended when the client stands at the log end its latest fetch
    reported. That is asked only when a poll brought nothing and ``settle_s`` has passed
    since the group opened: a partition resumed after a pause still shows the log end
    of its fetch before the pause until the next fetch answers.
    """

    def __init__(self, held: HeldRecords, keys: Iterable[PartitionKey], *,
                 settle_s: float = 0.0, clock: Callable[[], float] = time.monotonic,
                 check: Optional[Callable[[RecordBatch], None]] = None) -> None:
        self.held = held
        #: called with every batch the client hands out (the adapter's size warning)
        self.check = check
        #: the partitions the task still reads
        self.live = set(keys)
        self.clock = clock
        self.settled_at = clock() + settle_s
        #: records handed out of partitions the task no longer reads, held
        self.held_after_drop = 0

    def poll(self, timeout_s: float) -> GroupAnswer:
        """See :meth:`FetchGroup.poll`."""
        answer = GroupAnswer()
        kept = self.held.take(self.live)
        if kept:
            answer.batches.update(kept)
            return answer
        self.receive(timeout_s, answer)
        if not answer.batches and self.clock() >= self.settled_at:
            self.at_log_end(answer)
        for key in answer.errors:
            self.drop(key)
            self.pause(key)         # failing: nothing prefetched is worth keeping
            self.held.forget(key)
        return answer

    def at_log_end(self, answer: GroupAnswer) -> None:
        """The live partitions standing at the log end their latest fetch reported, as
        ended in ``answer``."""
        for key in self.live:
            if key in answer.ended or key in answer.errors:
                continue
            end = self.fetched_log_end(*key)
            handed = self.held.handed.get(key)
            if end is not None and handed is not None and handed >= end:
                answer.ended[key] = handed

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`FetchGroup.fetched_log_end`."""
        raise NotImplementedError

    def hand(self, answer: GroupAnswer, key: PartitionKey, batch: RecordBatch) -> None:
        """The client handed out ``batch`` of ``key`` (not empty)."""
        if self.check is not None:
            self.check(batch)
        self.held.received(key, batch)
        if key not in self.live:
            self.held.add(key, batch)
            self.held_after_drop += len(batch)
            if self.held_after_drop >= HOLD_BEFORE_PAUSE:
                self.pause(key)
            return
        got = answer.batches.get(key)
        answer.batches[key] = batch if got is None else RecordBatch.joined(got, batch)

    def drop(self, key: PartitionKey) -> None:
        """See :meth:`FetchGroup.drop` (the client goes on fetching it: class notes)."""
        self.live.discard(key)

    def close(self, unprocessed: Mapping[PartitionKey, RecordBatch]) -> None:
        """See :meth:`FetchGroup.close`."""
        for key, batch in unprocessed.items():
            self.held.keep(key, batch)
        self.live.clear()

    def receive(self, timeout_s: float, answer: GroupAnswer) -> None:
        """Ask the client (at most ``timeout_s``), filling ``answer``."""
        raise NotImplementedError

    def pause(self, key: PartitionKey) -> None:
        """Stop the client fetching ``key``."""
        raise NotImplementedError
