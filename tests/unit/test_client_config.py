"""KafkaSpoutConfig fields, defaults and validation (edge case 31)."""

import pytest

from storm_kafka_compat.config.kafka_spout import (KafkaSpoutConfig, kafka_spout_config_from_dict,
                                              migration_hint)
from storm_kafka_compat.config.kafka_spout_retry import INT_MAX, RetrySettings, TimeInterval
from storm_kafka_compat.errors import ConfigError

BASE = {"groupId": "g", "bootstrapServers": "127.0.0.1:9092", "topics": ["a"]}


def test_storm_defaults():
    c = KafkaSpoutConfig()
    assert (c.first_poll_offset_strategy, c.processing_guarantee) == (
        "UNCOMMITTED_EARLIEST", "AT_LEAST_ONCE")
    assert (c.offset_commit_period_ms, c.max_uncommitted_offsets, c.poll_timeout_ms,
            c.partition_refresh_period_ms) == (30_000, 10_000_000, 200, 2_000)
    assert (c.emit_null_tuples, c.tuple_tracking_enforced) == (False, False)
    assert c.retry == RetrySettings(TimeInterval.seconds(0), TimeInterval.milli_seconds(2),
                                    INT_MAX, TimeInterval.seconds(10))
    assert c.offset_store == "kafka"


def test_full_section_under_storm_names():
    c = kafka_spout_config_from_dict({
        **BASE, "firstPollOffsetStrategy": "earliest", "processingGuarantee": "AT_MOST_ONCE",
        "offsetCommitPeriodMs": 1000, "maxUncommittedOffsets": 5, "pollTimeoutMs": 50,
        "partitionRefreshPeriodMs": 100, "emitNullTuples": True, "tupleTrackingEnforced": True,
        "retry": {"initialDelay": "1s", "delayPeriod": 5, "maxRetries": 3, "maxDelay": "2s"},
        "consumer": {"max.poll.records": 7, "security.protocol": "PLAINTEXT"}})
    assert c.first_poll_offset_strategy == "EARLIEST"
    assert c.processing_guarantee == "AT_MOST_ONCE"
    assert c.retry.max_retries == 3 and c.retry.delay_period == TimeInterval.milli_seconds(5)
    assert c.max_poll_records == 7 and c.consumer["security.protocol"] == "PLAINTEXT"
    assert c.bootstrap_servers == ("127.0.0.1:9092",) and c.topics == ("a",)


def test_snake_case_names_are_accepted():
    c = kafka_spout_config_from_dict({**BASE, "max_uncommitted_offsets": 9})
    assert c.max_uncommitted_offsets == 9


@pytest.mark.parametrize("guarantee, given, expected", [
    ("AT_LEAST_ONCE", None, "earliest"), ("AT_MOST_ONCE", None, "latest"),
    ("NO_GUARANTEE", None, "latest"), ("AT_LEAST_ONCE", "latest", "latest"),
])
def test_auto_offset_reset_default_per_guarantee(guarantee, given, expected):
    consumer = {} if given is None else {"auto.offset.reset": given}
    c = kafka_spout_config_from_dict({**BASE, "processingGuarantee": guarantee,
                                      "consumer": consumer})
    assert c.auto_offset_reset == expected


def test_group_and_servers_from_consumer_properties():
    c = kafka_spout_config_from_dict({"topics": "a", "consumer": {
        "group.id": "g2", "bootstrap.servers": "h:1,h:2"}})
    assert c.group_id == "g2" and c.bootstrap_servers == ("h:1", "h:2")
    assert "group.id" not in c.consumer


def test_defaults_from_the_other_sections():
    c = kafka_spout_config_from_dict({"groupId": "g"}, default_topic="t.*", default_pattern=True,
                                     default_servers=("h:1",))
    assert c.topic_pattern == "t.*" and c.topics is None and c.bootstrap_servers == ("h:1",)
    assert c.matches("t1") and not c.matches("xt1")


@pytest.mark.parametrize("mapping, key, words", [
    ({**BASE, "maxUncommitedOffsets": 1}, "kafkaSpout.maxUncommitedOffsets", "did you mean"),
    ({**BASE, "consumer": {"enable.auto.commit": True}},
     "kafkaSpout.consumer.enable.auto.commit", "NO_GUARANTEE"),
    ({**BASE, "firstPollOffsetStrategy": "TIMESTAMP"}, "kafkaSpout.firstPollOffsetStrategy",
     "Trident"),
    ({**BASE, "processingGuarantee": "EXACTLY_ONCE"}, "kafkaSpout.processingGuarantee",
     "AT_LEAST_ONCE"),
    ({**BASE, "maxUncommittedOffsets": 0}, "kafkaSpout.maxUncommittedOffsets", "1.."),
    ({**BASE, "offsetCommitPeriodMs": "10"}, "kafkaSpout.offsetCommitPeriodMs", "integer"),
    ({**BASE, "emitNullTuples": "yes"}, "kafkaSpout.emitNullTuples", "true or false"),
    ({**BASE, "topicPattern": "("}, "kafkaSpout.topicPattern", "regex"),
    ({**BASE, "topicPattern": "a.*"}, "kafkaSpout.topicPattern", "not both"),
    ({"bootstrapServers": "h:1", "topics": "a"}, "kafkaSpout.groupId", "consumer group"),
    ({"groupId": "g", "topics": "a"}, "kafkaSpout.bootstrapServers", "bootstrap"),
    ({**BASE, "retry": {"maxRetry": 1}}, "kafkaSpout.retry.maxRetry", "maxRetries"),
    ({**BASE, "offsetStore": "redis"}, "kafkaSpout.offsetStore", "zookeeper, kafka"),
    ({**BASE, "consumer": {"auto.offset.reset": "smallest"}},
     "kafkaSpout.consumer.auto.offset.reset", "earliest"),
])
def test_invalid_values_name_the_key_and_the_fix(mapping, key, words):
    with pytest.raises(ConfigError) as e:
        kafka_spout_config_from_dict(mapping)
    assert e.value.key == key
    assert words in str(e.value)


def test_zookeeper_store_needs_no_group():
    c = kafka_spout_config_from_dict({"offsetStore": "zookeeper"})
    assert not c.uses_kafka_store


@pytest.mark.parametrize("start, force, strategy", [
    (-2, True, "EARLIEST"), (-2, False, "UNCOMMITTED_EARLIEST"),
    (-1, True, "LATEST"), (-1, False, "UNCOMMITTED_LATEST"),
])
def test_storm_kafka_settings_map_to_a_strategy(start, force, strategy):
    assert migration_hint(start, force) == strategy
