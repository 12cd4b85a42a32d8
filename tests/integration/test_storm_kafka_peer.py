"""Real Apache Storm 1.2.4 and this project hand topics back and forth through the same
ZooKeeper documents.

Storm runs its own storm-kafka ``KafkaSpout`` in a LocalCluster (Flux ``--local``,
tests/peers/storm.py) against the real Apache Kafka 0.9.0.1 broker and ZooKeeper of the
``kafka09`` fixture; this project runs through its console script on the same topic
and documents. Every value is ``"<partition>-<offset>"``, so what each side processed is
known exactly: nothing may be skipped, and only what the side before had processed but
not committed may be processed twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import pytest

from tests.bolts import read_records
from tests.integration.kafka09_jobs import cli, get, storm_document, zk_job
from tests.peers.fixtures import storm1, storm1_ready  # noqa: F401
from tests.peers.storm import FluxTopology, StormLocal, read_lines, storm_kafka_spout

pytestmark = [pytest.mark.integration, pytest.mark.spark]

Seen = List[Tuple[int, int]]
OUR_ID = "clicks-9-1700000000"


def _messages(partitions: int, start: int, end: int):
    return [(p, None, f"{p}-{o}".encode()) for p in range(partitions) for o in range(start, end)]


def _storm_seen(path: Path) -> Seen:
    """(partition, offset) of each tuple Storm's bolt processed, in order."""
    return [tuple(int(x) for x in values[0].split("-")) for values in read_lines(path)]


def _our_seen(path: Path) -> Seen:
    return [(int(r["partition"]), int(r["offset"])) for r in read_records(str(path))]


def _documents(zk: Any, root: str, partitions: int) -> Dict[int, Optional[Dict[str, Any]]]:
    docs = {}
    for p in range(partitions):
        data = get(zk, f"{root}/partition_{p}")
        docs[p] = json.loads(data) if data else None
    return docs


def _committed(docs: Dict[int, Optional[Dict[str, Any]]]) -> Dict[int, int]:
    """Where each partition resumes: the stored offset, 0 (earliest) without one."""
    return {p: (d["offset"] if d else 0) for p, d in docs.items()}


def _by_partition(seen: Iterable[Tuple[int, int]]) -> Dict[int, List[int]]:
    out: Dict[int, List[int]] = {}
    for p, o in seen:
        out.setdefault(p, []).append(o)
    return out


def _storm_topology(name: str, *, topic: str, zk_root: str, spout_id: str, cluster: Any,
                    record: Path, delay_ms: int = 0, **fields: Any) -> FluxTopology:
    topology = FluxTopology(name, config={"topology.workers": 1,
                                          "topology.message.timeout.secs": 30})
    storm_kafka_spout(topology, "kafka-spout", topic=topic, zk_root=zk_root, spout_id=spout_id,
                      zk_hosts=cluster.zk_connect,
                      state_zk=("127.0.0.1", cluster.zookeeper.port), **fields)
    topology.recorder("recorder", "kafka-spout", record, delay_ms=delay_ms)
    return topology


def _run_ours(config: Path, record: Path) -> Dict[str, Any]:
    done = cli("run", str(config), "--until-caught-up", "--json", record=record)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _storm_until_killed(storm: StormLocal, record: Path, zk: Any, root: str, partitions: int,
                        *, processed_at_least: int) -> Tuple[Seen, Dict[int, int]]:
    """Let Storm process at least ``processed_at_least`` tuples and commit at least one
    document beyond where it started, then SIGKILL it (a crash: what it processed since
    its last commit was never committed). Returns what it processed and its documents."""
    before = _committed(_documents(zk, root, partitions))

    def progressed() -> bool:
        after = _committed(_documents(zk, root, partitions))
        return (len(read_lines(record)) >= processed_at_least
                and any(after[p] > before[p] for p in after))

    storm.wait_for(progressed, f"{processed_at_least} tuples and a commit")
    storm.kill()
    return _storm_seen(record), _committed(_documents(zk, root, partitions))


