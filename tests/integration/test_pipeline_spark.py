"""The PySpark pipeline on real servers: ZooKeeper (pyspark's jars), the tansu
broker and Spark local[2]. The bolts run in Spark's Python workers and record
what they see to a file (tests/bolts.py); records are told apart by topic."""

import collections
import time

import pytest

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.offsets.document import parse_document
from storm_kafka_compat.workshop.servers.registry import write_broker_registry
from tests import bolts
from tests.integration.conftest_spark import spark, spark_records  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def make_config(topic, zk_server, zk_root, tansu, *, bolt="tests.bolts:record", spout=None,
                topology=None, hosts=None, topology_spec=None):
    spout_conf = {"topic": topic, "zkRoot": f"{zk_root}/offsets", "id": "spout-1",
                  "scheme": "string", "stateUpdateIntervalMs": 200}
    spout_conf.update(spout or {})
    topo = {"topology.name": "orders", "topology.id": "orders-py-1",
            "storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": zk_server.port}
    topo.update(topology or {})
    if topology_spec is not None:
        topo.update(topology_spec)
    d = {"spout": spout_conf, "hosts": hosts or {"bootstrap": tansu.bootstrap},
         "topology": topo, "spark": {"master": "local[2]"}}
    if topology_spec is None:
        d["bolt"] = bolt
    return job_config_from_dict(d)


def doc(zk_client, path):
    return zk_client.get_async(path).get(timeout=10)[0]


def storm_bytes(topology_id, name, offset, partition, host, port, topic):
    """A document exactly as storm-kafka 1.2 writes it (json-simple, ImmutableMap order)."""
    return ('{"topology":{"id":"%s","name":"%s"},"offset":%d,"partition":%d,'
            '"broker":{"host":"%s","port":%d},"topic":"%s"}'
            % (topology_id, name, offset, partition, host, port, topic)).encode()


