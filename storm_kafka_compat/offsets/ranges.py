"""Offsets as sorted, disjoint half-open ``[start, end)`` ranges: the one copy.

:class:`OffsetRanges` is the pending set; :func:`coalesce`, :func:`subtract` and
:func:`overlap` are the range arithmetic every other module uses.

storm-kafka keeps ``_pending`` as a ``TreeMap<offset, time>``: one entry, roughly a
hundred bytes, per fetched-but-unacked offset. Here the pending set is two
``array('q')`` columns of range starts and ends, so memory grows with the number
of gaps (failed or out-of-order offsets), not with the number of offsets in flight.
A batch fetched and acked in order costs one range.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

Range = Tuple[int, int]


class OffsetRanges:
    """A set of offsets stored as disjoint, non-adjacent ``[start, end)`` ranges."""

    __slots__ = ("_starts", "_ends", "_count")

    def __init__(self, ranges: Iterable[Range] = ()) -> None:
        self._starts = array("q")
        self._ends = array("q")
        self._count = 0
        for start, end in ranges:
            self.add_range(start, end)

    # --- queries ---------------------------------------------------------------
    def __len__(self) -> int:
        """Number of offsets in the set (not ranges)."""
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __contains__(self, offset: object) -> bool:
        if not isinstance(offset, int):
            return False
        i = bisect_right(self._starts, offset) - 1
        return i >= 0 and offset < self._ends[i]

    def __iter__(self) -> Iterator[int]:
        for start, end in zip(self._starts, self._ends):
            yield from range(start, end)

    def __repr__(self) -> str:
        return f"OffsetRanges({list(self.ranges())!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OffsetRanges):
            return NotImplemented
        return self._starts == other._starts and self._ends == other._ends

    def ranges(self) -> Iterator[Range]:
        """The ranges in ascending order, as ``(start, end_exclusive)``."""
        return zip(self._starts, self._ends)

    @property
    def range_count(self) -> int:
        return len(self._starts)

    def first(self) -> Optional[int]:
        """Smallest offset, or None when empty."""
        return self._starts[0] if self._starts else None

    def last(self) -> Optional[int]:
        """Largest offset, or None when empty."""
        return self._ends[-1] - 1 if self._ends else None

    def count_below(self, bound: int) -> int:
        """How many offsets are ``< bound``."""
        n = 0
        for start, end in zip(self._starts, self._ends):
            if start >= bound:
                break
            n += min(end, bound) - start
        return n

    def nbytes(self) -> int:
        """Bytes held by this set (both columns and the object)."""
        return sys.getsizeof(self) + sys.getsizeof(self._starts) + sys.getsizeof(self._ends)

    # --- updates ---------------------------------------------------------------
    def add(self, offset: int) -> bool:
        """Add one offset; True if it was absent."""
        before = self._count
        self.add_range(offset, offset + 1)
        return self._count != before

    def add_range(self, start: int, end: int) -> int:
        """Add ``[start, end)``; return how many offsets were new."""
        if end <= start:
            return 0
        starts, ends = self._starts, self._ends
        # fast path: appending at or after the top, the common case for new fetches
        if not ends or start > ends[-1]:
            starts.append(start)
            ends.append(end)
            self._count += end - start
            return end - start
        if start >= starts[-1]:
            if end <= ends[-1]:
                return 0
            added = end - max(start, ends[-1])
            ends[-1] = end
            self._count += added
            return added
        # general case: merge every range that overlaps or touches [start, end)
        lo = bisect_left(ends, start)      # first range whose end >= start
        hi = bisect_right(starts, end)     # ranges [lo, hi) touch [start, end)
        if lo == hi:
            starts.insert(lo, start)
            ends.insert(lo, end)
            self._count += end - start
            return end - start
        covered = sum(min(ends[i], end) - max(starts[i], start)
                      for i in range(lo, hi) if ends[i] > start and starts[i] < end)
        new_start = min(start, starts[lo])
        new_end = max(end, ends[hi - 1])
        del starts[lo:hi]
        del ends[lo:hi]
        starts.insert(lo, new_start)
        ends.insert(lo, new_end)
        added = (end - start) - covered
        self._count += added
        return added

    def remove(self, offset: int) -> bool:
        """Remove one offset; True if it was present."""
        return self.remove_range(offset, offset + 1) == 1

    def remove_range(self, start: int, end: int) -> int:
        """Remove ``[start, end)``; return how many offsets were removed."""
        if end <= start or not self._starts:
            return 0
        starts, ends = self._starts, self._ends
        lo = bisect_right(ends, start)     # first range with end > start
        hi = bisect_left(starts, end)      # ranges [lo, hi) intersect [start, end)
        if lo >= hi:
            return 0
        removed = 0
        new_starts = []
        new_ends = []
        for i in range(lo, hi):
            s, e = starts[i], ends[i]
            removed += min(e, end) - max(s, start)
            if s < start:
                new_starts.append(s)
                new_ends.append(start)
            if e > end:
                new_starts.append(end)
                new_ends.append(e)
        starts[lo:hi] = array("q", new_starts)
        ends[lo:hi] = array("q", new_ends)
        self._count -= removed
        return removed

    def remove_below(self, bound: int) -> int:
        """Remove every offset ``< bound``; return how many were removed."""
        first = self.first()
        if first is None or first >= bound:
            return 0
        return self.remove_range(first, bound)

    def remove_from(self, bound: int) -> int:
        """Remove every offset ``>= bound``; return how many were removed."""
        last = self.last()
        if last is None or last < bound:
            return 0
        return self.remove_range(bound, last + 1)


def coalesce(offsets: Iterable[int]) -> List[Range]:
    """Offsets in any order, repeats allowed, to sorted merged ``[start, end)`` ranges."""
    out: List[Range] = []
    for o in sorted(set(offsets)):
        if out and out[-1][1] == o:
            out[-1] = (out[-1][0], o + 1)
        else:
            out.append((o, o + 1))
    return out


def count_offsets(ranges: Iterable[Range]) -> int:
    """How many offsets disjoint ``[start, end)`` ranges hold."""
    return sum(e - s for s, e in ranges)


def append_ranges(into: List[Range], more: Iterable[Range]) -> None:
    """Append ascending ``more`` to ascending ``into``, joining a range that starts
    where the previous one ends (the chunks of one task's batch)."""
    for start, end in more:
        if into and into[-1][1] == start:
            into[-1] = (into[-1][0], end)
        else:
            into.append((start, end))


def subtract(ranges: Sequence[Range], offsets: Iterable[int]) -> List[Range]:
    """Sorted disjoint ``ranges`` without ``offsets`` (any order), as ranges."""
    holes = sorted(set(offsets))
    if not holes:
        return list(ranges)
    out: List[Range] = []
    i = 0
    for start, end in ranges:
        while i < len(holes) and holes[i] < start:
            i += 1
        cur = start
        while i < len(holes) and holes[i] < end:
            if holes[i] > cur:
                out.append((cur, holes[i]))
            cur = holes[i] + 1
            i += 1
        if cur < end:
            out.append((cur, end))
    return out


def overlap(ranges: OffsetRanges, start: int, end: int) -> List[Range]:
    """The parts of ``[start, end)`` that are in ``ranges``."""
    out: List[Range] = []
    for s, e in ranges.ranges():
        if s >= end:
            break
        if e > start:
            out.append((max(s, start), min(e, end)))
    return out
