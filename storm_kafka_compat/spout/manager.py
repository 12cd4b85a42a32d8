"""storm-kafka 1.2.x ``PartitionManager`` as pure logic, split for a driver loop.

In Storm one executor thread fetches, emits and receives acks. Here the spout
plans a fetch (:meth:`PartitionManager.plan_fetch`), an executor fetches and
processes it, and the spout applies what came back: the offsets taken
(:meth:`fetched`), acks (:meth:`ack`, :meth:`ack_ranges`), fails (:meth:`fail`)
or an out-of-range answer (:meth:`out_of_range`). Commits read
:meth:`commit_offset`. No I/O happens here; time comes from an injected clock.

Semantics kept from Storm (reference sections 3.4-3.12):

* ``emitted_to`` is the next offset to fetch for new messages; ``pending`` holds
  every offset taken and not yet acked (waiting, in flight or failed);
  ``last_completed_offset`` is the smallest pending offset, else ``emitted_to``,
  and is what gets committed (the next offset to process).
* While a retry is due, no new messages are fetched for the partition; a retry
  fetch re-emits only due failed offsets.
* ``ack`` prunes pending offsets more than ``maxOffsetBehind`` below the acked
  one; ``fail`` ignores offsets more than ``maxOffsetBehind`` below
  ``emitted_to``; the "Too many tuple failures" guard; ``retryLimit``.
* Out of range: LATEST if it is below the requested offset, else EARLIEST; in
  retry mode failed and pending offsets below the new offset are dropped and
  counted as lost; the position never moves backwards.

Deliberate deviations (CONTRACT section 2):

1. Position beyond the log end (STORM-2624): move to LATEST instead of looping,
   dropping pending and retry state at or above it, counted as lost.
2. Offsets pruned by ``ack`` are also cleared from the retry state, so they are
   never re-emitted and never drag the committed offset backwards.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set

from storm_kafka_compat.config import Broker, SpoutConfig
from storm_kafka_compat.errors import TooManyFailuresError
from storm_kafka_compat.offsets.ranges import OffsetRanges, Range
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.structs import TopicPartition
from storm_kafka_compat.spout.retry import (Clock, FailedMsgRetryManager, load_retry_manager,
                                            monotonic_ms)

log = logging.getLogger(__name__)


@dataclass
class PartitionCounters:
    """Storm's ``kafkaPartition`` metric values for one reporting bucket."""

    fetch_latencies_ms: List[int] = field(default_factory=list)
    fetch_api_call_count: int = 0
    fetch_api_message_count: int = 0
    lost_message_count: int = 0
    message_ineligible_for_retry_count: int = 0

    def as_metrics(self) -> Dict[str, Any]:
        lat = self.fetch_latencies_ms
        return {
            "fetchAPILatencyMax": max(lat) if lat else None,
            "fetchAPILatencyMean": (sum(lat) / len(lat)) if lat else None,
            "fetchAPICallCount": self.fetch_api_call_count,
            "fetchAPIMessageCount": self.fetch_api_message_count,
            "lostMessageCount": self.lost_message_count,
            "messageIneligibleForRetryCount": self.message_ineligible_for_retry_count,
        }


