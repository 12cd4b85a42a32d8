"""storm-kafka (ZooKeeper store) on a real Apache Kafka 0.9.0.1 broker, through the
console script: ZkHosts discovers the partitions and leaders from the registry the
broker wrote itself, the run resumes at the documents Storm 1.x left, processes every
message once, and leaves documents in Storm's bytes; ``offsets show`` reports exact
lag before and after (the topic is written by a batching producer: on Kafka the high
watermark is exact, so no one-record-per-batch producer is needed as on tansu);
``offsets explain`` and ``offsets reset --execute`` and a run resuming at the target.
"""

from __future__ import annotations

import json
from typing import Dict, List, Tuple

import pytest

from tests.bolts import read_records
from tests.integration.kafka09_jobs import cli, get, parse_table, put, storm_document, zk_job

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TOPOLOGY_ID = "clicks-9-1700000000"
STORM_ID = "clicks-8-1690000000"


def _seen(record) -> List[Tuple[int, int]]:
    return [(r["partition"], r["offset"]) for r in read_records(str(record))]


def _lags(config) -> Dict[str, Dict[str, int]]:
    done = cli("offsets", "show", str(config), "--json")
    assert done.returncode == 0, done.stderr
    (topic_lags,) = json.loads(done.stdout).values()
    return topic_lags


