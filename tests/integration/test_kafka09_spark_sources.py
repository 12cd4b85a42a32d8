"""The Structured Streaming source (``format("storm-kafka")``) and DataFrame mode
(``dataframe: module:callable``, through ``storm-kafka-compat run``) on a real Apache
Kafka 0.9.0.1 broker.

Kafka 0.9 writes message format v0, which has no timestamp: Kafka's clients report
``timestamp -1`` and timestamp type ``-1`` (``NO_TIMESTAMP_TYPE``), and Spark's own
Kafka source turns that into ``new Timestamp(-1)``: 1969-12-31 23:59:59.999 UTC.
Both modes show exactly that (``unix_millis(timestamp) == -1``, ``timestampType ==
-1``) and read on; they leave Storm's documents at the log end.
"""

from __future__ import annotations

import json
import os

import pytest

from storm_kafka_compat.streaming.datasource import register, with_zk_commit
from tests.integration.conftest_spark import spark  # noqa: F401
from tests.integration.kafka09_jobs import cli, get, put, storm_document, zk_job

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TOPOLOGY_ID = "orders-topo-3-1700000000"
NO_TIMESTAMP = -1


def test_streaming_source_reads_v0_records_and_leaves_storm_documents(
        spark, kafka09, kafka09_topic, zk_root, tmp_path):  # noqa: F811
    n = 40
    topic = kafka09_topic(2, [(p, f"k{i}".encode(), f"m{p}-{i}".encode())
                              for p in range(2) for i in range(n)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    zk = kafka09.zk()
    put(zk, f"{zk_root}/orders-spout/partition_0",
        storm_document(topic, 0, 15, broker=broker, topology_id="orders-topo-1-1600000000"))
    options = {"topic": topic, "zkRoot": zk_root, "id": "orders-spout",
               "zkServers": kafka09.zookeeper.connect_string,
               "zk": kafka09.zk_connect,                   # ZkHosts: the broker's registry
               "kafka.api_version": "0.9",
               "topology.name": "orders-topo", "topology.id": TOPOLOGY_ID,
               "maxOffsetsPerTrigger": "25"}
    register(spark)
    seen = []

    def sink(df, batch_id):
        rows = df.selectExpr("partition", "offset", "key", "value", "timestampType",
                             "unix_millis(timestamp) AS ms").collect()
        seen.extend((r["partition"], r["offset"], r["key"], r["value"], r["timestampType"],
                     r["ms"]) for r in rows)

    df = spark.readStream.format("storm-kafka").options(**options).load()
    query = (df.writeStream.foreachBatch(with_zk_commit(sink, options))
             .option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination(180)
    assert query.exception() is None

    # partition 0 resumes at Storm's document, partition 1 starts at the log start
    assert sorted((p, o) for p, o, *_ in seen) == (
        [(0, o) for o in range(15, n)] + [(1, o) for o in range(n)])
    assert all(k == f"k{o}".encode() and v == f"m{p}-{o}".encode()
               for p, o, k, v, _, _ in seen)
    assert {(tt, ms) for *_, tt, ms in seen} == {(NO_TIMESTAMP, NO_TIMESTAMP)}
    for p in range(2):
        assert get(zk, f"{zk_root}/orders-spout/partition_{p}") == storm_document(
            topic, p, n, broker=broker, topology_id=TOPOLOGY_ID, name="orders-topo")


def record_batch(df):
    """DataFrame-mode function: append what each batch holds to the test record file."""
    rows = df.selectExpr("partition", "offset", "value", "timestampType",
                         "unix_millis(timestamp) AS ms").collect()
    with open(os.environ["STORM_KAFKA_COMPAT_TEST_RECORD"], "a") as f:
        for r in rows:
            f.write(json.dumps({"partition": r["partition"], "offset": r["offset"],
                                "value": r["value"].decode(), "timestampType":
                                r["timestampType"], "ms": r["ms"]}) + "\n")


def test_dataframe_mode_reads_v0_records_and_leaves_storm_documents(
        tmp_path, kafka09, kafka09_topic, zk_root):
    counts = {0: 120, 1: 75}
    topic = kafka09_topic(2, [(p, None, f"v{p}-{i}".encode())
                              for p, n in counts.items() for i in range(n)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    zk = kafka09.zk()
    put(zk, f"{zk_root}/spout1/partition_1",
        storm_document(topic, 1, 30, broker=broker, topology_id="clicks-8-1690000000"))
    config = zk_job(tmp_path / "job.yaml", kafka09, topic, zk_root,
                    dataframe="tests.integration.test_kafka09_spark_sources:record_batch")
    record = tmp_path / "batches.jsonl"
    done = cli("run", str(config), "--until-caught-up", "--json", record=record)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    got = sorted((r["partition"], r["offset"]) for r in rows)
    assert got == [(0, o) for o in range(120)] + [(1, o) for o in range(30, 75)]
    assert all(r["value"] == f"v{r['partition']}-{r['offset']}" for r in rows)
    assert {(r["timestampType"], r["ms"]) for r in rows} == {(NO_TIMESTAMP, NO_TIMESTAMP)}
    for p, n in counts.items():
        assert get(zk, f"{zk_root}/spout1/partition_{p}") == storm_document(
            topic, p, n, broker=broker, topology_id="clicks-9-1700000000")


def test_streaming_source_resumes_from_trident_state(
        spark, kafka09, kafka09_topic, zk_root, tmp_path):  # noqa: F811
    """A topology moving from OpaqueTridentKafkaSpout: the source starts partition 0
    at ``nextOffset`` of the highest committed txid (below the coordinator's
    ``currtx``), partition 1 (no Trident batch) at the log start, and leaves the
    job's own storm-kafka documents at the log end."""
    from storm_kafka_compat.trident.state import encode_batch
    n = 30
    topic = kafka09_topic(2, [(p, None, f"m{p}-{i}".encode()) for p in range(2)
                              for i in range(n)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    zk = kafka09.zk()
    troot = f"{zk_root}/transactional"
    user = f"{troot}/orders-stream/user"
    put(zk, f"{user}/partition_0", b"1")
    for txid, off, nxt in ((41, 0, 12), (42, 12, 20), (43, 20, 27)):
        put(zk, f"{user}/partition_0/{txid}", encode_batch(
            offset=off, next_offset=nxt, topology_id="orders-trident-2-1690000000",
            topology_name="orders-topo", partition=0, broker=broker, topic=topic))
    put(zk, f"{troot}/orders-stream/coordinator/currtx", b"43")   # 43 not committed
    options = {"topic": topic, "zkRoot": zk_root, "id": "orders-spout",
               "zkServers": kafka09.zookeeper.connect_string, "zk": kafka09.zk_connect,
               "kafka.api_version": "0.9", "topology.name": "orders-topo",
               "topology.id": TOPOLOGY_ID, "trident.txStateId": "orders-stream",
               "transactional.zookeeper.root": troot}
    register(spark)
    seen = []

    def sink(df, batch_id):
        seen.extend((r["partition"], r["offset"])
                    for r in df.select("partition", "offset").collect())

    df = spark.readStream.format("storm-kafka").options(**options).load()
    query = (df.writeStream.foreachBatch(with_zk_commit(sink, options))
             .option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination(180)
    assert query.exception() is None
    assert sorted(seen) == [(0, o) for o in range(20, n)] + [(1, o) for o in range(n)]
    for p in range(2):
        assert get(zk, f"{zk_root}/orders-spout/partition_{p}") == storm_document(
            topic, p, n, broker=broker, topology_id=TOPOLOGY_ID, name="orders-topo")
