"""``storm-kafka-compat run CONFIG`` as a subprocess: SIGTERM mid-stream makes a
final commit and exits 0; nothing the bolt acknowledged is lost."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from storm_kafka_compat.offsets.document import parse_document
from tests.bolts import read_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("storm-kafka-compat")


def test_sigterm_mid_stream_commits_and_exits_0(tmp_path, zk_server, zk_client, zk_root, tansu,
                                                kafka_topic):
    n, partitions = 4000, 4
    topic = kafka_topic(partitions=partitions,
                        messages=[(i % partitions, None, f"m{i}".encode()) for i in range(n)])
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": f"{zk_root}/offsets", "id": "cli-spout",
                  "scheme": "string", "stateUpdateIntervalMs": 600_000,
                  "metricsTimeBucketSizeInSecs": 1},
        "hosts": {"bootstrap": tansu.bootstrap},
        "topology": {"topology.name": "cli", "topology.id": "cli-1",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": zk_server.port},
        "spark": {"master": "local[2]"},
        "bolt": "tests.bolts:record",
    }))
    record = tmp_path / "records.jsonl"
    metrics = tmp_path / "metrics.jsonl"
    env = dict(os.environ, STORM_KAFKA_COMPAT_TEST_RECORD=str(record),
               PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                        os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([str(CLI), "run", str(config), "--max-messages", "50",
                             "--metrics-file", str(metrics)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while len(read_records(str(record))) < 200:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the pipeline processed nothing in 240 s"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-3000:]
    assert "SIGTERM" in err and "stopped: SIGTERM" in err
    seen = {}
    for r in read_records(str(record)):
        seen.setdefault(r["partition"], set()).add(r["offset"])
    processed = sum(len(v) for v in seen.values())
    assert processed < n, "SIGTERM came too late to be mid-stream"
    for p in range(partitions):
        data, _ = zk_client.get_async(f"{zk_root}/offsets/cli-spout/partition_{p}").get(timeout=10)
        committed = parse_document(data).offset
        offsets = seen.get(p, set())
        # the final commit: the periodic interval (600 s) never came again after the first
        # check, so a committed offset at the end of what the bolt saw is the shutdown commit
        assert committed == (max(offsets) + 1 if offsets else 0), (p, committed)
        # nothing acknowledged lost, nothing unacknowledged committed
        assert offsets >= set(range(committed))
    rows = [line.split() for line in out.splitlines()[1:] if line.strip()]
    assert len(rows) == partitions and all(r[0] == topic for r in rows)
    names = {json.loads(line)["name"] for line in metrics.read_text().splitlines() if line}
    assert {"kafkaOffset", "kafkaPartition"} <= names


def test_a_bolt_error_is_shown_on_the_console_in_the_metrics_and_the_summary(
        tmp_path, zk_server, zk_root, tansu, kafka_topic):
    """A bolt raising KeyError on every other message, behind a fields grouping (its task
    in a bolt host) and retryLimit 1: the first error is on stderr at the default level
    with its traceback and the message it failed on, later ones are counted; the metrics
    carry boltErrors and the summary names the bolt (stuck partitions: test_bolt_errors)."""
    n, partitions = 40, 2
    topic = kafka_topic(partitions=partitions,
                        messages=[(i % partitions, None, f"m{i}".encode()) for i in range(n)])
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": f"{zk_root}/offsets", "id": "err-spout",
                  "scheme": "string", "stateUpdateIntervalMs": 200, "retryLimit": 1,
                  "retryInitialDelayMs": 0, "metricsTimeBucketSizeInSecs": 1},
        "hosts": {"bootstrap": tansu.bootstrap},
        "topology": {"topology.name": "err", "topology.id": "err-1",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": zk_server.port,
                     "topology.state.dir": str(tmp_path / "state"),
                     "bolts": [{"name": "parse", "bolt": "tests.bolts:KeyErrorOnOdd",
                                "kind": "basic", "parallelism": 2,
                                "inputs": [{"from": "spout", "grouping": "fields",
                                            "fields": ["str"]}]}]},
        "spark": {"master": "local[2]"},
    }))
    metrics = tmp_path / "metrics.jsonl"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                        os.environ.get("PYTHONPATH")])))
    done = subprocess.run([str(CLI), "run", str(config), "--until-caught-up",
                           "--metrics-file", str(metrics)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    err = done.stderr
    first = [line for line in err.splitlines() if "bolt 'parse' raised KeyError on" in line]
    assert len(first) == 1, err[-3000:]                  # said once, then counted
    assert f"{topic}/" in first[0] and "no_such_field" in first[0]
    assert "Traceback (most recent call last)" in err and 't["no_such_field"]' in err
    # 20 odd offsets, each executed twice (retryLimit 1) before being given up
    assert "warning: bolt 'parse' raised KeyError 40 times" in err, err[-3000:]
    records = [json.loads(line) for line in metrics.read_text().splitlines() if line]
    counts = [r["value"]["boltErrors"] for r in records if r["name"] == "stormKafkaCompat"]
    assert counts and counts[-1] == 40
    assert [r["value"]["boltErrorsByBolt"] for r in records
            if r["name"] == "stormKafkaCompat"][-1] == {"parse": 40}