def test_resume_at_storm_documents_processes_everything_once(tmp_path, kafka09, kafka09_topic,
                                                             zk_root):
    counts = {0: 600, 1: 450, 2: 300}
    topic = kafka09_topic(3, [(p, None, f"m{p}-{i}".encode())
                              for p, n in counts.items() for i in range(n)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    zk = kafka09.zk()
    stored = {0: storm_document(topic, 0, 250, broker=broker, topology_id=STORM_ID),
              1: storm_document(topic, 1, 450, broker=broker, topology_id=STORM_ID)}
    for p, data in stored.items():
        put(zk, f"{zk_root}/spout1/partition_{p}", data)
    config = zk_job(tmp_path / "job.yaml", kafka09, topic, zk_root, topology_id=TOPOLOGY_ID)

    # before: storm-kafka-monitor's document, exact with a batching producer
    assert _lags(config) == {
        "0": {"consumerCommittedOffset": 250, "logHeadOffset": 600, "lag": 350},
        "1": {"consumerCommittedOffset": 450, "logHeadOffset": 450, "lag": 0},
        "2": {"consumerCommittedOffset": -1, "logHeadOffset": 300, "lag": 301}}
    table = cli("offsets", "show", str(config))
    assert table.returncode == 0, table.stderr
    rows = {r["PARTITION"]: r for r in parse_table(table.stdout)}
    assert (rows["0"]["CURRENT-OFFSET"], rows["0"]["LOG-END-OFFSET"], rows["0"]["LAG"],
            rows["0"]["BROKER"], rows["0"]["TOPOLOGY-ID"]) == (
        "250", "600", "350", f"127.0.0.1:{broker[1]}", STORM_ID)

    record = tmp_path / "records.jsonl"
    run = cli("run", str(config), "--until-caught-up", "--json", record=record)
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    assert {p["partition"]: (p["decision"], p["resumed_from"])
            for p in summary["partitions"]} == {0: ("resume", 250), 1: ("resume", 450),
                                                2: ("no_state", 0)}
    seen = _seen(record)
    expected = {(0, o) for o in range(250, 600)} | {(2, o) for o in range(300)}
    assert set(seen) == expected                        # nothing lost, nothing before resume
    assert len(seen) == len(expected) == 650            # no duplicates

    # Storm's bytes, this topology's id, the leader as the registry names it
    for p in (0, 2):
        assert get(zk, f"{zk_root}/spout1/partition_{p}") == storm_document(
            topic, p, counts[p], broker=broker, topology_id=TOPOLOGY_ID)
    # written only when it changes: the caught-up partition keeps Storm's document
    assert get(zk, f"{zk_root}/spout1/partition_1") == stored[1]
    assert _lags(config) == {
        str(p): {"consumerCommittedOffset": n, "logHeadOffset": n, "lag": 0}
        for p, n in counts.items()}


def test_explain_and_reset_then_run_resumes_at_the_target(tmp_path, kafka09, kafka09_topic,
                                                          zk_root):
    topic = kafka09_topic(3, [(p, None, f"v{p}-{i}".encode())
                              for p in range(3) for i in range(30)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    zk = kafka09.zk()
    path = {p: f"{zk_root}/spout1/partition_{p}" for p in range(3)}
    put(zk, path[0], storm_document(topic, 0, 20, broker=broker, topology_id=STORM_ID))
    put(zk, path[1], storm_document(topic, 1, 10, broker=broker, topology_id=STORM_ID))
    config = zk_job(tmp_path / "job.yaml", kafka09, topic, zk_root, topology_id=TOPOLOGY_ID)

    def explain() -> Dict[int, Tuple[str, int]]:
        done = cli("offsets", "explain", str(config), "--json")
        assert done.returncode == 0, done.stderr
        return {e["partition"]: (e["decision"], e["start_offset"])
                for e in json.loads(done.stdout)}

    def run(name: str) -> List[Tuple[int, int]]:
        record = tmp_path / f"{name}.jsonl"
        done = cli("run", str(config), "--until-caught-up", record=record)
        assert done.returncode == 0, done.stderr[-3000:]
        return sorted(_seen(record))

    assert explain() == {0: ("resume", 20), 1: ("resume", 10), 2: ("no_state", 0)}

    # --shift-by: only partitions with a document; Storm's id and name are kept
    done = cli("offsets", "reset", str(config), "--shift-by", "-3", "--partitions", "0,1",
               "--execute", "--watch", "0")
    assert done.returncode == 0, done.stderr
    assert get(zk, path[0]) == storm_document(topic, 0, 17, broker=broker, topology_id=STORM_ID)
    assert get(zk, path[1]) == storm_document(topic, 1, 7, broker=broker, topology_id=STORM_ID)
    assert get(zk, path[2]) is None
    assert run("shift") == ([(0, o) for o in range(17, 30)] + [(1, o) for o in range(7, 30)]
                            + [(2, o) for o in range(30)])
    assert _lags(config) == {str(p): {"consumerCommittedOffset": 30, "logHeadOffset": 30,
                                      "lag": 0} for p in range(3)}

    # --to-offset: every partition, then the run replays from there
    done = cli("offsets", "reset", str(config), "--to-offset", "25", "--execute", "--watch", "0",
               "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["executed"] is True
    assert [(p["current_offset"], p["new_offset"]) for p in plan["partitions"]] == [(30, 25)] * 3
    assert explain() == {p: ("resume", 25) for p in range(3)}
    assert run("offset") == [(p, o) for p in range(3) for o in range(25, 30)]

    # --to-earliest: a stored 0 is "no state" for Storm; startOffsetTime -2 reads from 0
    done = cli("offsets", "reset", str(config), "--to-earliest", "--execute", "--watch", "0")
    assert done.returncode == 0, done.stderr
    for p in range(3):      # the runs wrote this topology's documents
        assert get(zk, path[p]) == storm_document(topic, p, 0, broker=broker,
                                                  topology_id=TOPOLOGY_ID)
    # no_state, not the alarming invalid_state the migration guide says to investigate
    # (issue 26, item 7)
    assert explain() == {p: ("no_state", 0) for p in range(3)}
    assert run("earliest") == [(p, o) for p in range(3) for o in range(30)]
    assert _lags(config) == {str(p): {"consumerCommittedOffset": 30, "logHeadOffset": 30,
                                      "lag": 0} for p in range(3)}


def test_each_document_names_its_partitions_leader_from_the_registry(tmp_path, kafka09_factory,
                                                                     zk_root, unique):
    """Two brokers, partitions led by either: ZkHosts reads each partition's leader
    from the state Kafka wrote, fetches from it and records it in the document."""
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    cluster = kafka09_factory(2)
    topic = unique("topic")
    cluster.create_topic(topic, 4, 1)
    leaders = cluster.leaders(topic)
    assert set(leaders.values()) == {1, 2}               # both brokers lead partitions
    produce(cluster.bootstrap, topic, [(p, None, f"m{p}-{i}".encode())
                                       for p in range(4) for i in range(25 + p)])
    config = zk_job(tmp_path / "job.yaml", cluster, topic, zk_root, topology_id=TOPOLOGY_ID)
    record = tmp_path / "records.jsonl"
    run = cli("run", str(config), "--until-caught-up", record=record)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(_seen(record)) == [(p, o) for p in range(4) for o in range(25 + p)]
    zk = cluster.zk()
    for p, leader in leaders.items():
        port = cluster.broker(leader).port
        assert get(zk, f"{zk_root}/spout1/partition_{p}") == storm_document(
            topic, p, 25 + p, broker=("127.0.0.1", port), topology_id=TOPOLOGY_ID)
