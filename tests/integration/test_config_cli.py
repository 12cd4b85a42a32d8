"""``storm-kafka-compat config check|convert`` through the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import yaml

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parent.parent / "data" / "flux"
SCRIPT = Path(sys.executable).parent / "storm-kafka-compat"
if not SCRIPT.exists():  # pragma: no cover - the venv the project documents
    SCRIPT = Path("/work/main/.venv/bin/storm-kafka-compat")

GOOD = """\
spout:
  topic: clicks
  zkRoot: /kafka-offsets
  id: clicks-spout
  forceFromStart: true
hosts:
  zk: zk1:2181,zk2:2181/kafka
topology:
  name: clicks
  storm.zookeeper.auth.payload: "alice:topsecret"
bolt: myjob.bolts:count
kafka:
  sasl_plain_password: hunter2
"""


def cli(*args: str, env: Optional[Dict[str, str]] = None,
        cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          env=full_env, cwd=cwd)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(GOOD)
    (tmp_path / "myjob").mkdir()
    (tmp_path / "myjob" / "__init__.py").write_text("")
    (tmp_path / "myjob" / "bolts.py").write_text("def count(t):\n    pass\n")
    return path


def test_check_imports_the_bolts_the_config_names(good: Path) -> None:
    res = cli("config", "check", str(good))
    assert res.returncode == 0 and "imported: myjob.bolts:count" in res.stderr, res.stderr
    (good.parent / "myjob" / "bolts.py").unlink()
    res = cli("config", "check", str(good))
    assert res.returncode == 2
    assert "bolt='myjob.bolts:count': module 'myjob.bolts' cannot be imported" in res.stderr
    res = cli("config", "check", str(good), "--no-imports")
    assert res.returncode == 0 and "imported" not in res.stderr


def test_check_prints_effective_config(good: Path) -> None:
    res = cli("config", "check", str(good))
    assert res.returncode == 0, res.stderr
    eff = yaml.safe_load(res.stdout)
    assert eff["spout"]["ignoreZkOffsets"] is True
    assert eff["spout"]["fetchMaxWait"] == 0
    assert eff["spout"]["maxOffsetBehind"] == 2**63 - 1
    assert eff["topology"]["storm.zookeeper.auth.payload"] == "***"
    assert eff["kafka"]["sasl_plain_password"] == "***"
    assert "topsecret" not in res.stdout + res.stderr
    assert "hunter2" not in res.stdout + res.stderr
    assert f"{good}: valid" in res.stderr
    assert "STORM-692" in res.stderr  # offsets in Storm's ZooKeeper: a note on stderr


def test_check_json(good: Path) -> None:
    res = cli("config", "check", str(good), "--json")
    assert res.returncode == 0, res.stderr
    eff = json.loads(res.stdout)
    assert eff["hosts"] == {"zk": "zk1:2181,zk2:2181/kafka", "brokerZkPath": "/brokers",
                            "refreshFreqSecs": 60}
    assert eff["bolt"] == "myjob.bolts:count"


@pytest.mark.parametrize("replace,fragments", [
    (("fetchSizeBytes", "fetchSizeByte"), ["spout.fetchSizeByte", "fetchSizeBytes"]),
    (("zkRoot: /kafka-offsets", "zkRoot: /kafka-offsets/"), ["spout.zkRoot", "/kafka-offsets/"]),
    (("forceFromStart: true", "forceFromStart: 1"), ["spout.forceFromStart", "true or false"]),
    (("bolt: myjob.bolts:count", "bolt: myjob.bolts.count"), ["bolt", "module:callable"]),
    (("id: clicks-spout", "id: a/b"), ["spout.id", "'a/b'"]),
])
def test_check_config_errors_exit_2(tmp_path: Path, replace: List[str],
                                    fragments: List[str]) -> None:
    text = GOOD.replace("  forceFromStart: true\n", "  forceFromStart: true\n"
                        "  fetchSizeBytes: 1024\n")
    old, new = replace
    assert old in text
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace(old, new))
    res = cli("config", "check", str(path))
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.startswith("Error: ")
    assert str(path) in res.stderr
    for frag in fragments:
        assert frag in res.stderr


def test_check_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    res = cli("config", "check", str(tmp_path / "nope.yaml"))
    assert res.returncode == 2 and "Error: cannot read config file" in res.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("spout: {topic: [x\n")
    res = cli("config", "check", str(bad))
    assert res.returncode == 2 and "not valid YAML" in res.stderr


def test_convert_flux_to_stdout(tmp_path: Path) -> None:
    res = cli("config", "convert", str(DATA / "kafka_spout_topology.yaml"),
              "--filter", str(DATA / "dev.properties"), "--env-filter",
              env={"KAFKA_CLIENT_ID": "from-env"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("# converted from kafka_spout_topology.yaml")
    conf = yaml.safe_load(res.stdout)
    assert conf["spout"]["clientId"] == "from-env"
    assert conf["spout"]["topic"] == "clicks" and conf["spout"]["scheme"] == "string"
    assert conf["hosts"]["zk"] == "zk1.example.com:2181,zk2.example.com:2181/kafka"
    assert "convert: bolts[parse] com.example.clicks.ParseClickBolt not mapped: port the bolt " \
        "to Python" in res.stderr
    assert "convert: config.topology.workers 2 not mapped" in res.stderr
    assert "does not validate" not in res.stderr
    # the output is accepted by config check; the Java bolt's placeholder is to port
    out = tmp_path / "converted.yaml"
    out.write_text(res.stdout)
    check = cli("config", "check", str(out), "--no-imports")
    assert check.returncode == 0, check.stderr
    check = cli("config", "check", str(out))
    assert check.returncode == 2 and "com.example.clicks:ParseClickBolt" in check.stderr


def test_convert_env_filter_is_opt_in() -> None:
    res = cli("config", "convert", str(DATA / "kafka_spout_topology.yaml"),
              "--filter", str(DATA / "dev.properties"), env={"KAFKA_CLIENT_ID": "from-env"})
    assert res.returncode == 0
    assert yaml.safe_load(res.stdout)["spout"]["clientId"] == "${ENV-KAFKA_CLIENT_ID}"
    assert "was not substituted" in res.stderr


def test_convert_output_file(tmp_path: Path) -> None:
    out = tmp_path / "job.yaml"
    res = cli("config", "convert", str(DATA / "static_hosts_0_10.yaml"), "--output", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    assert f"wrote {out}" in res.stderr
    conf = yaml.safe_load(out.read_text())
    assert conf["hosts"]["static"] == {0: "kafka1.example.com:9092", 1: "kafka2.example.com:9093"}
    assert conf["bolt"] == "com.example.orders:StoreBolt"


def test_convert_properties() -> None:
    res = cli("config", "convert", str(DATA / "clicks.properties"))
    assert res.returncode == 0, res.stderr
    conf = yaml.safe_load(res.stdout.split("\n", 1)[1])
    assert conf["spout"]["zkRoot"] == "/kafka-offsets"
    # Java client names become kafka-python's
    assert conf["kafka"]["security_protocol"] == "SASL_SSL"
    assert conf["kafka"]["sasl_plain_password"] == "s3cret"
    assert "convert: topology.workers not mapped" in res.stderr


def test_convert_reports_a_result_that_does_not_validate(tmp_path: Path) -> None:
    src = tmp_path / "partial.properties"
    src.write_text("kafka.topic=t\nkafka.zkRoot=/r\nkafka.id=i\nkafka.zkHosts=zk:2181\n")
    res = cli("config", "convert", str(src))
    assert res.returncode == 0
    assert "Warning: the converted CONFIG does not validate yet" in res.stderr
    assert "topology" in res.stderr


@pytest.mark.parametrize("args,code,fragment", [
    (["config", "convert", "/nonexistent/topo.yaml"], 2, "Error: cannot read file"),
    (["config", "convert", str(DATA / "dev.properties"), "--format", "flux"], 2,
     "Error: "),
    (["config", "convert"], 2, "Missing argument"),
    (["config", "check"], 2, "Missing argument"),
])
def test_convert_usage_and_config_errors(args: List[str], code: int, fragment: str) -> None:
    res = cli(*args)
    assert res.returncode == code
    assert fragment in res.stderr
