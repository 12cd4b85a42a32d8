"""The ``kafka`` mapping split by client (storm_kafka_compat.config.kafka_settings)."""

from __future__ import annotations

import pytest

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.kafka_settings import (KafkaSettings, check_client_settings,
                                               kafka_settings_from_dict, parse_api_version)


@pytest.mark.parametrize("value, expected", [
    ("0.9", (0, 9)), ("0.9.0.1", (0, 9, 0, 1)), ([0, 9], (0, 9)), ((0, 10, 2), (0, 10, 2)),
    ("2.8", (2, 8)), (0.9, (0, 9)), ("auto", None), (None, None), (" 0.10.1 ", (0, 10, 1)),
])
def test_api_version_forms(value, expected):
    assert parse_api_version(value) == expected


@pytest.mark.parametrize("value", ["nine", "0", [0], [0, "9"], [0, -1], True, {"v": 1}, "0.9.x"])
def test_bad_api_version_names_the_value_and_the_forms(value):
    with pytest.raises(ConfigError) as err:
        parse_api_version(value)
    assert repr(value) in str(err.value) and '"0.9"' in str(err.value)
    assert err.value.key == "kafka.api_version"


def test_old_broker_version_reaches_each_client_in_its_own_words():
    s = kafka_settings_from_dict({"backend": "confluent", "api_version": [0, 9],
                                  "security_protocol": "SSL", "fetch.queue.backoff.ms": 10})
    assert s.for_kafka_python() == {"api_version": (0, 9), "security_protocol": "SSL"}
    assert s.for_librdkafka() == {"api.version.request": False,
                                  "broker.version.fallback": "0.9.0",
                                  "security.protocol": "SSL", "fetch.queue.backoff.ms": 10}
    assert s.for_backend() == s.for_librdkafka()
    assert s.for_backend("kafka-python") == s.for_kafka_python()


def test_new_broker_version_keeps_the_librdkafka_probe():
    s = kafka_settings_from_dict({"backend": "confluent", "api_version": "2.8"})
    assert s.for_librdkafka() == {"broker.version.fallback": "2.8.0"}
    assert s.for_kafka_python() == {"api_version": (2, 8)}


def test_librdkafka_fallback_alone_sets_the_kafka_python_version():
    s = kafka_settings_from_dict({"backend": "confluent", "broker.version.fallback": "0.9.0.1",
                                  "api.version.request": False})
    assert s.api_version == (0, 9, 0, 1)
    assert s.for_kafka_python() == {"api_version": (0, 9, 0, 1)}
    assert s.for_librdkafka()["broker.version.fallback"] == "0.9.0.1"


def test_explicit_sub_sections_go_verbatim_to_their_client():
    s = kafka_settings_from_dict({"backend": "confluent",
                                  "kafkaPython": {"metadata_max_age_ms": 1000},
                                  "librdkafka": {"debug": "fetch"},
                                  "bootstrap_servers": "a:1, b:2"})
    assert s.bootstrap_servers == ("a:1", "b:2")
    assert s.for_kafka_python() == {"metadata_max_age_ms": 1000}
    assert s.for_librdkafka() == {"debug": "fetch"}


def test_dotted_settings_with_the_kafka_python_backend_are_refused():
    with pytest.raises(ConfigError) as err:
        kafka_settings_from_dict({"fetch.queue.backoff.ms": 10})
    assert "fetch.queue.backoff.ms" in str(err.value) and "backend: confluent" in str(err.value)


def test_unknown_backend_is_refused():
    with pytest.raises(ConfigError, match="kafka-python, confluent"):
        kafka_settings_from_dict({"backend": "rdkafka"})


def test_defaults_when_absent():
    assert kafka_settings_from_dict(None) == KafkaSettings()
    assert KafkaSettings().for_backend() == {}


def test_client_key_check_names_the_unknown_key():
    check_client_settings(kafka_settings_from_dict({"security_protocol": "SSL",
                                                    "api_version": "0.9"}))
    with pytest.raises(ConfigError) as err:
        check_client_settings(kafka_settings_from_dict({"fetch_queue_backoff_ms": 10}))
    assert "kafka.fetch_queue_backoff_ms" in str(err.value)
    assert "fetch.queue.backoff.ms" in str(err.value)


def test_librdkafka_key_check_uses_librdkafka():
    pytest.importorskip("confluent_kafka", reason="the confluent extra is not installed")
    check_client_settings(kafka_settings_from_dict({"backend": "confluent",
                                                    "fetch.queue.backoff.ms": 10}))
    with pytest.raises(ConfigError, match="no.such.setting"):
        check_client_settings(kafka_settings_from_dict({"backend": "confluent",
                                                        "no.such.setting": 1}))


def test_job_config_rejects_a_malformed_kafka_section():
    from storm_kafka_compat.config import job_config_from_dict
    base = {"spout": {"topic": "t", "zkRoot": "/r", "id": "i"},
            "hosts": {"bootstrap": "127.0.0.1:9092"},
            "topology": {"topology.name": "n"}, "bolt": "m:f"}
    job = job_config_from_dict({**base, "kafka": {"api_version": [0, 9]}})
    assert job.kafka_settings.for_kafka_python() == {"api_version": (0, 9)}
    with pytest.raises(ConfigError, match="api_version"):
        job_config_from_dict({**base, "kafka": {"api_version": "zero"}})