class PartitionManager:
    """One (topic, partition): pending offsets, retries, commits.

    Parameters
    ----------
    topic, partition : str, int
    start_offset : int
        Next offset to read, from :func:`storm_kafka_compat.spout.startup.decide_start`.
    config : SpoutConfig
    location : str
        Where this partition's document lives (its ZooKeeper path).
    leader : Broker, optional
        The current leader (written into the document).
    retry_manager : FailedMsgRetryManager, optional
        Defaults to ``failedMsgRetryManagerClass`` built with ``clock``.
    clock : callable returning int
        Milliseconds.
    """

    def __init__(self, topic: str, partition: int, start_offset: int, *, config: SpoutConfig,
                 location: str = "", leader: Optional[Broker] = None,
                 retry_manager: Optional[FailedMsgRetryManager] = None,
                 clock: Clock = monotonic_ms, storm_conf: Mapping[str, Any] = {}) -> None:
        self.topic = topic
        self.partition = partition
        self.config = config
        self.location = location
        self.leader = leader
        self.clock = clock
        self.retry = retry_manager or load_retry_manager(
            config.failed_msg_retry_manager_class, config, storm_conf, clock)
        #: last offset written to ZooKeeper, or the start offset
        self.committed_to = start_offset
        #: next offset to fetch for new messages
        self.emitted_to = start_offset
        #: where this manager started: offsets from here to ``emitted_to`` were read
        #: by it (what a move past the log end does not count as lost)
        self.started_at = start_offset
        self.pending = OffsetRanges()
        self.number_acked = 0
        self.number_failed = 0
        self.counters = PartitionCounters()
        #: totals since creation (the counters above reset at each metrics report)
        self.total_lost = 0
        self.total_given_up = 0
        self.total_vanished = 0

    # --- identity ---------------------------------------------------------------
    @property
    def key(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def set_leader(self, leader: Broker) -> None:
        """A leader change keeps all in-memory state (STORM-2296, matched on
        topic and partition as in STORM-3090)."""
        self.leader = leader

    def __repr__(self) -> str:
        return (f"PartitionManager({self.topic}/{self.partition} committed={self.committed_to} "
                f"emitted={self.emitted_to} pending={len(self.pending)} retries={len(self.retry)})")

    # --- fetch planning (Storm's fill) --------------------------------------------
    def plan_fetch(self, max_messages: Optional[int] = None) -> Optional[FetchPlan]:
        """The next fetch, or None when backpressure forbids one.

        Due retries come first (ordered by retry time, re-emitting every due
        offset at or above the earliest-due one); otherwise new messages from
        ``emitted_to``, capped by ``max_messages`` and ``max_pending_per_partition``.
        """
        first_due = self.retry.next_failed_message_to_retry()
        if first_due is not None:
            limit = max_messages or None
            due = [o for o in self.retry.due_offsets() if o >= first_due]
            if first_due not in due:       # plug-ins that only report the head
                due.insert(0, first_due)
            if limit is not None:
                due = due[:limit]
            return FetchPlan(self.topic, self.partition, first_due, True, tuple(due), len(due))
        cap = self.config.max_pending_per_partition
        if cap is not None:
            room = cap - len(self.pending)
            if room <= 0:
                return None
            max_messages = room if max_messages is None else min(max_messages, room)
        if max_messages is not None and max_messages <= 0:
            return None
        return FetchPlan(self.topic, self.partition, self.emitted_to, False, (), max_messages)

    def fetched(self, plan: FetchPlan, taken: Iterable[Range], *, scanned_to: Optional[int] = None,
                latency_ms: Optional[int] = None) -> None:
        """Apply the offsets a fetch took under ``plan``.

        Parameters
        ----------
        taken : iterable of (start, end_exclusive)
            Offsets of the messages taken, as ranges (gaps are offsets that do not
            exist, e.g. compacted away).
        scanned_to : int, optional
            One past the last offset the fetch read. In retry mode a planned offset
            below it that was not seen no longer exists in the log (compaction); it
            is forgotten (counted in ``total_vanished``) instead of being retried
            forever. In new mode the position moves up to it: offsets below it
            that were not taken do not exist for a consumer (transaction markers,
            aborted records under read_committed).
        latency_ms : int, optional
            Fetch latency for the ``fetchAPILatency*`` metrics.
        """
        if latency_ms is not None:
            self.counters.fetch_latencies_ms.append(latency_ms)
        self.counters.fetch_api_call_count += 1
        count = 0
        top = self.emitted_to
        for start, end in taken:
            if end <= start:
                continue
            start = max(start, plan.offset)
            self.pending.add_range(start, end)
            count += end - start
            if end > top:
                top = end
            if plan.retry:
                for o in range(start, end):
                    if self.retry.should_re_emit_msg(o):
                        self.retry.retry_started(o)
        if not plan.retry:
            # a fetch may end past its last message: offsets no consumer receives
            # (transaction markers, aborted records) are passed, never pending
            self.emitted_to = top if scanned_to is None else max(top, scanned_to)
        elif scanned_to is not None:
            seen = OffsetRanges(taken)
            for o in plan.reemit:
                if o < scanned_to and o not in seen:
                    self.retry.acked(o)
                    if self.pending.remove(o):
                        self.total_vanished += 1
                        log.info("%s/%d: offset %d is no longer in the log (compacted); "
                                 "dropping its retry", self.topic, self.partition, o)
        self.counters.fetch_api_message_count += count

    # --- outcomes -------------------------------------------------------------------
    def _prune(self, acked_offset: int) -> None:
        bound = acked_offset - self.config.max_offset_behind
        first = self.pending.first()
        if first is not None and first < bound:
            self.pending.remove_below(bound)
            self.retry.clear_offsets_before(bound)          # deviation 2

    def ack(self, offset: int) -> None:
        """Storm's ``ack(offset)``: prune past ``maxOffsetBehind``, then complete."""
        self._prune(offset)
        self.pending.remove(offset)
        self.retry.acked(offset)
        self.number_acked += 1

    def ack_ranges(self, ranges: Sequence[Range]) -> None:
        """Ack every offset of ``[(start, end_exclusive), ...]``: the same end state
        as acking them one by one in ascending order."""
        top = None
        n = 0
        for start, end in ranges:
            if end > start:
                top = end - 1 if top is None else max(top, end - 1)
                n += end - start
        if top is None:
            return
        self._prune(top)
        for start, end in ranges:
            if end > start:
                self.pending.remove_range(start, end)
                self.retry.acked_range(start, end)
        self.number_acked += n

    def fail(self, offset: int) -> bool:
        """Storm's ``fail(offset)``. Returns True if a retry was scheduled.

        An offset that is not pending (already acked, given up or pruned) is
        ignored: a second outcome for the same message must not re-emit it.
        """
        if offset < self.emitted_to - self.config.max_offset_behind:
            log.info("%s/%d: skipping failed offset %d, more than maxOffsetBehind %d behind %d",
                     self.topic, self.partition, offset, self.config.max_offset_behind,
                     self.emitted_to)
            return False
        if offset not in self.pending:
            return False
        self.number_failed += 1
        if self.number_acked == 0 and self.number_failed > self.config.max_offset_behind:
            raise TooManyFailuresError(
                f"Too many tuple failures on {self.topic}/{self.partition}: "
                f"{self.number_failed} failures and no ack, more than maxOffsetBehind "
                f"{self.config.max_offset_behind}; check the bolt or raise maxOffsetBehind",
                topic=self.topic, partition=self.partition)
        if self.retry.retry_further(offset):
            self.retry.failed(offset)
            return True
        log.warning("%s/%d: will not retry failed offset %d: retryLimit %d reached",
                    self.topic, self.partition, offset, self.config.retry_limit)
        self.counters.message_ineligible_for_retry_count += 1
        self.total_given_up += 1
        self.pending.remove(offset)
        self.retry.acked(offset)
        return False

    def out_of_range(self, plan: FetchPlan, earliest: int, latest: int) -> int:
        """Apply ``OFFSET_OUT_OF_RANGE`` for ``plan``; return the messages counted lost.

        ``earliest`` and ``latest`` are the log start and end offsets now.
        """
        requested = plan.offset
        lost = 0
        if latest < requested:
            new_offset = latest
            if latest < self.emitted_to:
                # deviation 1 (STORM-2624): the position is beyond the log end, e.g.
                # a re-created topic or a truncated log. Storm loops here until the
                # log grows past the old position; we continue at the log end.
                # retry records are a subset of pending, so `dropped` counts both
                dropped = self.pending.remove_from(latest)
                self._clear_retries_from(latest)
                # the messages in the log below the log end that this manager has not
                # read (all of a re-created topic's when it started beyond them); those
                # it read before a truncation are not counted
                unread = max(0, min(latest, self.started_at) - earliest)
                lost += dropped + unread
                log.warning("%s/%d: offset %d is beyond the log end %d (topic re-created or "
                            "log truncated); continuing at the log end: %d pending offsets "
                            "dropped, %d messages in [%d, %d) never read; to read them, stop "
                            "the job and run `offsets reset --to-earliest`", self.topic,
                            self.partition, requested, latest, dropped, unread,
                            earliest, min(latest, self.started_at) if unread else earliest)
                self.emitted_to = latest
        else:
            new_offset = earliest
        if plan.retry:
            cleared_below = self.retry.clear_offsets_before(new_offset)
            lost += len(cleared_below)
            self.pending.remove_below(new_offset)
        if new_offset > self.emitted_to:
            lost += new_offset - self.emitted_to
            self.emitted_to = new_offset
        if lost:
            log.warning("%s/%d: offset %d out of range [%d, %d); moved to %d, %d messages lost",
                        self.topic, self.partition, requested, earliest, latest,
                        self.emitted_to, lost)
        self.counters.lost_message_count += lost
        self.total_lost += lost
        return lost

    def _clear_retries_from(self, bound: int) -> Set[int]:
        clear_from = getattr(self.retry, "clear_offsets_from", None)
        if clear_from is not None:
            return set(clear_from(bound))
        return set()

    # --- commit ---------------------------------------------------------------------
    def last_completed_offset(self) -> int:
        """The next offset to process: the smallest pending offset, else ``emitted_to``."""
        first = self.pending.first()
        return self.emitted_to if first is None else first

    def commit_offset(self) -> Optional[int]:
        """The offset to write now, or None when it equals what was written."""
        offset = self.last_completed_offset()
        return None if offset == self.committed_to else offset

    def mark_committed(self, offset: int) -> None:
        """Record that ``offset`` was written to ZooKeeper."""
        self.committed_to = offset

    # --- inspection -------------------------------------------------------------------
    @property
    def pending_count(self) -> int:
        return len(self.pending)

    def has_work(self) -> bool:
        """Anything pending or waiting for a retry."""
        return bool(self.pending) or len(self.retry) > 0

    def next_retry_time_ms(self) -> Optional[int]:
        fn = getattr(self.retry, "next_retry_time_ms", None)
        return fn() if fn else None

    def offset_data(self) -> Dict[str, int]:
        """Storm's ``getOffsetData()``."""
        return {"latestEmittedOffset": self.emitted_to,
                "latestCompletedOffset": self.last_completed_offset()}

    def take_metrics(self) -> Dict[str, Any]:
        """``kafkaPartition`` values for this bucket; resets the bucket."""
        values = self.counters.as_metrics()
        self.counters = PartitionCounters()
        return values
