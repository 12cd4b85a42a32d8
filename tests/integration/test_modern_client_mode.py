"""storm-kafka-client mode and the group tools on Apache Kafka 3.9 and 4.x (the
brokers storm-kafka-client 2.x users run; it cannot talk to 0.9 at all): commit
metadata kept and read back, a restart resuming its own commits, the four first-poll
strategies decided by the metadata on the broker, and ``offsets migrate`` both ways.
Kafka 4.x's group coordinator is the new one (KIP-848); the spout never joins the
group, it commits as a simple consumer, as storm-kafka-client's ``assign`` mode does.
"""

from __future__ import annotations

import json
from typing import Any, Dict

import pytest
import yaml

from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
from storm_kafka_compat.spout.client.first_poll import CommitMetadata
from tests.integration.kafka09_jobs import cli, get, group_commits, put, storm_document
from tests.integration.modern_jobs import SEEN, by_partition, client_job, run, seen
from tests.integration.test_kafka09_groups import EXPECTED, OTHER, OURS

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("clear_seen")]


def _commits(cluster: Any, group: str, topic: str, n: int) -> Dict[int, Any]:
    return group_commits(cluster.bootstrap, group, [(topic, p) for p in range(n)], {})


def test_commits_carry_storm_kafka_client_metadata_and_a_restart_resumes(modern_kafka, backend,
                                                                         modern_topic, unique):
    counts = {0: 40, 1: 25, 2: 0}
    topic = modern_topic(3, [(p, None, f"m{p}-{i}".encode())
                             for p, n in counts.items() for i in range(n)])
    group = unique("group")
    job = client_job(modern_kafka, topic, group, backend, topology_id=OURS,
                     firstPollOffsetStrategy="EARLIEST", offsetStore="kafka")
    run(job, store=object())
    assert [(s[1], s[2]) for s in seen(topic)] == [(p, o) for p, n in counts.items()
                                                   for o in range(n)]
    commits = _commits(modern_kafka, group, topic, 3)
    assert commits[2] is None                        # nothing read, nothing committed
    for p in (0, 1):
        offset, text = commits[p]
        meta = json.loads(text)
        assert offset == counts[p] and list(meta) == ["topologyId", "taskId", "threadName"]
        assert meta["topologyId"] == OURS and meta["threadName"].endswith(
            "-kafka-spout-executor[1 1]")

    SEEN.clear()
    modern_kafka.produce(topic, [(0, None, b"n") for _ in range(5)] + [(2, None, b"n")] * 3)
    summary = run(job, store=object())
    assert {p: (s.decision, s.resumed_from) for p, s in by_partition(summary).items()} == {
        0: ("resume", 40), 1: ("resume", 25), 2: ("no_commit", 0)}
    assert [(s[1], s[2]) for s in seen(topic)] == (
        [(0, o) for o in range(40, 45)] + [(2, o) for o in range(3)])
    assert {p: v[0] for p, v in _commits(modern_kafka, group, topic, 3).items()} == {
        0: 45, 1: 25, 2: 3}


def test_first_poll_strategies_read_the_metadata_the_broker_kept(modern_kafka, backend,
                                                                  modern_topic, unique):
    """Partition 0 committed at 4 by this topology, 1 at 6 by another, 2 never; each
    strategy starts each partition where storm-kafka-client 2.x does."""
    topic = modern_topic(3, [(p, None, f"v{p}-{i}".encode())
                             for p in range(3) for i in range(10)])
    for strategy, (starts, decisions) in EXPECTED.items():
        SEEN.clear()
        group = unique("group")
        with KafkaGroupOffsets(modern_kafka.bootstrap, group, {}) as g:
            g.write_many({(topic, 0): (4, CommitMetadata(OURS, 1, "t").to_json()),
                          (topic, 1): (6, CommitMetadata(OTHER, 2, "t").to_json())})
        job = client_job(modern_kafka, topic, group, backend, topology_id=OURS,
                         firstPollOffsetStrategy=strategy)
        summary = run(job, store=object(), max_messages=4)
        got = by_partition(summary)
        assert {p: got[p].resumed_from for p in got} == starts, strategy
        assert [got[p].decision for p in sorted(got)] == decisions, strategy
        assert [(s[1], s[2]) for s in seen(topic)] == [
            (p, o) for p in range(3) for o in range(starts[p], 10)], strategy
        for _p, (offset, text) in ((p, v) for p, v in _commits(
                modern_kafka, group, topic, 3).items() if starts[p] < 10):
            assert offset == 10 and CommitMetadata.parse(text).topology_id == OURS, strategy


def test_offsets_migrate_to_a_group_and_back(modern_kafka, modern_topic, zk_server, zk_client,
                                             zk_root, tmp_path, unique):
    """Storm's documents into a consumer group (with storm-kafka-client's metadata),
    then another group's commits back into documents, byte for byte as Storm writes
    them; the documents live in the job's ZooKeeper, the partitions come from the
    bootstrap discovery (the only one a KRaft cluster has)."""
    topic = modern_topic(3, [(p, None, b"x") for p in range(3) for _ in range(20)])
    broker = ("127.0.0.1", modern_kafka.brokers[0].port)

    def config(name: str, root: str) -> Any:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({
            "spout": {"topic": topic, "zkRoot": root, "id": "spout1", "scheme": "string"},
            "hosts": {"bootstrap": modern_kafka.bootstrap},
            "topology": {"name": "clicks", "id": "clicks-9-1700000000",
                         "storm.zookeeper.servers": ["127.0.0.1"],
                         "storm.zookeeper.port": zk_server.port},
            "bolt": "tests.bolts:record"}))
        return path

    docs = {0: storm_document(topic, 0, 7, broker=broker),
            1: storm_document(topic, 1, 20, broker=broker, topology_id="old-uuid-topology")}
    for p, data in docs.items():
        put(zk_client, f"{zk_root}/spout1/partition_{p}", data)
    group = unique("group")
    done = cli("offsets", "migrate", str(config("to", zk_root)), "--to-kafka-group", group,
               "--execute", "--json")
    assert done.returncode == 0, done.stderr
    assert {e["partition"]: e["action"] for e in json.loads(done.stdout)["partitions"]} == {
        0: "move", 1: "move", 2: "skip"}
    commits = _commits(modern_kafka, group, topic, 3)
    assert {p: (v[0] if v else None) for p, v in commits.items()} == {0: 7, 1: 20, 2: None}
    assert json.loads(commits[1][1]) == {"topologyId": "old-uuid-topology", "taskId": 0,
                                         "threadName": "storm-kafka-compat-migrate"}

    source = unique("group")
    with KafkaGroupOffsets(modern_kafka.bootstrap, source, {}) as g:
        g.write_many({(topic, 0): (12, CommitMetadata("orders-3-1700000300", 1, "t").to_json()),
                      (topic, 2): (5, CommitMetadata("orders-3-1700000300", 2, "t").to_json())})
    back_root = zk_root + "-back"
    done = cli("offsets", "migrate", str(config("back", back_root)), "--from-kafka-group",
               source, "--execute", "--watch", "0", "--json")
    assert done.returncode == 0, done.stderr
    assert {e["partition"]: e["action"] for e in json.loads(done.stdout)["partitions"]} == {
        0: "move", 1: "skip", 2: "move"}
    for p, offset in ((0, 12), (2, 5)):
        assert get(zk_client, f"{back_root}/spout1/partition_{p}") == storm_document(
            topic, p, offset, broker=broker, topology_id="orders-3-1700000300")
    assert get(zk_client, f"{back_root}/spout1/partition_1") is None
