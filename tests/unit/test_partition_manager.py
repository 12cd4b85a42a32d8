"""PartitionManager against storm-kafka 1.2.x (reference section 11 cases 9-22, 30, 36)."""

import pytest

from storm_kafka_compat.config import SpoutConfig, StaticHosts
from storm_kafka_compat.errors import TooManyFailuresError
from storm_kafka_compat.spout.manager import PartitionManager
from storm_kafka_compat.spout.policy import CommitTimer
from storm_kafka_compat.spout.metrics import (OffsetSample, kafka_offset_metric,
                                              kafka_partition_metric)


class Clock:
    def __init__(self, t=0):
        self.t = t

    def __call__(self):
        return self.t


def make(start=0, clock=None, **kw):
    cfg = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="s", **kw)
    return PartitionManager("t", 0, start, config=cfg, clock=clock or Clock())


def take(pm, log, plan):
    """Fetch `plan` from `log` (existing offsets) as an executor would; return taken offsets."""
    taken = [o for o in log if plan.takes(o)]
    if plan.max_messages is not None:
        taken = taken[:plan.max_messages]
    pm.fetched(plan, [(o, o + 1) for o in taken],
               scanned_to=(taken[-1] + 1) if taken else plan.offset)
    return taken


def test_first_fetch_takes_new_messages_and_commit_follows_acks():
    pm = make(start=10)
    plan = pm.plan_fetch(max_messages=5)
    assert (plan.offset, plan.retry, plan.max_messages) == (10, False, 5)
    assert take(pm, range(10, 100), plan) == [10, 11, 12, 13, 14]
    assert pm.emitted_to == 15 and pm.last_completed_offset() == 10
    pm.ack(11)
    pm.ack(12)
    assert pm.commit_offset() is None            # still 10: commit only on change (case 13)
    pm.ack(10)
    assert pm.commit_offset() == 13
    pm.mark_committed(13)
    pm.ack_ranges([(13, 15)])
    assert pm.commit_offset() == 15 and pm.pending_count == 0


def test_compressed_set_offsets_below_fetch_offset_are_skipped():       # case 17
    pm = make(start=20)
    plan = pm.plan_fetch()
    pm.fetched(plan, [(17, 23)])                # a wrapper set starting at 17
    assert list(pm.pending) == [20, 21, 22] and pm.emitted_to == 23


def test_backoff_retry_blocks_new_fetches_and_reemits_only_due_offsets():  # case 19
    clock = Clock(1_000)
    pm = make(clock=clock, retry_initial_delay_ms=100, retry_delay_multiplier=2.0,
              retry_delay_max_ms=10_000)
    take(pm, range(0, 50), pm.plan_fetch(max_messages=10))
    pm.ack_ranges([(0, 3), (4, 7), (8, 10)])
    assert pm.fail(3) and pm.fail(7)
    plan = pm.plan_fetch()
    assert not plan.retry and plan.offset == 10    # retries not due yet: new data
    clock.t = 1_100
    plan = pm.plan_fetch()
    assert plan.retry and plan.offset == 3 and plan.reemit == (3, 7)
    assert take(pm, range(0, 50), plan) == [3, 7]
    assert pm.emitted_to == 10                     # a retry never moves the new-data position
    assert pm.fail(7)                              # 2nd failure: 200 ms
    clock.t = 1_250
    assert pm.plan_fetch().retry is False
    clock.t = 1_300
    assert pm.plan_fetch().reemit == (7,)


def test_retries_are_ordered_by_retry_time():
    clock = Clock(0)
    pm = make(clock=clock, retry_initial_delay_ms=100, retry_delay_multiplier=10.0)
    take(pm, range(100), pm.plan_fetch(max_messages=10))
    pm.fail(2)                        # 1st failure, due at 100
    clock.t = 100
    take(pm, range(100), pm.plan_fetch())
    pm.fail(2)                        # 2nd failure, due at 100 + 1000
    pm.fail(8)                        # 1st failure, due at 200
    clock.t = 250
    plan = pm.plan_fetch()
    assert plan.offset == 8 and plan.reemit == (8,)   # smaller offset 2 is not due


def test_retry_limit_gives_up_and_commit_moves_past():                   # case 20
    pm = make(retry_limit=1)
    take(pm, range(10), pm.plan_fetch(max_messages=3))
    pm.ack(0)
    pm.ack(2)
    assert pm.fail(1)                  # first failure: retried
    take(pm, range(10), pm.plan_fetch())
    assert not pm.fail(1)              # second failure: given up
    assert pm.total_given_up == 1 and pm.take_metrics()["messageIneligibleForRetryCount"] == 1
    assert pm.commit_offset() == 3


