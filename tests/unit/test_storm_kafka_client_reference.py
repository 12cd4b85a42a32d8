"""Cases of Apache Storm's storm-kafka-client unit tests (tag v2.8.8,
``external/storm-kafka-client/src/test/java/org/apache/storm/kafka/``) restated against
this project's API, where no other test of ours already states them. The table in
docs/deviations.md ("Storm's own tests") maps every case, here or elsewhere.

Our own tests of the same behaviour; no Storm code is copied.
"""

from typing import List, Optional

import pytest

from storm_kafka_compat.config.kafka_spout import KafkaSpoutConfig, kafka_spout_config_from_dict
from storm_kafka_compat.spout.client.manager import ClientPartitionManager
from storm_kafka_compat.spout.client.metrics import ClientOffsetSample, kafka_offset_metric_v2
from storm_kafka_compat.spout.client.offset_manager import OffsetManager
from storm_kafka_compat.config.kafka_spout_retry import INT_MAX, RetrySettings, TimeInterval
from storm_kafka_compat.spout.client.retry import RetryService
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.runtime import Runtime
from storm_kafka_compat.testing.groups import MemoryGroupOffsets
from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.spout.assignment import partitions_for_task
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.topology.schemes import load_scheme


class Lazy:
    """The driver's LazyKafka over a ScriptedKafka."""

    def __init__(self, kafka: ScriptedKafka) -> None:
        self.kafka, self.brokers = kafka, set()

    def learn(self, broker) -> None:
        pass

    def __getattr__(self, name):
        return getattr(self.kafka, name)


class Record:
    def __init__(self, topic: str, partition: int, offset: int, key: Optional[bytes],
                 value: Optional[bytes]) -> None:
        self.topic, self.partition, self.offset = topic, partition, offset
        self.key, self.value = key, value


# --- KafkaSpoutConfigTest (6) ---------------------------------------------------------------

def section(**kw) -> KafkaSpoutConfig:
    return kafka_spout_config_from_dict({"bootstrapServers": "localhost:1234",
                                         "topics": ["topic"], "groupId": "g", **kw})


def test_config_basic_defaults():
    """testBasic: UNCOMMITTED_EARLIEST, auto.offset.reset earliest under at-least-once,
    the default translator's tuple shape (record_translator here, by choice of scheme).
    Storm's null group id is refused here (see test_missing_group_id_is_refused)."""
    c = section()
    assert c.first_poll_offset_strategy == "UNCOMMITTED_EARLIEST"
    assert c.auto_offset_reset == "earliest"
    assert load_scheme("record_translator").fields == (
        "topic", "partition", "offset", "key", "value")


def test_missing_group_id_is_refused():
    """testBasic's null group id: a documented deviation (no commit could succeed)."""
    with pytest.raises(ConfigError, match="groupId is missing.*Storm accepts a spout "
                                          "without one"):
        kafka_spout_config_from_dict({"bootstrapServers": "k:1", "topics": ["t"]})


def test_a_misspelt_group_id_is_named_before_the_missing_group():
    """Deriving the spout section from kafkaSpout must not hide the section's own errors."""
    with pytest.raises(ConfigError, match="unknown key kafkaSpout.groupid .did you mean "
                                          "groupId"):
        job_config_from_dict({"kafkaSpout": {"groupid": "g", "bootstrapServers": "k:1",
                                             "topics": ["t"]}, "topology": {"name": "x"}})


def test_config_emit_null_tuples():
    """testSetEmitNullTuplesToTrue."""
    assert section(emitNullTuples=True).emit_null_tuples is True


def test_config_auto_offset_reset_not_forced_without_at_least_once():
    """testShouldNotChangeAutoOffsetResetPolicyWhenNotUsingAtLeastOnce: Kafka's default
    (latest) applies under AT_MOST_ONCE."""
    assert section(processingGuarantee="AT_MOST_ONCE").auto_offset_reset == "latest"


def test_config_explicit_auto_offset_reset_is_kept():
    """testWillRespectExplicitAutoOffsetResetPolicy."""
    assert section(consumer={"auto.offset.reset": "none"}).auto_offset_reset == "none"


