"""ClientPartitionManager per guarantee (edge cases 11, 13, 15, 16, 18-22, 24-30)."""

import pytest

from storm_kafka_compat.config.kafka_spout import KafkaSpoutConfig
from storm_kafka_compat.errors import NoOffsetResetError
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.spout.client.manager import ClientPartitionManager
from storm_kafka_compat.config.kafka_spout_retry import RetrySettings, TimeInterval


class Clock:
    def __init__(self):
        self.now = 1_000

    def __call__(self):
        return self.now


def alo(start=0, clock=None, **kw):
    retry = kw.pop("retry", RetrySettings(TimeInterval(0), TimeInterval.milli_seconds(10), 5,
                                          TimeInterval.seconds(1)))
    cfg = KafkaSpoutConfig(group_id="g", retry=retry, **kw)
    return ClientPartitionManager("t", 0, start, config=cfg, clock=clock or Clock())


def take(pm, n, max_messages=None, gaps=()):
    plan = pm.plan_fetch(max_messages or n)
    assert plan is not None and not plan.retry
    offs = [o for o in range(plan.offset, plan.offset + n) if o not in gaps]
    pm.fetched(plan, [(o, o + 1) for o in offs])
    return plan


# --- AT_LEAST_ONCE --------------------------------------------------------------------
def test_commits_only_contiguous_acks_and_nothing_when_nothing_changed():
    pm = alo(5)
    take(pm, 5)                                   # 5..9
    assert pm.commit_offset() is None             # edge 10
    pm.ack_ranges([(5, 7), (8, 10)])
    assert pm.commit_offset() == 7                # edge 6, 9
    pm.mark_committed(7)
    assert pm.commit_offset() is None
    pm.ack(7)
    assert pm.commit_offset() == 10


def test_gap_of_never_fetched_offsets_is_committed_across():
    pm = alo(0)
    take(pm, 6, gaps=(2, 3))                      # 0,1,4,5 exist
    pm.ack_ranges([(0, 2), (4, 6)])
    assert pm.commit_offset() == 6


def test_fail_schedules_a_retry_with_backoff_and_retry_plan_reemits_only_due():
    clock = Clock()
    pm = alo(0, clock)
    take(pm, 5)
    pm.ack_ranges([(0, 2), (3, 5)])
    assert pm.fail(2) is True
    assert pm.fail(2) is False                    # not in flight any more (edge 16)
    plan = pm.plan_fetch(100)                     # initialDelay 0: due now
    assert plan.retry and plan.reemit == (2,) and plan.offset == 2
    pm.fetched(plan, [(2, 3)])
    assert pm.fail(2) is True                     # second failure: 10 ms * 2
    plan = pm.plan_fetch(100)
    assert not plan.retry and plan.offset == 5    # not yet due: new data meanwhile
    clock.now += 19
    assert not pm.plan_fetch(100).retry
    clock.now += 1
    assert pm.plan_fetch(100).reemit == (2,)
    assert pm.num_fails[2] == 2                   # kept across re-fetch (edge 19)


def test_retry_fetch_skips_acked_and_in_flight_offsets():
    pm = alo(0)
    take(pm, 6)
    pm.fail(1)
    pm.fail(4)
    pm.ack(2)
    plan = pm.plan_fetch(100)
    assert plan.reemit == (1, 4)
    assert [o for o in range(0, 6) if plan.takes(o)] == [1, 4]      # edge 20


def test_max_retries_then_the_offset_is_acked_and_commit_passes():
    pm = alo(0, retry=RetrySettings(TimeInterval(0), TimeInterval(0), 2, TimeInterval(0)))
    take(pm, 2)
    pm.ack(1)
    for _ in range(2):
        assert pm.fail(0) is True
        plan = pm.plan_fetch(10)
        pm.fetched(plan, [(0, 1)])
    assert pm.fail(0) is False                    # third failure: maxRetries 2 (edge 18)
    assert pm.total_given_up == 1
    assert pm.commit_offset() == 2


def test_max_retries_zero_never_re_emits():
    pm = alo(0, retry=RetrySettings(max_retries=0))
    take(pm, 1)
    assert pm.fail(0) is False and pm.commit_offset() == 1 and len(pm.retry) == 0


