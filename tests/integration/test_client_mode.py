"""The storm-kafka-client mode on a real broker (tansu): offsets in Kafka consumer
groups, each processing guarantee against its promise, each first-poll strategy,
maxUncommittedOffsets, and a move from the ZooKeeper store to the Kafka store.

The driver loop runs its tasks in this process (``runner=InProcessRunner()``), except the
last test, which goes through Spark.

tansu 0.6 drops the commit metadata string (OffsetFetch answers null metadata;
``test_tansu_drops_commit_metadata`` pins that). Tests where the metadata decides
wrap the real group adapter in :class:`MetadataKeepingGroups`, which gives back
the metadata this process committed while the broker still holds that offset.
That wrapper is a tansu workaround: on Apache Kafka 0.9.0.1 the coordinator keeps
the metadata, and test_kafka09_groups.py checks the round trip and every first-poll
strategy without any wrapper.
"""

import json

import pytest

from storm_kafka_compat.runtime import Runtime
from storm_kafka_compat.testing.groups import MetadataKeepingGroups
from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.kafka.lazy import LazyKafka

pytestmark = pytest.mark.integration

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


@pytest.fixture
def env(tansu, kafka_topic, unique):
    """``(topic, group, groups)`` with 2 partitions x 15 messages; the group is new.
    (``kafka_topic`` produces one record per batch: a tansu workaround for its high
    watermark.)"""
    topic = kafka_topic(partitions=2, messages=[(i % 2, None, f"v{i}".encode())
                                                for i in range(30)])
    group = unique("group")
    groups = KafkaGroupOffsets(tansu.bootstrap, group)
    yield topic, group, groups
    groups.close()


def job(tansu, topic, group, *, topology_id="clicks-1-100", bolt="record", **client):
    section = {"groupId": group, "bootstrapServers": tansu.bootstrap, "topics": [topic],
               "offsetCommitPeriodMs": 1000, **client}
    return job_config_from_dict({
        "kafkaSpout": section, "topology": {"name": "clicks", "id": topology_id},
        "spout": {"topic": topic, "zkRoot": "/unused", "id": group, "scheme": "string"},
        "bolt": f"tests.integration.test_client_mode:{bolt}"})


class Clock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def pipeline(j, groups, clock=None):
    return Pipeline(j, runner=InProcessRunner(), store=object(), sleep=lambda s: None,
                    clock=clock or Clock(), groups=groups)


def step(pipe, now, per_partition=4):
    """One iteration of the driver loop at ``now`` ms (what run() does each batch)."""
    pipe.clock.now = now
    pipe.open()
    plan = pipe.spout.plan(now, per_partition)
    pipe.spout.apply(pipe.runner.run(plan), now, max_task_errors=3)
    pipe.spout.maybe_commit(now)
    return list(plan)


def kill(pipe):
    """Abandon the pipeline like a killed process: no final commit, no close."""
    pipe.runtime.kafka.close()


def committed(groups, topic, partitions=(0, 1)):
    return {p: (v[0] if v else None)
            for (t, p), v in groups.read_many([(topic, p) for p in partitions]).items()}


# --- the broker --------------------------------------------------------------------------
def test_tansu_drops_commit_metadata(env):
    topic, group, groups = env
    groups.write_many({(topic, 0): (3, '{"topologyId":"x","taskId":1,"threadName":"t"}')})
    assert groups.read_many([(topic, 0)])[(topic, 0)] == (3, ""), (
        "tansu now keeps commit metadata: drop MetadataKeepingGroups from these tests")


# --- processing guarantees ----------------------------------------------------------------
def test_at_least_once_loses_nothing_across_a_kill_and_restart(tansu, env):
    topic, group, groups = env
    first = pipeline(job(tansu, topic, group, bolt="fail_listed"), groups)
    FAIL.add((0, 2))                      # blocks partition 0's commit at 2
    for now in (0, 1500, 1600):           # the commit at 1500 is the last before the kill
        step(first, now)
    assert committed(groups, topic) == {0: 2, 1: 8}
    seen_before = set(SEEN)
    kill(first)                           # acks after the last commit are not committed
    FAIL.clear()
    SEEN.clear()
    summary = pipeline(job(tansu, topic, group, topology_id="clicks-2-200"),
                       groups).run(RunOptions(until_caught_up=True,
                                              max_messages_per_partition=4))
    assert {(p.partition, p.resumed_from) for p in summary.partitions} == {(0, 2), (1, 8)}
    every = {(p, o) for p in (0, 1) for o in range(15)}
    assert seen_before | set(SEEN) == every            # nothing lost
    assert min(o for p, o in SEEN if p == 0) == 2      # replayed from the commit
    assert committed(groups, topic) == {0: 15, 1: 15}


