"""Pure parts of the Structured Streaming source and the DataFrame mode: option
mapping, admission, offset ranges, document writes against an in-memory store."""

import datetime

import pytest

from storm_kafka_compat.config import Broker, job_config_from_dict
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.kafka.client import KafkaMessage
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.engine.dataframe import failed_offsets
from storm_kafka_compat.executor.reader import kafka_row
from storm_kafka_compat.streaming.datasource import StormKafkaStreamReader, read_range
from storm_kafka_compat.streaming.options import job_from_options
from storm_kafka_compat.streaming.positions import (ZkPositions, batch_positions, cap_ends,
                                                    from_offset_map, to_offset_map)
from storm_kafka_compat.offsets.document import encode_document, parse_document
from storm_kafka_compat.testing.memory_store import MemoryStateStore

BASE = {"topic": "orders", "zkroot": "/kafka", "id": "spout1", "static": "0=k1:9092,1=k1:9092",
        "topology.name": "orders-topo", "topology.id": "orders-topo-2-2"}


def test_options_map_to_spout_config_fields_with_storm_types():
    job, source = job_from_options({**BASE, "startOffsetTime": "-1", "ignoreZkOffsets": "true",
                                    "maxOffsetBehind": "500", "fetchSizeBytes": "2048",
                                    "zkServers": "zk1,zk2", "zkPort": "2182",
                                    "maxOffsetsPerTrigger": "100",
                                    "kafka.security_protocol": "PLAINTEXT"})
    s = job.spout
    assert (s.start_offset_time, s.ignore_zk_offsets, s.max_offset_behind, s.fetch_size_bytes,
            s.zk_servers, s.zk_port) == (-1, True, 500, 2048, ("zk1", "zk2"), 2182)
    assert s.hosts.partitions == {0: Broker("k1", 9092), 1: Broker("k1", 9092)}
    assert job.topology.id == "orders-topo-2-2"
    assert job.kafka == {"security_protocol": "PLAINTEXT"}
    assert source.max_offsets_per_trigger == 100 and source.max_messages_per_partition is None


def test_hosts_options_zk_and_bootstrap():
    opts = {k: v for k, v in BASE.items() if k != "static"}
    job, _ = job_from_options({**opts, "zk": "zk1:2181/kafka", "brokerZkPath": "/b"})
    assert (job.spout.hosts.broker_zk_str, job.spout.hosts.broker_zk_path) == ("zk1:2181/kafka",
                                                                               "/b")
    job, _ = job_from_options({**opts, "kafka.bootstrap.servers": "a:1,b:2"})
    assert job.spout.hosts.servers == ("a:1", "b:2")


def test_unknown_option_lists_valid_ones():
    with pytest.raises(ConfigError, match="unknown option 'startingOffsets'.*zkRoot"):
        job_from_options({**BASE, "startingOffsets": "earliest"})


def test_bad_option_value_names_the_option():
    with pytest.raises(ConfigError, match="fetchSizeBytes"):
        job_from_options({**BASE, "fetchSizeBytes": "big"})


def test_options_override_a_config_file(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("spout: {topic: a, zkRoot: /kafka, id: s, fetchSizeBytes: 10}\n"
                    "hosts: {bootstrap: 'k:1'}\ntopology: {name: t}\n")
    job, _ = job_from_options({"config": str(path), "fetchSizeBytes": "20", "topic": "b"})
    assert (job.spout.topic, job.spout.fetch_size_bytes, job.topology.name) == ("b", 20, "t")


def test_offset_maps_round_trip_in_sparks_json_form():
    positions = {("a", 0): 5, ("a", 10): 7, ("b", 1): 0}
    assert to_offset_map(positions) == {"a": {"0": 5, "10": 7}, "b": {"1": 0}}
    assert from_offset_map(to_offset_map(positions)) == positions


@pytest.mark.parametrize("starts,ends,max_rows,per_partition,expected", [
    ({("t", 0): 0}, {("t", 0): 100}, None, None, {("t", 0): 100}),
    ({("t", 0): 0}, {("t", 0): 100}, None, 30, {("t", 0): 30}),
    ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 90, ("t", 1): 10}, 10, None,
     {("t", 0): 9, ("t", 1): 1}),
    # a small partition is not starved
    ({("t", 0): 0, ("t", 1): 0}, {("t", 0): 1000, ("t", 1): 1}, 10, None,
     {("t", 0): 9, ("t", 1): 1}),
    ({("t", 0): 5}, {("t", 0): 5}, 10, 2, {("t", 0): 5}),
    # a partition new in ends starts at its end
    ({}, {("t", 0): 5}, 10, None, {("t", 0): 5}),
])
def test_cap_ends(starts, ends, max_rows, per_partition, expected):
    assert cap_ends(starts, ends, max_rows=max_rows, per_partition=per_partition) == expected


def test_batch_positions_are_next_offsets():
    assert batch_positions({("t", 0): 24}) == {("t", 0): 25}


def test_kafka_row_matches_sparks_kafka_schema():
    m = KafkaMessage(41, b"k", b"v", 1_700_000_000_123, 1, (("h", b"x"),), "orders", 3)
    assert kafka_row(m) == (b"k", b"v", "orders", 3, 41, datetime.datetime(
        2023, 11, 14, 22, 13, 20, 123000, tzinfo=datetime.timezone.utc), 1, [("h", b"x")])


