"""What only modern brokers have, on real Apache Kafka 3.9 (ZooKeeper mode) and 4.x
(KRaft), with both fetch backends: record batches v2 with every codec and headers,
transactions (markers and aborted records leave gaps), compacted topics, DeleteRecords
under a stored offset, timestamps resolved by the broker's time index, records larger
than fetchSizeBytes, and the ZooKeeper registry 3.9 writes (4.x writes none).

Each run is the driver loop in this process with the executors' fetch path
(``modern_jobs.run``: the backend's own client, as in a Spark task); what Storm did in
each case is in docs/deviations.md and docs/testing.md.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Dict, List

import pytest

from storm_kafka_compat.config import SpoutConfig, TopologyConfig, ZkHosts
from storm_kafka_compat.discovery.registry import parse_broker_registration
from storm_kafka_compat.discovery.zk import ZkDiscovery
from storm_kafka_compat.kafka.client import MAX_FETCH_CONSUMERS
from tests.integration.modern_jobs import (SEEN, by_partition, legacy_job, produce_records,
                                           producer, run, seen, zk_offset)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("clear_seen")]


# --- the registry: 3.9 writes version 5, 4.x (KRaft) writes none -------------------------------

def test_kafka39_registers_as_zkhosts_reads_it(kafka39, unique):
    """Registration version 5: endpoints of two named listeners, their protocol map,
    the rack and the features; ZkHosts fetches from the PLAINTEXT one unless told
    another listener name."""
    raw, _ = kafka39.zk().get("/brokers/ids/1")
    reg = parse_broker_registration(raw, broker_id=1)
    broker = kafka39.brokers[0]
    assert reg.version == 5 and reg.rack == "rack-a" and reg.features == {}
    assert {(e.listener, e.protocol, e.port) for e in reg.endpoints} == {
        ("PLAINTEXT", "PLAINTEXT", broker.port),
        ("INTERNAL", "PLAINTEXT", broker.listeners["INTERNAL"][1])}
    topic = unique("topic")
    kafka39.create_topic(topic, 3, 1)
    spout = SpoutConfig(hosts=ZkHosts(kafka39.zk_connect), topic=topic, zk_root="/r", id="i")
    discovery = ZkDiscovery(ZkHosts(kafka39.zk_connect), spout, TopologyConfig(name="modern"))
    internal = ZkDiscovery(ZkHosts(kafka39.zk_connect), spout, TopologyConfig(name="modern"),
                           listener_name="INTERNAL")
    try:
        assert [(i.partition, i.leader.port) for i in discovery.discover()] == [
            (p, broker.port) for p in range(3)]
        assert {i.leader.port for i in internal.discover()} == {broker.listeners["INTERNAL"][1]}
    finally:
        discovery.close()
        internal.close()


def test_zkhosts_on_a_zookeeper_without_a_registry_names_kraft_and_bootstrap(
        kafka4, zk_server, tmp_path, unique):
    """Kafka 4.x keeps its metadata in KRaft: a ZooKeeper (here the job's own) holds
    no /brokers. The operator tools and the run say so and name the fix."""
    import yaml
    from tests.integration.kafka09_jobs import cli
    topic = unique("topic")
    kafka4.create_topic(topic, 1, 1)
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": "/kraft-job", "id": "s"},
        "hosts": {"zk": f"{zk_server.connect_string}/{unique('no-kafka')}"},
        "topology": {"name": "k", "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": zk_server.port},
        "bolt": "tests.bolts:record"}))
    shown = cli("offsets", "show", str(config))
    assert shown.returncode == 1, shown.stderr
    last = shown.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: no Kafka broker registers in this ZooKeeper")
    assert "/brokers/ids does not exist" in last and "KRaft" in last
    assert "hosts: {bootstrap:" in last


# --- record batches v2: codecs, headers, timestamps --------------------------------------------

CODECS = ("gzip", "snappy", "lz4", "zstd")


def test_every_codec_with_headers_reaches_the_scheme(modern_kafka, backend, zk_server, zk_client,
                                                     zk_root, unique):
    """One topic per codec (the topic's compression.type and the producer's), two
    partitions, headers (a repeated key included) and create times: every record
    once, its headers in order and its timestamp through ``record_with_headers``;
    3.9 reads its partitions through ZkHosts (the registry), 4.x through bootstrap."""
    prefix = unique("codec")
    base_ms = int(time.time() * 1000) - 60_000
    expected = []
    for codec in CODECS:
        topic = f"{prefix}-{codec}"
        modern_kafka.create_topic(topic, 2, 1, config={"compression.type": codec})
        records = [{"partition": i % 2, "key": f"k{i}".encode(), "value": f"{codec}-{i}".encode(),
                    "headers": [("codec", codec.encode()), ("n", str(i).encode()),
                                ("n", b"again")],
                    "timestamp": base_ms + i} for i in range(10)]
        produce_records(modern_kafka.bootstrap, topic, records, **{"compression.type": codec})
        for i, _r in enumerate(records):
            expected.append((topic, i % 2, i // 2, (
                topic, i % 2, i // 2, f"k{i}", f"{codec}-{i}", base_ms + i,
                [("codec", codec.encode()), ("n", str(i).encode()), ("n", b"again")])))
    hosts = ({"zk": modern_kafka.zk_connect} if modern_kafka.distribution.zookeeper_mode
             else {"bootstrap": modern_kafka.bootstrap})
    job = legacy_job(modern_kafka, zk_server.port, f"{prefix}-.*", zk_root, backend,
                     hosts=hosts, spout={"scheme": "record_with_headers"},
                     topology={"kafka.topic.wildcard.match": True})
    summary = run(job)
    assert sorted(s for s in SEEN if s[0].startswith(prefix)) == sorted(expected)
    assert summary.fetch_failures == 0 and sum(p.lost for p in summary.partitions) == 0
    for codec in CODECS:
        for p in range(2):
            path = f"{zk_root}/modern/{prefix}-{codec}/partition_{p}"
            from storm_kafka_compat.offsets.document import parse_document
            assert parse_document(zk_client.get(path)[0]).offset == 5


# --- transactions ----------------------------------------------------------------------------

def _transactional_log(cluster: Any, topic: str, unique: Any) -> None:
    """Offsets 0-2 committed, 3 commit marker, 4-5 aborted, 6 abort marker, 7-8
    committed, 9 commit marker: the log ends on a marker (end 10)."""
    p = producer(cluster.bootstrap, **{"transactional.id": unique("txn")})
    p.init_transactions(30)
    for commit, values in ((True, [b"c0", b"c1", b"c2"]), (False, [b"a4", b"a5"]),
                           (True, [b"c7", b"c8"])):
        p.begin_transaction()
        for v in values:
            p.produce(topic, v, partition=0)
        p.flush(30)                      # on the log before an abort, not purged by it
        (p.commit_transaction if commit else p.abort_transaction)(30)
    assert cluster.log_range(topic, 0) == (0, 10)


@pytest.mark.parametrize("isolation,values", [
    ("read_uncommitted", {0: "c0", 1: "c1", 2: "c2", 4: "a4", 5: "a5", 7: "c7", 8: "c8"}),
    ("read_committed", {0: "c0", 1: "c1", 2: "c2", 7: "c7", 8: "c8"}),
])
def test_transactions_leave_gaps_the_commit_passes(modern_kafka, backend, isolation, values,
                                                   zk_server, zk_client, zk_root, unique):
    """No stall on the markers (the log ends on one), no false loss, and the document
    reaches the log end; ``kafka.isolation_level`` decides whether aborted records
    are read (read_uncommitted, what storm-kafka read, is the default)."""
    topic = unique("topic")
    modern_kafka.create_topic(topic, 1, 1)
    _transactional_log(modern_kafka, topic, unique)
    kafka = {} if isolation == "read_uncommitted" else {"isolation_level": isolation}
    job = legacy_job(modern_kafka, zk_server.port, topic, zk_root, backend, kafka=kafka,
                     spout={"socketTimeoutMs": 5000})
    started = time.monotonic()
    summary = run(job)
    elapsed = time.monotonic() - started
    assert {s[2]: s[3][0] for s in seen(topic)} == values
    (p0,) = summary.partitions
    assert (p0.processed, p0.lost, summary.fetch_failures) == (len(values), 0, 0)
    assert zk_offset(zk_client, zk_root, 0) == 10
    assert elapsed < 5.0, f"{elapsed:.1f} s: the markers stalled a fetch"    # socketTimeoutMs


def test_transactions_in_client_mode_commit_the_group_to_the_log_end(modern_kafka, backend,
                                                                     unique):
    from tests.integration.kafka09_jobs import group_commits
    from tests.integration.modern_jobs import client_job
    topic = unique("topic")
    modern_kafka.create_topic(topic, 1, 1)
    _transactional_log(modern_kafka, topic, unique)
    group = unique("group")
    job = client_job(modern_kafka, topic, group, backend,
                     kafka={"isolation_level": "read_committed"},
                     firstPollOffsetStrategy="EARLIEST", offsetStore="kafka")
    summary = run(job, store=object())
    assert [s[2] for s in seen(topic)] == [0, 1, 2, 7, 8]
    assert summary.fetch_failures == 0
    offset, _meta = group_commits(modern_kafka.bootstrap, group, [(topic, 0)], {})[0]
    assert offset == 10


# --- compaction ------------------------------------------------------------------------------

_COMPACTED: Dict[int, Any] = {}


def _compacted_topic(cluster: Any, unique: Any) -> Any:
    """One compacted topic per cluster, shared by the backends: keys k0-k3 written
    five times, each round in a segment of its own, and ``last`` rolling the last of
    them; waits until the cleaner has compacted every rolled segment (k0-k3 at 16-19,
    ``last`` at 20, in the active segment). The cleaner may work in several passes
    (a pass that ran before the last roll keeps 12-15): the test reads the log only
    once no later pass can change it."""
    key = id(cluster)
    if key in _COMPACTED:
        return _COMPACTED[key]
    topic = unique("compacted")
    cluster.create_topic(topic, 1, 1, config={
        "cleanup.policy": "compact", "segment.ms": 100, "min.cleanable.dirty.ratio": 0.01,
        "min.compaction.lag.ms": 0, "delete.retention.ms": 100})
    for round_ in range(5):
        cluster.produce(topic, [(0, f"k{k}".encode(), f"v{round_}-{k}".encode())
                                for k in range(4)])
        time.sleep(0.15)                                   # the next append rolls a segment
    cluster.produce(topic, [(0, b"last", b"last")])        # rolls the last segment
    from kafka import KafkaConsumer, TopicPartition
    tp = TopicPartition(topic, 0)
    deadline = time.monotonic() + 60
    while True:
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
        try:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            offsets: List[int] = []
            for _ in range(10):
                offsets += [r.offset for r in consumer.poll(500).get(tp, [])]
                if offsets and offsets[-1] == 20:
                    break
        finally:
            consumer.close()
        if offsets == list(range(16, 21)):
            break
        assert time.monotonic() < deadline, f"the cleaner never compacted {topic}: {offsets}"
        time.sleep(0.5)
    _COMPACTED[key] = (topic, offsets)
    return topic, offsets


def test_a_compacted_topic_has_gaps_not_losses(modern_kafka, backend, zk_server, zk_client,
                                              zk_root, unique):
    topic, offsets = _compacted_topic(modern_kafka, unique)
    summary = run(legacy_job(modern_kafka, zk_server.port, topic, zk_root, backend))
    assert [s[2] for s in seen(topic)] == offsets            # what the log still holds
    assert [s[3][0] for s in seen(topic)][-5:] == ["v4-0", "v4-1", "v4-2", "v4-3", "last"]
    (p0,) = summary.partitions
    assert (p0.lost, p0.processed, summary.fetch_failures) == (0, len(offsets), 0)
    assert zk_offset(zk_client, zk_root, 0) == 21


# --- DeleteRecords under a stored offset -------------------------------------------------------

@pytest.mark.parametrize("fallback", [True, False])
def test_delete_records_past_a_stored_offset_is_a_real_out_of_range(
        modern_kafka, backend, fallback, zk_server, zk_client, zk_root, unique, caplog):
    """Storm left the document at 5; DeleteRecords moved the log start to 15. With
    ``useStartOffsetTimeIfOffsetOutOfRange`` the fetch's OFFSET_OUT_OF_RANGE moves the
    partition to the log start (startOffsetTime earliest) and counts 10 lost;
    without it the fetch fails each batch and the document stays (Storm's
    behaviour: the partition waits for an operator)."""
    from tests.integration.kafka09_jobs import put, storm_document
    topic = unique("topic")
    modern_kafka.create_topic(topic, 1, 1)
    modern_kafka.produce(topic, [(0, None, f"m{i}".encode()) for i in range(20)])
    put(zk_client, f"{zk_root}/modern/partition_0",
        storm_document(topic, 0, 5, broker=("127.0.0.1", modern_kafka.brokers[0].port)))
    assert modern_kafka.delete_records(topic, {0: 15}) == {0: 15}
    job = legacy_job(modern_kafka, zk_server.port, topic, zk_root, backend,
                     spout={"useStartOffsetTimeIfOffsetOutOfRange": fallback})
    caplog.set_level(logging.WARNING)
    summary = run(job, max_batches=None if fallback else 3)
    (p0,) = summary.partitions
    if fallback:
        assert [s[2] for s in seen(topic)] == list(range(15, 20))
        assert p0.lost == 10 and zk_offset(zk_client, zk_root, 0) == 20
        assert "10 messages lost" in caplog.text
    else:
        assert seen(topic) == [] and p0.lost == 0 and zk_offset(zk_client, zk_root, 0) == 5
        assert "useStartOffsetTimeIfOffsetOutOfRange is false" in caplog.text


def test_log_starts_and_ends_of_many_partitions_in_one_go(modern_kafka, backend, unique):
    """What the driver's progress and metrics ask each report (GroupKafka.log_starts,
    log_ends): the broker's log start after DeleteRecords and its log end, for every
    partition, equal to a partition-at-a-time lookup."""
    from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, StaticHosts
    topic = unique("topic")
    modern_kafka.create_topic(topic, 3, 1)
    modern_kafka.produce(topic, [(p, None, b"m") for p in range(3) for _ in range(10 + p)])
    assert modern_kafka.delete_records(topic, {1: 4}) == {1: 4}
    spout = SpoutConfig(hosts=StaticHosts({}), topic=topic, zk_root="/r", id="i")
    if backend == "confluent":
        from storm_kafka_compat.kafka.confluent import ConfluentAccess as Access
    else:
        from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess as Access
    keys = [(topic, p) for p in range(3)]
    with Access(modern_kafka.bootstrap, spout) as access:
        starts, ends = access.log_starts(keys), access.log_ends(keys)
        assert starts == {(topic, 0): 0, (topic, 1): 4, (topic, 2): 0}
        assert ends == {(topic, 0): 10, (topic, 1): 11, (topic, 2): 12}
        assert {k: access.offset_for(*k, EARLIEST_TIME) for k in keys} == starts
        assert {k: access.offset_for(*k, LATEST_TIME) for k in keys} == ends


# --- startOffsetTime by the broker's time index ------------------------------------------------

def test_start_offset_time_is_resolved_by_message_timestamps(modern_kafka, backend, zk_server,
                                                            zk_client, zk_root, unique):
    """Create times one second apart: a start time between the 4th and 5th record
    starts at offset 4 (ListOffsets v1+); Kafka 0.9 could only answer per segment."""
    topic = unique("topic")
    modern_kafka.create_topic(topic, 1, 1)
    base_ms = int(time.time() * 1000) - 3_600_000
    produce_records(modern_kafka.bootstrap, topic, [
        {"partition": 0, "value": f"t{i}".encode(), "timestamp": base_ms + 1000 * i}
        for i in range(10)])
    job = legacy_job(modern_kafka, zk_server.port, topic, zk_root, backend,
                     spout={"startOffsetTime": base_ms + 3500})
    summary = run(job)
    assert by_partition(summary)[0].resumed_from == 4
    assert [s[3][0] for s in seen(topic)] == [f"t{i}" for i in range(4, 10)]
    assert zk_offset(zk_client, zk_root, 0) == 10


# --- a record larger than fetchSizeBytes -------------------------------------------------------

@pytest.mark.parametrize("partitions", [1, MAX_FETCH_CONSUMERS])
def test_a_record_larger_than_fetch_size_bytes_is_read_and_named(
        modern_kafka, backend, zk_server, zk_client, zk_root, unique, caplog, partitions):
    """storm-kafka stalled silently on such a record (STORM-869). Both backends read
    it (Kafka returns an oversized first record whole) and say which setting to
    raise, once per partition: read alone, and read by a task's fetch group (as many
    partitions as make a group)."""
    topic = unique("topic")
    modern_kafka.create_topic(topic, partitions, 1, config={"max.message.bytes": 1_000_000})
    big = b"x" * 300_000
    values = [b"small-0", big, b"small-2", big, b"small-4"]
    modern_kafka.produce(topic, [(p, None, v) for p in range(partitions) for v in values],
                         batch_size=16384, max_request_size=1_000_000)
    caplog.set_level(logging.WARNING)
    job = legacy_job(modern_kafka, zk_server.port, topic, zk_root, backend,
                     spout={"fetchSizeBytes": 65536, "scheme": "raw"})
    summary = run(job, one_task=partitions > 1)
    assert [(s[1], s[2], len(s[3][0])) for s in seen(topic)] == [
        (p, o, len(v)) for p in range(partitions) for o, v in enumerate(values)]
    assert summary.fetch_failures == 0
    assert [zk_offset(zk_client, zk_root, p) for p in range(partitions)] == [5] * partitions
    warnings = [r.getMessage() for r in caplog.records if "fetchSizeBytes" in r.getMessage()]
    assert len(warnings) == partitions and "raise spout.fetchSizeBytes" in warnings[0]
    assert sorted(int(w.split(":")[0].rsplit("/", 1)[1]) for w in warnings) == list(
        range(partitions))
