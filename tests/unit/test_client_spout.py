"""The storm-kafka-client spout on the driver loop: scripted Kafka, in-memory group,
in-process tasks."""

import json

import pytest

from storm_kafka_compat.runtime import Runtime
from storm_kafka_compat.spout.client.spout import GroupCommits
from storm_kafka_compat.testing.groups import MemoryGroupOffsets
from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.errors import GroupAccessError
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.testing.inprocess import InProcessRunner

SEEN = []
FAIL = set()


def record(t):
    SEEN.append((t.partition, t.offset))


def fail_listed(t):
    SEEN.append((t.partition, t.offset))
    if (t.partition, t.offset) in FAIL:
        raise RuntimeError("listed to fail")


@pytest.fixture(autouse=True)
def clear():
    SEEN.clear()
    FAIL.clear()


def job(topology_id="orders-1-100", bolt="record", **client):
    section = {"groupId": "g", "bootstrapServers": "k1:9092", "topics": ["orders"],
               "offsetCommitPeriodMs": 1, **client}
    return job_config_from_dict({"kafkaSpout": section,
                                 "topology": {"name": "orders", "id": topology_id},
                                 "bolt": f"tests.unit.test_client_spout:{bolt}"})


def kafka_with(n, partitions=2):
    k = ScriptedKafka()
    k.create_topic("orders", partitions)
    for p in range(partitions):
        k.append("orders", p, *[f"m{p}-{i}".encode() for i in range(n)])
    return k


def run(j, kafka, groups, clock=None, **opts):
    pipe = Pipeline(j, runner=InProcessRunner(kafka), store=object(),
                    kafka_factory=lambda boot: kafka, sleep=lambda s: None, clock=clock,
                    groups=groups)
    opts.setdefault("until_caught_up", True)
    summary = pipe.run(RunOptions(max_messages_per_partition=4, **opts))
    return pipe, summary


def test_config_without_spout_and_hosts_sections():
    j = job()
    assert j.uses_kafka_offsets and j.kafka_spout.group_id == "g"
    assert j.spout.topic == "orders"
    # the driver commits every offsetCommitPeriodMs; the spout section is not rewritten
    spout = Runtime(j, kafka_factory=lambda boot: kafka_with(1),
                    groups=MemoryGroupOffsets()).spout()
    assert spout.commit_interval_ms == j.kafka_spout.offset_commit_period_ms == 1
    assert j.spout.state_update_interval_ms == 2000


def test_at_least_once_commits_with_storm_kafka_client_metadata():
    kafka, groups = kafka_with(10), MemoryGroupOffsets()
    _, summary = run(job(), kafka, groups)
    assert sorted(SEEN) == [(p, o) for p in range(2) for o in range(10)]
    offset, metadata = groups.offsets[("orders", 0)]
    assert offset == 10
    meta = json.loads(metadata)
    assert list(meta) == ["topologyId", "taskId", "threadName"]
    assert meta["topologyId"] == "orders-1-100" and meta["taskId"] == 1
    assert {p.decision for p in summary.partitions} == {"no_commit"}


def test_restart_resumes_from_own_commit_even_with_earliest():
    kafka, groups = kafka_with(10), MemoryGroupOffsets()
    run(job(), kafka, groups, max_batches=1, until_caught_up=False)
    first = groups.offsets[("orders", 0)][0]
    assert 0 < first < 10
    SEEN.clear()
    _, summary = run(job(firstPollOffsetStrategy="EARLIEST"), kafka, groups)
    assert min(o for p, o in SEEN if p == 0) == first
    assert {p.decision for p in summary.partitions} == {"resume"}


@pytest.mark.parametrize("strategy, start", [
    ("EARLIEST", 0), ("LATEST", 10), ("UNCOMMITTED_EARLIEST", 6), ("UNCOMMITTED_LATEST", 6),
])
def test_foreign_commit_strategy_decides(strategy, start):
    kafka = kafka_with(10, partitions=1)
    groups = MemoryGroupOffsets({("orders", 0): (6, "")})     # e.g. storm-kafka-migration
    kafka.append("orders", 0, b"late")                         # log end 11 after the start
    _, summary = run(job(firstPollOffsetStrategy=strategy), kafka, groups)
    assert summary.partitions[0].resumed_from == (11 if start == 10 else start)


def test_failed_offset_blocks_the_commit_until_retried_and_acked():
    kafka, groups = kafka_with(6, partitions=1), MemoryGroupOffsets()
    FAIL.add((0, 2))
    j = job(bolt="fail_listed", retry={"maxRetries": 2, "initialDelay": 0, "delayPeriod": 0})
    pipe, summary = run(j, kafka, groups)
    assert SEEN.count((0, 2)) == 3                 # first emit plus maxRetries re-emits
    assert summary.partitions[0].given_up == 1
    assert groups.offsets[("orders", 0)][0] == 6