def test_old_failure_beyond_max_offset_behind_is_ignored():               # case 21
    pm = make(max_offset_behind=5)
    take(pm, range(100), pm.plan_fetch(max_messages=20))
    assert not pm.fail(2)              # 2 < 20 - 5
    assert 2 in pm.pending and len(pm.retry) == 0
    pm.ack(19)                         # prunes everything below 14
    assert pm.pending.first() == 14


def test_too_many_failures_guard():                                       # case 22
    pm = make(max_offset_behind=3)
    take(pm, range(100), pm.plan_fetch(max_messages=10))
    assert not pm.fail(0)              # below emitted_to - maxOffsetBehind: not counted
    for o in (7, 8, 9):
        pm.fail(o)
    with pytest.raises(TooManyFailuresError, match="t/0"):
        pm.fail(7)                     # 4th counted failure, nothing acked


def test_pruned_retry_is_not_reemitted_and_commit_never_goes_back():     # case 12, deviation 2
    clock = Clock(0)
    pm = make(max_offset_behind=10, retry_initial_delay_ms=1_000, clock=clock)
    take(pm, range(100), pm.plan_fetch(max_messages=15))
    assert pm.fail(5)                  # 5 >= 15 - 10: scheduled for retry at t=1000
    take(pm, range(100), pm.plan_fetch(max_messages=15))
    pm.ack_ranges([(0, 5), (6, 30)])   # the ack of 29 prunes below 19, including failed 5
    assert pm.commit_offset() == 30
    pm.mark_committed(30)
    clock.t = 2_000
    plan = pm.plan_fetch()
    assert not plan.retry              # Storm 1.x re-emits 5 here and commits 5 next
    take(pm, range(100), plan)
    assert pm.last_completed_offset() >= 30


def test_out_of_range_below_earliest_jumps_forward_and_counts_lost():    # case 9
    pm = make(start=40)
    plan = pm.plan_fetch()
    assert pm.out_of_range(plan, earliest=100, latest=500) == 60
    assert pm.emitted_to == 100 and pm.last_completed_offset() == 100


def test_out_of_range_while_retrying_clears_failed_and_pending():        # case 11
    pm = make(start=0)
    take(pm, range(50), pm.plan_fetch(max_messages=20))
    pm.ack_ranges([(0, 3), (4, 8), (9, 20)])
    pm.fail(3)
    pm.fail(8)
    plan = pm.plan_fetch()
    assert plan.retry
    lost = pm.out_of_range(plan, earliest=10, latest=50)
    assert lost == 2 and len(pm.retry) == 0 and pm.pending_count == 0
    assert pm.commit_offset() == 20


def test_position_beyond_log_end_moves_to_latest():                       # case 10, deviation 1
    pm = make(start=5_000)
    take(pm, range(5_000, 5_010), pm.plan_fetch(max_messages=5))
    pm.ack_ranges([(5_000, 5_003)])
    plan = pm.plan_fetch()
    assert plan.offset == 5_005
    lost = pm.out_of_range(plan, earliest=0, latest=120)   # topic re-created
    # 5003 and 5004 cannot be re-fetched, and the new topic's 0-119 are passed over
    assert pm.emitted_to == 120 and lost == 2 + 120
    assert pm.plan_fetch().offset == 120 and pm.commit_offset() == 120


def test_stored_offset_beyond_the_log_end_counts_what_the_move_skips():   # issue 10
    """A document at 9999 on a log of [500, 600): the job never reads 500-599."""
    pm = make(start=9_999)
    assert pm.out_of_range(pm.plan_fetch(), earliest=500, latest=600) == 100
    assert pm.emitted_to == 600 and pm.total_lost == 100


def test_truncation_below_what_this_manager_read_counts_only_dropped_pending():
    """An unclean election truncates the log to 950 after this manager read from 0:
    0-949 were read here, so only the pending offsets above 950 are lost."""
    pm = make(start=0)
    take(pm, range(0, 1_000), pm.plan_fetch(max_messages=1_000))
    pm.ack_ranges([(0, 990)])
    lost = pm.out_of_range(pm.plan_fetch(), earliest=0, latest=950)
    assert lost == 10 and pm.emitted_to == 950


def test_no_offset_start_recovers_through_out_of_range():                 # case 30
    pm = make(start=-5)
    plan = pm.plan_fetch()
    pm.out_of_range(plan, earliest=0, latest=10)
    assert pm.emitted_to == 0