def test_config_metrics_time_bucket():
    """testMetricsTimeBucketSizeInSecs: the reporting period is spout.metricsTimeBucketSizeInSecs
    (one setting for both spouts)."""
    job = job_config_from_dict({"kafkaSpout": {"bootstrapServers": "k:1", "topics": ["t"],
                                               "groupId": "g"},
                                "spout": {"metricsTimeBucketSizeInSecs": 100},
                                "topology": {"name": "x"}})
    assert job.spout.metrics_time_bucket_size_in_secs == 100


def test_config_enable_auto_commit_is_rejected():
    """testThrowsIfEnableAutoCommitIsSet."""
    with pytest.raises(ConfigError, match="enable.auto.commit"):
        section(consumer={"enable.auto.commit": True})


# --- DefaultRecordTranslatorTest (1) --------------------------------------------------------

def test_default_record_translator_shape():
    """DefaultRecordTranslatorTest.testBasic: (topic, partition, offset, key, value)."""
    scheme = load_scheme("org.apache.storm.kafka.spout.DefaultRecordTranslator")
    rec = Record("TOPIC", 100, 100, b"THE KEY", b"THE VALUE")
    assert scheme.to_tuples(rec) == [["TOPIC", 100, 100, "THE KEY", "THE VALUE"]]


# --- metrics2 (2 + 2) ------------------------------------------------------------------------

def test_partition_metrics_lag_and_records():
    """KafkaOffsetPartitionMetricsTest.registerMetricsGetSpoutLagAndPartitionRecords:
    end 100, committed 90 -> spoutLag 10; start 1 -> recordsInPartition 99."""
    m = kafka_offset_metric_v2([ClientOffsetSample("topicA", 1, 1, 100, 0, 90)])
    assert m["topicA/partition_1/spoutLag"] == 10
    assert m["topicA/partition_1/recordsInPartition"] == 99


def test_partition_metrics_earliest_latest_emitted_completed():
    """KafkaOffsetPartitionMetricsTest.registerMetricsGetEarliestAndLatest."""
    m = kafka_offset_metric_v2([ClientOffsetSample("topicA", 1, 1, 100, 50, 40)])
    assert (m["topicA/partition_1/earliestTimeOffset"], m["topicA/partition_1/latestTimeOffset"],
            m["topicA/partition_1/latestEmittedOffset"],
            m["topicA/partition_1/latestCompletedOffset"]) == (1, 100, 50, 40)


def test_topic_metrics_lag_and_records_only_for_the_topic():
    """KafkaOffsetTopicMetricsTest.registerMetricsGetSpoutLagAndPartitionRecords: topicA's
    partitions (ends 100, 200; committed 90, 170; starts 1, 2): lag 40, records 297; no
    topicB totals when topicB has no partition of this task."""
    m = kafka_offset_metric_v2([ClientOffsetSample("topicA", 1, 1, 100, 0, 90),
                                ClientOffsetSample("topicA", 2, 2, 200, 0, 170)])
    assert m["topicA/totalSpoutLag"] == 40
    assert m["topicA/totalRecordsInPartitions"] == 297
    assert "topicB/totalSpoutLag" not in m
    assert m == kafka_offset_metric_v2([ClientOffsetSample("topicA", 1, 1, 100, 0, 90),
                                        ClientOffsetSample("topicA", 2, 2, 200, 0, 170)])


def test_topic_metrics_earliest_latest_emitted_completed():
    """KafkaOffsetTopicMetricsTest.registerMetricsGetEarliestAndLatest: sums 2, 300, 150, 130."""
    m = kafka_offset_metric_v2([ClientOffsetSample("topicA", 1, 1, 100, 50, 40),
                                ClientOffsetSample("topicA", 2, 1, 200, 100, 90)])
    assert (m["topicA/totalEarliestTimeOffset"], m["topicA/totalLatestTimeOffset"],
            m["topicA/totalLatestEmittedOffset"], m["topicA/totalLatestCompletedOffset"]) == (
        2, 300, 150, 130)
    assert "topicB/totalLatestTimeOffset" not in m


