"""KafkaSpoutRetryExponentialBackoff (edge cases 17, 18, 23)."""

import pytest

from storm_kafka_compat.config.kafka_spout_retry import INT_MAX, RetrySettings, TimeInterval
from storm_kafka_compat.spout.client.retry import RetryService
from storm_kafka_compat.errors import ConfigError

MS = 1_000_000


@pytest.mark.parametrize("num_fails, delay_ms", [
    (1, 0), (2, 4), (3, 8), (4, 16), (10, 1024), (11, 2048), (12, 4096), (13, 8192),
    (14, 10_000), (20, 10_000),
])
def test_default_schedule(num_fails, delay_ms):
    assert RetrySettings().delay_nanos(num_fails) == delay_ms * MS


@pytest.mark.parametrize("num_fails", [43, 44, 45, 63, 64, 65, 1000])
def test_large_fail_counts_clamp_at_max_delay_instead_of_overflowing(num_fails):
    # Java wraps negative from the 44th failure and retries at once; we clamp
    assert RetrySettings().delay_nanos(num_fails) == 10_000 * MS


def test_custom_settings_initial_delay_and_cap():
    s = RetrySettings(TimeInterval.milli_seconds(500), TimeInterval.milli_seconds(100), 3,
                      TimeInterval.seconds(1))
    assert [s.delay_nanos(n) // MS for n in (1, 2, 3, 4, 5)] == [500, 200, 400, 800, 1000]


def test_zero_period_means_no_delay_after_the_first():
    s = RetrySettings(TimeInterval.seconds(1), TimeInterval(0), INT_MAX, TimeInterval.seconds(5))
    assert [s.delay_nanos(n) for n in (1, 2, 70)] == [1000 * MS, 0, 0]


def test_schedule_due_and_ready_with_a_simulated_clock():
    now = [1000]
    r = RetryService(RetrySettings(TimeInterval.milli_seconds(50),
                                   TimeInterval.milli_seconds(10), INT_MAX,
                                   TimeInterval.seconds(1)), lambda: now[0])
    assert r.schedule(7, 1) and r.schedule(3, 2)     # due at 1050 and 1020
    assert r.due_offsets() == [] and len(r) == 2
    now[0] = 1020
    assert r.due_offsets() == [3] and r.is_ready(3) and not r.is_ready(7)
    now[0] = 1050
    assert r.due_offsets() == [3, 7] and r.earliest_retriable_offset() == 3
    assert r.remove(3) and not r.remove(3)
    assert r.due_offsets() == [7] and r.is_scheduled(7) and not r.is_scheduled(3)


@pytest.mark.parametrize("max_retries, fails_scheduled", [
    (0, []), (1, [1]), (3, [1, 2, 3]),
])
def test_max_retries_is_the_number_of_re_emits(max_retries, fails_scheduled):
    r = RetryService(RetrySettings(max_retries=max_retries))
    assert [n for n in range(1, 6) if r.schedule(5, n)] == fails_scheduled


def test_a_refused_schedule_drops_an_existing_one():
    r = RetryService(RetrySettings(max_retries=1))
    assert r.schedule(5, 1)
    assert not r.schedule(5, 2)
    assert len(r) == 0


@pytest.mark.parametrize("value, nanos", [
    (0, 0), (250, 250 * MS), ("2ms", 2 * MS), ("10s", 10_000 * MS), ("500us", 500_000),
    ("3 seconds", 3000 * MS), ({"length": 2, "timeUnit": "SECONDS"}, 2000 * MS),
    ({"length": 7, "timeUnit": "MICROSECONDS"}, 7000),
])
def test_time_interval_parse(value, nanos):
    assert TimeInterval.parse(value, "k").nanos == nanos


@pytest.mark.parametrize("value", [-1, True, "2 fortnights", "ms", {"length": -1},
                                   {"length": 1, "timeUnit": "YEARS"}, [1]])
def test_time_interval_parse_rejects(value):
    with pytest.raises(ConfigError) as e:
        TimeInterval.parse(value, "kafkaSpout.retry.maxDelay")
    assert e.value.key == "kafkaSpout.retry.maxDelay"
    assert "time interval" in str(e.value)


def test_remove_range_and_below():
    r = RetryService()
    for o in (1, 5, 9, 12):
        r.schedule(o, 1)
    r.remove_range(4, 10)
    assert list(r) == [1, 12]
    assert r.remove_below(12) == [1]
    assert list(r) == [12]
