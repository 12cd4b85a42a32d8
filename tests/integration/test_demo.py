"""``storm-kafka-compat demo`` end to end through the console script (README's first command)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("storm-kafka-compat")


def test_demo_runs_end_to_end():
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run([str(CLI), "demo", "--messages", "400", "--partitions", "3"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    assert lines[0] == ["PARTITION", "STORM-OFFSET", "DECISION", "RESUMED-FROM", "PROCESSED",
                        "LOG-END", "COMMITTED", "OK"]
    rows = {int(r[0]): r for r in lines[1:]}
    assert sorted(rows) == [0, 1, 2]
    log_end = {p: len(range(p, 400, 3)) for p in range(3)}
    for p, r in rows.items():
        storm, decision, resumed, processed, end, committed, ok = r[1:]
        assert ok == "yes" and int(end) == log_end[p] and int(committed) == log_end[p]
        if p < 2:   # Storm left these halfway
            assert decision == "resume" and int(resumed) == int(storm)
        else:       # never committed by Storm
            assert decision == "no_state" and int(resumed) == 0
        assert int(processed) == log_end[p] - int(resumed)
    assert "every partition resumed where Storm stopped" in proc.stderr


def test_a_kept_demo_takes_the_users_own_topic(tmp_path, zk_server_factory, tansu, unique,
                                               capsys):
    """Issue 34 item 11: on the servers `demo --keep` leaves, ZkHosts saw only `clicks` (the
    broker writes no registry; the demo wrote one for its topic). `demo --keep DIR
    --add-topic NAME` creates the topic, registers it and writes its CONFIG; a topic made
    with another client is registered as it is. The user then reads it with ZkHosts."""
    import json

    import yaml

    from storm_kafka_compat.cli.main import main
    from storm_kafka_compat.workshop.servers.tansu import create_topic
    from storm_kafka_compat.workshop.demo import KEPT_FILE, demo_config
    zk = zk_server_factory()                       # the kept demo's own ZooKeeper
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(demo_config(zk.connect_string, zk.port)))
    (tmp_path / KEPT_FILE).write_text(json.dumps({
        "config": str(tmp_path / "job.yaml"), "zookeeper": zk.connect_string,
        "broker": tansu.bootstrap, "dir": str(tmp_path)}))
    topic = unique("own")
    assert main(["demo", "--keep", str(tmp_path), "--add-topic", topic, "--partitions", "3",
                 "--messages", "30"]) == 0
    config = tmp_path / f"{topic}.yaml"
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"topic {topic!r} created on {tansu.bootstrap} with 3 partitions and 30 "
                      f"messages; registered at /brokers/topics/{topic} in the demo's "
                      f"ZooKeeper, so ZkHosts sees it; CONFIG {config}. Try:")
    assert err[2].endswith(f"run {config} --until-caught-up")
    assert main(["offsets", "show", str(config), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)[topic]
    assert {p: v["logHeadOffset"] for p, v in shown.items()} == {"0": 10, "1": 10, "2": 10}

    # a topic the user made with another client: ZkHosts does not see it until registered
    theirs = unique("theirs")
    create_topic(tansu.bootstrap, theirs, 2)
    mine = yaml.safe_load(config.read_text())
    mine["spout"]["topic"] = theirs
    (tmp_path / "theirs.yaml").write_text(yaml.safe_dump(mine))
    assert main(["offsets", "explain", str(tmp_path / "theirs.yaml")]) == 1
    assert f"topic {theirs!r} is unknown to Kafka" in capsys.readouterr().err
    assert main(["demo", "--keep", str(tmp_path), "--add-topic", theirs]) == 0
    assert f"topic {theirs!r} found on {tansu.bootstrap} with 2 partitions (nothing " \
           f"produced)" in capsys.readouterr().err
    assert main(["offsets", "explain", str(tmp_path / f"{theirs}.yaml"), "--json"]) == 0
    assert [(r["partition"], r["decision"]) for r in json.loads(capsys.readouterr().out)] == \
        [(0, "no_state"), (1, "no_state")]
