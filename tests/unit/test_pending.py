"""OffsetRanges against a plain set model."""

import pytest
from hypothesis import given, settings, strategies as st

from storm_kafka_compat.spout.pending import OffsetRanges, coalesce


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
        assert all(e0 < s1 for (_, e0), (s1, _) in zip(rs, rs[1:])), "ranges stay disjoint and non-adjacent"
