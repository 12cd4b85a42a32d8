"""Leader loss and a rolling restart of a three-broker Apache Kafka 3.9 cluster under
load (replication 3, ``min.insync.replicas`` 2, producers with ``acks=all``).

The job runs as ``storm-kafka-compat run CONFIG`` (Spark local) with a paced bolt,
partitions from ZkHosts (the registry 3.9 writes). Mid-run the leader of some
partitions is SIGKILLed (the controller elects an in-sync replica about
``zookeeper.session.timeout.ms`` later) and comes back; then every broker in turn is
stopped (SIGTERM: a controlled shutdown moves its leaderships first) and started
again, as an operator's rolling restart does. Production goes on between the steps.
Every offset reaches the bolt (0 lost), and the documents end at the log end in
Storm's format naming the current leader. Once per fetch backend.
"""

from __future__ import annotations

import json
import signal
import time
from typing import Dict

import pytest

from storm_kafka_compat.offsets.document import encode_document
from tests.faults.harness import (JOB_START_TIMEOUT_S, committed_offsets, delivered_offsets,
                                  job_config, missing_offsets, produce_chunk, read_deliveries,
                                  read_documents, wait_full_isr, wait_until, write_config)

pytestmark = [pytest.mark.fault, pytest.mark.integration]

PARTITIONS = 4
BROKERS = 3
INITIAL = 300
CHUNK = 100
FOLLOW_TIMEOUT_S = 180.0


def _delivers_past(job, counts_before: Dict[int, int], what: str) -> None:
    """Wait until every partition got deliveries beyond what it had before."""
    def moved() -> bool:
        now = delivered_offsets(read_deliveries(job.record_path))
        top = {p: max([o for (q, o) in now if q == p], default=-1) for p in range(PARTITIONS)}
        return all(top[p] > counts_before[p] for p in range(PARTITIONS))
    wait_until(moved, timeout_s=FOLLOW_TIMEOUT_S, interval_s=0.5,
               what=f"deliveries on every partition after {what}", on_timeout=job.stderr_tail)
    assert job.running, job.stderr_tail()


def _tops(job) -> Dict[int, int]:
    now = delivered_offsets(read_deliveries(job.record_path))
    return {p: max([o for (q, o) in now if q == p], default=-1) for p in range(PARTITIONS)}


