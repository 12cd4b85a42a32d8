"""storm-kafka-client mode and the group tools on a real Apache Kafka 0.9.0.1 group
coordinator: commit metadata kept and read back exactly, first-poll strategies
decided by that metadata, and ``offsets migrate`` both ways (``--execute``).

The tansu suites (test_client_mode.py, test_offsets_kafka_store.py) need a wrapper
that remembers the metadata, because tansu drops it; none is needed here.
"""

from __future__ import annotations

import json

import pytest

from storm_kafka_compat.spout.client.first_poll import CommitMetadata
from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.offsets.document import parse_document
from tests.bolts import read_records
from tests.integration.kafka09_jobs import (KAFKA_09, KAFKA_PYTHON_09, cli, client_job, get,
                                            group_commits, parse_table, put, storm_document,
                                            zk_job)

pytestmark = pytest.mark.integration

OURS, OTHER = "orders-1-1700000000", "other-5-500"
SEEN = []


def record(t):
    SEEN.append((t.partition, t.offset))


@pytest.fixture(autouse=True)
def clear():
    SEEN.clear()


def test_any_metadata_string_round_trips_through_the_coordinator(kafka09, kafka09_topic,
                                                                   unique):
    topic = kafka09_topic(3, [(p, None, b"x") for p in range(3) for _ in range(5)])
    group = unique("group")
    texts = {0: CommitMetadata(OURS, 3, "Thread-7-kafka-spout-executor[3 3]").to_json(),
             1: '{"topologyId":"ünïcode-2-1","taskId":0,"threadName":"t"}',
             2: ""}
    with KafkaGroupOffsets(kafka09.bootstrap, group, KAFKA_PYTHON_09) as g:
        g.write_many({(topic, p): (p + 1, text) for p, text in texts.items()})
    assert group_commits(kafka09.bootstrap, group, [(topic, p) for p in range(3)]) == {
        p: (p + 1, text) for p, text in texts.items()}


@pytest.mark.spark
def test_run_commits_storm_kafka_client_metadata_read_back_exactly(tmp_path, kafka09,
                                                                    kafka09_topic, unique):
    counts = {0: 400, 1: 250, 2: 0}
    topic = kafka09_topic(3, [(p, None, f"m{p}-{i}".encode())
                              for p, n in counts.items() for i in range(n)])
    group = unique("group")
    # EARLIEST: a restart resumes only at commits whose metadata names this topology
    config = client_job(tmp_path / "client.yaml", kafka09, topic, group,
                        firstPollOffsetStrategy="EARLIEST", offsetStore="kafka")
    keys = [(topic, p) for p in counts]

    before = cli("offsets", "show", str(config), "--json")
    assert before.returncode == 0, before.stderr
    assert {p: v["lag"] for p, v in json.loads(before.stdout)[topic].items()} == {
        "0": 401, "1": 251, "2": 1}                  # no commit: head + 1, as the monitor

    record_file = tmp_path / "records.jsonl"
    run = cli("run", str(config), "--until-caught-up", "--json", record=record_file)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = [(r["partition"], r["offset"]) for r in read_records(str(record_file))]
    assert sorted(seen) == [(p, o) for p, n in counts.items() for o in range(n)]   # once each

    commits = group_commits(kafka09.bootstrap, group, keys)
    assert commits[2] is None                        # empty partition: nothing to commit
    for p in (0, 1):
        offset, text = commits[p]
        assert offset == counts[p]
        # storm-kafka-client's JSON, keys in Jackson's order, kept by the broker
        assert text.startswith(f'{{"topologyId":"{OURS}","taskId":1,"threadName":"')
        meta = json.loads(text)
        assert list(meta) == ["topologyId", "taskId", "threadName"]
        assert meta["threadName"].endswith("-kafka-spout-executor[1 1]")

    after = cli("offsets", "show", str(config))
    assert after.returncode == 0, after.stderr
    rows = {r["PARTITION"]: r for r in parse_table(after.stdout)}
    # the metadata names this topology (tansu shows '-': it drops the metadata)
    assert [(rows[p]["CURRENT-OFFSET"], rows[p]["LAG"], rows[p]["TOPOLOGY-ID"])
            for p in ("0", "1")] == [("400", "0", OURS), ("250", "0", OURS)]

    # a restart of the same topology with EARLIEST: its own commits are resumed (on
    # tansu, which drops the metadata, EARLIEST would replay everything)
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    produce(kafka09.bootstrap, topic, [(0, None, f"n{i}".encode()) for i in range(50)]
            + [(2, None, f"n{i}".encode()) for i in range(10)])
    second = tmp_path / "second.jsonl"
    run = cli("run", str(config), "--until-caught-up", "--json", record=second)
    assert run.returncode == 0, run.stderr[-3000:]
    assert {p["partition"]: (p["decision"], p["resumed_from"])
            for p in json.loads(run.stdout)["partitions"]} == {
        0: ("resume", 400), 1: ("resume", 250), 2: ("no_commit", 0)}
    assert sorted((r["partition"], r["offset"]) for r in read_records(str(second))) == (
        [(0, o) for o in range(400, 450)] + [(2, o) for o in range(10)])
    assert {p: v[0] for p, v in group_commits(kafka09.bootstrap, group, keys).items()} == {
        0: 450, 1: 250, 2: 10}