def test_tombstone_ack_without_emit_keeps_commit_moving():                # case 15
    pm = make(start=0)
    take(pm, range(5), pm.plan_fetch())
    pm.ack_ranges([(0, 5)])            # the executor acks skipped messages too
    assert pm.commit_offset() == 5


def test_fail_of_unknown_offset_is_ignored():
    pm = make(start=0)
    take(pm, range(5), pm.plan_fetch())
    pm.ack(2)
    assert not pm.fail(2) and len(pm.retry) == 0


def test_max_pending_per_partition_throttles_new_fetches():
    pm = make(max_pending_per_partition=10)
    plan = pm.plan_fetch(max_messages=100)
    assert plan.max_messages == 10
    take(pm, range(100), plan)
    assert pm.plan_fetch() is None
    pm.ack_ranges([(0, 4)])
    assert pm.plan_fetch().max_messages == 4


def test_compacted_retry_offset_is_dropped_instead_of_retried_forever():
    pm = make()
    take(pm, [0, 1, 2, 3], pm.plan_fetch(max_messages=4))
    pm.ack_ranges([(0, 2), (3, 4)])
    pm.fail(2)
    plan = pm.plan_fetch()
    pm.fetched(plan, [], scanned_to=4)  # log compacted: offset 2 gone, 3 seen
    assert pm.total_vanished == 1 and pm.commit_offset() == 4


def test_leader_change_keeps_state():
    from storm_kafka_compat.config import Broker
    pm = make(start=7)
    take(pm, range(7, 20), pm.plan_fetch(max_messages=3))
    pm.set_leader(Broker("b2", 9093))
    assert pm.leader == Broker("b2", 9093) and list(pm.pending) == [7, 8, 9]


@pytest.mark.parametrize("steps,expected", [
    ([0], [True]),
    ([0, 1_000, 2_000, 2_001], [True, False, False, True]),
    ([0, 5_000, 4_000], [True, True, True]),       # clock went backwards
])
def test_commit_timer(steps, expected):                                   # case 14
    timer, got = CommitTimer(2_000), []
    for now in steps:
        due = timer.due(now)
        got.append(due)
        if due:
            timer.committed(now)
    assert got == expected


def test_kafka_offset_metric():                                           # case 36
    samples = [OffsetSample("t", 0, 0, 100, 90, 80), OffsetSample("t", 1, 5, 50, 50, 50)]
    m = kafka_offset_metric(samples)
    assert m["t/partition_0/spoutLag"] == 20 and m["t/totalSpoutLag"] == 20
    assert m["t/partition_1/latestCompletedOffset"] == 50 and m["t/totalLatestTimeOffset"] == 150
    assert kafka_offset_metric([OffsetSample("t", 0, 0, None, 1, 1)]) is None
    assert kafka_offset_metric([]) is None
    w = kafka_offset_metric([OffsetSample("a.b", 3, 0, 10, 10, 4, wildcard=True)])
    assert w["a.b/partition_3/spoutLag"] == 6


def test_kafka_partition_metric_names_and_reset():
    pm = make()
    take(pm, range(5), pm.plan_fetch())
    pm.counters.fetch_latencies_ms.extend([3, 5])
    m = kafka_partition_metric([("t", 0, False, pm.take_metrics())])
    assert m["partition_0/fetchAPIMessageCount"] == 5 and m["partition_0/fetchAPILatencyMax"] == 5
    assert m["partition_0/fetchAPILatencyMean"] == 4
    assert pm.take_metrics()["fetchAPIMessageCount"] == 0


def test_a_fetch_ending_in_entries_no_consumer_receives_moves_the_position_past_them():
    """A transactional topic: 0-2 committed, 3 a commit marker, 4-5 aborted (not read
    under read_committed), 6 the abort marker. The commit reaches the log end (7)."""
    pm = make(start=0)
    plan = pm.plan_fetch()
    pm.fetched(plan, [(0, 3)], scanned_to=3)
    pm.ack_ranges([(0, 3)])
    assert pm.commit_offset() == 3
    pm.fetched(pm.plan_fetch(), [], scanned_to=7)     # an empty fetch, its position at 7
    assert pm.emitted_to == 7 and pm.commit_offset() == 7 and len(pm.pending) == 0
    pm.fetched(pm.plan_fetch(), [], scanned_to=None)  # nothing known: nothing moves
    assert pm.emitted_to == 7