class TimedPipeline(Pipeline):
    """Records how long each batch took (the slack of timing checks: a retry or
    timeout is served by the first batch that starts after it is due)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.batch_s = []

    def batch(self, options):
        started = time.monotonic()
        taken = super().batch(options)
        self.batch_s.append(time.monotonic() - started)
        return taken

    def slack_s(self):
        return 2 * max(self.batch_s) + 0.5


def run(job, spark, **options):  # noqa: F811
    options.setdefault("idle_sleep_ms", 50)
    pipe = Pipeline(job, spark=spark)
    started = time.monotonic()
    summary = pipe.run(RunOptions(**options))
    return summary, time.monotonic() - started


def test_every_message_reaches_the_bolt_over_four_partitions(
        spark, spark_records, zk_server, zk_client, zk_root, tansu, kafka_topic):  # noqa: F811
    n = 2000
    topic = kafka_topic(partitions=4, messages=[(i % 4, None, f"m{i}".encode())
                                                for i in range(n)])
    job = make_config(topic, zk_server, zk_root, tansu)
    summary, elapsed = run(job, spark, until_caught_up=True, max_messages_per_partition=250)
    seen = collections.Counter((r["partition"], r["offset"]) for r in spark_records(topic))
    assert set(seen) == {(p, o) for p in range(4) for o in range(n // 4)}
    assert summary.messages == n and summary.stopped_by == "caught up"
    for p in range(4):
        stored = parse_document(doc(zk_client, f"{zk_root}/offsets/spout-1/partition_{p}"))
        assert stored.offset == n // 4
    print(f"\n[measure] {n} messages, 4 partitions, {summary.batches} batches: "
          f"{n / elapsed:,.0f} msg/s end to end (incl. first Spark jobs), {elapsed:.1f} s")


def test_failed_messages_are_retried_with_backoff_then_given_up(
        spark, spark_records, zk_server, zk_client, zk_root, tansu, kafka_topic):  # noqa: F811
    values = [b"ok-0", b"fail-1", b"ok-2", b"fail-3", b"ok-4"]
    topic = kafka_topic(partitions=1, messages=[(0, None, v) for v in values])
    initial, multiplier, limit = 1000, 2.0, 2
    job = make_config(topic, zk_server, zk_root, tansu, bolt="tests.bolts:fail_marked",
                      spout={"retryInitialDelayMs": initial, "retryDelayMultiplier": multiplier,
                             "retryLimit": limit})
    pipe = TimedPipeline(job, spark=spark)
    summary = pipe.run(RunOptions(until_caught_up=True, idle_sleep_ms=50))
    records = spark_records(topic)
    slack_ms = pipe.slack_s() * 1000
    for offset in (1, 3):
        times = sorted(r["time"] for r in records if r["offset"] == offset)
        assert len(times) == 1 + limit                    # first emit + retryLimit re-emits
        gaps_ms = [(b - a) * 1000 for a, b in zip(times, times[1:])]
        expected = [initial * multiplier ** i for i in range(limit)]   # 1000, 2000
        for gap, want in zip(gaps_ms, expected):
            assert want - 50 <= gap <= want + slack_ms, (offset, gaps_ms, expected, slack_ms)
        print(f"\n[measure] offset {offset}: retry gaps {[round(g) for g in gaps_ms]} ms for "
              f"backoff {expected} ms (batch slack {slack_ms:.0f} ms)")
    assert all(sum(r["offset"] == o for r in records) == 1 for o in (0, 2, 4))
    p0 = summary.partitions[0]
    assert p0.given_up == 2 and p0.failed == 2 * (1 + limit)
    assert parse_document(doc(zk_client, f"{zk_root}/offsets/spout-1/partition_0")).offset == 5


def test_fields_grouping_stages_replay_the_root_of_a_failure_two_stages_down(
        spark, spark_records, zk_server, zk_client, zk_root, tansu, kafka_topic):  # noqa: F811
    lines = [f"w{i % 5} w{i % 3} {'boom' if i % 10 == 7 else 'x'}" for i in range(60)]
    topic = kafka_topic(partitions=2, messages=[(i % 2, None, s.encode())
                                                for i, s in enumerate(lines)])
    job = make_config(topic, zk_server, zk_root, tansu, topology_spec=bolts.WORD_COUNT_SPEC)
    pipe = Pipeline(job, spark=spark)
    assert pipe.layout.stages == (("split",), ("count",), ("report",))
    summary = pipe.run(RunOptions(until_caught_up=True, idle_sleep_ms=50))
    records = spark_records(topic)
    by_message = {(i % 2, i // 2): s.split() for i, s in enumerate(lines)}
    boom = {k for k, words in by_message.items() if "boom" in words}
    counted = [r for r in records if r.get("kind") == "count"]
    # fields grouping: each word always reached the same count task
    tasks = collections.defaultdict(set)
    for r in counted:
        tasks[r["word"]].add(r["task"])
    assert all(len(t) == 1 for t in tasks.values()), dict(tasks)
    assert len({t for ts in tasks.values() for t in ts}) == 2
    # every word counted once per delivery; the failed roots were delivered twice
    per_word = collections.Counter(r["word"] for r in counted)
    expected = collections.Counter()
    for key, words in by_message.items():
        for w in words:
            expected[w] += 2 if key in boom else 1
    assert per_word == expected
    assert sum(p.failed for p in summary.partitions) == len(boom)
    for p in range(2):
        path = f"{zk_root}/offsets/spout-1/partition_{p}"
        assert parse_document(doc(zk_client, path)).offset == 30


def test_a_never_acked_tuple_replays_after_the_message_timeout(
        spark, spark_records, zk_server, zk_client, zk_root, tansu, kafka_topic):  # noqa: F811
    topic = kafka_topic(partitions=1, messages=[(0, None, v) for v in
                                                (b"ok-0", b"hold-1", b"ok-2", b"ok-3")])
    job = make_config(topic, zk_server, zk_root, tansu, topology_spec=bolts.HOLD_SPEC,
                      topology={"topology.message.timeout.secs": 2})
    path = f"{zk_root}/offsets/spout-1/partition_0"
    seen_commits = []
    pipe = TimedPipeline(job, spark=spark)
    original = pipe.spout.maybe_commit

    def watch(now_ms):
        report = original(now_ms)
        seen_commits.append(pipe.spout.managers()[(topic, 0)].committed_to)
        return report
    pipe.spout.maybe_commit = watch
    summary = pipe.run(RunOptions(until_caught_up=True, idle_sleep_ms=50))
    held = sorted(r["time"] for r in spark_records(topic) if r["offset"] == 1)
    assert len(held) == 2
    assert held[1] - held[0] >= 2.0 - 0.05              # not before the timeout
    assert held[1] - held[0] <= 2.0 + pipe.slack_s()
    assert summary.timeouts == 1
    assert seen_commits[0] == 1                      # the open tree held the first commit
    assert parse_document(doc(zk_client, path)).offset == 4


def test_stop_and_restart_resumes_from_zookeeper_with_bounded_duplicates(
        spark, spark_records, zk_server, zk_client, zk_root, tansu, kafka_topic):  # noqa: F811
    n, per_batch = 1600, 100
    topic = kafka_topic(partitions=4, messages=[(i % 4, None, f"m{i}".encode())
                                                for i in range(n)])
    job = make_config(topic, zk_server, zk_root, tansu,
                      spout={"stateUpdateIntervalMs": 60_000})

    # run 1: killed after 2 batches (kill -9: no final commit); only the first check
    # committed (after batch 1)
    killed = Pipeline(job, spark=spark)
    killed.spout.final_commit = lambda attempts, sleep: True
    first = killed.run(RunOptions(max_batches=2, max_messages_per_partition=per_batch))
    after_kill = {p: parse_document(doc(zk_client, f"{zk_root}/offsets/spout-1/partition_{p}"))
                  .offset for p in range(4)}
    assert all(0 < after_kill[p] <= per_batch for p in range(4))
    uncommitted = sum(p.processed for p in first.partitions) - sum(after_kill.values())
    # run 2: stopped cleanly after 2 more batches (final commit)
    second = Pipeline(job, spark=spark).run(RunOptions(max_batches=2,
                                                       max_messages_per_partition=per_batch))
    after_stop = {p: parse_document(doc(zk_client, f"{zk_root}/offsets/spout-1/partition_{p}"))
                  .offset for p in range(4)}
    # run 3: to the end
    third = Pipeline(job, spark=spark).run(RunOptions(until_caught_up=True, idle_sleep_ms=50,
                                                      max_messages_per_partition=per_batch))
    assert [p.resumed_from for p in third.partitions] == [after_stop[p] for p in range(4)]
    seen = collections.Counter((r["partition"], r["offset"]) for r in spark_records(topic))
    assert set(seen) == {(p, o) for p in range(4) for o in range(n // 4)}
    duplicates = sum(c - 1 for c in seen.values())
    # in flight at the kill plus one commit interval: what run 1 processed after its
    # last commit; the clean stop adds none
    assert duplicates == uncommitted
    assert 0 < uncommitted <= 4 * per_batch           # the batch after the last commit
    assert [p.resumed_from for p in second.partitions] == [after_kill[p] for p in range(4)]
    print(f"\n[measure] restart: {duplicates} duplicates after a kill that left "
          f"{uncommitted} processed-but-uncommitted messages; 0 after the clean stop")


def test_a_storm_written_document_is_resumed_exactly_over_zkhosts(
        spark, spark_records, zk_server, zk_client, zk_root, tansu, kafka_topic):  # noqa: F811
    topic = kafka_topic(partitions=2, messages=[(i % 2, None, f"v{i}".encode())
                                                for i in range(60)])
    registry = f"{zk_root}/kafka"
    zk_client.ensure_path(registry)
    write_broker_registry(zk_client, brokers={7: (tansu.host, tansu.port)},
                          topics={topic: {0: 7, 1: 7}}, path=f"{registry}/brokers")
    offsets = f"{zk_root}/offsets/spout-1"
    zk_client.create(f"{offsets}/partition_0", storm_bytes(
        "orders-12-1514764800", "orders", 11, 0, tansu.host, tansu.port, topic), makepath=True)
    zk_client.create(f"{offsets}/partition_1", storm_bytes(
        "orders-12-1514764800", "orders", 29, 1, tansu.host, tansu.port, topic))
    job = make_config(topic, zk_server, zk_root, tansu,
                      hosts={"zk": f"{zk_server.connect_string}{registry}"})
    summary, _ = run(job, spark, until_caught_up=True)
    by_p = {p.partition: p for p in summary.partitions}
    assert (by_p[0].decision, by_p[0].resumed_from) == ("resume", 11)
    assert (by_p[1].decision, by_p[1].resumed_from) == ("resume", 29)
    seen = sorted((r["partition"], r["offset"]) for r in spark_records(topic))
    assert seen == [(0, o) for o in range(11, 30)] + [(1, 29)]
    for p in (0, 1):
        assert doc(zk_client, f"{offsets}/partition_{p}") == storm_bytes(
            "orders-py-1", "orders", 30, p, tansu.host, tansu.port, topic)