NOW = [0]


def step(pipe, now):
    """One driver iteration (what Pipeline.run does each batch), committing every time."""
    NOW[0] = now
    plan = pipe.spout.plan(now, 4)
    pipe.spout.apply(pipe.runner.run(plan), now, max_task_errors=3)
    pipe.spout.commit()
    return list(plan)


def test_max_uncommitted_offsets_pauses_then_resumes():
    kafka, groups = kafka_with(30, partitions=1), MemoryGroupOffsets()
    FAIL.add((0, 0))
    j = job(bolt="fail_listed", maxUncommittedOffsets=6,
            retry={"initialDelay": "1s", "delayPeriod": "1s", "maxDelay": "1s"})
    pipe = Pipeline(j, runner=InProcessRunner(kafka), store=object(),
                    kafka_factory=lambda boot: kafka, sleep=lambda s: None, clock=lambda: NOW[0],
                    groups=groups)
    pipe.open()
    for _ in range(5):
        step(pipe, 0)
    pm = pipe.spout.managers()[("orders", 0)]
    # 4 + 4 uncommitted (8 >= 6): paused; the bound is 6 + one poll of 4 - 1 = 9
    assert max(o for _, o in SEEN) == 7 and pm.uncommitted_count == 8 and pm.paused
    assert ("orders", 0) not in groups.offsets and step(pipe, 500) == []
    FAIL.clear()
    assert step(pipe, 1000)[0].reemit == (0,)        # due retry within the limit
    assert groups.offsets[("orders", 0)][0] == 8 and not pm.paused
    for _ in range(10):
        step(pipe, 2000)
    assert groups.offsets[("orders", 0)][0] == 30


def test_at_most_once_commits_before_processing():
    kafka, groups = kafka_with(10, partitions=1), MemoryGroupOffsets()
    j = job(processingGuarantee="AT_MOST_ONCE")
    pipe, summary = run(j, kafka, groups)
    # every commit precedes the records it covers: 4, 8, 10
    assert [c[("orders", 0)][0] for c in groups.commits] == [4, 8, 10]
    assert sorted(SEEN) == [(0, o) for o in range(10)]


def test_at_most_once_commit_failure_skips_the_fetch():
    kafka, groups = kafka_with(10, partitions=1), MemoryGroupOffsets()
    groups.fail_next, groups.error = 1, GroupAccessError("refused", group_id="g")
    pipe, summary = run(job(processingGuarantee="AT_MOST_ONCE"), kafka, groups)
    assert sorted(SEEN) == [(0, o) for o in range(10)]
    assert pipe.spout.counts.commit_failures == 1


def test_no_guarantee_commits_fetched_offsets_and_never_retries():
    kafka, groups = kafka_with(5, partitions=1), MemoryGroupOffsets()
    FAIL.add((0, 1))
    _, summary = run(job(bolt="fail_listed", processingGuarantee="NO_GUARANTEE"), kafka, groups)
    assert SEEN.count((0, 1)) == 1
    assert groups.offsets[("orders", 0)][0] == 5


def test_pattern_subscription_and_round_robin_tasks():
    kafka = ScriptedKafka()
    for t in ("b-topic", "a-topic", "other"):
        kafka.create_topic(t, 2)
    j = job(topics=None, topicPattern=".*-topic")
    spouts = [Runtime(j, kafka=_Lazy(kafka), topology_id="x", groups=MemoryGroupOffsets())
              .spout(task_index=i, total_tasks=3) for i in range(3)]
    for s in spouts:
        s.maybe_refresh(0)
    owned = [sorted(s.managers()) for s in spouts]
    assert owned == [[("a-topic", 0), ("b-topic", 1)], [("a-topic", 1)], [("b-topic", 0)]]


class _Lazy:
    def __init__(self, k):
        self.k, self.brokers = k, set()

    def learn(self, b):
        pass

    def __getattr__(self, name):
        return getattr(self.k, name)


def test_needs_the_kafka_store():
    j = job_config_from_dict({"spout": {"topic": "t", "zkRoot": "/r", "id": "i"},
                              "hosts": {"bootstrap": "k:1"}, "topology": {"name": "n"},
                              "kafkaSpout": {"offsetStore": "zookeeper"}})
    with pytest.raises(ConfigError, match="offsetStore: kafka"):
        GroupCommits(j, MemoryGroupOffsets, _Lazy(ScriptedKafka()), "x")
