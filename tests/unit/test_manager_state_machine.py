"""A hypothesis state machine drives a PartitionManager with random fetches, acks,
fails, clock steps, out-of-range events and restarts, against a simple model.

Invariant: the committed offset never passes an offset that is neither acked nor
given up, unless it was counted as given up, vanished or lost; and pending
memory stays within its bound.
"""

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from storm_kafka_compat.config import SpoutConfig, StaticHosts
from storm_kafka_compat.spout.manager import PartitionManager


class Clock:
    def __init__(self):
        self.t = 0

    def __call__(self):
        return self.t


class ManagerMachine(RuleBasedStateMachine):
    @initialize(limit=st.sampled_from([-1, 2]), cap=st.sampled_from([None, 16]))
    def setup(self, limit, cap):
        self.clock = Clock()
        self.cfg = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="s",
                               retry_initial_delay_ms=10, retry_delay_multiplier=2.0,
                               retry_delay_max_ms=100, retry_limit=limit,
                               max_pending_per_partition=cap)
        self.log_start, self.log_end = 0, 40
        self.pm = PartitionManager("t", 0, 0, config=self.cfg, clock=self.clock)
        self.acked = set()        # offsets whose processing completed (acked or given up)
        self.excused = set()      # offsets skipped on purpose and counted (lost)
        self.in_flight = set()    # taken and neither acked nor failed yet
        self.stored = None        # what ZooKeeper holds

    def _fetch(self, plan, n):
        existing = range(self.log_start, self.log_end)
        taken = [o for o in existing if plan.takes(o)][:plan.max_messages or n][:n]
        self.pm.fetched(plan, [(o, o + 1) for o in taken],
                        scanned_to=(taken[-1] + 1) if taken else None)
        self.in_flight |= set(taken)

    @rule(n=st.integers(1, 8))
    def fetch(self, n):
        plan = self.pm.plan_fetch(max_messages=n)
        if plan is None:
            return
        if plan.offset < self.log_start or plan.offset > self.log_end:
            self.out_of_range_for(plan)
            return
        self._fetch(plan, n)

    def out_of_range_for(self, plan):
        before = self.pm.emitted_to
        lost_before = self.pm.total_lost
        self.pm.out_of_range(plan, self.log_start, self.log_end)
        # everything the jump or the clean-up skipped is counted as lost
        skipped = set(range(before, self.pm.emitted_to))
        dropped_pending = {o for o in self.in_flight | self.failed_offsets()
                           if o not in self.pm.pending}
        self.excused |= skipped | dropped_pending | set(range(0, self.log_start))
        self.in_flight -= dropped_pending
        assert self.pm.total_lost >= lost_before

    def failed_offsets(self):
        return {o for o in self.pm.pending if o not in self.in_flight}

    @precondition(lambda self: self.in_flight)
    @rule(data=st.data())
    def ack(self, data):
        o = data.draw(st.sampled_from(sorted(self.in_flight)))
        self.in_flight.discard(o)
        self.pm.ack(o)
        self.acked.add(o)

    @precondition(lambda self: self.in_flight)
    @rule(data=st.data())
    def fail(self, data):
        o = data.draw(st.sampled_from(sorted(self.in_flight)))
        self.in_flight.discard(o)
        given_up = self.pm.total_given_up
        self.pm.fail(o)
        if self.pm.total_given_up > given_up:
            self.acked.add(o)     # given up counts as done (and is counted)

    @rule(ms=st.integers(0, 120))
    def tick(self, ms):
        self.clock.t += ms

    @rule()
    def commit(self):
        offset = self.pm.commit_offset()
        if offset is not None:
            self.pm.mark_committed(offset)
            self.stored = offset

    @rule(n=st.integers(1, 10))
    def retention(self, n):
        self.log_start = min(self.log_start + n, self.log_end)

    @rule(n=st.integers(1, 10))
    def produce(self, n):
        self.log_end += n

    @rule()
    def restart(self):
        """The job dies: in-flight work is gone; a new manager resumes from ZooKeeper."""
        start = self.stored if self.stored is not None else 0
        self.pm = PartitionManager("t", 0, start, config=self.cfg, clock=self.clock)
        self.in_flight = set()

    @invariant()
    def committed_never_passes_unfinished_work(self):
        if self.stored is None:
            return
        unfinished = {o for o in range(0, self.stored)
                      if o not in self.acked and o not in self.excused}
        assert not unfinished, f"committed {self.stored} passes unfinished {sorted(unfinished)[:5]}"

    @invariant()
    def pending_memory_is_bounded(self):
        cap = self.cfg.max_pending_per_partition
        if cap is not None:
            assert len(self.pm.pending) <= cap
        # ranges never outnumber offsets, and retries are a subset of pending
        assert self.pm.pending.range_count <= max(len(self.pm.pending), 0) or not self.pm.pending
        assert len(self.pm.retry) <= len(self.pm.pending)


ManagerMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=60,
                                            deadline=None)
TestManagerMachine = ManagerMachine.TestCase
