"""Core on real servers without Spark: a real ZooKeeper (pyspark's jars), the tansu
broker, Kafka's broker registry in ZooKeeper, the driver loop running its tasks in
this process. Spark itself is covered by test_pipeline_spark.py.

tansu workarounds: the registry is written by the test (tansu registers nothing in
ZooKeeper) and ``kafka_topic`` writes one record per batch (tansu's high watermark).
test_kafka09_zk_resume.py resumes at Storm's documents on Apache Kafka 0.9.0.1 with
the registry the broker wrote and a batching producer."""

import pytest

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.spout.startup import decide_start
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.offsets.document import parse_document
from storm_kafka_compat.workshop.servers.registry import write_broker_registry
from tests import bolts

pytestmark = pytest.mark.integration


def storm_bytes(topology_id, offset, partition, host, port, topic):
    """A document exactly as storm-kafka 1.2 writes it (json-simple, ImmutableMap order)."""
    return ('{"topology":{"id":"%s","name":"clicks"},"offset":%d,"partition":%d,'
            '"broker":{"host":"%s","port":%d},"topic":"%s"}'
            % (topology_id, offset, partition, host, port, topic)).encode()


@pytest.fixture
def setup(zk_server, zk_client, zk_root, tansu, kafka_topic):
    topic = kafka_topic(partitions=2, messages=[(i % 2, None, f"v{i}".encode()) for i in range(40)])
    registry = f"{zk_root}/kafka"
    zk_client.ensure_path(registry)
    write_broker_registry(zk_client, brokers={3: (tansu.host, tansu.port)},
                          topics={topic: {0: 3, 1: 3}}, path=f"{registry}/brokers", version=4)
    config = {
        "spout": {"topic": topic, "zkRoot": f"{zk_root}/offsets", "id": "clicks-spout",
                  "scheme": "string"},
        "hosts": {"zk": f"{zk_server.connect_string}{registry}"},
        "topology": {"topology.name": "clicks", "topology.id": "clicks-py-1",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": zk_server.port},
        "bolt": "tests.bolts:record",
    }
    bolts.SEEN.clear()
    return topic, config


def test_resumes_a_storm_document_and_storm_resumes_ours(setup, zk_client, zk_root, tansu):
    topic, config = setup
    path0 = f"{zk_root}/offsets/clicks-spout/partition_0"
    zk_client.create(path0, storm_bytes("clicks-12-1514764800", 13, 0, tansu.host, tansu.port,
                                        topic), makepath=True)
    job = job_config_from_dict(config)
    summary = Pipeline(job, runner=InProcessRunner(), sleep=lambda s: None).run(
        RunOptions(until_caught_up=True))

    by_p = {p.partition: p for p in summary.partitions}
    assert (by_p[0].decision, by_p[0].resumed_from) == ("resume", 13)
    assert (by_p[1].decision, by_p[1].resumed_from) == ("no_state", 0)
    seen = sorted((r["partition"], r["offset"]) for r in bolts.SEEN)
    assert seen == [(0, o) for o in range(13, 20)] + [(1, o) for o in range(20)]

    for p in (0, 1):
        data, _ = zk_client.get(f"{zk_root}/offsets/clicks-spout/partition_{p}")
        assert data == storm_bytes("clicks-py-1", 20, p, tansu.host, tansu.port, topic)
        # read back under Storm's rules: a Storm topology resumes at 20, whatever its id
        stored = parse_document(data)
        decision = decide_start(stored, topology_id="clicks-13-1600000000",
                                config=job.spout, offset_for=lambda t: 0)
        assert (decision.decision, decision.start_offset) == ("resume", 20)
