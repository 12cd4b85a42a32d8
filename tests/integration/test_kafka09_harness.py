"""The real-Kafka harness itself (storm_kafka_compat.workshop.servers.kafka) on Apache Kafka
0.9.0.1."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.integration


def test_package_is_cached_and_verified():
    from storm_kafka_compat.workshop.servers.kafka_package import (KAFKA_VERSION, NPM_SHASUM,
                                                                   _package_dir, kafka_classpath,
                                                                   kafka_libs)
    libs = kafka_libs()
    assert (libs / f"kafka-clients-{KAFKA_VERSION}.jar").is_file()
    assert kafka_libs() == libs            # second call: the cache, no download
    assert "-javadoc.jar" not in kafka_classpath()
    assert _package_dir().is_dir() and len(NPM_SHASUM) == 40
    int(NPM_SHASUM, 16)


def test_batching_producer_gives_an_exact_high_watermark(kafka09, kafka09_topic):
    from storm_kafka_compat.workshop.servers.kafka_clients import log_range, produce
    topic = kafka09_topic(partitions=3)
    written = produce(kafka09.bootstrap, topic, [(i % 3, None, b"v%d" % i) for i in range(3001)])
    assert written == 3001
    assert [log_range(kafka09.bootstrap, topic, p) for p in range(3)] == [
        (0, 1001), (0, 1000), (0, 1000)]


def test_broker_registers_itself_as_zkhosts_reads_it(kafka09, kafka09_topic):
    import json
    topic = kafka09_topic(partitions=2)
    zk = kafka09.zk()
    (broker_id,) = kafka09.live_brokers()
    registration = json.loads(zk.get(f"/brokers/ids/{broker_id}")[0])
    assert registration["host"] == "127.0.0.1"
    assert registration["port"] == kafka09.brokers[0].port
    assert registration["version"] == 2             # Kafka 0.9 writes version 2
    state = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/1/state")[0])
    assert state["leader"] == broker_id and state["isr"] == [broker_id]


def test_two_brokers_replicate_and_elect_a_new_leader_after_a_kill(kafka09_factory, unique):
    from storm_kafka_compat.workshop.servers.kafka_clients import log_range, produce
    cluster = kafka09_factory(2)
    topic = unique("topic")
    cluster.create_topic(topic, partitions=2, replication=2)
    produce(cluster.bootstrap, topic, [(i % 2, None, b"x") for i in range(200)])
    victim = cluster.leader(topic, 0)
    pid = cluster.broker(victim).pid
    cluster.broker(victim).kill()
    assert cluster.broker(victim).pid is None and pid is not None
    leaders = cluster.wait_for_leaders(topic, 2, exclude=[victim])
    assert set(leaders.values()) == {3 - victim}
    assert log_range(cluster.bootstrap, topic, 0) == (0, 100)   # nothing lost: acks=all
    cluster.broker(victim).start()
    cluster.wait_for_brokers(2)
    assert victim in cluster.live_brokers()


def test_topic_retention_deletes_old_segments(kafka09, kafka09_topic):
    """On the session broker (retention runs 30 s after a broker starts, then every
    second here)."""
    from storm_kafka_compat.workshop.servers.kafka_clients import log_range, produce
    topic = kafka09_topic(1, config={"segment.bytes": 2048, "retention.bytes": 4096})
    produce(kafka09.bootstrap, topic, [(0, None, b"m" * 100) for _ in range(300)],
            batch_size=1024)
    deadline = time.monotonic() + 60
    while log_range(kafka09.bootstrap, topic, 0)[0] == 0:
        assert time.monotonic() < deadline, "retention never deleted a segment"
        time.sleep(0.2)
    start, end = log_range(kafka09.bootstrap, topic, 0)
    assert 0 < start < end == 300
