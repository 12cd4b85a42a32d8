"""The operator's first hour through the console script: the demo left running
(`demo --keep`) and inspected with the commands it prints, a running job's status
and metrics, a dead ZooKeeper, and what the console shows."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("storm-kafka-compat")
ENV = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
#: start-up lines of Spark's JVM the console drops
SPARK_NOISE = ("Using incubator modules", "log4j profile", "setLogLevel", "NativeCodeLoader")


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI), *args], cwd=REPO, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


def _table(text: str) -> List[Dict[str, str]]:
    lines = [line.split() for line in text.splitlines() if line.strip()]
    return [dict(zip(lines[0], row)) for row in lines[1:]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """`demo --keep DIR`: its output, then the servers it left up (killed by PID)."""
    keep = tmp_path_factory.mktemp("demo") / "kept"
    proc = _cli("demo", "--messages", "400", "--partitions", "3", "--keep", str(keep))
    assert proc.returncode == 0, proc.stderr[-3000:]
    config = keep / "job.yaml"
    stop = next(line for line in proc.stderr.splitlines() if "# stop the servers" in line)
    pids = [int(p) for p in stop.split("kill ", 1)[1].split("#")[0].split()]
    try:
        yield proc, config, pids
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def test_demo_keep_prints_decisions_quietly_and_the_next_commands(kept) -> None:
    proc, config, pids = kept
    err = proc.stderr
    for noise in SPARK_NOISE:
        assert noise not in err, err
    assert "Connection dropped" not in err
    # one decision line per partition, at the default verbosity
    decisions = [line for line in err.splitlines() if "/kafka-offsets/clicks-spout/partition_" in
                 line and line.startswith("clicks/")]
    assert len(decisions) == 3 and "no document" in decisions[2]
    assert config.exists() and f"storm-kafka-compat offsets show {config}" in err
    assert all(os.path.exists(f"/proc/{pid}") for pid in pids)


def test_the_kept_servers_answer_show_by_config_and_by_flags(kept) -> None:
    proc, config, _ = kept
    line = next(ln.strip() for ln in proc.stderr.splitlines() if "show --zk" in ln)
    by_flags = _cli(*line.split()[1:], timeout=120)
    by_config = _cli("offsets", "show", str(config), timeout=120)
    for res in (by_flags, by_config):
        assert res.returncode == 0, res.stderr
        rows = _table(res.stdout)
        total = rows.pop()
        assert [r["PARTITION"] for r in rows] == ["0", "1", "2"]
        assert all(r["CURRENT-OFFSET"] == r["LOG-END-OFFSET"] for r in rows)
        assert (total["TOPIC"], total["PARTITION"], total["LAG"]) == ("TOTAL", "all", "0")
    assert by_flags.stdout == by_config.stdout


def test_a_running_job_serves_its_status_and_writes_metrics_at_shutdown(kept, tmp_path) -> None:
    _, config, _ = kept
    port = _free_port()
    metrics = tmp_path / "metrics.jsonl"
    job = subprocess.Popen([str(CLI), "run", str(config), "--status-port", str(port),
                            "--metrics-file", str(metrics)], cwd=REPO, env=ENV,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        snapshot = None
        while time.monotonic() < deadline:
            res = _cli("status", str(port), "--json", timeout=30)
            if res.returncode == 0 and "partitions" in json.loads(res.stdout):
                snapshot = json.loads(res.stdout)
                break
            time.sleep(1)
        assert snapshot is not None, "no status within 120 s"
        assert [p["partition"] for p in snapshot["partitions"]] == [0, 1, 2]
        assert snapshot["lag"] == 0 and snapshot["pending"] == 0
        shown = _cli("status", str(port), timeout=30)
        assert shown.returncode == 0 and _table(shown.stdout)[-1]["TOPIC"] == "TOTAL"
    finally:
        job.send_signal(signal.SIGTERM)
        out, err = job.communicate(timeout=120)
    assert job.returncode == 0, err[-3000:]
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    # metricsTimeBucketSizeInSecs is 60: a shorter run's records are the shutdown's
    assert {r["name"] for r in records} >= {"kafkaOffset", "kafkaPartition", "stormKafkaCompat"}
    assert not any(line.startswith("{") for line in err.splitlines())   # no JSON on stderr


def test_a_dead_zookeeper_fails_in_one_connection_timeout_with_one_line(tmp_path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(
        "spout: {topic: clicks, zkRoot: /kafka-offsets, id: clicks-spout}\n"
        "hosts: {static: {0: '127.0.0.1:9'}}\n"
        f"topology: {{topology.name: clicks, storm.zookeeper.servers: [127.0.0.1], "
        f"storm.zookeeper.port: {_free_port()}, storm.zookeeper.connection.timeout: 3000}}\n"
        "bolt: 'storm_kafka_compat.workshop.bench.pipeline:noop_bolt'\n")
    started = time.monotonic()
    res = _cli("run", str(config), timeout=120)
    elapsed = time.monotonic() - started
    assert res.returncode == 1
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("Error: ZooKeeper at 127.0.0.1:") and "cannot be reached" in lines[0]
    assert "storm.zookeeper.connection.timeout (3000 ms)" in lines[0]
    # one connection timeout, not (retry.times + 1) x (timeout + interval) = 6 x 4 s
    assert elapsed < 3 + 15, elapsed
