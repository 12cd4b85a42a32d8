"""Coordinators with a fake registry reader and the scripted Kafka: discovery,
assignment, refresh timing, leader-change handover, wildcard, missing brokers."""

from typing import Dict, List, Optional

import pytest

from storm_kafka_compat.config import (BootstrapHosts, Broker, SpoutConfig, StaticHosts,
                                       TopologyConfig, ZkHosts)
from storm_kafka_compat.discovery import PartitionInfo
from tests.assignments import bootstrap_assignment, static_assignment, zk_assignment
from storm_kafka_compat.discovery.zk import read_partitions
from storm_kafka_compat.errors import BrokerRegistryError, CoordinatorError, NoLeaderError
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.workshop.servers.registry import (broker_registration_json,
                                                          partition_state_json)


class FakeReader:
    """A dict-backed RegistryReader with Kafka's layout under /brokers."""

    def __init__(self) -> None:
        self.nodes: Dict[str, bytes] = {}

    def broker(self, bid: int, host: str, port: int, version: int = 5, **kw) -> None:
        self.nodes[f"/brokers/ids/{bid}"] = broker_registration_json(host, port,
                                                                     version=version, **kw)

    def topic(self, topic: str, leaders: Dict[int, int]) -> None:
        self.nodes[f"/brokers/topics/{topic}"] = b"{}"
        for p, leader in leaders.items():
            self.nodes[f"/brokers/topics/{topic}/partitions/{p}"] = b""
            self.nodes[f"/brokers/topics/{topic}/partitions/{p}/state"] = (
                partition_state_json(leader))

    def children(self, path: str) -> Optional[List[str]]:
        prefix = path.rstrip("/") + "/"
        if path not in self.nodes and not any(k.startswith(prefix) for k in self.nodes):
            return None
        return list(dict.fromkeys(k[len(prefix):].split("/")[0]
                                  for k in self.nodes if k.startswith(prefix)))

    def data(self, path: str) -> Optional[bytes]:
        return self.nodes.get(path)


class Manager:
    def __init__(self, info: PartitionInfo) -> None:
        self.info = info
        self.leaders = [info.leader]

    def set_leader(self, broker: Broker) -> None:
        self.leaders.append(broker)


class Recorder:
    def __init__(self) -> None:
        self.created: List[PartitionInfo] = []
        self.removed: List[PartitionInfo] = []

    def factory(self, info: PartitionInfo) -> Manager:
        self.created.append(info)
        return Manager(info)

    def on_removed(self, info: PartitionInfo, manager: Manager) -> None:
        assert manager.info.key == info.key
        self.removed.append(info)


def spout(topic: str = "t") -> SpoutConfig:
    return SpoutConfig(hosts=ZkHosts("zk:2181", refresh_freq_secs=60), topic=topic,
                       zk_root="/r", id="i")


def zk_coordinator(reader, rec, *, topic="t", wildcard=False, task_index=0, total_tasks=1):
    return zk_assignment(ZkHosts("zk:2181", refresh_freq_secs=60), spout(topic),
                         TopologyConfig(name="top", wildcard_match=wildcard),
                         manager_factory=rec.factory, on_removed=rec.on_removed,
                         task_index=task_index, total_tasks=total_tasks, reader=reader)


@pytest.fixture
def reader():
    r = FakeReader()
    r.broker(1, "h1", 9092)
    r.broker(2, "h2", 9093, version=1)
    r.topic("t", {0: 1, 1: 2, 2: 1})
    return r


def test_zk_discovery_and_assignment(reader):
    rec = Recorder()
    c = zk_coordinator(reader, rec, task_index=1, total_tasks=2)
    assert c.managed() == {}                          # lazy: nothing before the first refresh
    c.refresh()
    assert list(c.managed()) == [("t", 1)]
    assert c.partition_info(("t", 1)) == PartitionInfo("t", 1, Broker("h2", 9093), None)


def test_leader_change_keeps_the_manager_and_calls_set_leader(reader):
    rec = Recorder()
    c = zk_coordinator(reader, rec)
    c.refresh()
    before = c.managed()
    reader.topic("t", {0: 1, 1: 1, 2: 1})             # partition 1 moves to broker 1
    c.on_fetch_failure()
    after = c.managed()
    assert after[("t", 1)] is before[("t", 1)]
    assert after[("t", 1)].leaders == [Broker("h2", 9093), Broker("h1", 9092)]
    assert c.partition_info(("t", 1)).leader == Broker("h1", 9092)
    assert rec.removed == [] and len(rec.created) == 3