def _check_handover(produced_to: int, partitions: int, first: Seen, first_start: Dict[int, int],
                    committed: Dict[int, int], second: Seen, *, first_name: str,
                    second_name: str) -> int:
    """The side that took over resumed exactly at the other's documents: it began each
    partition at the committed offset, skipped nothing up to ``produced_to``, and
    re-processed only what the first side processed beyond its commit. Returns that
    replay count."""
    firsts, seconds = _by_partition(first), _by_partition(second)
    replayed = 0
    for p in range(partitions):
        mine = firsts.get(p, [])
        assert mine == list(range(first_start[p], first_start[p] + len(mine))), (
            f"{first_name} processed partition {p} out of order or with gaps")
        theirs = seconds.get(p, [])
        assert sorted(set(theirs)) == list(range(committed[p], produced_to)), (
            f"{second_name} did not resume partition {p} at {committed[p]} and run to "
            f"{produced_to}: {theirs[:3]}...{theirs[-3:]}")
        assert len(theirs) == len(set(theirs)), f"{second_name} processed duplicates on {p}"
        overlap = set(mine) & set(theirs)
        assert overlap == set(range(committed[p], first_start[p] + len(mine))), (
            f"partition {p}: replayed {sorted(overlap)[:5]}..., expected exactly what "
            f"{first_name} processed beyond its commit at {committed[p]}")
        replayed += len(overlap)
    return replayed


def test_storm_and_this_project_hand_a_topic_back_and_forth(tmp_path, kafka09, kafka09_topic,
                                                             zk_root, storm1):  # noqa: F811
    """ZkHosts, both directions, twice: Storm crashes mid-stream, we resume from its
    documents; more is produced; Storm resumes from ours at exactly our offsets, crashes
    again; we resume from its documents and finish."""
    partitions, first_batch, second_batch = 3, 200, 150
    topic = kafka09_topic(partitions, _messages(partitions, 0, first_batch))
    zk = kafka09.zk()
    root = f"{zk_root}/spout1"
    config = zk_job(tmp_path / "job.yaml", kafka09, topic, zk_root, topology_id=OUR_ID)
    counts: Dict[str, int] = {"produced": partitions * first_batch}

    def storm_crashes(name: str, at_least: int) -> Tuple[Seen, Dict[int, int]]:
        """A Storm topology (startOffsetTime earliest) that processes at least
        ``at_least`` tuples, commits, and crashes."""
        record = tmp_path / f"{name}.txt"
        storm = storm1(_storm_topology(name, topic=topic, zk_root=zk_root, spout_id="spout1",
                                       cluster=kafka09, record=record, delay_ms=15,
                                       startOffsetTime=-2))
        return _storm_until_killed(storm, record, zk, root, partitions,
                                   processed_at_least=at_least)

    # 1. Storm consumes part of the topic and crashes
    storm_seen, storm_committed = storm_crashes("peer-a", 250)
    storm_docs = _documents(zk, root, partitions)
    storm_id = next(d["topology"]["id"] for d in storm_docs.values() if d)
    assert storm_id.startswith("peer-a-") and storm_id != OUR_ID
    counts["storm_1"] = len(storm_seen)
    storm_bytes = {p: get(zk, f"{root}/partition_{p}") for p in range(partitions)}

    # 2. we resume from Storm's documents
    summary = _run_ours(config, tmp_path / "ours-1.jsonl")
    ours = _our_seen(tmp_path / "ours-1.jsonl")
    assert {p["partition"]: p["resumed_from"] for p in summary["partitions"]} == storm_committed
    counts["ours_1"] = len(ours)
    counts["replayed_1"] = _check_handover(first_batch, partitions, storm_seen,
                                           dict.fromkeys(range(partitions), 0), storm_committed,
                                           ours, first_name="Storm", second_name="we")
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    for p in range(partitions):                    # Storm's bytes, our topology id
        if storm_committed[p] == first_batch:
            # Storm had committed this partition to the end: nothing new to commit, and
            # like Storm's PartitionManager.commit we do not rewrite an unchanged offset
            assert get(zk, f"{root}/partition_{p}") == storm_bytes[p]
            continue
        assert get(zk, f"{root}/partition_{p}") == storm_document(
            topic, p, first_batch, broker=broker, topology_id=OUR_ID)

    # 3. more is produced; Storm resumes from our documents at exactly our offsets
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    produce(kafka09.bootstrap, topic, _messages(partitions, first_batch,
                                                first_batch + second_batch))
    counts["produced"] += partitions * second_batch
    storm_seen, storm_committed = storm_crashes("peer-b", 200)
    assert {p: offsets[0] for p, offsets in _by_partition(storm_seen).items()} == {
        p: first_batch for p in _by_partition(storm_seen)}, "Storm did not resume at our offsets"
    assert min(o for _, o in storm_seen) == first_batch
    counts["storm_2"] = len(storm_seen)

    # 4. and once more the other way
    ours_record = tmp_path / "ours-2.jsonl"
    summary = _run_ours(config, ours_record)
    ours = _our_seen(ours_record)
    counts["ours_2"] = len(ours)
    counts["replayed_2"] = _check_handover(first_batch + second_batch, partitions, storm_seen,
                                           dict.fromkeys(range(partitions), first_batch),
                                           storm_committed, ours, first_name="Storm",
                                           second_name="we")
    assert _committed(_documents(zk, root, partitions)) == dict.fromkeys(
        range(partitions), first_batch + second_batch)
    processed = counts["storm_1"] + counts["ours_1"] + counts["storm_2"] + counts["ours_2"]
    replayed = counts["replayed_1"] + counts["replayed_2"]
    assert processed - replayed == counts["produced"]          # skipped: 0
    print("storm-kafka 1.2.4 <-> storm-kafka-compat (ZkHosts):", counts)


