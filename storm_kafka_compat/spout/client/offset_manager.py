"""storm-kafka-client's ``OffsetManager``: the committable offset of one partition.

State: the emitted offsets not yet committed (in flight, failed or acked), the
acked ones among them, and the committed offset (Kafka's meaning: the next
offset to read). :meth:`OffsetManager.find_next_commit_offset` walks the acked
offsets upwards from the committed offset:

* an acked offset equal to the candidate advances it by one;
* a candidate that was never emitted (a gap: compaction, retention, a
  transaction marker, a record that no longer exists) is jumped over when the
  next emitted offset above it is acked (STORM-2505, the whole gap at once as
  in STORM-2666);
* an emitted offset that is not acked stops the walk.

Offsets are kept as ranges, so a batch of ten thousand offsets costs a few
range entries. This module is pure.
"""

from __future__ import annotations

from typing import Iterable, Optional

from storm_kafka_compat.errors import OffsetManagerInvariantError
from storm_kafka_compat.offsets.ranges import OffsetRanges, Range


def _first_at_or_above(ranges: OffsetRanges, offset: int) -> Optional[int]:
    """Smallest member of ``ranges`` that is >= ``offset``."""
    for start, end in ranges.ranges():
        if end > offset:
            return max(start, offset)
    return None


def _range_end_containing(ranges: OffsetRanges, offset: int) -> Optional[int]:
    """Exclusive end of the range of ``ranges`` that contains ``offset``."""
    for start, end in ranges.ranges():
        if start <= offset < end:
            return end
        if start > offset:
            break
    return None


class OffsetManager:
    """Emitted, acked and committed offsets of one partition.

    Parameters
    ----------
    topic, partition : str, int
    committed_offset : int
        The position the partition starts from (the next offset to read): the
        first-poll decision's offset.
    """

    def __init__(self, topic: str, partition: int, committed_offset: int) -> None:
        self.topic = topic
        self.partition = partition
        #: Kafka semantics: the next offset to read
        self.committed_offset = committed_offset
        #: True once this manager committed (storm-kafka-client's ``hasCommitted``)
        self.committed = False
        self.emitted = OffsetRanges()
        self.acked = OffsetRanges()
        self.latest_emitted_offset: Optional[int] = None

    # --- updates -------------------------------------------------------------------
    def add_to_emitted(self, start: int, end: int) -> None:
        """Record ``[start, end)`` as emitted (offsets below the commit are ignored)."""
        start = max(start, self.committed_offset)
        if end > start:
            self.emitted.add_range(start, end)
            if self.latest_emitted_offset is None or end - 1 > self.latest_emitted_offset:
                self.latest_emitted_offset = end - 1

    def add_to_acked(self, start: int, end: int) -> None:
        """Record ``[start, end)`` as acked.

        Raises
        ------
        OffsetManagerInvariantError
            Part of the range is below the committed offset: the caller must
            only ack offsets it has in flight (Storm raises here too).
        """
        if end <= start:
            return
        if start < self.committed_offset:
            raise OffsetManagerInvariantError(
                f"ack of offset {start} on {self.topic}/{self.partition} is below the "
                f"committed offset {self.committed_offset}; an offset can only be acked "
                "while it is in flight (this is a bug in the caller)")
        self.acked.add_range(start, end)

    # --- the commit ---------------------------------------------------------------
    def find_next_commit_offset(self, position: Optional[int] = None) -> Optional[int]:
        """The offset to commit (next offset to read), or None when no acked
        offset advances it past the committed offset. ``position`` is the
        spout's next offset to fetch: a gap of never-emitted offsets up to it at
        the end (transaction markers, aborted records) is passed too."""
        nxt = self.committed_offset
        acked, emitted = self.acked, self.emitted
        while True:
            end = _range_end_containing(acked, nxt)
            if end is not None:
                nxt = end
                continue
            if nxt in emitted:
                break                         # emitted, not acked: in flight or failed
            above = _first_at_or_above(emitted, nxt)
            if above is None and position is not None and position > nxt:
                nxt = position                # the log ended with a gap
                break
            if above is None or above not in acked:
                break                         # nothing acked right after the gap
            nxt = above                       # jump the gap of never-emitted offsets
        return nxt if nxt > self.committed_offset else None

    def commit(self, offset: int) -> int:
        """Record a successful commit of ``offset``; drop the state below it.

        Returns how many emitted offsets were dropped.
        """
        self.committed = True
        self.committed_offset = offset
        dropped = self.emitted.remove_below(offset)
        self.acked.remove_below(offset)
        return dropped

    def reset(self, offset: int) -> None:
        """Forget everything and continue from ``offset`` (position reset)."""
        self.committed_offset = offset
        self.emitted = OffsetRanges()
        self.acked = OffsetRanges()

    # --- inspection ----------------------------------------------------------------
    @property
    def num_uncommitted_offsets(self) -> int:
        """Emitted and not committed: in flight, failed and acked-but-uncommitted."""
        return len(self.emitted)

    def nth_uncommitted_offset(self, n: int) -> Optional[int]:
        """The ``n``-th smallest (1-based) uncommitted emitted offset, or None."""
        if n < 1:
            return None
        left = n
        for start, end in self.emitted.ranges():
            size = end - start
            if left <= size:
                return start + left - 1
            left -= size
        return None

    def contains(self, offset: int) -> bool:
        """Whether ``offset`` is emitted and not committed."""
        return offset in self.emitted

    def is_acked(self, offset: int) -> bool:
        return offset in self.acked

    def acked_ranges(self) -> Iterable[Range]:
        return self.acked.ranges()