def test_partition_removed_and_added(reader):
    rec = Recorder()
    c = zk_coordinator(reader, rec, task_index=0, total_tasks=2)
    c.refresh()
    assert list(c.managed()) == [("t", 0), ("t", 2)]
    reader.topic("t", {0: 1, 1: 2, 2: 1, 3: 2})       # grows to 4: L[0::2] = 0, 2
    c.refresh()
    assert list(c.managed()) == [("t", 0), ("t", 2)]
    reader.nodes.pop("/brokers/ids/1")                # 0 and 2 lose their broker node
    c.refresh()
    # L is now [t/1, t/3]: this task owns t/1
    assert list(c.managed()) == [("t", 1)]
    assert {i.key for i in rec.removed} == {("t", 0), ("t", 2)}


def test_missing_broker_node_skips_the_partition_with_an_error_log(reader, caplog):
    reader.nodes.pop("/brokers/ids/2")
    infos = read_partitions(reader, "/brokers", "t")
    assert [i.partition for i in infos] == [0, 2]
    assert "/brokers/ids/2 does not exist" in caplog.text


def test_no_leader_raises_and_changes_nothing(reader):
    rec = Recorder()
    c = zk_coordinator(reader, rec)
    c.refresh()
    reader.topic("t", {0: 1, 1: -1, 2: 1})
    with pytest.raises(NoLeaderError) as err:
        c.refresh()
    assert (err.value.topic, err.value.partition) == ("t", 1)
    assert len(c.managed()) == 3 and rec.removed == []


def test_unknown_topic_is_a_registry_error(reader):
    with pytest.raises(BrokerRegistryError, match="/brokers/topics/nope/partitions"):
        read_partitions(reader, "/brokers", "nope")


def test_wildcard_full_match_sorted_with_path_topic(reader):
    reader.topic("orders-eu", {0: 1})
    reader.topic("orders-us", {0: 2, 1: 1})
    reader.topic("x-orders-us", {0: 1})
    rec = Recorder()
    c = zk_coordinator(reader, rec, topic="orders-.*", wildcard=True)
    c.refresh()
    assert list(c.managed()) == [("orders-eu", 0), ("orders-us", 0), ("orders-us", 1)]
    assert all(i.path_topic == i.topic for i in rec.created)
    reader.topic("orders-ap", {0: 1})                  # picked up at the next refresh
    c.refresh()
    assert ("orders-ap", 0) in c.managed()


def test_null_host_registration_uses_endpoint(reader):
    reader.broker(2, "tls-host", 9094, version=4, plaintext=False)
    info = {i.partition: i for i in read_partitions(reader, "/brokers", "t")}
    assert info[1].leader == Broker("tls-host", 9094)


def test_maybe_refresh_honours_refresh_freq_and_failures_do_not_reset_timer(reader):
    rec = Recorder()
    c = zk_coordinator(reader, rec)
    assert c.maybe_refresh(1_000) is True
    assert c.maybe_refresh(61_000) is False           # exactly 60 s: not yet (strictly greater)
    c.on_fetch_failure()
    assert c.refresh_count == 2
    assert c.maybe_refresh(61_001) is True
    assert c.refresh_count == 3


def test_close_hands_every_manager_to_on_removed(reader):
    rec = Recorder()
    c = zk_coordinator(reader, rec)
    c.refresh()
    c.close()
    assert c.managed() == {} and len(rec.removed) == 3


def test_static_coordinator_builds_once_in_partition_order():
    rec = Recorder()
    hosts = StaticHosts({2: Broker("b", 1), 0: Broker("a", 1), 1: Broker("c", 1)},
                        use_topic_name_for_partition_path_id=True)
    c = static_assignment(hosts, "t", manager_factory=rec.factory, on_removed=rec.on_removed,
                          task_index=0, total_tasks=2)
    assert c.maybe_refresh(0) is True
    assert list(c.managed()) == [("t", 0), ("t", 2)]
    assert rec.created[0].path_topic == "t"
    c.on_fetch_failure()
    c.refresh()
    assert len(rec.created) == 2 and c.refresh_count == 1
    assert c.maybe_refresh(10**12) is False


