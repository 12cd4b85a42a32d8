"""TLS and SASL/SCRAM listeners on Apache Kafka 3.9 and 4.x: the CONFIG's security
settings reach the driver's client and the executors' (Spark tasks, either backend),
the password is never printed (``config check``, ``run -vv``, the status endpoint,
errors), and a wrong password ends the run at once with an error that says so.

SCRAM users are registered before the brokers start: in ZooKeeper for 3.9
(``kafka.admin.ConfigCommand``), at storage format time for 4.x
(``kafka.tools.StorageTool format --add-scram``).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml

from storm_kafka_compat.workshop.servers.zookeeper import free_port
from tests.bolts import read_records
from tests.integration.kafka09_jobs import CLI, REPO, cli
from tests.integration.modern_jobs import zk_offset

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PASSWORD = "pw-Zq81-never-printed"
USER = "storm-reader"


@pytest.fixture(scope="module", params=["3.9", "4"])
def secure_kafka(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A one-broker cluster with a TLS listener (``SSL``) and a SASL/SCRAM-SHA-256
    listener (``SASL``) besides PLAINTEXT, and the user ``storm-reader``."""
    from storm_kafka_compat.workshop.servers.kafka import KafkaCluster
    from storm_kafka_compat.workshop.servers.kafka_versions import KAFKA_4, KAFKA_39
    from storm_kafka_compat.workshop.servers.tls import listener_settings, make_tls_files
    from tests.integration.conftest import _distribution_or_skip
    distribution = KAFKA_39 if request.param == "3.9" else KAFKA_4
    _distribution_or_skip(distribution)
    base = tmp_path_factory.mktemp(f"secure-kafka-{request.param}")
    tls = make_tls_files(base / "tls")
    cluster = KafkaCluster(1, base / "cluster", distribution=distribution,
                           listeners={"SSL": "SSL", "SASL": "SASL_PLAINTEXT"},
                           settings=listener_settings(tls), scram_users={USER: PASSWORD})
    cluster.start()
    cluster.tls = tls
    yield cluster
    cluster.close()


def _security(cluster: Any, listener: str, password: str = PASSWORD) -> Dict[str, Any]:
    if listener == "SSL":
        return {"security_protocol": "SSL", "ssl_cafile": str(cluster.tls.ca_pem)}
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_plain_username": USER, "sasl_plain_password": password}


def _config(path: Path, cluster: Any, topic: str, zk_port: int, zk_root: str, listener: str,
            backend: str, password: str = PASSWORD) -> Path:
    path.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": zk_root, "id": "secure", "scheme": "string",
                  "socketTimeoutMs": 5000},
        "hosts": {"bootstrap": cluster.addresses(listener)},
        "topology": {"name": "secure", "id": "secure-1-1700000000",
                     "storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": zk_port},
        "spark": {"master": "local[2]"},
        "bolt": "tests.bolts:record_10ms",
        "kafka": {"backend": backend, **_security(cluster, listener, password)}}))
    return path


def test_a_spark_run_over_scram_reads_everything_and_never_prints_the_password(
        secure_kafka, zk_server, zk_client, zk_root, tmp_path, unique):
    """``run -vv --until-caught-up`` under Spark local over the SASL listener: the
    driver (kafka-python) and the Spark tasks (librdkafka with 3.9, kafka-python
    with 4.x) authenticate with the CONFIG's credentials; neither ``config check``,
    the -vv log, the summary nor the status endpoint prints the password."""
    backend = "confluent" if secure_kafka.distribution.zookeeper_mode else "kafka-python"
    topic = unique("topic")
    secure_kafka.create_topic(topic, 2, 1)
    secure_kafka.produce(topic, [(i % 2, None, f"s{i}".encode()) for i in range(200)])
    config = _config(tmp_path / "job.yaml", secure_kafka, topic, zk_server.port, zk_root,
                     "SASL", backend)

    shown = cli("config", "check", "--json", str(config))
    assert shown.returncode == 0, shown.stderr
    assert PASSWORD not in shown.stdout + shown.stderr
    kafka = json.loads(shown.stdout)["kafka"]
    assert (kafka["sasl_plain_username"], kafka["sasl_plain_password"]) == (USER, "***")

    record = tmp_path / "records.jsonl"
    status_port = free_port()
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               STORM_KAFKA_COMPAT_TEST_RECORD=str(record),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([str(CLI), "-vv", "run", str(config), "--until-caught-up",
                             "--status-port", str(status_port)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status = None
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{status_port}/status", timeout=2) as r:
                body = r.read().decode()
            if body.strip() not in ("", "null", "{}"):
                status = body
                break
        except OSError:
            pass
        time.sleep(0.2)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]
    assert status is not None, "the status endpoint never answered during the run"
    assert PASSWORD not in status and PASSWORD not in out and PASSWORD not in err
    assert sorted((r["partition"], r["offset"]) for r in read_records(str(record))) == [
        (p, o) for p in range(2) for o in range(100)]
    assert [zk_offset(zk_client, zk_root, p, spout_id="secure") for p in range(2)] == [100, 100]


@pytest.mark.parametrize("listener", ["SSL", "SASL"])
@pytest.mark.parametrize("backend", ["kafka-python", "confluent"])
def test_every_backend_reads_over_tls_and_scram(secure_kafka, listener, backend, zk_server,
                                                 zk_client, zk_root, unique, caplog):
    """The executors' fetch path of each backend (in this process) over each listener:
    the kafka-python spellings of the CONFIG reach librdkafka under its names."""
    from tests.integration.modern_jobs import SEEN, legacy_job, run, seen
    SEEN.clear()
    caplog.set_level(logging.DEBUG)
    topic = unique("topic")
    secure_kafka.create_topic(topic, 1, 1)
    secure_kafka.produce(topic, [(0, None, f"t{i}".encode()) for i in range(30)])
    job = legacy_job(secure_kafka, zk_server.port, topic, zk_root, backend,
                     hosts={"bootstrap": secure_kafka.addresses(listener)},
                     kafka=_security(secure_kafka, listener))
    summary = run(job)
    assert [s[2] for s in seen(topic)] == list(range(30))
    assert summary.fetch_failures == 0 and zk_offset(zk_client, zk_root, 0) == 30
    assert PASSWORD not in caplog.text


def test_a_wrong_password_fails_fast_and_says_so(secure_kafka, zk_server, zk_root, tmp_path,
                                                 unique):
    """kafka-python alone reports refused credentials as "Unable to bootstrap" (a broker
    that is down); the driver asks the broker once by hand and says which it is."""
    backend = "confluent"
    topic = unique("topic")
    secure_kafka.create_topic(topic, 1, 1)
    wrong = "wrong-" + PASSWORD[::-1]
    config = _config(tmp_path / "job.yaml", secure_kafka, topic, zk_server.port, zk_root,
                     "SASL", backend, password=wrong)
    started = time.monotonic()
    res = cli("-vv", "run", str(config), "--until-caught-up", timeout=240)
    elapsed = time.monotonic() - started
    assert res.returncode == 1, res.stderr[-3000:]
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: ") and "authentication" in last.lower(), last
    assert "sasl_plain_password" in last
    assert wrong not in res.stdout + res.stderr and PASSWORD not in res.stdout + res.stderr
    assert elapsed < 60, f"{elapsed:.0f} s to fail"