def test_librdkafka_warnings_about_old_broker_settings_are_demoted():
    import logging
    pytest.importorskip("confluent_kafka", reason="the confluent extra is not installed")
    from storm_kafka_compat.kafka.confluent import _LIBRDKAFKA_LOG
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append((record.levelno, record.getMessage()))

    handler = Keep(level=logging.WARNING)
    _LIBRDKAFKA_LOG.addHandler(handler)
    try:
        _LIBRDKAFKA_LOG.warning("CONFWARN Configuration property api.version.request is "
                                "deprecated: ...")
        _LIBRDKAFKA_LOG.warning("FAIL 127.0.0.1:9: Connect to ipv4#127.0.0.1:9 failed")
    finally:
        _LIBRDKAFKA_LOG.removeHandler(handler)
    assert [m for _, m in seen] == ["FAIL 127.0.0.1:9: Connect to ipv4#127.0.0.1:9 failed"]


@pytest.mark.parametrize("mapping,kafka_python,librdkafka", [
    ({}, "read_uncommitted", "read_uncommitted"),     # one default for both backends
    ({"isolation_level": "read_committed"}, "read_committed", "read_committed"),
    ({"backend": "confluent", "isolation.level": "read_committed"},
     "read_uncommitted", "read_committed"),           # librdkafka's own name: it alone
])
def test_the_isolation_level_is_one_setting_both_backends_read(mapping, kafka_python, librdkafka):
    from storm_kafka_compat.config import SpoutConfig, StaticHosts
    from storm_kafka_compat.kafka import confluent_settings as confluent
    from storm_kafka_compat.kafka import kafka_python_settings as kp
    settings = kafka_settings_from_dict(mapping)
    spout = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="i")
    assert kp.consumer_config("h:1", spout, settings.for_kafka_python())[
        "isolation_level"] == kafka_python
    assert confluent.consumer_config("h:1", spout, settings.for_librdkafka())[
        "isolation.level"] == librdkafka


def test_an_oversized_record_is_reported_once_per_partition_with_the_setting(caplog):
    """Any record of a batch counts, not only its first: a client joins what several
    fetches brought (CI once saw librdkafka hand a small record and the oversized one
    after it in one answer, and nothing was said)."""
    from storm_kafka_compat.kafka.client import RecordBatch, warn_oversized
    big, small = b"x" * 300_000, b"small"
    warned: set = set()
    warn_oversized(warned, RecordBatch("t", 0, [5, 6], [small, None], []), 65_536)
    assert not caplog.records and not warned
    warn_oversized(warned, RecordBatch("t", 0, [6, 7, 8], [None, big, big], []), 65_536)
    warn_oversized(warned, RecordBatch("t", 0, [9], [big], []), 65_536)
    warn_oversized(warned, RecordBatch("t", 1, [3], [big], []), 65_536)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and "offset 7" in lines[0] and "t/1" in lines[1]
    assert "raise spout.fetchSizeBytes" in lines[0] and "300000 bytes" in lines[0]


@pytest.mark.parametrize("fetch_size_bytes", [1000, 65_536, 1024 * 1024, 50 * 1024 * 1024])
def test_librdkafka_accepts_every_fetch_size(fetch_size_bytes):
    """librdkafka refuses fetch.max.bytes below message.max.bytes, even in a consumer."""
    confluent_kafka = pytest.importorskip("confluent_kafka",
                                          reason="confluent-kafka (the confluent extra) is absent")
    from storm_kafka_compat.config import SpoutConfig, StaticHosts
    from storm_kafka_compat.kafka.confluent_settings import consumer_config
    spout = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="i",
                        fetch_size_bytes=fetch_size_bytes)
    confluent_kafka.Consumer(consumer_config("127.0.0.1:9", spout)).close()


def test_a_consumer_of_several_partitions_gets_a_whole_response_budget():
    """fetchSizeBytes bounds each partition of a fetch and a one-partition consumer's
    whole response; a consumer holding several partitions gets at least Kafka's 50 MiB
    for the response (one response then carries several partitions)."""
    from storm_kafka_compat.config import SpoutConfig, StaticHosts
    from storm_kafka_compat.config.kafka_settings import GROUP_FETCH_MAX_BYTES
    from storm_kafka_compat.kafka import confluent_settings, kafka_python_settings
    spout = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="i",
                        fetch_size_bytes=65_536)
    kp = kafka_python_settings.consumer_config("h:1", spout)
    assert (kp["max_partition_fetch_bytes"], kp["fetch_max_bytes"]) == (65_536, 65_536)
    group = kafka_python_settings.group_config(kp)
    assert (group["max_partition_fetch_bytes"], group["fetch_max_bytes"]) == (
        65_536, GROUP_FETCH_MAX_BYTES)
    cf = confluent_settings.consumer_config("h:1", spout)
    group = confluent_settings.group_config(cf)
    assert (group["max.partition.fetch.bytes"], group["fetch.max.bytes"]) == (
        65_536, GROUP_FETCH_MAX_BYTES)
    assert group["receive.message.max.bytes"] > group["fetch.max.bytes"]
    huge = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="i",
                       fetch_size_bytes=200 << 20)
    assert kafka_python_settings.group_config(
        kafka_python_settings.consumer_config("h:1", huge))["fetch_max_bytes"] == 200 << 20


def test_librdkafka_accepts_a_groups_settings():
    confluent_kafka = pytest.importorskip("confluent_kafka",
                                          reason="confluent-kafka (the confluent extra) is absent")
    from storm_kafka_compat.config import SpoutConfig, StaticHosts
    from storm_kafka_compat.kafka.confluent_settings import consumer_config, group_config
    for size in (1000, 1024 * 1024, 200 << 20):
        spout = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="i",
                            fetch_size_bytes=size)
        confluent_kafka.Consumer(group_config(consumer_config("127.0.0.1:9", spout))).close()
