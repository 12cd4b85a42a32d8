"""``storm-kafka-compat run CONFIG --until-caught-up`` with a Kafka-store CONFIG
(``kafkaSpout.offsetStore: kafka``) as a subprocess, through Spark: every message
is processed, the consumer group holds the log end of every partition (read back
with :class:`KafkaGroupOffsets`), and ``offsets show --json`` reports lag 0. No
ZooKeeper is involved. (tansu workaround: ``kafka_topic`` writes one record per
batch for tansu's high watermark; test_kafka09_groups.py runs the same command on
Apache Kafka 0.9.0.1 with a batching producer and checks the commit metadata.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
from tests.bolts import read_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("storm-kafka-compat")
if not CLI.exists():  # pragma: no cover - the venv the project documents
    CLI = Path("/work/main/.venv/bin/storm-kafka-compat")


def test_run_until_caught_up_commits_the_group(tmp_path, tansu, kafka_topic, unique):
    counts = {0: 30, 1: 17, 2: 0}
    topic = kafka_topic(partitions=3, messages=[(p, None, f"m{p}-{i}".encode())
                                                for p, n in counts.items() for i in range(n)])
    group = unique("group")
    config = tmp_path / "client.yaml"
    config.write_text(yaml.safe_dump({
        "kafkaSpout": {"groupId": group, "bootstrapServers": tansu.bootstrap,
                       "topics": [topic], "firstPollOffsetStrategy": "UNCOMMITTED_EARLIEST"},
        "topology": {"name": "orders", "id": "orders-1-1700000000"},
        "spark": {"master": "local[2]"},
        "bolt": "tests.bolts:record"}))
    record = tmp_path / "records.jsonl"
    env = dict(os.environ, STORM_KAFKA_COMPAT_TEST_RECORD=str(record),
               PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                        os.environ.get("PYTHONPATH")])))

    done = subprocess.run([str(CLI), "run", str(config), "--until-caught-up", "--max-messages",
                           "10", "--json"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["stopped_by"] and not summary["final_commit_failed"], summary

    seen = {}
    for r in read_records(str(record)):
        assert r["topic"] == topic
        seen.setdefault(r["partition"], set()).add(r["offset"])
    assert {p: seen.get(p, set()) for p in counts} == {p: set(range(n))
                                                       for p, n in counts.items()}

    with KafkaGroupOffsets(tansu.bootstrap, group) as g:
        got = g.read_many([(topic, p) for p in counts])
    # partition 2 is empty: nothing to commit, so the group has no offset for it
    assert {k[1]: (v[0] if v else None) for k, v in got.items()} == {0: 30, 1: 17, 2: None}

    shown = subprocess.run([str(CLI), "offsets", "show", str(config), "--json"], cwd=REPO,
                           env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    lags = json.loads(shown.stdout)[topic]
    assert {p: v["lag"] for p, v in lags.items()} == {"0": 0, "1": 0, "2": 1}
    assert lags["0"] == {"consumerCommittedOffset": 30, "logHeadOffset": 30, "lag": 0}
