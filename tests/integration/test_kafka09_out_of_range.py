"""OFFSET_OUT_OF_RANGE met for real on Apache Kafka 0.9.0.1: retention deletes the
segment holding a stored offset, a stored offset lies beyond the log end, and
retention overtakes a running job. Each run is `storm-kafka-compat run CONFIG
--until-caught-up` (console script, Spark local[2]) with a recording bolt; Storm
documents are written by the test where Storm 1.x would have left them.

Retention on a 0.9 broker starts 30 s after the broker starts, then runs every
second here (the session broker's ``log.retention.check.interval.ms``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from storm_kafka_compat.offsets.document import encode_document, parse_document
from storm_kafka_compat.workshop.servers.kafka_clients import log_range, produce
from tests.bolts import read_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("storm-kafka-compat")
SPOUT_ID = "oor"


def _config(tmp_path: Path, kafka09: Any, topic: str, zk_root: str, **spout: Any) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": zk_root, "id": SPOUT_ID, "scheme": "string",
                  **spout},
        "hosts": {"zk": kafka09.zk_connect},
        "topology": {"topology.name": "oor", "topology.id": "oor-1-1",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": kafka09.zookeeper.port},
        "spark": {"master": "local[2]"},
        "bolt": "tests.bolts:record",
        "kafka": {"api_version": "0.9"},
    }))
    return path


def _cli(*args: str, record: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, STORM_KAFKA_COMPAT_TEST_RECORD=str(record),
               PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                        os.environ.get("PYTHONPATH")])))
    return subprocess.run([str(CLI), *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _store(kafka09: Any, zk_root: str, topic: str, partition: int, offset: int) -> None:
    kafka09.zk().create(f"{zk_root}/{SPOUT_ID}/partition_{partition}", encode_document(
        topology_id="storm-topo-7-1600000000", topology_name="oor", offset=offset,
        partition=partition, broker_host="127.0.0.1", broker_port=kafka09.brokers[0].port,
        topic=topic), makepath=True)


def _committed(kafka09: Any, zk_root: str, partition: int) -> int:
    data, _ = kafka09.zk().get(f"{zk_root}/{SPOUT_ID}/partition_{partition}")
    return parse_document(data).offset


def _summary_row(stdout: str, partition: int) -> Dict[str, str]:
    lines = [line.split() for line in stdout.splitlines() if line.strip()]
    header = lines[0]
    for row in lines[1:]:
        if row[1] == str(partition):
            return dict(zip(header, row))
    raise AssertionError(f"no summary row for partition {partition} in {stdout!r}")


def _wait_for_retention(kafka09: Any, topic: str, above: int, timeout_s: float = 90) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        start, _ = log_range(kafka09.bootstrap, topic, 0)
        if start > above:
            return start
        assert time.monotonic() < deadline, f"retention kept the log start at {start}"
        time.sleep(0.5)


@pytest.fixture
def retained_topic(kafka09, kafka09_topic):
    """A one-partition topic with tiny segments and retention: 300 messages written,
    then retention deletes the oldest segments (the log start passes 100)."""
    topic = kafka09_topic(1, config={"segment.bytes": 2048, "retention.bytes": 4096})
    produce(kafka09.bootstrap, topic, [(0, None, f"m{i}".encode()) for i in range(300)],
            batch_size=1024)
    start = _wait_for_retention(kafka09, topic, above=100)
    return topic, start


def test_stored_offset_below_the_log_start_moves_to_it_and_counts_the_loss(
        tmp_path, kafka09, retained_topic, zk_root):
    topic, start = retained_topic
    _store(kafka09, zk_root, topic, 0, 40)
    config = _config(tmp_path, kafka09, topic, zk_root)
    explained = json.loads(_cli("offsets", "explain", "--json", str(config),
                                record=tmp_path / "x").stdout)
    (e,) = explained
    assert e["decision"] == "resume" and e["start_offset"] == 40
    assert e["outside_log"]["where"] == "below_start"
    assert e["outside_log"]["moves_to"] == e["log_start_offset"]
    shown = _cli("offsets", "show", str(config), record=tmp_path / "x")
    assert "below log start" in shown.stdout and "below the log start" in shown.stderr

    record = tmp_path / "records.jsonl"
    res = _cli("run", str(config), "--until-caught-up", record=record)
    assert res.returncode == 0, res.stderr[-3000:]
    first = min(r["offset"] for r in read_records(str(record)))
    row = _summary_row(res.stdout, 0)
    # the move lands on the log start of the moment of the fetch (retention may have
    # gone on since the explain): everything from there to 299 read once, the rest lost
    offsets = sorted(r["offset"] for r in read_records(str(record)))
    assert offsets == list(range(first, 300)) and first >= start
    assert int(row["LOST"]) == first - 40
    assert "out of range" in res.stderr and f"{first - 40} messages lost" in res.stderr
    assert _committed(kafka09, zk_root, 0) == 300


def test_without_the_fallback_the_partition_fails_its_fetches_and_stays_put(
        tmp_path, kafka09, retained_topic, zk_root):
    """useStartOffsetTimeIfOffsetOutOfRange: false is Storm's fetch failure: the
    partition is retried (no jump, nothing counted lost, the document untouched),
    the job keeps running and says why; bounded here by --max-batches."""
    topic, _ = retained_topic
    _store(kafka09, zk_root, topic, 0, 40)
    config = _config(tmp_path, kafka09, topic, zk_root,
                     useStartOffsetTimeIfOffsetOutOfRange=False)
    explained = json.loads(_cli("offsets", "explain", "--json", str(config),
                                record=tmp_path / "x").stdout)
    assert explained[0]["outside_log"]["moves_to"] is None
    record = tmp_path / "records.jsonl"
    res = _cli("run", str(config), "--max-batches", "4", record=record, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert read_records(str(record)) == []
    assert "useStartOffsetTimeIfOffsetOutOfRange is false" in res.stderr
    assert _committed(kafka09, zk_root, 0) == 40
    assert _summary_row(res.stdout, 0)["LOST"] == "0"


def test_stored_offset_beyond_the_log_end_moves_there_and_counts_the_unread(
        tmp_path, kafka09, kafka09_topic, zk_root):
    """The case of the issue: a document at 9999 on a log of [0, 100) (a re-created
    topic). Storm 1.x loops until the log passes 9999; we move to the log end
    without a livelock and count the 100 messages never read."""
    topic = kafka09_topic(2, [(i % 2, None, f"m{i}".encode()) for i in range(200)])
    _store(kafka09, zk_root, topic, 0, 9999)
    config = _config(tmp_path, kafka09, topic, zk_root)
    explained = {e["partition"]: e for e in json.loads(
        _cli("offsets", "explain", "--json", str(config), record=tmp_path / "x").stdout)}
    assert explained[0]["outside_log"] == {
        "where": "beyond_end", "skipped": 100, "moves_to": 100,
        "note": explained[0]["outside_log"]["note"]}
    assert "offsets reset --to-earliest" in explained[0]["reason"]
    assert explained[1]["outside_log"] is None

    record = tmp_path / "records.jsonl"
    started = time.monotonic()
    res = _cli("run", str(config), "--until-caught-up", record=record)
    assert res.returncode == 0, res.stderr[-3000:]
    elapsed = time.monotonic() - started
    seen: Dict[int, List[int]] = {}
    for r in read_records(str(record)):
        seen.setdefault(r["partition"], []).append(r["offset"])
    assert 0 not in seen                                    # partition 0 moved to 100
    assert sorted(seen[1]) == list(range(100))              # partition 1 unaffected
    assert _summary_row(res.stdout, 0)["LOST"] == "100"
    assert "never read" in res.stderr
    assert _committed(kafka09, zk_root, 0) == 100
    # new messages after the move are read by the next run
    produce(kafka09.bootstrap, topic, [(0, None, b"after") for _ in range(5)])
    res = _cli("run", str(config), "--until-caught-up", record=record)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _committed(kafka09, zk_root, 0) == 105
    assert elapsed < 300


def test_retention_overtaking_a_running_job_is_counted_not_looped(
        tmp_path, kafka09, kafka09_topic, zk_root):
    """A slow job (5 ms per tuple, 20 messages per partition per batch) while a
    producer writes faster than it reads and retention keeps only a few segments:
    out-of-range is met mid-run, each time the job moves to the new log start and
    counts the gap as lost, and the run ends caught up. Every offset from the start
    to the log end is either read once or counted lost."""
    import threading
    topic = kafka09_topic(1, config={"segment.bytes": 2048, "retention.bytes": 6144})
    config = _config(tmp_path, kafka09, topic, zk_root, startOffsetTime=-2)
    text = yaml.safe_load(config.read_text())
    text["bolt"] = "tests.bolts:record_slowly"
    config.write_text(yaml.safe_dump(text))
    total = 4000

    def producer() -> None:
        for batch in range(40):
            produce(kafka09.bootstrap, topic,
                    [(0, None, f"m{batch}-{i}".encode()) for i in range(total // 40)],
                    batch_size=1024)
            time.sleep(0.25)

    writer = threading.Thread(target=producer)
    writer.start()
    record = tmp_path / "records.jsonl"
    try:
        # wait for the first messages so the run does not end before the producer began
        deadline = time.monotonic() + 60
        while log_range(kafka09.bootstrap, topic, 0)[1] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        res = _cli("run", str(config), "--until-caught-up", "--max-messages", "20",
                   record=record)
    finally:
        writer.join()
    assert res.returncode == 0, res.stderr[-3000:]
    offsets = [r["offset"] for r in read_records(str(record))]
    row = _summary_row(res.stdout, 0)
    lost, resumed = int(row["LOST"]), int(row["RESUMED-FROM"])
    end = _committed(kafka09, zk_root, 0)
    assert len(offsets) == len(set(offsets))                 # read at most once
    assert lost > 0, "retention never overtook the job: the test did not exercise it"
    assert len(offsets) + lost == end - resumed              # nothing unaccounted for
    assert "messages lost" in res.stderr
    # the run ended caught up: at the log end of the moment, or the producer was
    # still writing when the last fetch came back empty
    assert end <= total