@pytest.mark.hard_timeout(900)
@pytest.mark.parametrize("backend", ["kafka-python", "confluent"])
def test_leader_kill_and_rolling_restart_of_kafka39_lose_nothing(backend, modern_factory,
                                                                 job_factory, tmp_path, unique):
    from storm_kafka_compat.workshop.servers.kafka_versions import KAFKA_39
    cluster = modern_factory(KAFKA_39, BROKERS)
    topic, root = unique("rolling"), "/skc-faults/rolling"
    cluster.create_topic(topic, PARTITIONS, BROKERS, config={"min.insync.replicas": 2})
    log_end = produce_chunk(cluster, topic, {p: 0 for p in range(PARTITIONS)}, INITIAL)
    config = job_config(topic=topic, zk_root=root, spout_id="spout",
                        zk_port=cluster.zookeeper.port, bootstrap=cluster.bootstrap,
                        spout={"stateUpdateIntervalMs": 1000},
                        topology={"topology.id": "faults-rolling-1"},
                        kafka={"backend": backend}, bolt="tests.bolts:record_slowly")
    config["hosts"] = {"zk": cluster.zk_connect, "refreshFreqSecs": 5}
    job = job_factory(write_config(tmp_path / "job.yaml", config), ("--max-messages", "50"))
    job.start()
    wait_until(lambda: len(read_deliveries(job.record_path)) >= 100,
               timeout_s=JOB_START_TIMEOUT_S, what="first deliveries", on_timeout=job.stderr_tail)
    events = []

    # 1. SIGKILL the leader of some partitions (not the controller), then bring it back
    controller = cluster.controller()
    leaders = cluster.leaders(topic)
    victim = next(b for b in sorted(set(leaders.values())) if b != controller)
    log_end = produce_chunk(cluster, topic, log_end, CHUNK)
    before, started = _tops(job), time.monotonic()
    cluster.broker(victim).kill()
    cluster.wait_for_leaders(topic, PARTITIONS, exclude=[victim], timeout_s=60)
    _delivers_past(job, before, f"SIGKILL of leader {victim}")
    events.append({"event": "leader killed", "broker": victim,
                   "partitions": sorted(p for p, b in leaders.items() if b == victim),
                   "all_partitions_moved_on_s": round(time.monotonic() - started, 1)})
    cluster.broker(victim).start()
    cluster.wait_for_brokers(BROKERS)
    wait_full_isr(cluster, topic, PARTITIONS, BROKERS)

    # 2. a rolling restart: each broker stopped (controlled shutdown) and started again
    for broker in list(cluster.brokers):
        log_end = produce_chunk(cluster, topic, log_end, CHUNK)
        before, started = _tops(job), time.monotonic()
        broker.stop()
        cluster.wait_for_leaders(topic, PARTITIONS, exclude=[broker.broker_id], timeout_s=60)
        broker.start()
        cluster.wait_for_brokers(BROKERS)
        wait_full_isr(cluster, topic, PARTITIONS, BROKERS)
        _delivers_past(job, before, f"restart of broker {broker.broker_id}")
        events.append({"event": "rolling restart", "broker": broker.broker_id,
                       "all_partitions_moved_on_s": round(time.monotonic() - started, 1)})

    # the controller moves leadership back to the preferred replicas every 5 s
    # (leader.imbalance.check.interval.seconds): let that settle, and the job see it
    # (refreshFreqSecs 5), before the last messages, whose commit names the leaders
    wait_until(lambda: all(st["leader"] == st["replicas"][0] for st in (
        cluster.partition_state(topic, p) or {"leader": -1, "replicas": [0]}
        for p in range(PARTITIONS))), timeout_s=60, what="the preferred leaders back")
    time.sleep(6)
    log_end = produce_chunk(cluster, topic, log_end, 50)
    assert {p: cluster.log_range(topic, p)[1] for p in range(PARTITIONS)} == log_end
    wait_until(lambda: committed_offsets(cluster.zookeeper.connect_string, root, "spout",
                                         range(PARTITIONS)) == log_end,
               timeout_s=300, interval_s=0.5, what="documents at the log end",
               on_timeout=job.stderr_tail)
    job.signal(signal.SIGTERM)
    assert job.wait(timeout_s=120) == 0, job.stderr_tail()

    counts = delivered_offsets(read_deliveries(job.record_path))
    assert missing_offsets(counts, log_end) == []
    seen = {p: len({o for (q, o) in counts if q == p}) for p in range(PARTITIONS)}
    assert seen == log_end
    leaders = cluster.leaders(topic)
    docs = read_documents(cluster.zookeeper.connect_string,
                          [f"{root}/spout/partition_{p}" for p in range(PARTITIONS)])
    for p in range(PARTITIONS):
        doc = docs[f"{root}/spout/partition_{p}"]
        leader = cluster.broker(leaders[p])
        assert doc is not None and doc.data == encode_document(
            topology_id="faults-rolling-1", topology_name="faults", offset=log_end[p],
            partition=p, broker_host=leader.host, broker_port=leader.port, topic=topic), doc
    summary = {"backend": backend, "produced": sum(log_end.values()),
               "seen_distinct": sum(seen.values()), "lost": 0,
               "duplicates": sum(n - 1 for n in counts.values() if n > 1), "events": events}
    (tmp_path / "rolling.json").write_text(json.dumps(summary, indent=1))
    print(f"\nKafka 3.9 leader kill and rolling restart ({backend}): {json.dumps(summary)}")
