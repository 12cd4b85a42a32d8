"""One partition of storm-kafka-client's ``KafkaSpout`` on the driver engine.

:class:`ClientPartitionManager` has the interface the spout uses on the
legacy :class:`~storm_kafka_compat.spout.manager.PartitionManager`
(``plan_fetch``, ``fetched``, ``ack``/``ack_ranges``, ``fail``,
``out_of_range``, ``commit_offset``/``mark_committed`` ...), with
storm-kafka-client's semantics per processing guarantee:

AT_LEAST_ONCE
    Emitted offsets are tracked by an :class:`~.offset_manager.OffsetManager`;
    the commit is the next committable offset (acked offsets with gaps).
    Failures go to the :class:`~.retry.RetryService`; past ``maxRetries`` the
    offset is acked and dropped. A partition holding ``maxUncommittedOffsets``
    uncommitted offsets is paused (no new fetch) until commits bring it below;
    due retries at or below the limit's offset are still fetched.
AT_MOST_ONCE
    Each fetch is bounded by the log end and committed *before* it is
    processed (``commit_before_process``, plan time); acks and fails are
    ignored, nothing is retried.
NO_GUARANTEE
    What was fetched is committed on the commit period; acks and fails are
    ignored, nothing is retried.

With ``tupleTrackingEnforced`` the non-ALO modes still count tuples in flight
(``pending_count``, for ``topology.max.spout.pending``).

"Offset" is the next offset to read everywhere here. This module is pure.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Iterable, Optional, Sequence, Tuple

from storm_kafka_compat.config import Broker
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.spout.manager import PartitionCounters
from storm_kafka_compat.offsets.ranges import OffsetRanges, Range, overlap
from storm_kafka_compat.config.kafka_spout import (AT_LEAST_ONCE, AT_MOST_ONCE, NO_GUARANTEE,
                                                    KafkaSpoutConfig)
from storm_kafka_compat.errors import NoOffsetResetError
from storm_kafka_compat.spout.client.offset_manager import OffsetManager
from storm_kafka_compat.spout.client.retry import RetryService
from storm_kafka_compat.spout.retry import Clock
from storm_kafka_compat.structs import TopicPartition

log = logging.getLogger(__name__)



class ClientPartitionManager:
    """One (topic, partition) of a storm-kafka-client spout.

    Parameters
    ----------
    topic, partition : str, int
    start_offset : int
        Next offset to read, from :func:`~.first_poll.decide_first_poll`.
    config : KafkaSpoutConfig
    committed_offset : int, optional
        What the group holds now (``committed_to``); defaults to ``start_offset``
        (then nothing is committed until progress is made).
    leader : Broker, optional
    clock : callable returning int
        Milliseconds, for the retry service.
    commit_before_process : callable(manager, offset) -> bool, optional
        AT_MOST_ONCE: commits ``offset`` synchronously; False means the commit
        failed and the fetch must not run.
    end_offset : callable() -> int, optional
        AT_MOST_ONCE: the log end offset, which bounds the committed fetch.
    location : str
        Where the offset lives, for summaries (``group:topic-partition``).
    """

    def __init__(self, topic: str, partition: int, start_offset: int, *,
                 config: KafkaSpoutConfig, committed_offset: Optional[int] = None,
                 leader: Optional[Broker] = None, clock: Optional[Clock] = None,
                 commit_before_process: Optional[Callable[["ClientPartitionManager", int],
                                                          bool]] = None,
                 end_offset: Optional[Callable[[], int]] = None, location: str = "") -> None:
        self.topic = topic
        self.partition = partition
        self.config = config
        self.guarantee = config.processing_guarantee
        self.leader = leader
        self.location = location
        self.clock: Clock = clock or (lambda: 0)
        self.retry = RetryService(config.retry, self.clock)
        self.offsets = OffsetManager(topic, partition, start_offset)
        #: the offset the group holds (last commit written, or what was found)
        self.committed_to = start_offset if committed_offset is None else committed_offset
        #: next offset to fetch for new messages (the consumer position)
        self.emitted_to = start_offset
        #: where the last fetch that ended in entries no consumer receives (transaction
        #: markers, aborted records) left the position: a commit may pass that gap
        self.passed_to: Optional[int] = None
        #: emitted and not yet acked or failed (Storm's ``emitted`` set)
        self.in_flight = OffsetRanges()
        self.num_fails: Dict[int, int] = {}
        self.paused = False
        self.counters = PartitionCounters()
        self.total_lost = 0
        self.total_given_up = 0
        self.total_vanished = 0
        self._commit_before_process = commit_before_process
        self._end_offset = end_offset
        if self.guarantee == AT_MOST_ONCE and (commit_before_process is None
                                               or end_offset is None):
            raise ValueError("AT_MOST_ONCE needs commit_before_process and end_offset")

    # --- identity ------------------------------------------------------------------
    @property
    def key(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def tracked(self) -> bool:
        """Whether acks and fails of this partition are followed."""
        return self.guarantee == AT_LEAST_ONCE or self.config.tuple_tracking_enforced

    def set_leader(self, leader: Broker) -> None:
        self.leader = leader

    def __repr__(self) -> str:
        return (f"ClientPartitionManager({self.topic}/{self.partition} {self.guarantee} "
                f"committed={self.committed_to} emitted={self.emitted_to} "
                f"in_flight={len(self.in_flight)} uncommitted="
                f"{self.offsets.num_uncommitted_offsets} retries={len(self.retry)})")

    # --- planning ------------------------------------------------------------------------
    def _cap(self, max_messages: Optional[int]) -> Optional[int]:
        mpr = self.config.max_poll_records
        if mpr is None:
            return max_messages
        return mpr if max_messages is None else min(mpr, max_messages)

    def plan_fetch(self, max_messages: Optional[int] = None) -> Optional[FetchPlan]:
        """The next fetch of this partition, or None (paused, or an AT_MOST_ONCE
        commit failed)."""
        cap = self._cap(max_messages)
        if self.guarantee == AT_MOST_ONCE:
            return self._plan_at_most_once(cap)
        if self.guarantee == NO_GUARANTEE:
            return FetchPlan(self.topic, self.partition, self.emitted_to, False, (), cap)
        due = self.retry.due_offsets()
        limit = self.config.max_uncommitted_offsets
        uncommitted = self.offsets.num_uncommitted_offsets
        if uncommitted >= limit:
            at_limit = self.offsets.nth_uncommitted_offset(limit)
            due = [o for o in due if at_limit is not None and o <= at_limit]
            if not due:
                if not self.paused:
                    log.info("%s/%d paused: %d uncommitted offsets, maxUncommittedOffsets %d "
                             "(offset %s is not yet committable)", self.topic, self.partition,
                             uncommitted, limit, self.offsets.committed_offset)
                self.paused = True
                return None
        if self.paused:
            log.info("%s/%d resumed: %d uncommitted offsets", self.topic, self.partition,
                     uncommitted)
            self.paused = False
        if due:
            if cap is not None:
                due = due[:cap]
            return FetchPlan(self.topic, self.partition, due[0], True, tuple(due), len(due))
        return FetchPlan(self.topic, self.partition, self.emitted_to, False, (), cap)

    def _plan_at_most_once(self, cap: Optional[int]) -> Optional[FetchPlan]:
        assert self._end_offset is not None and self._commit_before_process is not None
        end = self._end_offset()
        bound = end if cap is None else min(end, self.emitted_to + cap)
        bound = max(bound, self.emitted_to)
        if bound > self.committed_to:
            if not self._commit_before_process(self, bound):
                return None
            self.committed_to = bound
        return FetchPlan(self.topic, self.partition, self.emitted_to, False, (),
                         bound - self.emitted_to or None, bound)

    # --- outcomes ---------------------------------------------------------------------
    def fetched(self, plan: FetchPlan, taken: Iterable[Range], *,
                scanned_to: Optional[int] = None, latency_ms: Optional[int] = None) -> None:
        """Apply the offsets a fetch took under ``plan`` (ranges; gaps are offsets
        that do not exist). In a retry fetch, planned offsets below
        ``scanned_to`` that were not seen were compacted away: they are acked
        so the commit can pass them (STORM-2546)."""
        if latency_ms is not None:
            self.counters.fetch_latencies_ms.append(latency_ms)
        self.counters.fetch_api_call_count += 1
        count = 0
        top = self.emitted_to
        seen = OffsetRanges()
        alo = self.guarantee == AT_LEAST_ONCE
        for start, end in taken:
            start = max(start, plan.offset)
            if end <= start:
                continue
            count += end - start
            top = max(top, end)
            if plan.retry:
                seen.add_range(start, end)
                for o in range(start, end):
                    if self.retry.remove(o):
                        self.in_flight.add(o)
            else:
                if alo:
                    self.offsets.add_to_emitted(start, end)
                if self.tracked:
                    self.in_flight.add_range(start, end)
        if not plan.retry:
            self.emitted_to = top
            if scanned_to is not None:     # past offsets no consumer receives
                bound = plan.bound if plan.bound is not None else scanned_to
                if min(scanned_to, bound) > self.emitted_to:
                    self.emitted_to = self.passed_to = min(scanned_to, bound)
        elif scanned_to is not None:
            for o in plan.reemit:
                if o < scanned_to and o not in seen and self.retry.remove(o):
                    log.info("%s/%d: retriable offset %d is no longer in the log (compacted); "
                             "acking it", self.topic, self.partition, o)
                    self.total_vanished += 1
                    self.num_fails.pop(o, None)
                    self.offsets.add_to_acked(o, o + 1)
        self.counters.fetch_api_message_count += count

    def ack_ranges(self, ranges: Sequence[Range]) -> None:
        """Ack ``[(start, end_exclusive), ...]``. Only offsets in flight count: a
        late ack (after a timeout failed it, or a duplicate) is ignored."""
        if not self.tracked:
            return
        for start, end in ranges:
            for s, e in overlap(self.in_flight, start, end):
                self.in_flight.remove_range(s, e)
                if self.guarantee == AT_LEAST_ONCE:
                    self.offsets.add_to_acked(s, e)
                    self.retry.remove_range(s, e)
                    if self.num_fails:
                        for o in range(s, e):
                            self.num_fails.pop(o, None)

    def ack(self, offset: int) -> None:
        self.ack_ranges([(offset, offset + 1)])

    def fail(self, offset: int) -> bool:
        """Fail ``offset``; True when a retry was scheduled.

        Ignored (False) for offsets not in flight and outside AT_LEAST_ONCE. Past
        ``maxRetries`` the offset is acked and the message dropped, as Storm does.
        """
        if not self.tracked or offset not in self.in_flight:
            return False
        self.in_flight.remove(offset)
        if self.guarantee != AT_LEAST_ONCE:
            return False
        n = self.num_fails.get(offset, 0) + 1
        self.num_fails[offset] = n
        if self.retry.schedule(offset, n):
            return True
        log.warning("%s/%d: offset %d failed %d times, more than maxRetries %d; dropping it",
                    self.topic, self.partition, offset, n, self.config.retry.max_retries)
        self.num_fails.pop(offset, None)
        self.offsets.add_to_acked(offset, offset + 1)
        self.counters.message_ineligible_for_retry_count += 1
        self.total_given_up += 1
        return False

    def out_of_range(self, plan: FetchPlan, earliest: int, latest: int) -> int:
        """Apply ``OFFSET_OUT_OF_RANGE``: the consumer's ``auto.offset.reset``.

        Returns the messages counted lost. Offsets in flight or waiting for a
        retry below the log start cannot be re-fetched: they are acked (so the
        commit can pass them) and counted lost. A reset below the position
        (truncated or re-created topic) forgets all state of the partition.
        """
        policy = self.config.auto_offset_reset
        if policy == "none":
            raise NoOffsetResetError(
                f"{self.topic}/{self.partition}: offset {plan.offset} is out of range "
                f"[{earliest}, {latest}) and auto.offset.reset is none; set it to earliest or "
                "latest, or reset the group's offset", topic=self.topic,
                partition=self.partition, offset=plan.offset)
        new = earliest if policy == "earliest" else latest
        lost = 0
        if not plan.retry and new < self.emitted_to:
            # the log is behind our position (truncated or re-created topic)
            lost += len(self.in_flight) + len(self.retry)
            self.offsets.reset(new)
            self.in_flight = OffsetRanges()
            self.retry.clear()
            self.num_fails.clear()
            self.emitted_to = new
        else:
            if self.guarantee == AT_LEAST_ONCE:
                for o in list(self.retry):
                    if o < earliest:      # deleted by retention: it cannot be re-fetched
                        self.retry.remove(o)
                        self.num_fails.pop(o, None)
                        self.offsets.add_to_acked(o, o + 1)
                        lost += 1
            if new > self.emitted_to:
                lost += new - self.emitted_to
                self.emitted_to = new
            if (self.guarantee == AT_LEAST_ONCE and not self.in_flight and not len(self.retry)
                    and self.emitted_to > self.offsets.committed_offset):
                # nothing outstanding: everything below the position is done or gone
                self.offsets.reset(self.emitted_to)
        if lost:
            log.warning("%s/%d: offset %d out of range [%d, %d); auto.offset.reset=%s moved "
                        "to %d, %d messages lost", self.topic, self.partition, plan.offset,
                        earliest, latest, policy, self.emitted_to, lost)
        self.counters.lost_message_count += lost
        self.total_lost += lost
        return lost

    # --- commits ------------------------------------------------------------------------
    def last_completed_offset(self) -> int:
        """The offset a commit now would write (next offset to process)."""
        if self.guarantee == AT_LEAST_ONCE:
            nxt = self.offsets.find_next_commit_offset(self.passed_to)
            return self.offsets.committed_offset if nxt is None else nxt
        if self.guarantee == NO_GUARANTEE:
            return self.emitted_to
        return self.committed_to

    def commit_offset(self) -> Optional[int]:
        """The offset the periodic commit writes, or None when nothing changed
        (AT_MOST_ONCE commits at plan time only)."""
        if self.guarantee == AT_MOST_ONCE:
            return None
        offset = self.last_completed_offset()
        return None if offset == self.committed_to else offset

    def mark_committed(self, offset: int) -> None:
        """Record a successful commit of ``offset``: state below it is dropped and
        the position moves up to it if it was behind (STORM-2666)."""
        self.committed_to = offset
        if self.guarantee == AT_LEAST_ONCE:
            if offset >= self.offsets.committed_offset:
                self.offsets.commit(offset)
            self.in_flight.remove_below(offset)
            for o in self.retry.remove_below(offset):
                self.num_fails.pop(o, None)
        if self.emitted_to < offset:
            self.emitted_to = offset

    # --- inspection ---------------------------------------------------------------------
    @property
    def pending_count(self) -> int:
        """Tuples in flight (what ``topology.max.spout.pending`` counts)."""
        return len(self.in_flight)

    @property
    def uncommitted_count(self) -> int:
        return self.offsets.num_uncommitted_offsets

    def has_work(self) -> bool:
        return bool(self.in_flight) or len(self.retry) > 0

    def offset_data(self) -> Dict[str, int]:
        return {"latestEmittedOffset": self.emitted_to,
                "latestCompletedOffset": self.last_completed_offset()}

    def offset_metric_values(self) -> Tuple[int, int]:
        """``(latestEmittedOffset, latestCompletedOffset)`` of storm-kafka-client 2.x's
        ``kafkaOffset`` metric: the highest offset emitted (0 before the first) and the
        committed offset. Storm feeds its OffsetManager only under AT_LEAST_ONCE (its
        other guarantees report 0 and the first fetch offset forever); here they report
        the last offset fetched and the last commit."""
        if self.guarantee == AT_LEAST_ONCE:
            latest = self.offsets.latest_emitted_offset
            return (0 if latest is None else latest), self.offsets.committed_offset
        return max(self.emitted_to - 1, 0), self.committed_to

    def take_metrics(self) -> Dict[str, Any]:
        values = self.counters.as_metrics()
        values["numUncommittedOffsets"] = self.offsets.num_uncommitted_offsets
        values["pausedByMaxUncommittedOffsets"] = self.paused
        self.counters = PartitionCounters()
        return values