def test_bootstrap_coordinator_follows_leaders_and_wildcard():
    k = ScriptedKafka()
    k.create_topic("orders-eu", 2)
    k.create_topic("other", 1)
    rec = Recorder()
    c = bootstrap_assignment(BootstrapHosts(("b:9092",)), spout("orders-.*"),
                             TopologyConfig(name="x", wildcard_match=True), k,
                             manager_factory=rec.factory, on_removed=rec.on_removed)
    c.refresh()
    assert list(c.managed()) == [("orders-eu", 0), ("orders-eu", 1)]
    m = c.managed()[("orders-eu", 1)]
    k.set_leader("orders-eu", 1, Broker("new", 9092))
    c.refresh()
    assert c.managed()[("orders-eu", 1)] is m and m.leaders[-1] == Broker("new", 9092)


def test_bootstrap_coordinator_unknown_topic():
    rec = Recorder()
    c = bootstrap_assignment(BootstrapHosts(("b:9092",)), spout("nope"),
                             TopologyConfig(name="x"), ScriptedKafka(),
                             manager_factory=rec.factory)
    with pytest.raises(CoordinatorError, match="'nope'"):
        c.refresh()


# --- refresh failures after the first refresh (leader elections, topic churn) ---------------

def test_first_refresh_failure_raises_later_ones_keep_the_last_assignment(reader):
    rec = Recorder()
    c = zk_coordinator(reader, rec, topic="late")
    with pytest.raises(BrokerRegistryError):          # a wrong topic fails at once
        c.maybe_refresh(0)
    reader.topic("late", {0: 1, 1: 2})
    assert c.maybe_refresh(1) is True                 # not marked refreshed by the failure
    before = c.managed()
    reader.topic("late", {0: 1, 1: -1})               # an election in progress
    c.on_fetch_failure()                              # survived: nothing changes
    assert c.managed() == before and rec.removed == []
    assert c.refresh_failures == 1
    assert "No leader found for partition 1" in c.last_refresh_error
    for key in [k for k in reader.nodes if k.startswith("/brokers/topics/late")]:
        del reader.nodes[key]                         # the topic is deleted
    assert c.maybe_refresh(60_002) is True            # periodic: survived as well
    assert c.managed() == before and c.refresh_failures == 2
    reader.topic("late", {0: 2, 1: 2})                # elected again
    c.on_fetch_failure()
    assert c.managed() == before and c.last_refresh_error is None
    assert before[("late", 1)].leaders[-1] == Broker("h2", 9093)


def test_a_failed_periodic_refresh_waits_for_the_next_period(reader):
    rec = Recorder()
    c = zk_coordinator(reader, rec)
    c.maybe_refresh(0)
    reader.topic("t", {0: -1, 1: 2, 2: 1})
    assert c.maybe_refresh(60_001) is True and c.refresh_failures == 1
    assert c.maybe_refresh(60_002) is False           # no refresh storm on a failing registry
    assert c.maybe_refresh(120_002) is True and c.refresh_failures == 2


def test_wildcard_topic_deleted_drops_its_managers_and_keeps_the_others(reader):
    reader.topic("orders-eu", {0: 1, 1: 2})
    reader.topic("orders-us", {0: 2})
    rec = Recorder()
    c = zk_coordinator(reader, rec, topic="orders-.*", wildcard=True)
    c.refresh()
    us = c.managed()[("orders-us", 0)]
    for key in [k for k in reader.nodes if k.startswith("/brokers/topics/orders-eu")]:
        del reader.nodes[key]
    c.refresh()
    assert list(c.managed()) == [("orders-us", 0)] and c.managed()[("orders-us", 0)] is us
    assert sorted(i.key for i in rec.removed) == [("orders-eu", 0), ("orders-eu", 1)]


def test_wildcard_topic_listed_but_its_partitions_gone_is_skipped(reader, caplog):
    reader.topic("orders-eu", {0: 1})
    reader.nodes["/brokers/topics/orders-gone"] = b"{}"   # deleted between the two reads
    infos = read_partitions(reader, "/brokers", "orders-.*", wildcard=True)
    assert [i.key for i in infos] == [("orders-eu", 0)]
    assert "being deleted or created" in caplog.text
    with pytest.raises(BrokerRegistryError):              # outside wildcard: an error
        read_partitions(reader, "/brokers", "orders-gone")


