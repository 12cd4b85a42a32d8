"""Kafka -> bolt -> KafkaBolt -> Kafka on a real two-broker Apache Kafka 0.9.0.1
cluster, with the broker leading the output topic killed mid-run (SIGKILL).

The job (``storm-kafka-compat run --until-caught-up``, Spark ``local[1]``) reads an
input topic with storm-kafka's ZooKeeper offsets and writes each tuple through
``org.apache.storm.kafka.bolt.KafkaBolt`` (``acks=all``) to an output topic, both
replicated on the two brokers. An input is acked only once the broker acknowledged its
record, so after the kill every input offset must be in the output topic at least once
(lost = 0); duplicates are counted and reported, not forbidden (at-least-once).
In the ``writes-refused`` variant (``min.insync.replicas=2``, ``retries=0``) the
surviving broker refuses every write while the other is down, so inputs are failed and
the spout replays their offsets (more bolt calls than input offsets) until it is back.
"""

from __future__ import annotations

import json

import pytest

from tests.faults.harness import (JOB_START_TIMEOUT_S, committed_offsets,
                                               job_config, read_deliveries, wait_until,
                                               write_config)
from storm_kafka_compat.workshop.servers.kafka_clients import produce
from tests.integration.kafka_bolt_checks import coverage, read_topic

pytestmark = [pytest.mark.fault, pytest.mark.integration]

PARTITIONS = 2
PER_PARTITION = 1500


@pytest.mark.hard_timeout(900)
@pytest.mark.parametrize("refuse", [
    # kafka-python's default retries; the producer holds records until the new leader
    pytest.param(False, id="leader-moves"),
    # min.insync.replicas=2 and retries=0: while a broker is down the other refuses
    # acks=all writes (NOT_ENOUGH_REPLICAS), each refused input fails and is replayed
    # until the broker is back
    pytest.param(True, id="writes-refused"),
])
def test_broker_kill_mid_run_loses_no_input_offset(refuse, kafka09_factory, job_factory,
                                                   tmp_path, unique, capsys):
    cluster = kafka09_factory(2)
    src, out = unique("kb-in"), unique("kb-out")
    cluster.create_topic(src, partitions=PARTITIONS, replication=2)
    cluster.create_topic(out, partitions=PARTITIONS, replication=2,
                         config={"min.insync.replicas": 2} if refuse else {})
    produce(cluster.bootstrap, src, [(p, None, f"v{p}-{i}".encode())
                                      for p in range(PARTITIONS) for i in range(PER_PARTITION)])
    log_end = {p: cluster.log_range(src, p)[1] for p in range(PARTITIONS)}
    assert log_end == {p: PER_PARTITION for p in range(PARTITIONS)}

    root = "/skc-faults/kafkabolt"
    config = job_config(topic=src, zk_root=root, spout_id="spout",
                        zk_port=cluster.zookeeper.port, bootstrap=cluster.bootstrap,
                        topology={"topology.id": "faults-kafkabolt"},
                        kafka={"api_version": "0.9"})
    del config["bolt"]
    config["topology"]["bolts"] = [
        {"name": "map", "bolt": "tests.kafka_bolts:to_record"},
        {"name": "write", "bolt": "org.apache.storm.kafka.bolt.KafkaBolt",
         "inputs": [{"from": "map"}],
         "properties": {"topic": out, "kafka": {"api_version": "0.9"},
                        "producerProperties": {"bootstrap.servers": cluster.bootstrap,
                                               "acks": "all", "request.timeout.ms": "10000",
                                               **({"retries": "0"} if refuse else {})}}}]
    job = job_factory(write_config(tmp_path / "job.yaml", config),
                      ("--until-caught-up", "--max-messages", "100"))
    job.start()
    wait_until(lambda: len(read_deliveries(job.record_path)) >= 300,
               timeout_s=JOB_START_TIMEOUT_S, what="first deliveries", on_timeout=job.stderr_tail)
    victim = cluster.leader(out, 0)
    delivered_at_kill = len(read_deliveries(job.record_path))
    cluster.broker(victim).kill()
    if refuse:  # let writes be refused for a while, then bring the broker back
        wait_until(lambda: len(read_deliveries(job.record_path)) >= delivered_at_kill + 300,
                   timeout_s=120, what="replays while the broker is down",
                   on_timeout=job.stderr_tail)
        cluster.broker(victim).start()
        cluster.wait_for_brokers(2)
    rc = job.wait(timeout_s=600)
    assert rc == 0, job.stderr_tail()

    stored = committed_offsets(cluster.zookeeper.connect_string, root, "spout", range(PARTITIONS))
    assert stored == log_end, "the job stopped before committing every input offset"
    records = read_topic(cluster.bootstrap, out, PARTITIONS)
    expected, lost, duplicates = coverage(records, src, log_end)
    figures = {"writes_refused": refuse, "input_offsets": expected,
               "output_records": len(records), "lost": lost, "duplicates": duplicates,
               "killed_broker": victim, "bolt_calls_before_kill": delivered_at_kill,
               "bolt_calls": len(read_deliveries(job.record_path))}
    with capsys.disabled():
        print("\nKafkaBolt broker kill:", json.dumps(figures))
    assert lost == 0, figures
    assert len(records) == expected + duplicates
    if refuse:  # refused writes failed their inputs, which were replayed
        assert figures["bolt_calls"] > expected, figures