def _config(path: Path, cluster: Any, topic: str, zk_root: str, *, spout_id: str,
            hosts: Dict[str, Any], topology_id: str = OUR_ID,
            topology: Optional[Dict[str, Any]] = None, **spout: Any) -> Path:
    import yaml
    from tests.integration.kafka09_jobs import KAFKA_09
    path.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": zk_root, "id": spout_id, "scheme": "string", **spout},
        "hosts": hosts,
        "topology": {"name": "clicks", "id": topology_id,
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": cluster.zookeeper.port, **(topology or {})},
        "spark": {"master": "local[2]"},
        "bolt": "tests.bolts:record",
        "kafka": dict(KAFKA_09)}))
    return path


def _explain(config: Path) -> Dict[int, Tuple[str, int]]:
    done = cli("offsets", "explain", str(config), "--json")
    assert done.returncode == 0, done.stderr
    return {e["partition"]: (e["decision"], e["start_offset"]) for e in json.loads(done.stdout)}


def test_static_hosts_and_ignore_zk_offsets_both_ways(tmp_path, kafka09, kafka09_topic, zk_root,
                                                      storm1):  # noqa: F811
    """StaticHosts both ways; Storm with ignoreZkOffsets over our documents starts at its
    startOffsetTime; we with ignoreZkOffsets over Storm's do the same unless our
    topology id is the one in the documents (Storm's rule: only another topology's
    documents are ignored)."""
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    static_topic = kafka09_topic(2, _messages(2, 0, 100))
    zk_topic = kafka09_topic(2, _messages(2, 0, 100))
    zk = kafka09.zk()
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    static = {"static": {p: f"{broker[0]}:{broker[1]}" for p in range(2)}}
    static_config = _config(tmp_path / "static.yaml", kafka09, static_topic, zk_root,
                            spout_id="static-spout", hosts=static)
    zk_config = _config(tmp_path / "zk.yaml", kafka09, zk_topic, zk_root, spout_id="zk-spout",
                        hosts={"zk": kafka09.zk_connect})

    # we consume both topics first and commit
    for config, name in ((static_config, "static-1"), (zk_config, "zk-1")):
        _run_ours(config, tmp_path / f"{name}.jsonl")
        assert sorted(_our_seen(tmp_path / f"{name}.jsonl")) == [
            (p, o) for p in range(2) for o in range(100)]
    produce(kafka09.bootstrap, static_topic, _messages(2, 100, 150))

    # Storm: StaticHosts resumes at our offsets; ignoreZkOffsets starts at earliest
    topology = FluxTopology("peer-static", config={"topology.workers": 1})
    state_zk = ("127.0.0.1", kafka09.zookeeper.port)
    storm_kafka_spout(topology, "static-spout", topic=static_topic, zk_root=zk_root,
                      spout_id="static-spout", static_brokers={0: broker, 1: broker},
                      state_zk=state_zk, startOffsetTime=-2)
    storm_kafka_spout(topology, "zk-spout", topic=zk_topic, zk_root=zk_root, spout_id="zk-spout",
                      zk_hosts=kafka09.zk_connect, state_zk=state_zk, startOffsetTime=-2,
                      ignoreZkOffsets=True)
    static_record, zk_record = tmp_path / "storm-static.txt", tmp_path / "storm-zk.txt"
    topology.recorder("static-recorder", "static-spout", static_record)
    topology.recorder("zk-recorder", "zk-spout", zk_record)
    storm = storm1(topology)
    static_root, zk_spout_root = f"{zk_root}/static-spout", f"{zk_root}/zk-spout"
    storm.wait_for(lambda: (_committed(_documents(zk, static_root, 2)) == {0: 150, 1: 150}
                            and len(read_lines(zk_record)) >= 200
                            and all(d and d["topology"]["id"] != OUR_ID
                                    for d in _documents(zk, zk_spout_root, 2).values())),
                   "both spouts done and committed")
    storm.kill()
    assert sorted(_storm_seen(static_record)) == [(p, o) for p in range(2) for o in range(100, 150)]
    assert sorted(_storm_seen(zk_record)) == [(p, o) for p in range(2) for o in range(100)]
    storm_docs = _documents(zk, zk_spout_root, 2)
    storm_id = storm_docs[0]["topology"]["id"]
    assert _committed(storm_docs) == {0: 100, 1: 100}
    assert storm_document(zk_topic, 0, 100, broker=broker, topology_id=storm_id,
                          name="peer-static") == get(zk, f"{zk_spout_root}/partition_0")

    # we resume StaticHosts from Storm's documents
    produce(kafka09.bootstrap, static_topic, _messages(2, 150, 180))
    _run_ours(static_config, tmp_path / "static-2.jsonl")
    assert sorted(_our_seen(tmp_path / "static-2.jsonl")) == [
        (p, o) for p in range(2) for o in range(150, 180)]

    # we, with ignoreZkOffsets, over Storm's documents: with Storm's topology id they
    # are ours and resumed from; with another id they are ignored ...
    same_id = _config(tmp_path / "same-id.yaml", kafka09, zk_topic, zk_root, spout_id="zk-spout",
                      hosts={"zk": kafka09.zk_connect}, topology_id=storm_id,
                      ignoreZkOffsets=True, startOffsetTime=-2)
    assert _explain(same_id) == {0: ("resume", 100), 1: ("resume", 100)}
    ignoring = _config(tmp_path / "ignore.yaml", kafka09, zk_topic, zk_root,
                       spout_id="zk-spout", hosts={"zk": kafka09.zk_connect},
                       ignoreZkOffsets=True, startOffsetTime=-2)
    assert _explain(ignoring) == {0: ("ignore_zk_offsets", 0), 1: ("ignore_zk_offsets", 0)}
    _run_ours(ignoring, tmp_path / "ignore.jsonl")
    assert sorted(_our_seen(tmp_path / "ignore.jsonl")) == [
        (p, o) for p in range(2) for o in range(100)]
    # ... and once the documents hold our id, ours are resumed from
    assert _explain(ignoring) == {0: ("resume", 100), 1: ("resume", 100)}