def test_new_partition_whose_offset_cannot_be_asked_waits_for_the_next_refresh(reader):
    from storm_kafka_compat.errors import FailedFetchError
    rec = Recorder()
    refuse = {("t", 3)}

    def factory(info):
        if info.key in refuse:
            raise FailedFetchError("leader not available", topic=info.topic,
                                   partition=info.partition)
        return rec.factory(info)

    c = zk_assignment(ZkHosts("zk:2181"), spout(), TopologyConfig(name="top"),
                      manager_factory=factory, on_removed=rec.on_removed, reader=reader)
    c.refresh()
    reader.topic("t", {0: 1, 1: 2, 2: 1, 3: 2, 4: 1})     # grows by two
    c.refresh()
    assert list(c.managed()) == [("t", 0), ("t", 1), ("t", 2), ("t", 4)]
    refuse.clear()
    c.refresh()
    assert list(c.managed()) == [("t", p) for p in range(5)]


def test_first_refresh_raises_when_a_manager_cannot_start(reader):
    from storm_kafka_compat.errors import FailedFetchError

    def factory(info):
        raise FailedFetchError("brokers down", topic=info.topic, partition=info.partition)

    c = zk_assignment(ZkHosts("zk:2181"), spout(), TopologyConfig(name="top"),
                      manager_factory=factory, reader=reader)
    with pytest.raises(FailedFetchError):
        c.maybe_refresh(0)


def test_bootstrap_coordinator_survives_a_deleted_topic_after_the_first_refresh():
    k = ScriptedKafka()
    k.create_topic("t", 2)
    rec = Recorder()
    c = bootstrap_assignment(BootstrapHosts(("b:9092",)), spout("t"),
                             TopologyConfig(name="x"), k,
                             manager_factory=rec.factory, on_removed=rec.on_removed)
    c.maybe_refresh(0)
    before = c.managed()
    k.delete_topic("t")
    c.on_fetch_failure()
    assert c.managed() == before and c.refresh_failures == 1
    assert "'t' has no partitions with a leader" in c.last_refresh_error


@pytest.mark.parametrize("wildcard", [False, True])
def test_a_zookeeper_without_a_registry_names_kraft_and_the_bootstrap_discovery(wildcard):
    empty = FakeReader()                         # no /brokers at all: a KRaft cluster's
    with pytest.raises(BrokerRegistryError) as err:
        read_partitions(empty, "/brokers", "t.*" if wildcard else "t", wildcard=wildcard)
    text = str(err.value)
    assert "/brokers/ids does not exist" in text and "KRaft" in text
    assert "hosts: {bootstrap:" in text and err.value.zk_path == "/brokers/ids"


def test_an_unknown_topic_in_a_live_registry_keeps_its_own_message(reader):
    with pytest.raises(BrokerRegistryError, match="topic 'nope' is unknown to Kafka") as err:
        read_partitions(reader, "/brokers", "nope")
    assert "KRaft" not in str(err.value)


def test_an_unknown_topic_names_the_near_ones_and_those_that_exist(reader):
    """Issue 34 item 9: a typo in the topic lists what exists, the near names first, in
    the error the run stops with (ZkHosts and bootstrap servers)."""
    reader.topic("clicks", {0: 1})
    reader.topic("__consumer_offsets", {0: 1})
    with pytest.raises(BrokerRegistryError) as err:
        read_partitions(reader, "/brokers", "clikcs")
    assert str(err.value) == (
        "/brokers/topics/clikcs/partitions does not exist: topic 'clikcs' is unknown to Kafka "
        "(or still being created); check the topic name and brokerZkPath ('/brokers'); did "
        "you mean 'clicks'? The topics there: clicks, t")
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.create_topic("views", 1)
    c = bootstrap_assignment(BootstrapHosts(("b:9092",)), spout("zzz"),
                             TopologyConfig(name="x"), kafka, manager_factory=Recorder().factory)
    with pytest.raises(CoordinatorError) as err2:
        c.refresh()
    assert str(err2.value) == (
        "topic 'zzz' has no partitions with a leader on b:9092; check the topic name and that "
        "the brokers are up; the topics there: orders, views")


def test_a_known_topic_without_leaders_is_an_election_not_a_wrong_name():
    """A topic the brokers list whose partitions have no leader raises NoLeaderError
    (the driver asks again), and does not suggest its own name as a near one."""
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 2)
    for p in range(2):
        kafka.set_leader("orders", p, None)
    c = bootstrap_assignment(BootstrapHosts(("b:9092",)), spout("orders"),
                             TopologyConfig(name="x"), kafka, manager_factory=Recorder().factory)
    with pytest.raises(NoLeaderError) as err:
        c.refresh()
    assert str(err.value) == ("topic 'orders' exists on b:9092 but none of its partitions "
                              "has a leader now (an election or a broker restart under way)")
    assert "did you mean" not in str(err.value)
