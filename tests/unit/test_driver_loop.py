"""The driver loop without Spark: scripted Kafka, in-memory ZooKeeper, in-process tasks."""

import pytest

from storm_kafka_compat.config import Broker, JobConfig, SpoutConfig, StaticHosts, TopologyConfig
from storm_kafka_compat.kafka.scripted import ScriptedKafka
from storm_kafka_compat.pipeline.driver import Pipeline, RunOptions
from storm_kafka_compat.state.document import encode_document, parse_document
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from tests import bolts


def job(partitions=2, bolt="tests.bolts:record", **spout_kw):
    hosts = StaticHosts({p: Broker("k1", 9092) for p in range(partitions)})
    spout = SpoutConfig(hosts=hosts, topic="orders", zk_root="/kafka", id="spout1",
                        scheme="string", **spout_kw)
    return JobConfig(spout=spout, topology=TopologyConfig(name="orders-topo", id="orders-topo-1-1"),
                     bolt=bolt)


def kafka_with(n_per_partition, partitions=2):
    k = ScriptedKafka()
    k.create_topic("orders", partitions)
    for p in range(partitions):
        k.append("orders", p, *[f"m{p}-{i}".encode() for i in range(n_per_partition)])
    return k


@pytest.fixture(autouse=True)
def clear_seen():
    bolts.SEEN.clear()


def run(j, kafka, store, **opts):
    pipe = Pipeline(j, spark="local", store=store, kafka_factory=lambda boot: kafka,
                    sleep=lambda s: None)
    return pipe.run(RunOptions(until_caught_up=True, max_messages_per_partition=7, **opts))


def test_every_message_reaches_the_bolt_and_documents_are_storm_bytes():
    kafka, store = kafka_with(20), MemoryStateStore()
    summary = run(job(), kafka, store)
    assert summary.stopped_by == "caught up"
    seen = sorted((r["partition"], r["offset"]) for r in bolts.SEEN)
    assert seen == [(p, o) for p in range(2) for o in range(20)]
    assert store.docs["/kafka/spout1/partition_1"] == (
        b'{"topology":{"id":"orders-topo-1-1","name":"orders-topo"},"offset":20,'
        b'"partition":1,"broker":{"host":"k1","port":9092},"topic":"orders"}')


def test_resumes_exactly_from_a_storm_written_document():
    kafka = kafka_with(30)
    storm_doc = encode_document(topology_id="orders-topo-7-1514764800", topology_name="orders-topo",
                                offset=12, partition=0, broker_host="k1", broker_port=9092,
                                topic="orders")
    store = MemoryStateStore({"/kafka/spout1/partition_0": storm_doc})
    summary = run(job(), kafka, store)
    first = {p.partition: p for p in summary.partitions}
    assert first[0].decision == "resume" and first[0].resumed_from == 12
    assert min(r["offset"] for r in bolts.SEEN if r["partition"] == 0) == 12
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 30


def test_failures_are_retried_then_given_up_and_counted():
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, b"ok-0", b"fail-1", b"ok-2")
    store = MemoryStateStore()
    summary = run(job(partitions=1, bolt="tests.bolts:fail_marked", retry_limit=2), kafka, store)
    attempts = [r["offset"] for r in bolts.SEEN if r["offset"] == 1]
    assert len(attempts) == 3                       # the first emit plus retryLimit re-emits
    assert summary.partitions[0].given_up == 1
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 3


def test_out_of_range_below_log_start_jumps_and_counts_lost():
    kafka = kafka_with(10, partitions=1)
    kafka.set_log_start("orders", 0, 6)
    store = MemoryStateStore({"/kafka/spout1/partition_0": encode_document(
        topology_id="x", topology_name="t", offset=2, partition=0, broker_host="k1",
        broker_port=9092, topic="orders")})
    summary = run(job(partitions=1), kafka, store)
    assert summary.partitions[0].lost == 4
    assert sorted(r["offset"] for r in bolts.SEEN) == [6, 7, 8, 9]


def test_commit_failure_keeps_going_and_commits_later():
    kafka, store = kafka_with(10, partitions=1), MemoryStateStore()
    store.fail_writes = 2
    summary = run(job(partitions=1), kafka, store)
    assert summary.commit_failures >= 1
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 10
