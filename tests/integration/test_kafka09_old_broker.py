"""Old-broker support against a real Apache Kafka 0.9.0.1 broker: ``kafka.api_version``
reaches each fetch backend in its own words, 0.9's timestamp-less records flow through,
and a missing version is reported with the setting to add.

The job runs as ``storm-kafka-compat run CONFIG`` (console script, Spark local[2]) with
ZkHosts reading the registry the broker wrote itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml

from storm_kafka_compat.offsets.document import encode_document, parse_document
from tests.bolts import read_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("storm-kafka-compat")


def _env(record: Path) -> Dict[str, str]:
    return dict(os.environ, STORM_KAFKA_COMPAT_TEST_RECORD=str(record),
                PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
                PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                         os.environ.get("PYTHONPATH")])))


def _config(tmp_path: Path, kafka09: Any, topic: str, zk_root: str, kafka: Dict[str, Any],
            scheme: str = "string") -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": zk_root, "id": "old-broker", "scheme": scheme},
        "hosts": {"zk": kafka09.zk_connect},
        "topology": {"topology.name": "old-broker", "topology.id": "old-broker-1-1",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": kafka09.zookeeper.port},
        "spark": {"master": "local[2]"},
        "bolt": "tests.bolts:record",
        "kafka": kafka,
    }))
    return path


@pytest.mark.parametrize("backend, version", [("kafka-python", [0, 9]),
                                              ("confluent", "0.9.0.1")])
def test_run_processes_a_09_topic_once_with_either_backend(tmp_path, kafka09, kafka09_topic,
                                                           zk_root, backend, version):
    if backend == "confluent":
        pytest.importorskip("confluent_kafka", reason="the confluent extra is not installed")
    n, partitions = 3000, 3
    topic = kafka09_topic(partitions, [(i % partitions, None, f"m{i}".encode())
                                       for i in range(n)])
    config = _config(tmp_path, kafka09, topic, zk_root,
                     {"backend": backend, "api_version": version})
    record = tmp_path / "records.jsonl"
    res = subprocess.run([str(CLI), "run", str(config), "--until-caught-up"], cwd=REPO,
                         env=_env(record), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    seen = [(r["partition"], r["offset"]) for r in read_records(str(record))]
    assert len(seen) == n and len(set(seen)) == n            # every message once
    values = {r["value"] for r in read_records(str(record))}
    assert values == {f"m{i}" for i in range(n)}
    zk = kafka09.zk()
    for p in range(partitions):
        data, _ = zk.get(f"{zk_root}/old-broker/partition_{p}")
        doc = parse_document(data)
        assert doc.offset == n // partitions
        # Storm's bytes, the leader as the registry names it
        assert data == encode_document(topology_id="old-broker-1-1", topology_name="old-broker",
                                       offset=n // partitions, partition=p,
                                       broker_host="127.0.0.1",
                                       broker_port=kafka09.brokers[0].port, topic=topic)


def test_v0_records_carry_no_timestamp(tmp_path, kafka09, kafka09_topic):
    """Message format v0 has no timestamp: both adapters report -1, as Kafka's
    clients do, instead of crashing."""
    from storm_kafka_compat.config import SpoutConfig, StaticHosts
    from storm_kafka_compat.kafka.client import NO_TIMESTAMP, NO_TIMESTAMP_TYPE
    from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
    topic = kafka09_topic(1, [(0, b"k", b"v")])
    spout = SpoutConfig(hosts=StaticHosts({}), topic=topic, zk_root="/r", id="i")
    with KafkaPythonAccess(kafka09.bootstrap, spout, {"api_version": (0, 9)}) as access:
        (m,) = access.fetch(topic, 0, 0)
    assert (m.timestamp, m.timestamp_type, m.key, m.value) == (
        NO_TIMESTAMP, NO_TIMESTAMP_TYPE, b"k", b"v")
    pytest.importorskip("confluent_kafka", reason="the confluent extra is not installed")
    from storm_kafka_compat.kafka.confluent import ConfluentAccess
    with ConfluentAccess(kafka09.bootstrap, spout,
                         {"api.version.request": False,
                          "broker.version.fallback": "0.9.0"}) as access:
        (m,) = access.fetch(topic, 0, 0)
    assert (m.timestamp, m.timestamp_type, m.value) == (NO_TIMESTAMP, NO_TIMESTAMP_TYPE, b"v")


def test_without_a_version_the_error_names_the_setting(tmp_path, kafka09, kafka09_topic, zk_root):
    topic = kafka09_topic(1, [(0, None, b"x")])
    config = _config(tmp_path, kafka09, topic, zk_root, {})
    res = subprocess.run([str(CLI), "offsets", "show", str(config)], cwd=REPO,
                         env=_env(tmp_path / "r.jsonl"), capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 1
    error = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1, res.stderr[-2000:]
    assert kafka09.brokers[0].bootstrap in error[0]
    assert 'api_version: "0.9"' in error[0] and "older than Kafka 0.10" in error[0]


def test_config_check_refuses_librdkafka_settings_for_kafka_python(tmp_path, kafka09, zk_root):
    config = _config(tmp_path, kafka09, "t", zk_root,
                     {"api_version": "0.9", "fetch.queue.backoff.ms": 10})
    res = subprocess.run([str(CLI), "config", "check", str(config)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "fetch.queue.backoff.ms" in res.stderr and "backend: confluent" in res.stderr
    config = _config(tmp_path, kafka09, "t", zk_root,
                     {"api_version": [0, 9], "backend": "confluent",
                      "fetch.queue.backoff.ms": 10})
    res = subprocess.run([str(CLI), "config", "check", "--json", str(config)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["kafka"]["fetch.queue.backoff.ms"] == 10


def test_a_time_start_is_refused_with_the_reason_on_a_09_broker(kafka09, kafka09_topic):
    """0.9 records carry no timestamps and 0.9 has no ListOffsets v1: a
    startOffsetTime given as a time cannot be resolved (deviation 5); the error
    says so and what to use instead, while -2/-1 work."""
    from storm_kafka_compat.config import SpoutConfig, StaticHosts
    from storm_kafka_compat.errors import KafkaAccessError
    from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
    topic = kafka09_topic(1, [(0, None, b"a"), (0, None, b"b")])
    spout = SpoutConfig(hosts=StaticHosts({}), topic=topic, zk_root="/r", id="i")
    with KafkaPythonAccess(kafka09.bootstrap, spout, {"api_version": (0, 9)}) as access:
        assert (access.offset_for(topic, 0, -2), access.offset_for(topic, 0, -1)) == (0, 2)
        with pytest.raises(KafkaAccessError) as err:
            access.offset_for(topic, 0, 1_700_000_000_000)
    assert "0.10.1" in str(err.value) and "startOffsetTime -2" in str(err.value)


def test_the_log_end_a_fetch_saw_is_the_brokers_high_watermark(kafka09, kafka09_topic):
    """What a task stops at (KafkaAccess.fetched_log_end): the high watermark of the
    real broker's fetch response, for both adapters, with no extra request; unknown
    before the first fetch."""
    from storm_kafka_compat.config import SpoutConfig, StaticHosts
    from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
    topic = kafka09_topic(2, [(i % 2, None, b"m%d" % i) for i in range(501)])
    spout = SpoutConfig(hosts=StaticHosts({}), topic=topic, zk_root="/r", id="i")
    with KafkaPythonAccess(kafka09.bootstrap, spout, {"api_version": (0, 9)}) as access:
        assert access.fetched_log_end(topic, 0) is None
        assert len(access.fetch_batch(topic, 0, 0, max_messages=10)) == 10
        assert access.fetched_log_end(topic, 0) == 251
        access.fetch(topic, 1, 100)
        assert access.fetched_log_end(topic, 1) == 250
    pytest.importorskip("confluent_kafka", reason="the confluent extra is not installed")
    from storm_kafka_compat.kafka.confluent import ConfluentAccess
    with ConfluentAccess(kafka09.bootstrap, spout,
                         {"api.version.request": False,
                          "broker.version.fallback": "0.9.0"}) as access:
        assert access.fetched_log_end(topic, 0) is None
        access.fetch(topic, 0, 0, max_messages=10)
        assert access.fetched_log_end(topic, 0) == 251