def test_metrics_unknown_log_offsets_are_zero_and_no_partitions_is_no_point():
    """Storm's gauges return 0 when Kafka does not answer; no assignment registers nothing."""
    m = kafka_offset_metric_v2([ClientOffsetSample("t", 0, None, None, 5, 3),
                                ClientOffsetSample("t", 1, 0, 10, 9, 10)])
    assert m["t/partition_0/spoutLag"] == 0 and m["t/partition_0/latestCompletedOffset"] == 3
    assert m["t/totalSpoutLag"] == 0 and m["t/totalLatestCompletedOffset"] == 13
    assert kafka_offset_metric_v2([]) is None


def test_client_spout_reports_the_2x_metric_from_its_managers():
    """The driver's kafkaOffset record in client mode carries the 2.x names: after 3 of 5
    records are emitted and acked and committed, lag is 2 and latestEmittedOffset 2."""
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, *[b"x"] * 5)
    job = job_config_from_dict({"kafkaSpout": {"groupId": "g", "bootstrapServers": "k:1",
                                               "topics": ["orders"]},
                                "topology": {"name": "orders", "id": "orders-1-1"}})
    spout = Runtime(job, kafka=Lazy(kafka), topology_id="orders-1-1",
                    groups=MemoryGroupOffsets()).spout()
    spout.maybe_refresh(0)
    pm: ClientPartitionManager = spout.managers()[("orders", 0)]
    plan = pm.plan_fetch(max_messages=3)
    pm.fetched(plan, [(0, 3)], scanned_to=3)
    pm.ack_ranges([(0, 3)])
    spout.commit()
    m = spout.kafka_offset_metric()
    assert m["orders/partition_0/spoutLag"] == 2
    assert m["orders/partition_0/latestEmittedOffset"] == 2
    assert m["orders/partition_0/latestCompletedOffset"] == 3
    assert m["orders/partition_0/recordsInPartition"] == 5


# --- subscription (NamedTopicFilterTest 2, PatternTopicFilterTest 1,
#     RoundRobinManualPartitionerTest 1) --------------------------------------------------------

def owned(kafka: ScriptedKafka, total: int = 1, **client) -> List[List[tuple]]:
    job = job_config_from_dict({"kafkaSpout": {"groupId": "g", "bootstrapServers": "k:1",
                                               **client},
                                "topology": {"name": "x", "id": "x-1-1"}})
    out = []
    for i in range(total):
        s = Runtime(job, kafka=Lazy(kafka), topology_id="x-1-1",
                    groups=MemoryGroupOffsets()).spout(task_index=i, total_tasks=total)
        s.maybe_refresh(0)
        out.append(sorted(s.managers()))
    return out


def test_named_topic_filter():
    """NamedTopicFilterTest.testFilter: every partition of the named topics, none other."""
    k = ScriptedKafka()
    k.create_topic("test-1", 2)
    k.create_topic("test-2", 1)
    k.create_topic("other", 1)
    assert owned(k, topics=["test-1", "test-2"]) == [
        [("test-1", 0), ("test-1", 1), ("test-2", 0)]]


def test_named_topic_filter_skips_an_absent_topic():
    """NamedTopicFilterTest.testFilterOnAbsentTopic: a topic Kafka does not know is skipped."""
    k = ScriptedKafka()
    k.create_topic("test-1", 1)
    assert owned(k, topics=["test-1", "absent"]) == [[("test-1", 0)]]


def test_pattern_topic_filter():
    """PatternTopicFilterTest.testFilter: the pattern matches whole topic names."""
    k = ScriptedKafka()
    for t in ("test-1", "test-11", "xtest-1", "unrelated"):
        k.create_topic(t, 1)
    assert owned(k, topicPattern="test-\\d+") == [[("test-1", 0), ("test-11", 0)]]


def test_round_robin_manual_partitioner():
    """RoundRobinManualPartitionerTest.testRoundRobinPartitioning: task i of T owns
    partitions i, i+T, ... of the sorted list."""
    parts = list(range(11))
    assert [partitions_for_task(parts, i, 3) for i in range(3)] == [
        [0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8]]


# --- KafkaSpoutNullTupleTest (1) ------------------------------------------------------------