def test_retriable_offset_compacted_away_is_acked():
    pm = alo(0)
    take(pm, 4)
    pm.ack_ranges([(1, 4)])
    pm.fail(0)
    plan = pm.plan_fetch(10)
    pm.fetched(plan, [], scanned_to=3)            # first record seen is 3 (edge 22)
    assert pm.total_vanished == 1
    assert pm.commit_offset() == 4


def test_ack_for_offsets_not_in_flight_is_ignored():
    pm = alo(0)
    take(pm, 3)
    pm.ack_ranges([(0, 3)])
    pm.mark_committed(3)
    pm.ack(1)                                     # duplicate after commit: no invariant error
    pm.ack(99)
    assert pm.commit_offset() is None


def test_max_uncommitted_offsets_pauses_and_bound_is_limit_plus_one_poll():
    pm = alo(0, max_uncommitted_offsets=10)
    take(pm, 4, max_messages=4)
    pm.fail(0)                                    # blocks every commit
    pm.retry.remove(0)                            # pretend it is not yet due
    pm.retry.schedule(0, 1_000_000)
    take(pm, 4, max_messages=4)
    take(pm, 4, max_messages=4)                   # 12 uncommitted: at 8 < 10 a poll of 4 came
    assert pm.uncommitted_count == 12 <= 10 + 4 - 1
    assert pm.plan_fetch(4) is None and pm.paused                   # edge 24
    assert pm.take_metrics()["pausedByMaxUncommittedOffsets"] is True


def test_due_retry_within_the_limit_is_fetched_while_paused_and_commit_resumes():
    clock = Clock()
    pm = alo(0, clock, max_uncommitted_offsets=3)
    take(pm, 4)
    pm.ack_ranges([(1, 4)])
    pm.fail(0)                                    # due at once, 0 <= 3rd uncommitted offset
    plan = pm.plan_fetch(10)
    assert plan is not None and plan.retry and plan.reemit == (0,)  # edge 25
    pm.fetched(plan, [(0, 1)])
    assert pm.plan_fetch(10) is None              # in flight again, still over the limit
    pm.ack(0)
    assert pm.commit_offset() == 4
    pm.mark_committed(4)
    plan = pm.plan_fetch(10)
    assert plan is not None and plan.offset == 4 and not pm.paused


def test_due_retry_above_the_limit_waits_for_a_commit():
    pm = alo(0, max_uncommitted_offsets=2)
    take(pm, 4)                                   # 0..3; limit offset is 1
    pm.ack_ranges([(1, 3)])
    pm.fail(3)                                    # above the limit's offset
    assert pm.plan_fetch(10) is None


def test_limit_is_per_partition():
    a, b = alo(0, max_uncommitted_offsets=2), alo(0, max_uncommitted_offsets=2)
    take(a, 2)
    assert a.plan_fetch(5) is None and b.plan_fetch(5) is not None


def test_max_poll_records_caps_the_batch():
    pm = alo(0, consumer={"max.poll.records": 3})
    assert pm.plan_fetch(100).max_messages == 3


def test_commit_moves_a_lagging_position_forward():
    pm = alo(0)
    pm.mark_committed(40)                         # edge 11
    assert pm.emitted_to == 40 and pm.plan_fetch(5).offset == 40


def test_out_of_range_below_start_acks_lost_offsets():
    pm = alo(0)
    take(pm, 5)
    pm.ack_ranges([(3, 5)])
    pm.fail(1)
    lost = pm.out_of_range(pm.plan_fetch(5), earliest=20, latest=30)
    assert lost == 1 + 15 and pm.emitted_to == 20     # retry of 1, and 5..19 skipped
    assert pm.commit_offset() is None                 # 0 and 2 are still in flight
    pm.ack_ranges([(0, 1), (2, 3)])
    assert pm.commit_offset() == 5
    take(pm, 3)
    pm.ack_ranges([(20, 23)])
    assert pm.commit_offset() == 23                   # the gap 5..19 is jumped


def test_out_of_range_with_nothing_outstanding_commits_the_new_position():
    pm = alo(0)
    take(pm, 5)
    pm.ack_ranges([(0, 5)])
    pm.out_of_range(pm.plan_fetch(5), earliest=20, latest=30)
    assert pm.commit_offset() == 20


def test_out_of_range_beyond_end_resets_backwards():
    pm = alo(100)
    take(pm, 5)
    pm.out_of_range(pm.plan_fetch(5), earliest=0, latest=10)
    assert pm.emitted_to == 0 and pm.commit_offset() == 0 and pm.pending_count == 0


