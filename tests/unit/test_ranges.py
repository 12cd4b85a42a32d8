"""OffsetRanges against a plain set model."""

from typing import Any, List, Tuple

import pytest
from hypothesis import given, settings, strategies as st

from storm_kafka_compat.offsets.ranges import OffsetRanges, coalesce, overlap, subtract


def test_in_order_batch_is_one_range():
    p = OffsetRanges()
    for start in range(0, 10_000, 500):
        p.add_range(start, start + 500)
    assert p.range_count == 1 and len(p) == 10_000
    p.remove_range(0, 9_000)
    assert list(p.ranges()) == [(9_000, 10_000)]


def test_gaps_split_and_merge():
    p = OffsetRanges([(0, 10)])
    assert p.remove(3) and p.remove(7)
    assert list(p.ranges()) == [(0, 3), (4, 7), (8, 10)]
    assert p.first() == 0 and p.last() == 9 and len(p) == 8
    assert p.add(3) and not p.add(3)
    assert list(p.ranges()) == [(0, 7), (8, 10)]
    assert p.remove_below(5) == 5 and p.first() == 5
    assert p.remove_from(9) == 1 and p.last() == 8
    assert p.count_below(9) == 3


def test_memory_grows_with_gaps_not_offsets():
    in_order = OffsetRanges([(0, 1_000_000)])
    assert in_order.nbytes() / len(in_order) < 0.01


@pytest.mark.parametrize("offsets,expected", [
    ([], []), ([5], [(5, 6)]), ([3, 1, 2, 7, 8, 10], [(1, 4), (7, 9), (10, 11)]),
    ([1, 1, 2], [(1, 3)]),
])
def test_coalesce(offsets, expected):
    assert coalesce(offsets) == expected


ops = st.lists(st.tuples(st.sampled_from(["add", "remove", "below", "from"]),
                         st.integers(0, 60), st.integers(0, 12)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_matches_set_model(script):
    p, model = OffsetRanges(), set()
    for op, a, n in script:
        if op == "add":
            assert p.add_range(a, a + n) == len(set(range(a, a + n)) - model)
            model |= set(range(a, a + n))
        elif op == "remove":
            assert p.remove_range(a, a + n) == len(set(range(a, a + n)) & model)
            model -= set(range(a, a + n))
        elif op == "below":
            assert p.remove_below(a) == len({o for o in model if o < a})
            model = {o for o in model if o >= a}
        else:
            assert p.remove_from(a) == len({o for o in model if o >= a})
            model = {o for o in model if o < a}
        assert len(p) == len(model)
        assert list(p) == sorted(model)
        assert p.first() == (min(model) if model else None)
        rs = list(p.ranges())
        assert all(e0 < s1 for (_, e0), (s1, _) in zip(rs, rs[1:])), \
            "ranges stay disjoint and non-adjacent"


# --- range arithmetic (the one copy) -------------------------------------------------------

@pytest.mark.parametrize("offsets, ranges", [
    ([], []), ([5], [(5, 6)]), ([1, 2, 3, 7, 8, 10], [(1, 4), (7, 9), (10, 11)]),
    ([3, 1, 2, 2], [(1, 4)]),
])
def test_coalesce_merges_runs(offsets: List[int], ranges: List[Tuple[int, int]]) -> None:
    assert coalesce(offsets) == ranges


@pytest.mark.parametrize("ranges, holes, expected", [
    ([(0, 10)], [], [(0, 10)]),
    ([(0, 10)], [0, 9], [(1, 9)]),
    ([(0, 10)], [4, 5], [(0, 4), (6, 10)]),
    ([(0, 3), (5, 8)], [1, 5, 20], [(0, 1), (2, 3), (6, 8)]),
    ([(0, 1)], [0], []),
])
def test_subtract(ranges: Any, holes: Any, expected: Any) -> None:
    assert subtract(ranges, holes) == expected


def test_offsets_to_ranges_and_subtract():
    assert coalesce([5, 3, 4, 9, 10, 4]) == [(3, 6), (9, 11)]
    assert subtract([(0, 10)], {0, 4, 9}) == [(1, 4), (5, 9)]
    assert subtract([(0, 3), (5, 6)], set()) == [(0, 3), (5, 6)]


def test_overlap_clips_to_the_window() -> None:
    r = OffsetRanges([(0, 3), (5, 8), (10, 12)])
    assert overlap(r, 2, 11) == [(2, 3), (5, 8), (10, 11)]
    assert overlap(r, 3, 5) == []


def test_append_ranges_joins_a_chunk_that_continues_the_last_range() -> None:
    from storm_kafka_compat.offsets.ranges import append_ranges
    into = [(0, 16)]
    append_ranges(into, [(16, 40), (42, 50)])
    append_ranges(into, [(50, 51)])
    assert into == [(0, 40), (42, 51)]