def test_records_giving_no_tuple_are_committed_without_emitting():
    """KafkaSpoutNullTupleTest.testShouldCommitAllMessagesIfNotSetToEmitNullTuples: ten
    records that give no tuple are acked unemitted and committed."""
    config = section()
    pm = ClientPartitionManager("t", 0, 0, config=config)
    plan = pm.plan_fetch(max_messages=10)
    pm.fetched(plan, [(0, 10)], scanned_to=10)
    pm.ack_ranges([(0, 10)])                 # the executor acks what the scheme skipped
    assert pm.commit_offset() == 10


# --- KafkaSpoutRetryExponentialBackoffTest (9) -----------------------------------------------
# One RetryService per partition here (Storm keeps one for all partitions, keyed by
# TopicPartition); a revoked partition drops its manager and with it its schedules.

class Clock:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def no_wait(clock: Clock) -> RetryService:
    return RetryService(RetrySettings(TimeInterval.seconds(0), TimeInterval.seconds(0), 1,
                                      TimeInterval.seconds(0)), clock)


def one_second(clock: Clock) -> RetryService:
    return RetryService(RetrySettings(TimeInterval.seconds(1), TimeInterval.seconds(0), 1,
                                      TimeInterval.seconds(1)), clock)


def test_retry_can_schedule():
    """testCanScheduleRetry."""
    r = no_wait(Clock())
    assert r.schedule(0, 1)
    assert r.is_scheduled(0) and r.is_ready(0)
    assert r.due_offsets() == [0] and r.earliest_retriable_offset() == 0


def test_retry_can_reschedule():
    """testCanRescheduleRetry: a second schedule restarts the delay."""
    clock = Clock()
    r = one_second(clock)
    r.schedule(0, 1)
    clock.ms += 500
    assert r.schedule(0, 1)
    clock.ms += 500
    assert not r.is_ready(0) and r.is_scheduled(0) and r.earliest_retriable_offset() is None
    clock.ms += 500
    assert r.is_ready(0) and r.earliest_retriable_offset() == 0 and r.due_offsets() == [0]


def test_retry_one_schedule_per_offset():
    """testCannotContainMultipleSchedulesForId: after a reschedule, one remove clears it."""
    clock = Clock()
    r = one_second(clock)
    r.schedule(0, 1)
    clock.ms += 500
    r.schedule(0, 1)
    r.remove(0)
    clock.ms += 500
    assert not r.is_scheduled(0) and not r.is_ready(0) and len(r) == 0


def test_retry_can_remove():
    """testCanRemoveRetry."""
    r = no_wait(Clock())
    r.schedule(0, 1)
    assert r.remove(0)
    assert not r.is_scheduled(0) and not r.is_ready(0)
    assert r.earliest_retriable_offset() is None and r.due_offsets() == []


def test_retry_partitions_are_independent():
    """testCanHandleMultipleTopics: schedules of two partitions do not interfere; dropping
    one partition (retainAll) leaves the other."""
    clock = Clock()
    tp1, tp2 = one_second(clock), one_second(clock)
    tp1.schedule(0, 1)
    clock.ms += 500
    tp2.schedule(0, 1)
    assert not tp1.is_ready(0) and not tp2.is_ready(0)
    clock.ms += 500
    assert tp1.is_ready(0) and not tp2.is_ready(0)
    clock.ms += 500
    assert tp2.is_ready(0)
    tp1.clear()                     # the partition is revoked
    assert not tp1.is_scheduled(0) and tp2.earliest_retriable_offset() == 0


def test_retry_several_offsets_of_one_partition():
    """testCanHandleMultipleMessagesOnPartition."""
    clock = Clock()
    r = one_second(clock)
    r.schedule(0, 1)
    clock.ms += 500
    r.schedule(1, 1)
    clock.ms += 500
    assert r.is_ready(0) and not r.is_ready(1) and r.earliest_retriable_offset() == 0
    clock.ms += 500
    assert r.is_ready(1) and r.earliest_retriable_offset() == 0
    r.remove(0)
    assert r.earliest_retriable_offset() == 1


def test_retry_max_retries():
    """testMaxRetries: maxRetries 3 allows the third failure's retry, not the fourth."""
    r = RetryService(RetrySettings(TimeInterval.seconds(0), TimeInterval.seconds(0), 3,
                                   TimeInterval.seconds(0)), Clock())
    assert r.schedule(0, 3) and r.is_scheduled(0)
    r.remove(0)
    assert not r.schedule(0, 4) and not r.is_scheduled(0)


