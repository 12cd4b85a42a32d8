"""ExponentialBackoffMsgRetryManager: Storm's schedule, ordering and limits."""

import pytest

from storm_kafka_compat.config import LONG_MAX, SpoutConfig, StaticHosts
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.spout.retry import (ExponentialBackoffMsgRetryManager,
                                                load_retry_manager)


class Clock:
    def __init__(self, t=1_000):
        self.t = t

    def __call__(self):
        return self.t


def spout(**kw):
    return SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="s", **kw)


def manager(clock, **kw):
    return load_retry_manager(spout(**kw).failed_msg_retry_manager_class, spout(**kw), {}, clock)


def test_worked_example_delays():
    m = manager(Clock(), retry_initial_delay_ms=100, retry_delay_multiplier=2.0,
                retry_delay_max_ms=2000)
    assert [m.delay_ms(n) for n in range(1, 9)] == [100, 200, 400, 800, 1600, 2000, 2000, 2000]


def test_defaults_retry_immediately_and_without_limit():
    clock = Clock()
    m = manager(clock)
    for _ in range(50):
        m.failed(7)
        assert m.next_failed_message_to_retry() == 7 and m.retry_further(7)
        m.retry_started(7)


def test_huge_multiplier_does_not_overflow():
    m = manager(Clock(), retry_initial_delay_ms=1, retry_delay_multiplier=1e308,
                retry_delay_max_ms=LONG_MAX)
    assert m.delay_ms(5) == LONG_MAX


def test_due_retries_come_out_by_retry_time_not_offset():
    clock = Clock()
    m = manager(clock, retry_initial_delay_ms=100, retry_delay_multiplier=2.0)
    m.failed(50)            # due at 1100
    m.failed(10)            # first failure of 10: due at 1100 too
    m.retry_started(10)
    m.failed(10)            # second failure of 10: due at 1000 + 200 = 1200
    assert m.next_failed_message_to_retry() is None
    clock.t = 1100
    assert m.next_failed_message_to_retry() == 50
    assert m.should_re_emit_msg(50) and not m.should_re_emit_msg(10)
    clock.t = 1200
    assert m.next_failed_message_to_retry() == 50 and m.due_offsets() == [10, 50]
    m.retry_started(50)
    assert m.next_failed_message_to_retry() == 10


def test_retry_limit_n_allows_n_reemits():
    m = manager(Clock(), retry_limit=2)
    answers = []
    for _ in range(3):
        answers.append(m.retry_further(3))
        if answers[-1]:
            m.failed(3)
            m.retry_started(3)
    assert answers == [True, True, False]


@pytest.mark.parametrize("limit", [0, -1])
def test_retry_limit_zero_or_negative_is_unlimited(limit):
    m = manager(Clock(), retry_limit=limit)
    for _ in range(20):
        assert m.retry_further(1)
        m.failed(1)
        m.retry_started(1)


def test_retry_started_requires_a_waiting_record():
    m = manager(Clock())
    with pytest.raises(ValueError, match="offset 4"):
        m.retry_started(4)


def test_clear_offsets_before_and_acked():
    m = manager(Clock())
    for o in (1, 5, 9):
        m.failed(o)
    assert m.clear_offsets_before(6) == {1, 5}
    m.acked_range(0, 100)
    assert len(m) == 0 and m.next_failed_message_to_retry() is None


class CountingRetries(ExponentialBackoffMsgRetryManager):
    prepared_with = None

    def prepare(self, spout_config, storm_conf):
        super().prepare(spout_config, storm_conf)
        CountingRetries.prepared_with = spout_config.retry_limit


def test_pluggable_class_is_loaded_and_prepared():
    cfg = spout(retry_limit=4,
                failed_msg_retry_manager_class="tests.unit.test_retry:CountingRetries")
    m = load_retry_manager(cfg.failed_msg_retry_manager_class, cfg, {}, Clock())
    assert isinstance(m, CountingRetries) and CountingRetries.prepared_with == 4


@pytest.mark.parametrize("name", ["com.example.Missing", "tests.unit.test_retry:Clock"])
def test_bad_retry_manager_class_is_a_config_error(name):
    with pytest.raises(ConfigError, match="failedMsgRetryManagerClass"):
        load_retry_manager(name, spout(), {}, Clock())
