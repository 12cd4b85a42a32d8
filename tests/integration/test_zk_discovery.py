"""ZkDiscovery (under an Assignment) on a real ZooKeeper, over a broker registry written in Kafka's
formats (servers.registry) that points at a real broker (tansu)."""

import pytest

from storm_kafka_compat.config import Broker, SpoutConfig, TopologyConfig, ZkHosts
from storm_kafka_compat.discovery import PartitionInfo
from tests.assignments import zk_assignment
from storm_kafka_compat.errors import CoordinatorError, NoLeaderError
from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
from storm_kafka_compat.workshop.servers import registry

pytestmark = pytest.mark.integration

TOPOLOGY = TopologyConfig(name="top", zookeeper_session_timeout_ms=10000,
                          zookeeper_connection_timeout_ms=5000, zookeeper_retry_times=2,
                          zookeeper_retry_interval_ms=200)


class Manager:
    def __init__(self, info: PartitionInfo) -> None:
        self.info = info
        self.moves = []

    def set_leader(self, broker: Broker) -> None:
        self.moves.append(broker)


def coordinator(hosts: ZkHosts, topic: str, *, wildcard: bool = False, removed=None):
    topology = TopologyConfig(**{**TOPOLOGY.__dict__, "wildcard_match": wildcard})
    spout = SpoutConfig(hosts=hosts, topic=topic, zk_root="/r", id="i")
    return zk_assignment(hosts, spout, topology, manager_factory=Manager,
                         on_removed=(lambda i, m: removed.append(i.key)) if removed is not None
                         else None)


@pytest.fixture
def chroot(zk_client, zk_root):
    """A chroot path that exists (Kafka's ``zk:2181/kafka`` style)."""
    zk_client.ensure_path_async(zk_root).get(timeout=10)
    return zk_root


@pytest.fixture
def chrooted(zk_server, chroot):
    from tests.conftest import make_kazoo_client
    client = make_kazoo_client(zk_server.connect_string + chroot)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_discovery_for_every_registry_version_then_fetch(version, zk_server, chroot, chrooted,
                                                         tansu, kafka_topic):
    topic = kafka_topic(3, [(p, None, b"m-%d" % p) for p in range(3)])
    registry.write_broker_registry(chrooted, brokers={7: (tansu.host, tansu.port)},
                                   topics={topic: {0: 7, 1: 7, 2: 7}}, version=version,
                                   topic_version=min(version, 3))
    c = coordinator(ZkHosts(zk_server.connect_string + chroot), topic)
    try:
        c.refresh()
        assert list(c.managed()) == [(topic, 0), (topic, 1), (topic, 2)]
        info = c.partition_info((topic, 2))
        assert info.leader == Broker(tansu.host, tansu.port) and info.path_topic is None
    finally:
        c.close()
    access = KafkaPythonAccess(str(info.leader), SpoutConfig(hosts=c.discovery.hosts, topic=topic,
                                                            zk_root="/r", id="i"))
    try:
        assert [m.value for m in access.fetch(topic, 2, 0)] == [b"m-2"]
    finally:
        access.close()


def test_broker_zk_path_without_chroot_and_no_plaintext_listener(zk_server, zk_client, zk_root,
                                                                 tansu):
    base = zk_root + "/kafka/brokers"
    registry.write_broker_registry(zk_client, brokers={1: (tansu.host, tansu.port)},
                                   topics={"t": {0: 1}}, path=base, version=5, plaintext=False,
                                   listener_name="CLIENT", security_protocol="SSL")
    c = coordinator(ZkHosts(zk_server.connect_string, broker_zk_path=base), "t")
    try:
        c.refresh()
        assert c.partition_info(("t", 0)).leader == Broker(tansu.host, tansu.port)
    finally:
        c.close()


def test_wildcard_full_match_and_new_topics_at_refresh(zk_server, chroot, chrooted):
    registry.write_broker_registry(chrooted, brokers={1: ("h", 9092)},
                                   topics={"logs-a": {0: 1, 1: 1}, "logs-b": {0: 1},
                                           "xlogs-c": {0: 1}, "logs": {0: 1}})
    c = coordinator(ZkHosts(zk_server.connect_string + chroot), "logs-.+", wildcard=True)
    try:
        c.refresh()
        assert list(c.managed()) == [("logs-a", 0), ("logs-a", 1), ("logs-b", 0)]
        assert c.partition_info(("logs-b", 0)).path_topic == "logs-b"
        registry.write_topic(chrooted, "logs-c", {0: 1})
        c.refresh()
        assert ("logs-c", 0) in c.managed()
    finally:
        c.close()


def test_missing_broker_node_skips_partition(zk_server, chroot, chrooted, caplog):
    registry.write_broker_registry(chrooted, brokers={1: ("h1", 9092), 2: ("h2", 9092)},
                                   topics={"t": {0: 1, 1: 2, 2: 1}})
    registry.delete_broker(chrooted, 2)
    c = coordinator(ZkHosts(zk_server.connect_string + chroot), "t")
    try:
        c.refresh()
        assert list(c.managed()) == [("t", 0), ("t", 2)]
        assert "/brokers/ids/2 does not exist" in caplog.text
    finally:
        c.close()


def test_leader_minus_one_is_an_error(zk_server, chroot, chrooted):
    registry.write_broker_registry(chrooted, brokers={1: ("h1", 9092)},
                                   topics={"t": {0: 1, 1: -1}})
    c = coordinator(ZkHosts(zk_server.connect_string + chroot), "t")
    try:
        with pytest.raises(NoLeaderError) as err:
            c.refresh()
        assert (err.value.topic, err.value.partition) == ("t", 1)
        assert err.value.zk_path == "/brokers/topics/t/partitions/1/state"
    finally:
        c.close()


def test_leader_change_keeps_the_manager(zk_server, chroot, chrooted):
    registry.write_broker_registry(chrooted, brokers={1: ("h1", 9092), 2: ("h2", 9093)},
                                   topics={"t": {0: 1, 1: 1}})
    removed = []
    c = coordinator(ZkHosts(zk_server.connect_string + chroot), "t", removed=removed)
    try:
        c.refresh()
        manager = c.managed()[("t", 1)]
        registry.set_leader(chrooted, "t", 1, 2)
        c.on_fetch_failure()
        assert c.managed()[("t", 1)] is manager
        assert manager.moves == [Broker("h2", 9093)]
        assert c.partition_info(("t", 1)).leader == Broker("h2", 9093)
        assert removed == []
        raw, _ = chrooted.get_async("/brokers/topics/t/partitions/1/state").get(timeout=10)
        assert b'"leader_epoch":1' in raw
    finally:
        c.close()
    assert sorted(removed) == [("t", 0), ("t", 1)]


def test_unreachable_zookeeper_is_a_coordinator_error():
    from storm_kafka_compat.workshop.servers.tansu import free_port
    topology = TopologyConfig(name="top", zookeeper_connection_timeout_ms=500)
    hosts = ZkHosts(f"127.0.0.1:{free_port()}")
    with pytest.raises(CoordinatorError, match="cannot connect"):
        zk_assignment(hosts, SpoutConfig(hosts=hosts, topic="t", zk_root="/r", id="i"),
                      topology, manager_factory=Manager)