def test_retry_max_delay():
    """testMaxDelay: an initial delay of 500 s is capped at maxDelay 2 s."""
    clock = Clock()
    r = RetryService(RetrySettings(TimeInterval.seconds(500), TimeInterval.seconds(0), 1,
                                   TimeInterval.seconds(2)), clock)
    r.schedule(0, 1)
    clock.ms += 2000
    assert r.is_ready(0)


def test_retry_exponential_backoff():
    """testExponentialBackoff: delayPeriod 4 s gives 8, 16, 32 s for failures 2, 3, 4."""
    clock = Clock()
    r = RetryService(RetrySettings(TimeInterval.seconds(0), TimeInterval.seconds(4), INT_MAX,
                                   TimeInterval.seconds(INT_MAX)), clock)
    for fails, secs in ((2, 8), (3, 16), (4, 32)):
        r.schedule(0, fails)
        clock.ms += (secs - 1) * 1000
        assert not r.is_ready(0)
        clock.ms += 1000
        assert r.is_ready(0)
        r.remove(0)


# --- OffsetManagerTest (12) -------------------------------------------------------------------


def offsets(committed: int = 0, emitted=(), acked=()) -> OffsetManager:
    om = OffsetManager("testTopic", 0, committed)
    for o in emitted:
        om.add_to_emitted(o, o + 1)
    for o in acked:
        om.add_to_acked(o, o + 1)
    return om


@pytest.mark.parametrize("case, emitted, acked, expected", [
    ("testSkipMissingOffsetsWhenFindingNextCommitOffsetWithGapInMiddleOfAcked, 5 pending",
     [0, 1, 2, 5, 6], [0, 1, 2, 6], 3),
    ("testSkipMissingOffsetsWhenFindingNextCommitOffsetWithGapInMiddleOfAcked, 5 acked",
     [0, 1, 2, 5, 6], [0, 1, 2, 6, 5], 7),
    ("testSkipMissingOffsetsWhenFindingNextCommitOffsetWithGapBeforeAcked, 5 pending",
     [5, 6], [6], None),
    ("testSkipMissingOffsetsWhenFindingNextCommitOffsetWithGapBeforeAcked, 5 acked",
     [5, 6], [6, 5], 7),
    ("testFindNextCommittedOffsetWithNoAcks", [], [], None),
    ("testFindNextCommitOffsetWithOneAck", [0], [0], 1),
    ("testFindNextCommitOffsetWithMultipleOutOfOrderAcks", [1, 0], [1, 0], 2),
    ("testFindNextCommitOffsetWithAckedOffsetGap", [2, 1, 0], [2, 0], 1),
    ("testFindNextOffsetWithAckedButNotEmittedOffsetGap", [2, 0], [2, 0], 3),
    ("testFindNextCommitOffsetWithUnackedOffsetGap", [1, 0], [0], 1),
])
def test_offset_manager_next_commit_offset(case, emitted, acked, expected):
    """OffsetManagerTest.testFindNextCommit* and testSkipMissingOffsets*: the next offset to
    commit (the next offset to process), jumping only gaps that were never emitted."""
    assert offsets(0, emitted, acked).find_next_commit_offset() == expected


def test_offset_manager_ack_below_the_commit_has_no_effect():
    """OffsetManagerTest.testFindNextCommitOffsetWhenTooLowOffsetIsAcked: a partition
    starting at 10 ignores an ack of offset 0 (the manager drops acks not in flight)."""
    pm = ClientPartitionManager("t", 0, 10, config=section())
    pm.ack(0)
    assert pm.commit_offset() is None


def test_offset_manager_commit_drops_what_is_below():
    """OffsetManagerTest.testCommit: committing 2 forgets 0 and 1, keeps 2."""
    om = offsets(0, [0, 1, 2], [0, 1, 2])
    om.commit(2)
    assert not om.contains(0) and not om.contains(1) and om.contains(2)
    assert om.is_acked(2) and not om.is_acked(1)