def test_wildcard_topics_both_ways(tmp_path, kafka09, zk_root, unique, storm1):  # noqa: F811
    """``kafka.topic.wildcard.match``: one spout over every topic the regex matches,
    documents at ``zkRoot/id/<topic>/partition_N``, both ways."""
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    prefix = unique("wild")
    topics = [f"{prefix}-a", f"{prefix}-b"]
    for topic in topics:
        kafka09.create_topic(topic, 2, 1)
        produce(kafka09.bootstrap, topic, _messages(2, 0, 60))
    zk = kafka09.zk()
    pattern = f"{prefix}-.*"
    roots = {t: f"{zk_root}/wild-spout/{t}" for t in topics}

    def docs() -> Dict[str, Dict[int, int]]:
        return {t: _committed(_documents(zk, root, 2)) for t, root in roots.items()}

    def storm_run(name: str, until: int) -> List[Tuple[str, int, int]]:
        record = tmp_path / f"{name}.txt"
        topology = FluxTopology(name, config={"topology.workers": 1,
                                              "kafka.topic.wildcard.match": True})
        storm_kafka_spout(topology, "wild-spout", topic=pattern, zk_root=zk_root,
                          spout_id="wild-spout", zk_hosts=kafka09.zk_connect,
                          state_zk=("127.0.0.1", kafka09.zookeeper.port), startOffsetTime=-2)
        topology.recorder("recorder", "wild-spout", record)
        storm = storm1(topology)
        storm.wait_for(lambda: docs() == {t: {0: until, 1: until} for t in topics},
                       f"documents of both topics at {until}")
        storm.kill()
        return sorted(_storm_seen(record))

    # Storm reads both topics (values do not name the topic: counted per partition)
    first = storm_run("peer-wild-1", 60)
    assert first == sorted([(p, o) for p in range(2) for o in range(60)] * 2)
    for topic in topics:
        produce(kafka09.bootstrap, topic, _messages(2, 60, 90))
    config = _config(tmp_path / "wild.yaml", kafka09, pattern, zk_root, spout_id="wild-spout",
                     hosts={"zk": kafka09.zk_connect},
                     topology={"kafka.topic.wildcard.match": True})
    _run_ours(config, tmp_path / "ours.jsonl")
    ours = sorted((r["topic"], int(r["partition"]), int(r["offset"]))
                  for r in read_records(str(tmp_path / "ours.jsonl")))
    assert ours == sorted((t, p, o) for t in topics for p in range(2) for o in range(60, 90))
    assert docs() == {t: {0: 90, 1: 90} for t in topics}
    for topic in topics:
        produce(kafka09.bootstrap, topic, _messages(2, 90, 100))
    second = storm_run("peer-wild-2", 100)
    assert second == sorted([(p, o) for p in range(2) for o in range(90, 100)] * 2)
