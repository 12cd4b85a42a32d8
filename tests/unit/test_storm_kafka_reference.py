"""The cases of Apache Storm's storm-kafka unit tests (tag v1.2.4,
``external/storm-kafka/src/test/org/apache/storm/kafka/``) restated against this
project's API. Each test names the Storm class and case it stands for; the
table in docs/deviations.md ("Storm's own tests") lists every case, the ones
that cannot be expressed here and why.

Our own tests of the same behaviour; no Storm code is copied.
"""

from typing import Dict, List, Optional

import pytest

from storm_kafka_compat.config import (Broker, NO_OFFSET, SpoutConfig, StaticHosts,
                                       TopologyConfig, ZkHosts)
from storm_kafka_compat.discovery import PartitionInfo
from tests.assignments import zk_assignment
from storm_kafka_compat.spout.assignment import partitions_for_task
from storm_kafka_compat.discovery.zk import read_partitions
from storm_kafka_compat.errors import ConfigError, FailedFetchError, OffsetOutOfRangeError
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.spout.manager import PartitionManager
from storm_kafka_compat.spout.retry import load_retry_manager
from storm_kafka_compat.spout.startup import decide_start
from storm_kafka_compat.topology.schemes import StringKeyValueScheme, load_scheme
from storm_kafka_compat.workshop.servers.registry import (broker_registration_json,
                                                          partition_state_json)


class Clock:
    def __init__(self, t: int = 1_000) -> None:
        self.t = t

    def __call__(self) -> int:
        return self.t


def spout(**kw) -> SpoutConfig:
    return SpoutConfig(hosts=StaticHosts({}), topic="testTopic", zk_root="/r", id="s", **kw)


class Message:
    def __init__(self, offset: int, key: Optional[bytes], value: Optional[bytes],
                 topic: str = "testTopic", partition: int = 0) -> None:
        self.offset, self.key, self.value = offset, key, value
        self.topic, self.partition = topic, partition


# --- ExponentialBackoffMsgRetryManagerTest (12 cases) --------------------------------------

def retries(clock: Clock, initial: int = 0, mult: float = 1.0, max_ms: int = 0,
            limit: int = -1):
    # Storm builds the zero-delay manager with multiplier 0; this project requires a
    # multiplier > 0 (docs/configuration.md), and with a 0 ms initial delay any
    # multiplier gives the same zero delays.
    cfg = spout(retry_initial_delay_ms=initial, retry_delay_multiplier=mult,
                retry_delay_max_ms=max_ms, retry_limit=limit)
    return load_retry_manager(cfg.failed_msg_retry_manager_class, cfg, {}, clock)


def test_retry_immediate_retry():
    """testImmediateRetry: with no delay a failed offset is due at once, again after a retry."""
    m = retries(Clock())
    m.failed(101)
    assert m.next_failed_message_to_retry() == 101 and m.should_re_emit_msg(101)
    m.retry_started(101)
    m.failed(101)
    assert m.next_failed_message_to_retry() == 101 and m.should_re_emit_msg(101)


def test_retry_single_delay():
    """testSingleDelay: not due 5 ms after the failure, due after the 100 ms delay."""
    clock = Clock()
    m = retries(clock, initial=100, max_ms=1000)
    m.failed(101)
    clock.t += 5
    assert m.next_failed_message_to_retry() is None and not m.should_re_emit_msg(101)
    clock.t += 100
    assert m.next_failed_message_to_retry() == 101 and m.should_re_emit_msg(101)


@pytest.mark.parametrize("initial, max_ms, rounds", [(10, 100, 3), (100, 2000, 4)],
                         ids=["testExponentialBackoff", "testMaxBackoff"])
def test_retry_exponential_backoff_and_max(initial, max_ms, rounds):
    """testExponentialBackoff, testMaxBackoff: the n-th wait doubles up to the ceiling;
    not due at half the wait, due at the full wait."""
    clock = Clock()
    m = retries(clock, initial=initial, mult=2.0, max_ms=max_ms)
    wait = initial
    for _ in range(rounds):
        m.failed(101)
        clock.t += (wait + 1) // 2
        assert not m.should_re_emit_msg(101)
        clock.t += (wait + 1) // 2
        assert m.next_failed_message_to_retry() == 101 and m.should_re_emit_msg(101)
        m.retry_started(101)
        wait = min(wait * 2, max_ms)