def test_offset_manager_nth_uncommitted_offset():
    """OffsetManagerTest.testGetNthUncommittedOffsetAfterCommittedOffset (Storm throws
    NoSuchElementException past the end; None here)."""
    om = offsets(0, [1, 2, 5, 30])
    assert (om.nth_uncommitted_offset(3), om.nth_uncommitted_offset(4)) == (5, 30)
    assert om.nth_uncommitted_offset(5) is None


def test_offset_manager_committed_flag():
    """OffsetManagerTest.testCommittedFlagSetOnCommit."""
    om = offsets()
    assert not om.committed
    om.commit(0)
    assert om.committed


def test_the_driver_sends_the_2x_metric_in_client_mode():
    """Through the driver's metric report: the kafkaOffset record of a client-mode
    pipeline carries storm-kafka-client 2.x's keys (recordsInPartition)."""
    from storm_kafka_compat.engine.driver import Pipeline

    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, *[b"x"] * 4)
    job = job_config_from_dict({"kafkaSpout": {"groupId": "g", "bootstrapServers": "k:1",
                                               "topics": ["orders"], "offsetCommitPeriodMs": 1},
                                "topology": {"name": "orders", "id": "orders-1-1"},
                                "bolt": "tests.bolts:record"})
    records: List[dict] = []
    pipe = Pipeline(job, runner=InProcessRunner(kafka), store=object(),
                    kafka_factory=lambda boot: kafka, sleep=lambda s: None,
                    metrics=records.append, groups=MemoryGroupOffsets())
    pipe.spout.maybe_refresh(0)
    pipe.reporter.emit_metrics()
    value = [r["value"] for r in records if r["name"] == "kafkaOffset"][-1]
    assert value["orders/partition_0/recordsInPartition"] == 4
    assert value["orders/totalRecordsInPartitions"] == 4
    assert value["orders/partition_0/latestEmittedOffset"] == 0      # nothing emitted yet
    assert value["orders/partition_0/spoutLag"] == 4


# --- KafkaSpoutRebalanceTest (acks and fails after a revocation) -----------------------------

@pytest.mark.parametrize("outcome", ["ack", "fail"],
                         ids=["spoutMustIgnoreAcksForTuplesItIsNotAssignedAfterRebalance",
                              "spoutMustIgnoreFailsForTuplesItIsNotAssignedAfterRebalance"])
def test_outcomes_for_a_revoked_partition_are_ignored(outcome):
    """KafkaSpoutRebalanceTest: a batch result that comes back for a partition revoked
    meanwhile is dropped: nothing is committed or retried for it; the assigned partition
    commits as usual."""
    from storm_kafka_compat.engine.driver import Pipeline
    from storm_kafka_compat.batch import BatchResult, PartitionResult

    kafka = ScriptedKafka()
    for topic in ("kept", "revoked"):
        kafka.create_topic(topic, 1)
        kafka.append(topic, 0, *[b"x"] * 3)
    groups = MemoryGroupOffsets()
    job = job_config_from_dict({"kafkaSpout": {"groupId": "g", "bootstrapServers": "k:1",
                                               "topics": ["kept", "revoked"],
                                               "partitionRefreshPeriodMs": 1},
                                "topology": {"name": "x", "id": "x-1-1"},
                                "bolt": "tests.bolts:record"})
    pipe = Pipeline(job, runner=InProcessRunner(kafka), store=object(),
                    kafka_factory=lambda boot: kafka, sleep=lambda s: None, groups=groups)
    pipe.spout.maybe_refresh(0)
    plans = {k: pm.plan_fetch(3) for k, pm in pipe.spout.managers().items()}
    kafka.delete_topic("revoked")
    pipe.spout.maybe_refresh(10)
    assert list(pipe.spout.managers()) == [("kept", 0)]
    results = []
    for (topic, _p), plan in plans.items():
        r = PartitionResult(plan, taken=[(0, 3)], scanned_to=3)
        if outcome == "ack" or topic == "kept":
            r.acked = [(0, 3)]
        else:
            r.acked, r.failed = [(0, 1), (2, 3)], [1]
        results.append(r)
    pipe.spout.apply(BatchResult(results), 20, max_task_errors=3)
    pipe.spout.commit()
    assert groups.offsets[("kept", 0)][0] == 3
    assert ("revoked", 0) not in groups.offsets
