"""``offsets show|explain|reset`` on a Kafka-store CONFIG (``kafkaSpout.offsetStore:
kafka``) through the installed console script, against the tansu broker.

The group's commits are made with :class:`KafkaGroupOffsets` (OffsetCommit without
joining). tansu 0.6 drops the commit metadata string (it reads back empty), so on
it every commit is "another writer's": ``TOPOLOGY-ID`` is ``-`` and
EARLIEST/LATEST override the commit. The metadata rules themselves are covered
by tests/unit/test_tools_kafka_store.py with the in-memory group, and on Apache
Kafka 0.9.0.1, which keeps the metadata, by test_kafka09_groups.py (``TOPOLOGY-ID``
shown, each first-poll strategy decided by this or another topology's commit).
The expectations below that say "tansu drops the metadata" are tansu workarounds,
as is ``kafka_topic`` writing one record per batch (tansu's high watermark).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

from storm_kafka_compat.spout.client.first_poll import CommitMetadata
from storm_kafka_compat.kafka.groups import KafkaGroupOffsets

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "storm-kafka-compat"
if not SCRIPT.exists():  # pragma: no cover - the venv the project documents
    SCRIPT = Path("/work/main/.venv/bin/storm-kafka-compat")
TOPOLOGY_ID = "orders-4-1700000000"
#: messages per partition: 12, 9, 5
COUNTS = {0: 12, 1: 9, 2: 5}


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(ROOT))


def parse_table(text: str) -> List[Dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    return [dict(zip(header, line.split(None, len(header) - 1))) for line in lines[1:]]


def write_config(path: Path, bootstrap: str, topic: str, group: str, **client) -> Path:
    path.write_text(yaml.safe_dump({
        "kafkaSpout": {"groupId": group, "bootstrapServers": bootstrap, "topics": [topic],
                       **client},
        "topology": {"name": "orders", "id": TOPOLOGY_ID},
        "bolt": "tests.bolts:record"}))
    return path


@pytest.fixture
def committed_group(tansu, kafka_topic, unique):
    """``(topic, group)``: partition 0 committed at 4 by this topology, 1 at its
    log end by a migration tool (empty metadata), 2 never."""
    topic = kafka_topic(partitions=3, messages=[(p, None, f"m{p}-{i}".encode())
                                                for p, n in COUNTS.items() for i in range(n)])
    group = unique("group")
    with KafkaGroupOffsets(tansu.bootstrap, group) as g:
        g.write_many({(topic, 0): (4, CommitMetadata(TOPOLOGY_ID, 1, "t").to_json()),
                  (topic, 1): (9, "")})
    return topic, group


def test_show_reports_the_group_offsets_and_monitor_json(tmp_path, tansu, committed_group):
    topic, group = committed_group
    config = write_config(tmp_path / "client.yaml", tansu.bootstrap, topic, group)

    done = cli("offsets", "show", str(config))
    assert done.returncode == 0, done.stderr
    rows = parse_table(done.stdout)
    total = rows.pop()                           # the TOTAL row: lag summed
    assert total["TOPIC"] == "TOTAL" and total["PARTITION"] == "all"
    assert int(total["LAG"]) == sum(int(r["LAG"]) for r in rows if r["LAG"] != "-")
    assert list(rows[0]) == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                             "LOG-START-OFFSET", "LOG-END-OFFSET", "LAG", "TOPOLOGY-ID"]
    got = [(r["GROUP"], r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"],
            r["LOG-START-OFFSET"], r["LOG-END-OFFSET"], r["LAG"], r["TOPOLOGY-ID"])
           for r in rows]
    # TOPOLOGY-ID is '-': tansu 0.6 drops the commit metadata (module docstring)
    assert got == [(group, topic, "0", "4", "0", "12", "8", "-"),
                   (group, topic, "1", "9", "0", "9", "0", "-"),
                   (group, topic, "2", "-", "0", "5", "-", "-")]

    done = cli("offsets", "show", str(config), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {topic: {
        "0": {"consumerCommittedOffset": 4, "logHeadOffset": 12, "lag": 8},
        "1": {"consumerCommittedOffset": 9, "logHeadOffset": 9, "lag": 0},
        "2": {"consumerCommittedOffset": -1, "logHeadOffset": 5, "lag": 6}}}


@pytest.mark.parametrize("strategy,starts,decisions", [
    # tansu drops the metadata: every commit is another writer's
    ("UNCOMMITTED_EARLIEST", [4, 9, 0], ["resume_foreign", "resume_foreign", "no_commit"]),
    ("LATEST", [12, 9, 5], ["first_poll_strategy", "first_poll_strategy", "no_commit"]),
])
def test_explain_gives_the_first_poll_decision(tmp_path, tansu, committed_group, strategy,
                                               starts, decisions):
    topic, group = committed_group
    config = write_config(tmp_path / "client.yaml", tansu.bootstrap, topic, group,
                          firstPollOffsetStrategy=strategy)
    done = cli("offsets", "explain", str(config), "--json")
    assert done.returncode == 0, done.stderr
    items = json.loads(done.stdout)
    assert [i["start_offset"] for i in items] == starts
    assert [i["decision"] for i in items] == decisions
    assert [(i["topic"], i["partition"], i["group"], i["zk_path"]) for i in items] == [
        (topic, p, group, None) for p in range(3)]
    assert [i["committed"] for i in items] == [4, 9, None]
    assert [i["metadata"] for i in items] == ["", "", None]
    assert all(i["reason"] and i["topology_id"] == TOPOLOGY_ID for i in items)

    done = cli("offsets", "explain", str(config))
    assert done.returncode == 0, done.stderr
    rows = parse_table(done.stdout)
    assert [(r["PARTITION"], r["STRATEGY"], r["DECISION"], r["START-OFFSET"]) for r in rows] == [
        (str(p), strategy, d, str(s)) for p, (d, s) in enumerate(zip(decisions, starts))]


def test_reset_is_refused_and_writes_nothing(tmp_path, tansu, committed_group):
    topic, group = committed_group
    config = write_config(tmp_path / "client.yaml", tansu.bootstrap, topic, group)
    done = cli("offsets", "reset", str(config), "--to-latest", "--execute")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("Error: ")
    assert (f"kafka-consumer-groups --bootstrap-server {tansu.bootstrap} --group {group} "
            f"--topic {topic} --reset-offsets --to-latest --execute") in done.stderr
    with KafkaGroupOffsets(tansu.bootstrap, group) as g:
        after = g.read_many([(topic, p) for p in range(3)])
    assert {k[1]: (v[0] if v else None) for k, v in after.items()} == {0: 4, 1: 9, 2: None}