def test_retry_order_follows_retry_time_not_failure_order():
    """testRetryOrder: an offset on its second retry waits longer than one on its first."""
    clock = Clock()
    m = retries(clock, initial=10, mult=2.0, max_ms=20)
    m.failed(101)
    clock.t += 10
    m.retry_started(101)
    m.failed(101)          # second failure: 20 ms
    m.failed(102)          # first failure: 10 ms
    clock.t += 20
    assert m.should_re_emit_msg(101) and m.should_re_emit_msg(102)
    assert m.next_failed_message_to_retry() == 102
    clock.t += 10
    assert m.next_failed_message_to_retry() == 102
    m.retry_started(102)
    assert m.next_failed_message_to_retry() == 101
    m.retry_started(101)
    assert m.next_failed_message_to_retry() is None


def test_retry_queries_after_retry_started():
    """testQueriesAfterRetriedAlready: once retried, an offset is no longer due."""
    m = retries(Clock())
    m.failed(101)
    m.retry_started(101)
    assert m.next_failed_message_to_retry() is None and not m.should_re_emit_msg(101)


def test_retry_started_without_failure_is_an_error():
    """testRetryWithoutFail (IllegalStateException in Storm; ValueError here)."""
    with pytest.raises(ValueError, match="offset 101"):
        retries(Clock()).retry_started(101)


def test_retry_started_twice_is_an_error():
    """testFailRetryRetry: the second retry_started without a new failure is an error."""
    m = retries(Clock())
    m.failed(101)
    m.retry_started(101)
    assert not m.should_re_emit_msg(101)
    with pytest.raises(ValueError, match="offset 101"):
        m.retry_started(101)


def test_retry_fail_then_ack_forgets_the_offset():
    """testFailThenAck."""
    m = retries(Clock())
    m.failed(101)
    assert m.should_re_emit_msg(101)
    m.acked(101)
    assert m.next_failed_message_to_retry() is None and not m.should_re_emit_msg(101)


def test_retry_ack_then_fail_schedules_the_offset():
    """testAckThenFail: an ack of an unknown offset is harmless, a later failure counts."""
    m = retries(Clock())
    m.acked(101)
    assert not m.should_re_emit_msg(101)
    m.failed(101)
    assert m.next_failed_message_to_retry() == 101 and m.should_re_emit_msg(101)


def test_retry_clear_offsets_before():
    """testClearInvalidMessages: offsets below the new start are dropped, others kept."""
    m = retries(Clock())
    for o in (101, 102, 105):
        m.failed(o)
    assert m.clear_offsets_before(103) == {101, 102}
    assert m.next_failed_message_to_retry() == 105
    m.acked(105)
    assert m.next_failed_message_to_retry() is None


def test_retry_limit():
    """testMaxRetry: retryLimit 2 allows two failures, then no further retry."""
    m = retries(Clock(), initial=100, mult=2.0, max_ms=2000, limit=2)
    assert m.retry_further(101)
    m.failed(101)
    assert m.retry_further(101)
    m.failed(101)
    assert not m.retry_further(101)


# --- StringKeyValueSchemeTest (4) and TestStringScheme (1) ----------------------------------

def test_string_key_value_scheme_deserialize():
    """StringKeyValueSchemeTest.testDeserialize."""
    assert StringKeyValueScheme().deserialize(b"test") == ["test"]


def test_string_key_value_scheme_output_fields():
    """StringKeyValueSchemeTest.testGetOutputFields: one field, ``str``."""
    assert StringKeyValueScheme().fields == ("str",)


def test_string_key_value_scheme_null_key_gives_the_value_alone():
    """StringKeyValueSchemeTest.testDeserializeWithNullKeyAndValue."""
    assert StringKeyValueScheme().deserialize_key_and_value(None, b"test") == ["test"]


def test_string_key_value_scheme_key_and_value_give_a_map():
    """StringKeyValueSchemeTest.testDeserializeWithKeyAndValue."""
    assert StringKeyValueScheme().deserialize_key_and_value(b"key", b"test") == [
        {"key": "test"}]


def test_string_scheme_decodes_utf8():
    """TestStringScheme.testDeserializeString (heap and direct buffers are one case here)."""
    assert load_scheme("string").to_tuples(Message(0, None, "foo".encode())) == [["foo"]]