def _scripted(n, partitions=2):
    k = ScriptedKafka()
    k.create_topic("orders", partitions)
    for p in range(partitions):
        k.append("orders", p, *[f"m{p}-{i}".encode() for i in range(n)])
    return k


def test_read_range_stops_at_the_end_offset():
    k = _scripted(30, 1)
    got = [m.offset for m in read_range(k, "orders", 0, 5, 17)]
    assert got == list(range(5, 17))


def test_a_fetch_becomes_an_arrow_batch_of_sparks_kafka_schema():
    pa = pytest.importorskip("pyarrow")
    from storm_kafka_compat.streaming.datasource import arrow_batch, read_fetches
    k = _scripted(6, 1)
    k.append("orders", 0, b"with-key", key=b"k1")
    fetches = list(read_fetches(k, "orders", 0, 2, 7))
    batches = [arrow_batch(f, "orders", 0) for f in fetches]
    table = pa.Table.from_batches(batches)
    assert table.column_names == ["key", "value", "topic", "partition", "offset", "timestamp",
                                  "timestampType", "headers"]
    assert table.column("offset").to_pylist() == [2, 3, 4, 5, 6]
    assert table.column("value").to_pylist()[:2] == [b"m0-2", b"m0-3"]
    assert table.column("key").to_pylist()[-1] == b"k1"
    assert set(table.column("topic").to_pylist()) == {"orders"}
    assert table.schema.field("partition").type == pa.int32()
    assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    # the same rows as the Row-by-Row form
    rows = [kafka_row(m) for m in read_range(k, "orders", 0, 2, 7)]
    assert table.column("timestamp").to_pylist() == [r[5] for r in rows]
    assert table.column("headers").to_pylist() == [[] for _ in rows]


def test_reader_starts_from_documents_and_commit_writes_storm_bytes():
    storm_doc = encode_document(topology_id="orders-topo-1-1", topology_name="orders-topo",
                                offset=12, partition=0, broker_host="old", broker_port=9092,
                                topic="orders")
    store = MemoryStateStore({"/kafka/spout1/partition_0": storm_doc})
    kafka = _scripted(30)
    reader = StormKafkaStreamReader({**BASE, "maxMessagesPerPartition": "10"}, store=store,
                                    kafka_factory=lambda boot: kafka)
    start = reader.initialOffset()
    assert start == {"orders": {"0": 12, "1": 0}}
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert end == {"orders": {"0": 22, "1": 10}}
    ranges = reader.partitions(start, end)
    assert [(r.partition, r.start, r.end) for r in ranges] == [(0, 12, 22), (1, 0, 10)]
    reader.commit(end)
    assert store.docs["/kafka/spout1/partition_1"] == encode_document(
        topology_id="orders-topo-2-2", topology_name="orders-topo", offset=10, partition=1,
        broker_host="k1", broker_port=9092, topic="orders")
    writes = store.writes
    reader.commit(end)                       # unchanged: nothing written
    assert store.writes == writes
    reader.commit(start)                     # never moves our own document backwards
    assert parse_document(store.docs["/kafka/spout1/partition_1"]).offset == 10


def test_available_now_caps_at_the_log_end_seen_when_prepared():
    kafka = _scripted(5, 1)
    reader = StormKafkaStreamReader({**BASE, "static": "0=k1:9092"}, store=MemoryStateStore(),
                                    kafka_factory=lambda boot: kafka)
    start = reader.initialOffset()
    reader.prepareForTriggerAvailableNow()
    kafka.append("orders", 0, b"late")
    assert reader.latestOffset(start, reader.getDefaultReadLimit()) == {"orders": {"0": 5}}


def test_zk_positions_overwrite_a_foreign_document_but_not_a_later_own_one():
    store = MemoryStateStore({"/kafka/spout1/partition_0": encode_document(
        topology_id="storm-9-9", topology_name="orders-topo", offset=50, partition=0,
        broker_host="old", broker_port=1, topic="orders")})
    job, _ = job_from_options(BASE)
    pos = ZkPositions(job, store=store, kafka_factory=lambda boot: _scripted(60))
    assert pos.write({("orders", 0): 20}) == {("orders", 0): 20}
    assert pos.write({("orders", 0): 30}) == {("orders", 0): 30}
    assert pos.write({("orders", 0): 25}) == {}


def test_failed_offsets_from_lists_and_dicts():
    assert failed_offsets(None) is None
    assert failed_offsets([("t", 0, 3), {"topic": "t", "partition": 1, "offset": 4}]) == {
        ("t", 0, 3), ("t", 1, 4)}
    assert failed_offsets("ok") is None


def test_config_dataframe_key():
    d = {"spout": {"topic": "t", "zkRoot": "/k", "id": "s"}, "hosts": {"bootstrap": "k:1"},
         "topology": {"name": "n"}, "dataframe": "myjob.batches:write"}
    assert job_config_from_dict(d).dataframe == "myjob.batches:write"
    with pytest.raises(ConfigError, match="dataframe"):
        job_config_from_dict({**d, "bolt": "myjob.bolts:b"})