# --- first-poll strategies decided by the metadata on the broker ---------------------------
#: partition 0 committed at 4 by this topology, 1 at 6 by another topology, 2 never
EXPECTED = {
    "EARLIEST": ({0: 4, 1: 0, 2: 0},
                 ["resume", "first_poll_strategy", "no_commit"]),
    "LATEST": ({0: 4, 1: 10, 2: 10},
               ["resume", "first_poll_strategy", "no_commit"]),
    "UNCOMMITTED_EARLIEST": ({0: 4, 1: 6, 2: 0},
                             ["resume", "resume_foreign", "no_commit"]),
    "UNCOMMITTED_LATEST": ({0: 4, 1: 6, 2: 10},
                           ["resume", "resume_foreign", "no_commit"]),
}


@pytest.mark.parametrize("strategy", list(EXPECTED))
def test_first_poll_strategy_reads_the_metadata_the_broker_kept(tmp_path, kafka09, kafka09_topic,
                                                                 unique, strategy):
    topic = kafka09_topic(3, [(p, None, f"v{p}-{i}".encode())
                              for p in range(3) for i in range(10)])
    group = unique("group")
    with KafkaGroupOffsets(kafka09.bootstrap, group, KAFKA_PYTHON_09) as g:
        g.write_many({(topic, 0): (4, CommitMetadata(OURS, 1, "t").to_json()),
                  (topic, 1): (6, CommitMetadata(OTHER, 2, "t").to_json())})
    starts, decisions = EXPECTED[strategy]

    # what the operator sees first: `offsets explain --json`
    config = client_job(tmp_path / "client.yaml", kafka09, topic, group,
                        firstPollOffsetStrategy=strategy)
    explained = cli("offsets", "explain", str(config), "--json")
    assert explained.returncode == 0, explained.stderr
    items = json.loads(explained.stdout)
    assert {i["partition"]: i["start_offset"] for i in items} == starts
    assert [i["decision"] for i in items] == decisions
    assert [i["committed"] for i in items] == [4, 6, None]

    # what a run does (the driver loop in this process)
    job = job_config_from_dict({
        "kafkaSpout": {"groupId": group, "bootstrapServers": kafka09.bootstrap,
                       "topics": [topic], "firstPollOffsetStrategy": strategy,
                       "offsetCommitPeriodMs": 1000},
        "topology": {"name": "orders", "id": OURS},
        "spout": {"topic": topic, "zkRoot": "/unused", "id": group, "scheme": "string"},
        "kafka": dict(KAFKA_09),
        "bolt": "tests.integration.test_kafka09_groups:record"})
    summary = Pipeline(job, runner=InProcessRunner(), store=object(), sleep=lambda s: None).run(
        RunOptions(until_caught_up=True, max_messages_per_partition=4))
    assert {p.partition: p.resumed_from for p in summary.partitions} == starts
    assert sorted(SEEN) == [(p, o) for p in range(3) for o in range(starts[p], 10)]
    commits = group_commits(kafka09.bootstrap, group, [(topic, p) for p in range(3)])
    for p in range(3):
        if starts[p] == 10:
            continue                                  # nothing processed, nothing committed
        offset, text = commits[p]
        assert offset == 10 and CommitMetadata.parse(text).topology_id == OURS


# --- offsets migrate both ways --------------------------------------------------------------


