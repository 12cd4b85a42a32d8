"""ScriptedKafka answers as Apache Kafka does: out-of-range at both ends,
retention, truncation, a re-created topic, timestamps, scripted errors."""

import pytest

from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, NO_OFFSET, Broker
from storm_kafka_compat.errors import FailedFetchError, OffsetOutOfRangeError
from storm_kafka_compat.kafka import KafkaAccess
from storm_kafka_compat.testing.scripted import ScriptedKafka


class Clock:
    def __init__(self, now: int = 1_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def kafka():
    k = ScriptedKafka(clock=Clock())
    k.create_topic("t", partitions=2)
    k.append("t", 0, *[f"m{i}".encode() for i in range(10)])
    return k


def offsets(msgs):
    return [m.offset for m in msgs]


def test_is_a_kafka_access():
    assert isinstance(ScriptedKafka(), KafkaAccess)


def test_fetch_from_an_offset_with_bounds(kafka):
    assert offsets(kafka.fetch("t", 0, 0)) == list(range(10))
    assert offsets(kafka.fetch("t", 0, 4, max_messages=3)) == [4, 5, 6]
    assert offsets(kafka.fetch("t", 0, 4, max_offset=6)) == [4, 5]
    assert kafka.fetch("t", 0, 4, max_offset=4) == []
    m = kafka.fetch("t", 0, 9)[0]
    assert (m.value, m.key, m.topic, m.partition, m.timestamp) == (b"m9", None, "t", 0, 1000)


def test_fetch_at_log_end_is_empty_beyond_is_out_of_range(kafka):
    assert kafka.fetch("t", 0, 10) == []
    assert kafka.fetch("t", 1, 0) == []
    with pytest.raises(OffsetOutOfRangeError) as err:
        kafka.fetch("t", 0, 11)
    assert (err.value.topic, err.value.partition, err.value.offset) == ("t", 0, 11)


def test_retention_makes_old_offsets_out_of_range(kafka):
    kafka.set_log_start("t", 0, 4)
    assert kafka.offset_for("t", 0, EARLIEST_TIME) == 4
    with pytest.raises(OffsetOutOfRangeError):
        kafka.fetch("t", 0, 3)
    assert offsets(kafka.fetch("t", 0, 4)) == list(range(4, 10))
    with pytest.raises(ValueError):
        kafka.set_log_start("t", 0, 11)
    kafka.set_log_start("t", 0, 10)          # everything deleted: start == end
    assert kafka.fetch("t", 0, 10) == []
    with pytest.raises(OffsetOutOfRangeError):
        kafka.fetch("t", 0, 9)


def test_truncation_moves_the_end_back_and_offsets_are_reused(kafka):
    kafka.truncate("t", 0, 6)
    assert kafka.offset_for("t", 0, LATEST_TIME) == 6
    with pytest.raises(OffsetOutOfRangeError):
        kafka.fetch("t", 0, 8)
    assert kafka.append("t", 0, b"new") == [6]
    assert kafka.fetch("t", 0, 6)[0].value == b"new"


def test_recreated_topic_restarts_at_zero(kafka):
    kafka.recreate_topic("t")
    assert kafka.partitions("t") == 2
    assert kafka.offset_for("t", 0, LATEST_TIME) == 0
    with pytest.raises(OffsetOutOfRangeError):
        kafka.fetch("t", 0, 5)
    kafka.append("t", 0, b"x")
    assert offsets(kafka.fetch("t", 0, 0)) == [0]


def test_offset_for_times_by_message_timestamp():
    clock = Clock(100)
    k = ScriptedKafka(clock=clock)
    k.append("t", 0, b"a", b"b")             # ts 100
    clock.now = 200
    k.append("t", 0, b"c")                   # ts 200
    k.append("t", 0, b"d", timestamp=300)
    assert k.offset_for("t", 0, 50) == 0
    assert k.offset_for("t", 0, 101) == 2
    assert k.offset_for("t", 0, 300) == 3
    assert k.offset_for("t", 0, 301) == NO_OFFSET


def test_compacted_gap_is_skipped(kafka):
    kafka.compact("t", 0, [2, 3])
    assert offsets(kafka.fetch("t", 0, 2, max_messages=2)) == [4, 5]


def test_fetch_size_budget_returns_at_least_one_message():
    k = ScriptedKafka(fetch_size_bytes=5)
    k.append("t", 0, b"x" * 10, b"ab", b"cd", b"ef")
    assert offsets(k.fetch("t", 0, 0)) == [0]          # larger than the budget: still returned
    assert offsets(k.fetch("t", 0, 1)) == [1, 2]


def test_unknown_topic_partition_and_no_leader_are_failed_fetches(kafka):
    with pytest.raises(FailedFetchError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        kafka.fetch("nope", 0, 0)
    with pytest.raises(FailedFetchError):
        kafka.fetch("t", 7, 0)
    kafka.set_leader("t", 1, None)
    with pytest.raises(FailedFetchError, match="LEADER_NOT_AVAILABLE"):
        kafka.fetch("t", 1, 0)
    assert kafka.leaders("t") == {0: Broker("127.0.0.1", 9092)}
    assert kafka.leaders("nope") == {}


def test_scripted_errors_fire_once_each_in_order(kafka):
    boom = FailedFetchError("socket timeout")
    kafka.fail_next("t", 0, boom, times=2)
    for _ in range(2):
        with pytest.raises(FailedFetchError) as err:
            kafka.fetch("t", 0, 0)
        assert err.value.partition == 0 and err.value.topic == "t"
    assert len(kafka.fetch("t", 0, 0)) == 10
    kafka.fail_next("t", 0, OffsetOutOfRangeError("gone"), call="offset_for")
    assert kafka.fetch("t", 0, 9)                     # fetch unaffected
    with pytest.raises(OffsetOutOfRangeError):
        kafka.offset_for("t", 0, EARLIEST_TIME)


def test_leaders_topics_and_call_log(kafka):
    kafka.set_leader("t", 0, Broker("b2", 9093))
    kafka.create_topic("a", 1)
    assert kafka.topics() == ["a", "t"]
    assert kafka.leaders("t")[0] == Broker("b2", 9093)
    kafka.fetch("t", 0, 3)
    kafka.close()
    assert kafka.calls[-3:] == [("leaders", "t"), ("fetch", "t", 0, 3), ("close",)]
    assert kafka.closed


def test_append_auto_creates_and_add_partitions():
    k = ScriptedKafka()
    k.append("auto", 2, "x", key="k")
    assert k.partitions("auto") == 3
    m = k.fetch("auto", 2, 0)[0]
    assert (m.key, m.value) == (b"k", b"x")
    k.add_partitions("auto", 5)
    assert sorted(k.leaders("auto")) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        k.add_partitions("auto", 2)
