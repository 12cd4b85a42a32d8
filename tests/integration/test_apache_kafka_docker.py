"""Real Apache Kafka (ZooKeeper mode, Confluent Platform 7.6 = Kafka 3.6) through
testcontainers: the OFFSET_OUT_OF_RANGE answers tansu cannot give, checked
against ScriptedKafka's, and a ZkDiscovery over the real ``/brokers``.

Skipped with the reason when no Docker engine answers.
"""

from __future__ import annotations

import pytest

from storm_kafka_compat.config import (EARLIEST_TIME, LATEST_TIME, Broker, SpoutConfig,
                                       TopologyConfig, ZkHosts)
from tests.assignments import zk_assignment
from storm_kafka_compat.discovery.registry import parse_broker_registration
from storm_kafka_compat.errors import OffsetOutOfRangeError
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
from storm_kafka_compat.workshop.servers.tansu import free_port

ZOOKEEPER_IMAGE = "confluentinc/cp-zookeeper:7.6.1"
KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.1"


def _docker_available() -> bool:
    try:
        import docker
        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


pytestmark = [pytest.mark.integration, pytest.mark.docker,
              pytest.mark.skipif(not _docker_available(), reason="no Docker engine answers")]


@pytest.fixture(scope="module")
def apache_kafka():
    """``(bootstrap, zk_connect, advertised Broker)`` of a one-broker ZooKeeper-mode
    Kafka whose EXTERNAL listener (first, so also the registry's top-level
    host/port) is reachable from this process."""
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network
    from testcontainers.core.waiting_utils import wait_for_logs

    network = Network().create()
    zk = (DockerContainer(ZOOKEEPER_IMAGE).with_network(network)
          .with_network_aliases("zookeeper")
          .with_env("ZOOKEEPER_CLIENT_PORT", "2181").with_exposed_ports(2181))
    kafka = None
    try:
        zk.start()
        wait_for_logs(zk, "binding to port", timeout=120)
        host = zk.get_container_host_ip()
        zk_connect = f"{host}:{zk.get_exposed_port(2181)}"
        port = free_port()
        kafka = (DockerContainer(KAFKA_IMAGE).with_network(network)
                 .with_network_aliases("kafka").with_bind_ports(9092, port)
                 .with_envs(
                     KAFKA_BROKER_ID="1",
                     KAFKA_ZOOKEEPER_CONNECT="zookeeper:2181",
                     KAFKA_LISTENERS="EXTERNAL://0.0.0.0:9092,INTERNAL://0.0.0.0:29092",
                     KAFKA_ADVERTISED_LISTENERS=f"EXTERNAL://{host}:{port},INTERNAL://kafka:29092",
                     KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT",
                     KAFKA_INTER_BROKER_LISTENER_NAME="INTERNAL",
                     KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR="1",
                     KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR="1",
                     KAFKA_TRANSACTION_STATE_LOG_MIN_ISR="1",
                     KAFKA_AUTO_CREATE_TOPICS_ENABLE="false"))
        kafka.start()
        wait_for_logs(kafka, r"started \(kafka.server.KafkaServer\)", timeout=180)
        yield f"{host}:{port}", zk_connect, Broker(host, port)
    finally:
        if kafka is not None:
            kafka.stop()
        zk.stop()
        network.remove()


def _topic_with_records(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for i in range(count):
            producer.send(topic, value=b"v%d" % i, partition=0)
        producer.flush(30)
    finally:
        producer.close()


def _delete_records(bootstrap: str, topic: str, before: int) -> None:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_records({TopicPartition(topic, 0): before}, timeout_ms=30000)
    finally:
        admin.close()


def _outcome(access, topic: str, offset: int):
    try:
        return [m.offset for m in access.fetch(topic, 0, offset)]
    except OffsetOutOfRangeError:
        return "OFFSET_OUT_OF_RANGE"


def _spout(topic: str) -> SpoutConfig:
    return SpoutConfig(hosts=ZkHosts("unused"), topic=topic, zk_root="/r", id="i",
                       socket_timeout_ms=15000)


def test_out_of_range_at_both_ends_matches_scripted_kafka(apache_kafka):
    bootstrap, _zk, _leader = apache_kafka
    topic = "oor-both-ends"
    _topic_with_records(bootstrap, topic, 10)
    _delete_records(bootstrap, topic, 4)
    scripted = ScriptedKafka()
    scripted.append(topic, 0, *[b"v%d" % i for i in range(10)])
    scripted.set_log_start(topic, 0, 4)
    real = KafkaPythonAccess(bootstrap, _spout(topic))
    try:
        assert real.offset_for(topic, 0, EARLIEST_TIME) == 4
        assert real.offset_for(topic, 0, LATEST_TIME) == 10
        for offset in (0, 3, 4, 9, 10, 11, 500):
            assert _outcome(real, topic, offset) == _outcome(scripted, topic, offset), offset
        assert _outcome(real, topic, 3) == "OFFSET_OUT_OF_RANGE"
        assert _outcome(real, topic, 11) == "OFFSET_OUT_OF_RANGE"
        assert _outcome(real, topic, 10) == []
        with pytest.raises(OffsetOutOfRangeError) as err:
            real.fetch(topic, 0, 2)
        assert (err.value.topic, err.value.partition, err.value.offset) == (topic, 0, 2)
    finally:
        real.close()


def test_zk_coordinator_over_the_real_broker_registry(apache_kafka):
    bootstrap, zk_connect, leader = apache_kafka
    topic = "zk-registry"
    _topic_with_records(bootstrap, topic, 3, partitions=3)
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry
    client = KazooClient(hosts=zk_connect, connection_retry=KazooRetry(max_tries=-1, max_delay=1))
    client.start(timeout=15)
    try:
        raw, _ = client.get_async("/brokers/ids/1").get(timeout=10)
    finally:
        client.stop()
        client.close()
    registration = parse_broker_registration(raw, broker_id=1, zk_path="/brokers/ids/1")
    assert registration.version == 5                    # Kafka 3.x in ZooKeeper mode
    assert registration.address() == leader
    assert registration.address("INTERNAL") == Broker("kafka", 29092)

    hosts = ZkHosts(zk_connect)
    managers = {}
    c = zk_assignment(hosts, _spout(topic), TopologyConfig(name="top"),
                      manager_factory=lambda info: managers.setdefault(info.key, object()),
                      listener_name="EXTERNAL")
    try:
        c.refresh()
        assert list(c.managed()) == [(topic, 0), (topic, 1), (topic, 2)]
        assert {c.partition_info(k).leader for k in c.managed()} == {leader}
    finally:
        c.close()
    access = KafkaPythonAccess(str(leader), _spout(topic))
    try:
        assert [m.value for m in access.fetch(topic, 0, 0)] == [b"v0", b"v1", b"v2"]
    finally:
        access.close()