def test_migrate_to_kafka_group_on_a_fresh_cluster_then_back(tmp_path, kafka09_factory,
                                                             zk_root, unique):
    """The first group request on a new cluster meets GROUP_COORDINATOR_NOT_AVAILABLE
    while __consumer_offsets is created: the migration retries and succeeds at once."""
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    cluster = kafka09_factory(1)
    topic = unique("topic")
    cluster.create_topic(topic, 3, 1)
    produce(cluster.bootstrap, topic, [(p, None, b"x") for p in range(3) for _ in range(20)])
    broker = ("127.0.0.1", cluster.brokers[0].port)
    zk = cluster.zk()
    config = zk_job(tmp_path / "zk.yaml", cluster, topic, zk_root)
    docs = {0: storm_document(topic, 0, 7, broker=broker),
            1: storm_document(topic, 1, 20, broker=broker, topology_id="old-uuid-topology")}
    for p, data in docs.items():
        put(zk, f"{zk_root}/spout1/partition_{p}", data)
    group = unique("group")

    dry = cli("offsets", "migrate", str(config), "--to-kafka-group", group, "--json")
    assert dry.returncode == 0, dry.stderr
    assert group_commits(cluster.bootstrap, group, [(topic, p) for p in range(3)]) == {
        0: None, 1: None, 2: None}

    done = cli("offsets", "migrate", str(config), "--to-kafka-group", group, "--execute")
    assert done.returncode == 0, done.stderr
    assert "moved 2 partition(s); 1 skipped" in done.stderr
    commits = group_commits(cluster.bootstrap, group, [(topic, p) for p in range(3)])
    assert {p: (v[0] if v else None) for p, v in commits.items()} == {0: 7, 1: 20, 2: None}
    assert [json.loads(commits[p][1]) for p in (0, 1)] == [
        {"topologyId": "clicks-8-1690000000", "taskId": 0,
         "threadName": "storm-kafka-compat-migrate"},
        {"topologyId": "old-uuid-topology", "taskId": 0,
         "threadName": "storm-kafka-compat-migrate"}]

    # again: unchanged where the broker holds offset and metadata; a commit of the same
    # offset without metadata (kafka-consumer-groups --reset-offsets) is rewritten
    with KafkaGroupOffsets(cluster.bootstrap, group, KAFKA_PYTHON_09) as g:
        g.write_many({(topic, 0): (7, "")})
    again = cli("offsets", "migrate", str(config), "--to-kafka-group", group, "--execute",
                "--json")
    assert again.returncode == 0, again.stderr
    acts = {e["partition"]: e["action"] for e in json.loads(again.stdout)["partitions"]}
    assert acts == {0: "move", 1: "unchanged", 2: "skip"}
    assert group_commits(cluster.bootstrap, group, [(topic, p) for p in range(3)]) == commits

    # back: another group, committed by a storm-kafka-client topology, into empty paths
    source = unique("group")
    with KafkaGroupOffsets(cluster.bootstrap, source, KAFKA_PYTHON_09) as g:
        g.write_many({(topic, 0): (12, CommitMetadata("orders-3-1700000300", 1, "t").to_json()),
                  (topic, 2): (5, CommitMetadata("orders-3-1700000300", 2, "t").to_json())})
    back_root = zk_root + "-back"
    back = zk_job(tmp_path / "back.yaml", cluster, topic, back_root)
    done = cli("offsets", "migrate", str(back), "--from-kafka-group", source, "--execute",
               "--watch", "0", "--json")
    assert done.returncode == 0, done.stderr
    acts = {e["partition"]: e["action"] for e in json.loads(done.stdout)["partitions"]}
    assert acts == {0: "move", 1: "skip", 2: "move"}
    # Storm's bytes; the topology id comes from the commit metadata the broker kept
    for p, offset in ((0, 12), (2, 5)):
        assert get(zk, f"{back_root}/spout1/partition_{p}") == storm_document(
            topic, p, offset, broker=broker, topology_id="orders-3-1700000300")
    assert get(zk, f"{back_root}/spout1/partition_1") is None
    # and the documents written earlier did not move
    assert {p: get(zk, f"{zk_root}/spout1/partition_{p}") for p in docs} == docs
    assert parse_document(get(zk, f"{back_root}/spout1/partition_0")).offset == 12


def test_migrate_refuses_a_group_with_live_members_on_the_coordinator(tmp_path, kafka09,
                                                                      kafka09_topic, zk_root,
                                                                      unique):
    """A consumer that joined the group through the real coordinator is seen by
    DescribeGroups; the migration writes nothing and says to stop it."""
    import time

    from kafka import KafkaConsumer
    topic = kafka09_topic(1, [(0, None, b"x")] * 5)
    put(kafka09.zk(), f"{zk_root}/spout1/partition_0",
        storm_document(topic, 0, 3, broker=("127.0.0.1", kafka09.brokers[0].port)))
    config = zk_job(tmp_path / "zk.yaml", kafka09, topic, zk_root)
    group = unique("group")
    consumer = KafkaConsumer(topic, bootstrap_servers=kafka09.bootstrap, group_id=group,
                             api_version=(0, 9), session_timeout_ms=6000,
                             heartbeat_interval_ms=1000, enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        assert consumer.assignment(), "the consumer never joined its group"
        done = cli("offsets", "migrate", str(config), "--to-kafka-group", group, "--execute")
        assert done.returncode == 1
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("Error: ") and group in last and "stop its consumers" in last
    finally:
        consumer.close()
    assert group_commits(kafka09.bootstrap, group, [(topic, 0)]) == {0: None}
