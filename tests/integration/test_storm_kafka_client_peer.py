"""Real Apache Storm 2.8.3's storm-kafka-client ``KafkaSpout`` and this project's client
mode hand a topic back and forth through the same Kafka consumer group, on Kafka 3.9
and 4.x: the commits, their metadata (the topology id that wrote them) and the
first-poll strategies as each side reads the other's, under AT_LEAST_ONCE and
AT_MOST_ONCE.

Storm runs in a LocalCluster (tests/peers/storm.py) with the spout built by
``KafkaSpoutConfig.builder`` as its users write it; we run through the console script.
Every value is ``"<partition>-<offset>"``, so each side's work is counted exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import yaml

from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
from tests.bolts import read_records
from tests.integration.kafka09_jobs import cli
from tests.peers.fixtures import storm2, storm2_ready  # noqa: F401
from tests.peers.storm import ClientTopology, StormLocal, read_lines

pytestmark = [pytest.mark.integration, pytest.mark.spark]

OUR_ID = "orders-compat"
Seen = List[Tuple[int, int]]


def _messages(partitions: int, start: int, end: int):
    return [(p, None, f"{p}-{o}".encode()) for p in range(partitions) for o in range(start, end)]


def _commits(cluster: Any, topic: str, group: str, partitions: int
             ) -> Dict[int, Optional[Tuple[int, str]]]:
    """partition -> (committed offset, metadata) as the broker holds them."""
    with KafkaGroupOffsets(cluster.bootstrap, group) as offsets:
        got = offsets.read_many([(topic, p) for p in range(partitions)])
    return {p: got[(topic, p)] for p in range(partitions)}


def _offsets(commits: Dict[int, Optional[Tuple[int, str]]]) -> Dict[int, int]:
    return {p: (c[0] if c else 0) for p, c in commits.items()}


def _writer(commits: Dict[int, Optional[Tuple[int, str]]]) -> set:
    """The topology ids in the commits' metadata (storm-kafka-client's JSON)."""
    return {json.loads(c[1])["topologyId"] for c in commits.values() if c}


def _storm_seen(path: Path) -> Seen:
    # the default record translator: topic, partition, offset, key, value
    seen = []
    for _topic, partition, offset, _key, value in read_lines(path):
        assert value == f"{partition}-{offset}"
        seen.append((int(partition), int(offset)))
    return seen


def _config(path: Path, cluster: Any, topic: str, group: str, **client: Any) -> Path:
    path.write_text(yaml.safe_dump({
        "kafkaSpout": {"groupId": group, "bootstrapServers": cluster.bootstrap,
                       "topics": [topic], "offsetCommitPeriodMs": 1000, **client},
        "topology": {"name": "orders", "id": OUR_ID},
        "spark": {"master": "local[2]"},
        "bolt": "tests.bolts:record"}))
    return path


def _run_ours(config: Path, record: Path) -> Seen:
    done = cli("run", str(config), "--until-caught-up", record=record)
    assert done.returncode == 0, done.stderr[-3000:]
    records = read_records(str(record))
    assert all(r["value"] == f"{r['partition']}-{r['offset']}" for r in records)
    return [(int(r["partition"]), int(r["offset"])) for r in records]


def _by_partition(seen: Seen) -> Dict[int, List[int]]:
    out: Dict[int, List[int]] = {}
    for p, o in seen:
        out.setdefault(p, []).append(o)
    return out


def _storm(storm2, tmp_path: Path, name: str, cluster: Any, topic: str, group: str,  # noqa: F811
           **spout: Any) -> Tuple[StormLocal, Path]:
    record = tmp_path / f"{name}.txt"
    return storm2(ClientTopology(name, bootstrap=cluster.bootstrap, topics=[topic], group=group,
                                 record=record, **spout)), record


def test_storm_kafka_client_and_this_project_share_a_group(tmp_path, modern_kafka, unique,
                                                           storm2):  # noqa: F811
    """AT_LEAST_ONCE, UNCOMMITTED_EARLIEST (both defaults), twice each way, each side
    crashing mid-stream: the other resumes at exactly its commits, nothing is skipped,
    and only what was processed beyond the last commit is processed again."""
    partitions, first, second = 2, 200, 120
    topic, group = unique("orders"), unique("group")
    modern_kafka.create_topic(topic, partitions, 1)
    modern_kafka.produce(topic, _messages(partitions, 0, first))
    config = _config(tmp_path / "job.yaml", modern_kafka, topic, group)
    counts: Dict[str, Any] = {}

    def storm_until_killed(name: str, at_least: int) -> Tuple[Seen, Dict[int, int], set]:
        before = _offsets(_commits(modern_kafka, topic, group, partitions))
        storm, record = _storm(storm2, tmp_path, name, modern_kafka, topic, group, delay_ms=15)
        storm.wait_for(lambda: len(read_lines(record)) >= at_least and any(
            after > before[p] for p, after in
            _offsets(_commits(modern_kafka, topic, group, partitions)).items()),
            f"{at_least} tuples and a commit")
        storm.kill()
        commits = _commits(modern_kafka, topic, group, partitions)
        return _storm_seen(record), _offsets(commits), _writer(commits)

    def handed_over(first_side: Seen, committed: Dict[int, int], second_side: Seen,
                    end: int) -> int:
        replayed = 0
        for p in range(partitions):
            theirs = _by_partition(first_side).get(p, [])
            ours = _by_partition(second_side).get(p, [])
            assert sorted(ours) == list(range(committed[p], end)), f"partition {p}"
            overlap = set(theirs) & set(ours)
            assert overlap == {o for o in theirs if o >= committed[p]}
            replayed += len(overlap)
        return replayed

    storm_1, committed, writers = storm_until_killed("peer-1", 150)
    assert len(writers) == 1 and OUR_ID not in writers           # Storm's own metadata
    ours_1 = _run_ours(config, tmp_path / "ours-1.jsonl")
    counts["replayed_1"] = handed_over(storm_1, committed, ours_1, first)
    after_ours = _commits(modern_kafka, topic, group, partitions)
    assert _offsets(after_ours) == dict.fromkeys(range(partitions), first)
    # each partition our run moved carries our commit metadata; one that Storm had
    # committed to its end before the kill gave us nothing to commit and keeps Storm's,
    # as storm-kafka-client commits only what moved (seen in a CI run: Storm's poll took
    # one partition whole, 100 of the 150 tuples)
    for p in range(partitions):
        assert _writer({p: after_ours[p]}) == ({OUR_ID} if committed[p] < first
                                               else writers), f"partition {p}"

    modern_kafka.produce(topic, _messages(partitions, first, first + second))
    storm_2, committed, _ = storm_until_killed("peer-2", 100)
    assert min(o for _, o in storm_2) == first                    # at exactly our commits
    assert {p: offsets[0] for p, offsets in _by_partition(storm_2).items()} == {
        p: first for p in _by_partition(storm_2)}
    ours_2 = _run_ours(config, tmp_path / "ours-2.jsonl")
    counts["replayed_2"] = handed_over(storm_2, committed, ours_2, first + second)
    assert _offsets(_commits(modern_kafka, topic, group, partitions)) == dict.fromkeys(
        range(partitions), first + second)
    counts.update(produced=partitions * (first + second), storm_1=len(storm_1),
                  ours_1=len(ours_1), storm_2=len(storm_2), ours_2=len(ours_2))
    processed = len(storm_1) + len(ours_1) + len(storm_2) + len(ours_2)
    assert processed - counts["replayed_1"] - counts["replayed_2"] == counts["produced"]
    print("storm-kafka-client 2.8.3 <-> storm-kafka-compat on Kafka "
          f"{modern_kafka.distribution.version}:", counts)


def test_first_poll_strategies_and_at_most_once_both_ways(tmp_path, kafka39, unique,
                                                          storm2):  # noqa: F811
    """Each side reads the other's commit as "written by another topology": the
    UNCOMMITTED_* strategies resume from it, EARLIEST starts at the log start; under
    AT_MOST_ONCE too."""
    partitions = 2
    topic, group = unique("orders"), unique("group")
    kafka39.create_topic(topic, partitions, 1)
    kafka39.produce(topic, _messages(partitions, 0, 100))

    def storm_until(name: str, end: int, expected: int, **spout: Any) -> Seen:
        storm, record = _storm(storm2, tmp_path, name, kafka39, topic, group, **spout)
        storm.wait_for(lambda: len(read_lines(record)) >= expected and _offsets(
            _commits(kafka39, topic, group, partitions)) == dict.fromkeys(range(partitions), end),
            f"{expected} tuples and commits at {end}")
        storm.kill()
        return sorted(_storm_seen(record))

    def everything(start: int, end: int) -> Seen:
        return [(p, o) for p in range(partitions) for o in range(start, end)]

    # Storm, AT_MOST_ONCE, from the log start (no commit yet)
    assert storm_until("amo-1", 100, 200, guarantee="AT_MOST_ONCE",
                       first_poll="EARLIEST") == everything(0, 100)
    storm_id = _writer(_commits(kafka39, topic, group, partitions)).pop()

    # we, AT_MOST_ONCE, UNCOMMITTED_EARLIEST: resume at Storm's commit
    kafka39.produce(topic, _messages(partitions, 100, 150))
    amo = _config(tmp_path / "amo.yaml", kafka39, topic, group,
                  processingGuarantee="AT_MOST_ONCE",
                  firstPollOffsetStrategy="UNCOMMITTED_EARLIEST")
    assert sorted(_run_ours(amo, tmp_path / "ours-amo.jsonl")) == everything(100, 150)
    assert _writer(_commits(kafka39, topic, group, partitions)) == {OUR_ID}

    # Storm, EARLIEST, over our commit (another topology's): from the log start
    kafka39.produce(topic, _messages(partitions, 150, 200))
    assert storm_until("earliest", 200, 400, first_poll="EARLIEST") == everything(0, 200)
    assert _writer(_commits(kafka39, topic, group, partitions)) != {storm_id, OUR_ID}

    # we, EARLIEST, over Storm's commit: from the log start as well
    earliest = _config(tmp_path / "earliest.yaml", kafka39, topic, group,
                       firstPollOffsetStrategy="EARLIEST")
    assert sorted(_run_ours(earliest, tmp_path / "ours-earliest.jsonl")) == everything(0, 200)

    # Storm, UNCOMMITTED_LATEST, over our commit: resumes at it
    kafka39.produce(topic, _messages(partitions, 200, 220))
    assert storm_until("uncommitted-latest", 220, 40,
                       first_poll="UNCOMMITTED_LATEST") == everything(200, 220)