# --- KafkaUtilsTest (18) --------------------------------------------------------------------

def kafka_with(*values: bytes, topic: str = "testTopic") -> ScriptedKafka:
    k = ScriptedKafka()
    k.create_topic(topic, 1)
    for v in values:
        k.append(topic, 0, v)
    return k


def test_fetch_from_an_unknown_topic_fails():
    """KafkaUtilsTest.topicDoesNotExist: FailedFetchException."""
    with pytest.raises(FailedFetchError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        ScriptedKafka().fetch("testTopic", 0, 0)


def test_fetch_last_message():
    """KafkaUtilsTest.fetchMessage: the message at latest - 1 is the one sent."""
    k = kafka_with(b"test")
    latest = k.offset_for("testTopic", 0, -1)
    assert [m.value for m in k.fetch("testTopic", 0, latest - 1)] == [b"test"]


def test_fetch_at_an_invalid_offset_is_out_of_range():
    """KafkaUtilsTest.fetchMessagesWithInvalidOffsetAndDefaultHandlingEnabled: the fetch
    reports OFFSET_OUT_OF_RANGE (TopicOffsetOutOfRangeException)."""
    with pytest.raises(OffsetOutOfRangeError):
        kafka_with(b"test").fetch("testTopic", 0, -99)


# fetchMessagesWithInvalidOffsetAndDefaultHandlingDisabled (useStartOffsetTimeIfOffsetOutOfRange
# false: a fetch failure, the same offset again) runs through the driver loop in
# tests/unit/test_edge_cases.py:
# test_case_32_out_of_range_without_fallback_is_a_fetch_failure_and_others_go_on


@pytest.mark.parametrize("ignore", [False, True],
                         ids=["getOffsetFromConfigAndDontForceFromStart",
                              "getOffsetFromConfigAndForceFromStart"])
def test_offset_from_config_is_earliest(ignore):
    """KafkaUtilsTest.getOffsetFromConfig*: without state, startOffsetTime EARLIEST gives the
    log start whether or not ignoreZkOffsets is set."""
    k = kafka_with(b"someValue")
    d = decide_start(None, topology_id="me", config=spout(ignore_zk_offsets=ignore,
                                                          start_offset_time=-2),
                     offset_for=lambda t: k.offset_for("testTopic", 0, t), where="/r/s/p0")
    assert d.start_offset == k.offset_for("testTopic", 0, -2)


@pytest.mark.parametrize("case, scheme, key, expected", [
    ("generateTuplesWithoutKeyAndKeyValueScheme", "string_key_value", None, ["value"]),
    ("generateTuplesWithKeyAndKeyValueScheme", "string_key_value", b"key", [{"key": "value"}]),
    ("generateTupelsWithValueScheme", "string", None, ["value"]),
    ("generateTuplesWithValueAndStringMultiSchemeWithTopic", "string_with_topic", None,
     ["value", "testTopic"]),
    ("generateTuplesWithValueSchemeAndKeyValueMessage", "string", b"key", ["value"]),
    ("generateTuplesWithMessageAndMetadataScheme", "message_metadata", None, ["value", 0, 0]),
])
def test_generate_tuples(case, scheme, key, expected):
    """KafkaUtilsTest.generateTuples*: the tuple each scheme makes of one message."""
    assert load_scheme(scheme).to_tuples(Message(0, key, b"value")) == [expected]


@pytest.mark.parametrize("partitions, per_task", [(16, 1), (16, 2), (32, 32)],
                         ids=["assignOnePartitionPerTask", "assignTwoPartitionsPerTask",
                              "assignAllPartitionsToOneTask"])
def test_partitions_per_task(partitions, per_task):
    """KafkaUtilsTest.assign*: every task gets partitions / tasks partitions."""
    tasks = partitions // per_task
    for i in range(tasks):
        assert len(partitions_for_task(list(range(partitions)), i, tasks)) == per_task


def test_more_tasks_than_partitions():
    """KafkaUtilsTest.moreTasksThanPartitions: the second task is idle."""
    assert partitions_for_task([0], 0, 2) == [0]
    assert partitions_for_task([0], 1, 2) == []


def test_invalid_task_index():
    """KafkaUtilsTest.assignInvalidTask: IllegalArgumentException (ConfigError here)."""
    with pytest.raises(ConfigError, match="task index 1"):
        partitions_for_task([], 1, 1)


# --- DynamicBrokersReaderTest (6) -----------------------------------------------------------

class Registry:
    """Kafka's /brokers layout as a RegistryReader."""

    def __init__(self) -> None:
        self.nodes: Dict[str, bytes] = {}

    def add_partition(self, topic: str, partition: int, leader: int, host: str,
                      port: int) -> None:
        self.nodes[f"/brokers/topics/{topic}"] = b"{}"
        self.nodes[f"/brokers/topics/{topic}/partitions/{partition}"] = b""
        self.nodes[f"/brokers/topics/{topic}/partitions/{partition}/state"] = \
            partition_state_json(leader)
        self.nodes[f"/brokers/ids/{leader}"] = broker_registration_json(host, port, version=1)

    def children(self, path: str) -> Optional[List[str]]:
        prefix = path.rstrip("/") + "/"
        if not any(k.startswith(prefix) for k in self.nodes):
            return None
        return list(dict.fromkeys(k[len(prefix):].split("/")[0]
                                  for k in self.nodes if k.startswith(prefix)))

    def data(self, path: str) -> Optional[bytes]:
        return self.nodes.get(path)


def leaders(infos: List[PartitionInfo]) -> Dict[tuple, Broker]:
    return {(i.topic, i.partition): i.leader for i in infos}


def test_broker_info_of_one_partition():
    """DynamicBrokersReaderTest.testGetBrokerInfo."""
    r = Registry()
    r.add_partition("testing1", 0, 0, "localhost", 9092)
    assert leaders(read_partitions(r, "/brokers", "testing1")) == {
        ("testing1", 0): Broker("localhost", 9092)}


def test_broker_info_wildcard_finds_new_topics():
    """DynamicBrokersReaderTest.testGetBrokerInfoWildcardMatch: ``^test.*$`` finds two
    topics, then a third one added later."""
    r = Registry()
    r.add_partition("testing1", 0, 0, "localhost", 9092)
    r.add_partition("testing2", 0, 0, "localhost", 9092)
    assert {i.topic for i in read_partitions(r, "/brokers", "^test.*$", wildcard=True)} == {
        "testing1", "testing2"}
    r.add_partition("testing3", 0, 0, "localhost", 9092)
    assert {i.topic for i in read_partitions(r, "/brokers", "^test.*$", wildcard=True)} == {
        "testing1", "testing2", "testing3"}


@pytest.mark.parametrize("second_leader, second_port", [(1, 9093), (0, 9092)],
                         ids=["testMultiplePartitionsOnDifferentHosts",
                              "testMultiplePartitionsOnSameHost"])
def test_two_partitions(second_leader, second_port):
    """DynamicBrokersReaderTest.testMultiplePartitionsOn{Different,Same}Host(s)."""
    r = Registry()
    r.add_partition("testing1", 0, 0, "localhost", 9092)
    r.add_partition("testing1", 1, second_leader, "localhost", second_port)
    assert leaders(read_partitions(r, "/brokers", "testing1")) == {
        ("testing1", 0): Broker("localhost", 9092),
        ("testing1", 1): Broker("localhost", second_port)}


def test_switch_host_for_partition():
    """DynamicBrokersReaderTest.testSwitchHostForPartition: a re-read sees the new leader."""
    r = Registry()
    r.add_partition("testing1", 0, 0, "localhost", 9092)
    r.add_partition("testing1", 0, 0, "localhostswitch", 9093)
    assert leaders(read_partitions(r, "/brokers", "testing1")) == {
        ("testing1", 0): Broker("localhostswitch", 9093)}


# --- ZkCoordinatorTest (4) ------------------------------------------------------------------

class Managers:
    def __init__(self) -> None:
        self.removed: List[tuple] = []

    def factory(self, info: PartitionInfo) -> PartitionManager:
        return PartitionManager(info.topic, info.partition, 0, config=spout(), clock=Clock())

    def on_removed(self, info: PartitionInfo, manager: PartitionManager) -> None:
        self.removed.append(info.key)


def coordinators(r: Registry, total: int, topic: str = "topic", wildcard: bool = False):
    m = Managers()
    out = [zk_assignment(ZkHosts("zk:2181", refresh_freq_secs=1),
                         SpoutConfig(hosts=ZkHosts("zk:2181"), topic=topic, zk_root="/test",
                                     id="id"),
                         TopologyConfig(name="top", wildcard_match=wildcard),
                         manager_factory=m.factory, on_removed=m.on_removed,
                         task_index=i, total_tasks=total, reader=r) for i in range(total)]
    for c in out:
        c.refresh()
    return out, m


def test_one_partition_per_task():
    """ZkCoordinatorTest.testOnePartitionPerTask: 64 tasks, 64 partitions, task i owns i."""
    r = Registry()
    for p in range(64):
        r.add_partition("topic", p, 0, "localhost", 9092)
    cs, _ = coordinators(r, 64)
    for i, c in enumerate(cs):
        assert list(c.managed()) == [("topic", i)]


def test_leader_change_moves_partitions_and_keeps_their_state():
    """ZkCoordinatorTest.testPartitionsChange and testPartitionManagerRecreate: every
    leader moves (port 9092 -> 9093); each task keeps its partitions with their state
    (Storm recreates the manager and moves the state into it; here the manager is kept and
    told the new leader)."""
    r = Registry()
    for p in range(4):
        r.add_partition("topic", p, 0, "localhost", 9092)
    cs, m = coordinators(r, 2)
    before = [dict(c.managed()) for c in cs]
    for pm in before[0].values():
        take = pm.plan_fetch(max_messages=3)
        pm.fetched(take, [(0, 3)], scanned_to=3)
    r.add_partition("topic", 0, 0, "localhost", 9093)    # broker 0 re-registers elsewhere
    for c in cs:
        c.refresh()
    for c, old in zip(cs, before):
        assert c.managed() == old
        for key in old:
            assert c.partition_info(key).leader == Broker("localhost", 9093)
    assert all(pm.emitted_to == 3 for pm in cs[0].managed().values())
    assert m.removed == []


def test_recreate_with_multiple_topics():
    """ZkCoordinatorTest.testPartitionManagerRecreateMultipleTopics: topic1 keeps its state
    across the refresh, topic2 is dropped, topic3 starts fresh."""
    r = Registry()
    r.add_partition("topic1", 0, 0, "localhost", 9092)
    r.add_partition("topic2", 0, 0, "localhost", 9092)
    (c,), m = coordinators(r, 1, topic="topic.*", wildcard=True)
    kept = c.managed()[("topic1", 0)]
    kept.fetched(kept.plan_fetch(max_messages=100), [(0, 100)], scanned_to=100)
    del r.nodes["/brokers/topics/topic2"]
    for k in [k for k in r.nodes if k.startswith("/brokers/topics/topic2/")]:
        del r.nodes[k]
    r.add_partition("topic1", 0, 0, "localhost", 9093)
    r.add_partition("topic3", 0, 0, "localhost", 9093)
    c.refresh()
    assert sorted(c.managed()) == [("topic1", 0), ("topic3", 0)]
    assert c.managed()[("topic1", 0)] is kept and kept.emitted_to == 100
    assert c.managed()[("topic3", 0)].emitted_to == 0
    assert m.removed == [("topic2", 0)]


# --- PartitionManagerTest (1) ---------------------------------------------------------------

def test_storm_2608_commit_after_out_of_range_follows_the_new_ack():
    """PartitionManagerTest.test2608 (STORM-2608): five offsets fail, retention removes
    them, a new message arrives; the out-of-range fetch moves past the failed offsets and
    the commit after acking the new message is that offset + 1."""
    pm = PartitionManager("testTopic", 0, 0, config=spout(), clock=Clock())
    pm.fetched(pm.plan_fetch(max_messages=5), [(0, 5)], scanned_to=5)
    for o in range(5):
        pm.fail(o)
    plan = pm.plan_fetch()
    assert plan.retry
    pm.out_of_range(plan, earliest=5, latest=6)          # 0-4 deleted, message 5 written
    new = pm.plan_fetch()
    assert not new.retry and new.offset == 5
    pm.fetched(new, [(5, 6)], scanned_to=6)
    pm.ack(5)
    assert pm.commit_offset() == 6


def test_no_offset_is_storms_constant():
    """ZkCoordinatorTest.testPartitionManagerRecreateMultipleTopics expects NO_OFFSET (-5)
    where Kafka has no answer for the start time."""
    assert NO_OFFSET == -5
