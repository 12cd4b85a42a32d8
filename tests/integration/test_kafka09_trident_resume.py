"""Moving a topology from OpaqueTridentKafkaSpout on real Kafka 0.9 and real
ZooKeeper: Trident's state written as Storm 1.x leaves it (TransactionalState
``<root>/<txStateId>/user``, RotatingTransactionalState per ``Partition.getId()``,
one child per txid with TridentKafkaEmitter's metadata); ``offsets explain``/``show``
read it and ``run`` resumes from ``nextOffset`` of the highest txid with the same
start-up rules; then the job's own storm-kafka documents take over."""

from __future__ import annotations

import json

import pytest
import yaml

from storm_kafka_compat.trident.state import encode_batch
from tests.bolts import read_records
from tests.integration.kafka09_jobs import cli, get, put, storm_document, zk_job

pytestmark = pytest.mark.integration

TRIDENT_ID = "clicks-trident-4-1690000000"
TOPOLOGY_ID = "clicks-9-1700000000"


def test_explain_show_and_run_resume_from_trident_state(tmp_path, kafka09, kafka09_topic,
                                                       zk_root) -> None:
    counts = {0: 300, 1: 200, 2: 100}
    topic = kafka09_topic(3, [(p, None, f"m{p}-{i}".encode())
                              for p, n in counts.items() for i in range(n)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    zk = kafka09.zk()
    troot = f"{zk_root}/transactional"
    user = f"{troot}/clicks-stream/user"
    # partition 0: txids 41 (older, kept until cleanupBefore) and 42; partition 1: 42
    for p, batches in {0: [(41, 100, 150), (42, 150, 180)], 1: [(42, 0, 50)]}.items():
        put(zk, f"{user}/partition_{p}", b"7")            # TransactionalState.mkdir
        for txid, off, nxt in batches:
            put(zk, f"{user}/partition_{p}/{txid}", encode_batch(
                offset=off, next_offset=nxt, topology_id=TRIDENT_ID, topology_name="clicks",
                partition=p, broker=broker, topic=topic))
    # txid 43 of partition 1 was emitted (TransactionalTridentKafkaSpout writes at
    # emit) but MasterBatchCoordinator's currtx is still 43: Trident would re-emit it
    put(zk, f"{user}/partition_1/43", encode_batch(
        offset=50, next_offset=90, topology_id=TRIDENT_ID, topology_name="clicks",
        partition=1, broker=broker, topic=topic))
    put(zk, f"{troot}/clicks-stream/coordinator/currtx", b"43")
    config = zk_job(tmp_path / "job.yaml", kafka09, topic, zk_root, topology_id=TOPOLOGY_ID)
    doc = yaml.safe_load(config.read_text())
    doc["topology"].update({"trident.txStateId": "clicks-stream",
                            "transactional.zookeeper.root": troot})
    config.write_text(yaml.safe_dump(doc))

    explained = cli("offsets", "explain", str(config), "--json")
    assert explained.returncode == 0, explained.stderr
    got = {e["partition"]: (e["decision"], e["start_offset"])
           for e in json.loads(explained.stdout)}
    assert got == {0: ("resume", 180), 1: ("resume", 50), 2: ("no_state", 0)}

    shown = cli("offsets", "show", str(config), "--json")
    assert shown.returncode == 0, shown.stderr
    (lags,) = json.loads(shown.stdout).values()
    assert lags["0"] == {"consumerCommittedOffset": 180, "logHeadOffset": 300, "lag": 120}

    record = tmp_path / "records.jsonl"
    run = cli("run", str(config), "--until-caught-up", "--json", record=record)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = [(r["partition"], r["offset"]) for r in read_records(str(record))]
    expected = ({(0, o) for o in range(180, 300)} | {(1, o) for o in range(50, 200)}
                | {(2, o) for o in range(100)})
    assert set(seen) == expected and len(seen) == len(expected) == 370
    # the job's progress is now storm-kafka's document, read before Trident's state
    assert get(zk, f"{zk_root}/spout1/partition_0") == storm_document(
        topic, 0, 300, broker=broker, topology_id=TOPOLOGY_ID)
    again = cli("offsets", "explain", str(config), "--json")
    assert {e["partition"]: e["start_offset"] for e in json.loads(again.stdout)} == counts
