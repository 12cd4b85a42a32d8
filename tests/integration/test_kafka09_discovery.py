"""Both dynamic coordinators on real Apache Kafka 0.9.0.1: the ``/brokers`` registry
written by Kafka itself (ZkHosts) and the brokers' metadata (bootstrap hosts), through a
leader election and a topic's creation and deletion. No Spark: the managers are stubs."""

from __future__ import annotations

import pytest

from storm_kafka_compat.config import (BootstrapHosts, Broker, SpoutConfig, TopologyConfig,
                                       ZkHosts)
from storm_kafka_compat.discovery import PartitionInfo
from tests.assignments import bootstrap_assignment, zk_assignment
from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess

pytestmark = pytest.mark.integration

TOPOLOGY = dict(name="top", zookeeper_session_timeout_ms=10000,
                zookeeper_connection_timeout_ms=5000, zookeeper_retry_times=2,
                zookeeper_retry_interval_ms=200)


class Manager:
    def __init__(self, info: PartitionInfo) -> None:
        self.info = info
        self.leaders = [info.leader]

    def set_leader(self, broker: Broker) -> None:
        self.leaders.append(broker)


def make(kind: str, cluster, topic: str, removed: list, *, wildcard: bool = False):
    """(coordinator, close) for ``kind`` "zk" or "bootstrap"."""
    topology = TopologyConfig(wildcard_match=wildcard, **TOPOLOGY)
    common = dict(manager_factory=Manager, on_removed=lambda i, m: removed.append(i.key))
    if kind == "zk":
        hosts = ZkHosts(cluster.zk_connect, refresh_freq_secs=1)
        spout = SpoutConfig(hosts=hosts, topic=topic, zk_root="/r", id="i")
        c = zk_assignment(hosts, spout, topology, **common)
        return c, c.close
    hosts = BootstrapHosts(tuple(cluster.bootstrap.split(",")), refresh_freq_secs=1)
    spout = SpoutConfig(hosts=hosts, topic=topic, zk_root="/r", id="i")
    access = KafkaPythonAccess(list(hosts.servers), spout, {"api_version": (0, 9)})

    def close() -> None:
        c.close()
        access.close()
    c = bootstrap_assignment(hosts, spout, topology, access, **common)
    return c, close


@pytest.mark.parametrize("kind", ["zk", "bootstrap"])
def test_the_coordinator_follows_an_elected_leader_and_keeps_the_manager(kind, kafka09_factory,
                                                                       unique):
    cluster = kafka09_factory(2)
    topic = unique("elect")
    cluster.create_topic(topic, partitions=2, replication=2)
    removed: list = []
    c, close = make(kind, cluster, topic, removed)
    try:
        c.maybe_refresh(0)
        before = c.managed()
        victim = cluster.leader(topic, 0)
        survivor = cluster.broker(3 - victim)
        cluster.broker(victim).kill()
        cluster.wait_for_leaders(topic, 2, exclude=[victim])
        # the first metadata request may still go to the dead broker's connection
        # (bootstrap: ECONNREFUSED, measured): that refresh fails, keeps everything,
        # and the next one (a fresh lookup client) follows
        for _ in range(3):
            if c.safe_refresh():
                break
            assert c.managed() == before
        assert c.last_refresh_error is None and c.refresh_failures <= 2
        after = c.managed()
        assert after == before and removed == []              # same manager objects
        assert after[(topic, 0)].leaders[-1] == Broker(survivor.host, survivor.port)
        assert c.partition_info((topic, 0)).leader == Broker(survivor.host, survivor.port)
    finally:
        close()


@pytest.mark.parametrize("kind", ["zk", "bootstrap"])
def test_wildcard_topics_created_and_deleted_on_a_real_broker(kind, kafka09, unique):
    prefix = unique("wild")
    first, second = f"{prefix}-a", f"{prefix}-b"
    kafka09.create_topic(first, 2)
    removed: list = []
    c, close = make(kind, kafka09, f"{prefix}-.*", removed, wildcard=True)
    try:
        c.maybe_refresh(0)
        assert list(c.managed()) == [(first, 0), (first, 1)]
        kafka09.create_topic(second, 1)
        assert c.safe_refresh() is True
        assert list(c.managed()) == [(first, 0), (first, 1), (second, 0)]
        kafka09.delete_topic(first)
        # the brokers may still list the topic for a moment (metadata cache): ask again
        for _ in range(50):
            c.safe_refresh()
            if list(c.managed()) == [(second, 0)]:
                break
        assert list(c.managed()) == [(second, 0)]
        assert sorted(removed) == [(first, 0), (first, 1)]
    finally:
        close()


@pytest.mark.parametrize("kind", ["zk", "bootstrap"])
def test_the_only_topic_deleted_keeps_the_last_assignment(kind, kafka09, unique):
    topic = unique("only")
    kafka09.create_topic(topic, 2)
    removed: list = []
    c, close = make(kind, kafka09, topic, removed)
    try:
        c.maybe_refresh(0)
        before = c.managed()
        kafka09.delete_topic(topic)
        for _ in range(50):
            if c.safe_refresh() is False:
                break
        assert c.refresh_failures >= 1 and topic in c.last_refresh_error
        assert c.managed() == before and removed == []
    finally:
        close()