def test_out_of_range_with_reset_none_raises():
    pm = alo(0, consumer={"auto.offset.reset": "none"})
    with pytest.raises(NoOffsetResetError, match="auto.offset.reset is none"):
        pm.out_of_range(pm.plan_fetch(5), 10, 20)


def test_ack_inside_emit_still_commits(edge=13):
    pm = alo(0)
    plan = pm.plan_fetch(3)
    pm.fetched(plan, [(0, 3)])
    pm.ack_ranges([(0, 3)])                       # acks arrive in the same result
    assert pm.commit_offset() == 3


# --- AT_MOST_ONCE / NO_GUARANTEE -------------------------------------------------------
def amo(end, commits, ok=True, **kw):
    cfg = KafkaSpoutConfig(group_id="g", processing_guarantee="AT_MOST_ONCE", **kw)

    def commit(pm, offset):
        commits.append(offset)
        return ok
    return ClientPartitionManager("t", 0, 0, config=cfg, commit_before_process=commit,
                                  end_offset=lambda: end[0])


def test_at_most_once_commits_the_bound_before_the_fetch():
    end, commits = [7], []
    pm = amo(end, commits)
    plan = pm.plan_fetch(5)
    assert isinstance(plan, FetchPlan) and commits == [5]       # edge 29
    assert plan.max_offset == 5 and plan.takes(4) and not plan.takes(5)
    pm.mark_committed(5)
    pm.fetched(plan, [(0, 5)])
    pm.fail(2)
    assert len(pm.retry) == 0 and pm.commit_offset() is None            # edge 28
    plan = pm.plan_fetch(5)
    assert commits == [5, 7] and plan.offset == 5 and plan.max_offset == 7


def test_at_most_once_skips_the_fetch_when_the_commit_fails():
    commits = []
    pm = amo([9], commits, ok=False)
    assert pm.plan_fetch(5) is None and commits == [5]


def test_at_most_once_at_log_end_fetches_nothing_and_commits_nothing():
    commits = []
    pm = amo([0], commits)
    plan = pm.plan_fetch(5)
    assert plan.max_offset == 0 and commits == []


def test_at_most_once_ignores_the_limit():
    commits = []
    pm = amo([100], commits, max_uncommitted_offsets=1)
    for _ in range(3):
        plan = pm.plan_fetch(10)
        pm.mark_committed(plan.max_offset)
        pm.fetched(plan, [(plan.offset, plan.max_offset)])
    assert pm.emitted_to == 30


@pytest.mark.parametrize("tracking, pending", [(False, 0), (True, 3)])
def test_no_guarantee_commits_what_was_fetched(tracking, pending):
    cfg = KafkaSpoutConfig(group_id="g", processing_guarantee="NO_GUARANTEE",
                           tuple_tracking_enforced=tracking, max_uncommitted_offsets=1)
    pm = ClientPartitionManager("t", 0, 10, config=cfg)
    plan = pm.plan_fetch(3)
    pm.fetched(plan, [(10, 13)])
    assert pm.pending_count == pending                                  # edge 30
    assert pm.commit_offset() == 13 and pm.fail(11) is False and len(pm.retry) == 0
    pm.mark_committed(13)
    assert pm.commit_offset() is None
    assert pm.plan_fetch(3) is not None                                 # limit ignored


def test_retry_out_of_range_keeps_the_position_and_acks_only_what_is_gone():
    pm = alo(0)
    take(pm, 8)
    pm.ack_ranges([(3, 8)])
    pm.fail(1)
    pm.fail(2)
    lost = pm.out_of_range(pm.plan_fetch(5), earliest=2, latest=30)
    assert lost == 1 and pm.emitted_to == 8                 # 2 still exists: retried
    assert list(pm.retry) == [2]
    pm.ack(0)
    assert pm.commit_offset() == 2


def test_at_least_once_commits_past_a_log_ending_in_transaction_markers():
    pm = alo(0)
    take(pm, 3)
    pm.ack_ranges([(0, 3)])
    pm.fetched(pm.plan_fetch(10), [], scanned_to=5)   # 3 and 4: markers, never delivered
    assert pm.emitted_to == 5 and pm.commit_offset() == 5
    pm.mark_committed(5)
    take(pm, 2)                                       # 5 and 6 in flight: nothing to pass
    assert pm.commit_offset() is None
    pm.ack_ranges([(5, 7)])
    assert pm.commit_offset() == 7