def test_at_most_once_never_redelivers_a_committed_offset(tansu, env):
    topic, group, groups = env
    first = pipeline(job(tansu, topic, group, processingGuarantee="AT_MOST_ONCE"), groups)
    step(first, 0)
    assert committed(groups, topic) == {0: 4, 1: 4}    # committed before processing
    step(first, 10)
    at_kill = committed(groups, topic)
    kill(first)
    before = list(SEEN)
    SEEN.clear()
    pipeline(job(tansu, topic, group, processingGuarantee="AT_MOST_ONCE",
                 topology_id="clicks-2-200"), groups).run(
        RunOptions(until_caught_up=True, max_messages_per_partition=4))
    assert all(o >= at_kill[p] for p, o in SEEN)
    assert len(before) + len(SEEN) == len(set(before) | set(SEEN)) == 30


def test_at_most_once_crash_after_commit_loses_the_batch(tansu, env):
    topic, group, groups = env
    first = pipeline(job(tansu, topic, group, processingGuarantee="AT_MOST_ONCE"), groups)
    first.spout.plan(0, 4)                                 # commits, then the "crash"
    kill(first)
    pipeline(job(tansu, topic, group, processingGuarantee="AT_MOST_ONCE",
                 topology_id="clicks-2-200"), groups).run(
        RunOptions(until_caught_up=True, max_messages_per_partition=4))
    assert sorted({o for p, o in SEEN if p == 0}) == list(range(4, 15))


def test_no_guarantee_commits_on_its_period(tansu, env):
    topic, group, groups = env
    pipe = pipeline(job(tansu, topic, group, processingGuarantee="NO_GUARANTEE",
                        bolt="fail_listed"), groups)
    FAIL.add((1, 0))
    step(pipe, 0)                          # the driver's first check commits
    assert committed(groups, topic) == {0: 4, 1: 4}
    step(pipe, 400)
    step(pipe, 900)                        # fetched up to 12 by now
    assert committed(groups, topic) == {0: 4, 1: 4}          # period 1000 ms not over
    step(pipe, 1001)
    assert committed(groups, topic) == {0: 15, 1: 15}        # what was fetched, failed or not
    assert SEEN.count((1, 0)) == 1                           # never retried


# --- first-poll strategies ----------------------------------------------------------------
OURS, OTHER = "clicks-1-100", "other-5-500"


@pytest.mark.parametrize("strategy", ["EARLIEST", "LATEST", "UNCOMMITTED_EARLIEST",
                                      "UNCOMMITTED_LATEST"])
@pytest.mark.parametrize("writer", ["fresh", "this topology", "another topology",
                                    "migration tool"])
def test_first_poll_strategy(tansu, env, strategy, writer):
    topic, group, real = env
    groups = MetadataKeepingGroups(real)    # tansu workaround: it drops commit metadata
    if writer != "fresh":
        meta = {"this topology": OURS, "another topology": OTHER}.get(writer)
        text = json.dumps({"topologyId": meta, "taskId": 1, "threadName": "t"}) if meta else ""
        groups.write_many({(topic, 0): (6, text), (topic, 1): (6, text)})
    spout = Runtime(job(tansu, topic, group, firstPollOffsetStrategy=strategy),
                    kafka=LazyKafka(job(tansu, topic, group)), topology_id=OURS,
                    groups=groups).spout()
    try:
        spout.maybe_refresh(0)
        starts = {k[1]: d.start_offset for k, d in spout.decisions.items()}
        plans = [pm.plan_fetch(4).offset for pm in spout.managers().values()]
    finally:
        spout.kafka.close()
    earliest_or_latest = 0 if "EARLIEST" in strategy else 15
    if writer == "fresh":
        expected = earliest_or_latest
    elif writer == "this topology" or strategy.startswith("UNCOMMITTED"):
        expected = 6
    else:
        expected = earliest_or_latest
    assert starts == {0: expected, 1: expected}
    assert plans == [expected, expected]


