"""storm-kafka-client's OffsetManager (edge cases 6-10)."""

import pytest

from storm_kafka_compat.spout.client.offset_manager import OffsetManager
from storm_kafka_compat.errors import OffsetManagerInvariantError


def om_with(committed, emitted, acked):
    om = OffsetManager("t", 0, committed)
    for o in emitted:
        om.add_to_emitted(o, o + 1)
    for o in acked:
        om.add_to_acked(o, o + 1)
    return om


@pytest.mark.parametrize("committed, emitted, acked, expected", [
    # contiguous acks: next offset to read is last acked + 1 (edge 9)
    (0, range(0, 5), [0, 1, 2], 3),
    (0, range(0, 5), range(0, 5), 5),
    # out-of-order acks: only the contiguous run counts (edge 6)
    (0, range(0, 6), [3, 5, 4], None),
    (0, range(0, 6), [3, 5, 4, 1, 2], None),
    (0, range(0, 6), [3, 5, 4, 1, 2, 0], 6),
    # a gap of never-emitted offsets is jumped in one step (edge 7)
    (0, [0, 1, 5, 6], [0, 1, 5, 6], 7),
    (0, [5, 6], [5, 6], 7),                      # gap before the first emitted
    (10, [12, 13, 20], [12, 13, 20], 21),        # two gaps (10-11, 14-19) jumped
    (10, [12, 13, 20], [12, 20], 13),            # 12 acked, 13 emitted not acked: stop
    # an emitted, unacked offset inside the gap blocks it (edge 7)
    (0, [0, 1, 3, 5], [0, 1, 5], 2),
    (0, [0, 3, 5], [0, 5], 1),
    # nothing acked since the commit: no commit (edge 10)
    (4, range(4, 8), [], None),
    (4, range(4, 8), [6, 7], None),
])
def test_find_next_commit_offset(committed, emitted, acked, expected):
    assert om_with(committed, emitted, acked).find_next_commit_offset() == expected


def test_trailing_gap_is_not_committed_without_an_acked_offset_above():
    om = om_with(0, [0, 1], [0, 1])
    assert om.find_next_commit_offset() == 2     # not beyond what was seen


def test_commit_drops_state_and_sets_flag():
    om = om_with(0, range(0, 10), [0, 1, 2, 5])
    assert om.num_uncommitted_offsets == 10 and not om.committed
    assert om.commit(3) == 3
    assert om.committed and om.committed_offset == 3
    assert om.num_uncommitted_offsets == 7
    assert om.find_next_commit_offset() is None
    om.add_to_acked(3, 5)
    assert om.find_next_commit_offset() == 6


def test_ack_below_the_committed_offset_is_a_bug(edge=8):
    om = om_with(5, range(5, 8), [])
    with pytest.raises(OffsetManagerInvariantError, match="below the committed offset 5"):
        om.add_to_acked(4, 5)


def test_emitted_below_the_commit_is_ignored():
    om = OffsetManager("t", 0, 10)
    om.add_to_emitted(5, 12)
    assert list(om.emitted) == [10, 11]


@pytest.mark.parametrize("n, expected", [(1, 3), (2, 4), (3, 8), (5, 10), (6, None), (0, None)])
def test_nth_uncommitted_offset(n, expected):
    om = om_with(3, [3, 4, 8, 9, 10], [])
    assert om.nth_uncommitted_offset(n) == expected


def test_large_ranges_are_cheap():
    om = OffsetManager("t", 0, 0)
    om.add_to_emitted(0, 1_000_000)
    om.add_to_acked(0, 999_999)
    assert om.find_next_commit_offset() == 999_999
    assert om.emitted.range_count == 1
