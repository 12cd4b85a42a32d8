"""``format("storm-kafka")`` on real servers: ZooKeeper, tansu and Spark local.

The source starts from ZooKeeper (a Storm-written document for one partition,
none for the other), reads every message once, and leaves documents equal to
the log end, byte for byte what storm-kafka writes.

tansu workaround: ``kafka_topic`` writes one record per batch so that tansu's high
watermark (the source's latest offset) is exact. test_kafka09_spark_sources.py
reads a batching producer's topic on Apache Kafka 0.9.0.1 (v0 records, no timestamps).
"""

import pytest

from storm_kafka_compat.streaming.datasource import KAFKA_SCHEMA_DDL, register, with_zk_commit
from storm_kafka_compat.offsets.document import encode_document
from tests.integration.conftest_spark import spark  # noqa: F401

pytestmark = pytest.mark.integration

TOPOLOGY_ID = "orders-topo-3-1700000000"


def _options(zk_server, tansu, topic, zk_root, **extra):
    opts = {"topic": topic, "zkRoot": zk_root, "id": "orders-spout",
            "zkServers": zk_server.connect_string, "bootstrap": tansu.bootstrap,
            "topology.name": "orders-topo", "topology.id": TOPOLOGY_ID}
    opts.update({k: str(v) for k, v in extra.items()})
    return opts


def _get(zk_client, path):
    return zk_client.get_async(path).get(timeout=10)[0]


def test_reads_from_zookeeper_positions_and_leaves_final_positions(
        spark, zk_server, zk_client, zk_root, tansu, kafka_topic, tmp_path):  # noqa: F811
    messages = [(p, f"k{i}".encode(), f"m{p}-{i}".encode()) for p in range(2) for i in range(25)]
    topic = kafka_topic(partitions=2, messages=messages)
    storm_doc = encode_document(topology_id="orders-topo-1-1600000000", topology_name="orders-topo",
                                offset=10, partition=0, broker_host="old-broker",
                                broker_port=9092, topic=topic)
    zk_client.create_async(f"{zk_root}/orders-spout/partition_0", storm_doc,
                           makepath=True).get(timeout=10)
    options = _options(zk_server, tansu, topic, zk_root, maxOffsetsPerTrigger=12)
    register(spark)
    seen = []
    batches = []

    def sink(df, batch_id):
        rows = df.collect()
        batches.append(len(rows))
        seen.extend((r["partition"], r["offset"], r["value"], r["key"], r["timestampType"])
                    for r in rows)

    df = spark.readStream.format("storm-kafka").options(**options).load()
    assert df.schema.simpleString() == spark.createDataFrame([], KAFKA_SCHEMA_DDL) \
        .schema.simpleString()
    query = (df.writeStream.foreachBatch(with_zk_commit(sink, options))
             .option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None

    got = sorted((p, o) for p, o, *_ in seen)
    # partition 0 resumes at the Storm document's offset, partition 1 starts at earliest
    assert got == [(0, o) for o in range(10, 25)] + [(1, o) for o in range(25)]
    assert all(v == f"m{p}-{o}".encode() and k == f"k{o}".encode() and tt == 0
               for p, o, v, k, tt in seen)
    assert len(batches) >= 4 and max(batches) <= 13     # maxOffsetsPerTrigger=12 admission
    host, port = tansu.bootstrap.split(":")
    for p in range(2):
        assert _get(zk_client, f"{zk_root}/orders-spout/partition_{p}") == encode_document(
            topology_id=TOPOLOGY_ID, topology_name="orders-topo", offset=25, partition=p,
            broker_host=host, broker_port=int(port), topic=topic)