# --- maxUncommittedOffsets ----------------------------------------------------------------
def test_max_uncommitted_offsets_stops_fetching_and_resumes_after_acks(tansu, env):
    topic, group, groups = env
    j = job(tansu, topic, group, bolt="fail_listed", maxUncommittedOffsets=5,
            retry={"initialDelay": "5s", "delayPeriod": "5s", "maxDelay": "5s"})
    pipe = pipeline(j, groups)
    FAIL.add((0, 0))
    for now in range(0, 3000, 500):
        step(pipe, now, per_partition=3)
    p0 = pipe.spout.managers()[(topic, 0)]
    seen0 = {o for p, o in SEEN if p == 0}
    # 3 + 3 = 6 uncommitted >= 5: paused; the bound is 5 + one poll of 3 - 1 = 7
    assert seen0 == set(range(6)) and p0.paused and p0.uncommitted_count == 6
    assert {o for p, o in SEEN if p == 1} == set(range(15))    # the limit is per partition
    pipe.spout.commit()
    assert committed(groups, topic) == {0: None, 1: 15}
    FAIL.clear()
    step(pipe, 5000, per_partition=3)      # the retry of 0 is due and within the limit
    assert committed(groups, topic)[0] == 6 and not p0.paused
    for now in range(6200, 9000, 1200):
        step(pipe, now, per_partition=3)
    assert committed(groups, topic)[0] == 15


# --- ZooKeeper store -> Kafka store -----------------------------------------------------
def test_moved_from_zookeeper_to_kafka_resumes_exactly(tansu, env, zk_server, zk_client,
                                                        zk_root):
    from storm_kafka_compat.offsets.document import encode_document, parse_document
    topic, group, groups = env
    for p, offset in ((0, 9), (1, 4)):
        zk_client.create(f"{zk_root}/offsets/clicks-spout/partition_{p}", encode_document(
            topology_id="clicks-12-1514764800", topology_name="clicks", offset=offset,
            partition=p, broker_host=tansu.host, broker_port=tansu.port, topic=topic),
            makepath=True)
    # `offsets migrate CONFIG --to-kafka-group G --execute`, through its functions
    from storm_kafka_compat.tools import ToolEnv
    from storm_kafka_compat.tools.migrate import TO_KAFKA, execute_migrate, plan_migrate
    legacy = job_config_from_dict({
        "spout": {"topic": topic, "zkRoot": f"{zk_root}/offsets", "id": "clicks-spout"},
        "hosts": {"bootstrap": tansu.bootstrap},
        "topology": {"name": "clicks", "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": zk_server.port}})
    tool = ToolEnv(legacy)
    try:
        plan = plan_migrate(tool, direction=TO_KAFKA, group=group, groups=groups)
        execute_migrate(tool, plan, groups=groups)
    finally:
        tool.close()
    docs = {p: parse_document(zk_client.get(f"{zk_root}/offsets/clicks-spout/partition_{p}")[0])
            for p in (0, 1)}
    assert committed(groups, topic) == {p: d.offset for p, d in docs.items()}
    summary = pipeline(job(tansu, topic, group), groups).run(
        RunOptions(until_caught_up=True, max_messages_per_partition=4))
    assert {(p.partition, p.decision, p.resumed_from) for p in summary.partitions} == {
        (0, "resume_foreign", 9), (1, "resume_foreign", 4)}
    assert sorted(SEEN) == [(0, o) for o in range(9, 15)] + [(1, o) for o in range(4, 15)]
    assert committed(groups, topic) == {0: 15, 1: 15}


# --- through Spark ---------------------------------------------------------------------
from tests.integration.conftest_spark import spark, spark_records  # noqa: E402,F401


def test_at_least_once_through_spark(tansu, env, spark, spark_records):  # noqa: F811
    topic, group, groups = env
    j = job_config_from_dict({
        "kafkaSpout": {"groupId": group, "bootstrapServers": tansu.bootstrap, "topics": [topic],
                       "offsetCommitPeriodMs": 100},
        "topology": {"name": "clicks", "id": "clicks-1-100"},
        "spout": {"topic": topic, "zkRoot": "/unused", "id": group, "scheme": "string"},
        "spark": {"master": "local[2]"},
        "bolt": "tests.bolts:record"})
    summary = Pipeline(j, spark=spark, store=object(), sleep=lambda s: None,
                       groups=groups).run(
        RunOptions(until_caught_up=True))
    assert summary.stopped_by == "caught up"
    got = sorted((r["partition"], r["offset"]) for r in spark_records(topic))
    assert got == [(p, o) for p in (0, 1) for o in range(15)]
    assert committed(groups, topic) == {0: 15, 1: 15}
