"""A Storm Flux topology (KafkaSpout, SpoutConfig, ZkHosts, a scheme) converts and runs.

``config convert`` turns the Flux YAML (with a ``--filter`` properties file and
``${ENV-...}`` substitution) into CONFIG; ``run --until-caught-up`` then reads
from tansu through Kafka's registry in ZooKeeper, resumes from the document a
Storm topology left, and commits where it stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from storm_kafka_compat.offsets.document import encode_document, parse_document
from storm_kafka_compat.workshop.servers import registry

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "flux" / "kafka_spout_topology.yaml"
SCRIPT = Path(sys.executable).parent / "storm-kafka-compat"
if not SCRIPT.exists():  # pragma: no cover - the venv the project documents
    SCRIPT = Path("/work/main/.venv/bin/storm-kafka-compat")
ZK_TIMEOUT = 10


def cli(*args: str, env_extra: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=str(ROOT))


def test_flux_kafka_spout_topology_converts_and_runs(tmp_path, zk_server, zk_client, zk_root,
                                                    tansu, kafka_topic):
    from tests.conftest import make_kazoo_client
    host, port = zk_server.connect_string.rsplit(":", 1)
    topic = kafka_topic(partitions=2, messages=[(p, None, f"click-{p}-{i}".encode())
                                                for p in (0, 1) for i in range(6)])
    chroot = f"{zk_root}-kafka"
    zk_client.ensure_path_async(chroot).get(timeout=ZK_TIMEOUT)
    chrooted = make_kazoo_client(zk_server.connect_string + chroot)
    chrooted.start(timeout=15)
    try:
        registry.write_broker_registry(chrooted, brokers={1: (tansu.host, tansu.port)},
                                       topics={topic: {0: 1, 1: 1}})
    finally:
        chrooted.stop()
        chrooted.close()

    # the sample topology, pointed at the test servers; one Python bolt behind the spout
    flux = yaml.safe_load(SAMPLE.read_text())
    flux["config"]["storm.zookeeper.servers"] = [host]
    flux["config"]["storm.zookeeper.port"] = int(port)
    spout_config = next(c for c in flux["components"] if c["id"] == "spoutConfig")
    spout_config["constructorArgs"][2] = f"{zk_root}/offsets"
    for prop in spout_config["properties"]:
        if prop["name"] == "zkServers":
            prop["value"] = [host]
        if prop["name"] == "zkPort":
            prop["value"] = int(port)
    flux["bolts"] = [{"id": "record", "className": "tests.bolts.record", "parallelism": 1}]
    flux["streams"] = [{"name": "kafka --> record", "from": "kafka-spout", "to": "record",
                        "grouping": {"type": "SHUFFLE"}}]
    flux_path = tmp_path / "topology.yaml"
    flux_path.write_text(yaml.safe_dump(flux, sort_keys=False))
    props = tmp_path / "dev.properties"
    props.write_text(f"topology.name=clicks\nkafka.zk.connect={zk_server.connect_string}{chroot}\n"
                     f"kafka.topic={topic}\n")
    env = {"KAFKA_CLIENT_ID": "flux-test-client"}

    config_path = tmp_path / "job.yaml"
    res = cli("config", "convert", str(flux_path), "--filter", str(props), "--env-filter",
              "-o", str(config_path), env_extra=env)
    assert res.returncode == 0, res.stderr
    job = yaml.safe_load(config_path.read_text())
    assert job["spout"]["scheme"] == "string"
    assert job["spout"]["clientId"] == "flux-test-client"
    assert job["hosts"]["zk"] == f"{zk_server.connect_string}{chroot}"
    job["spark"] = {"master": "local[1]", "tasks": 2}   # 2 cores shared: keep it small
    config_path.write_text(yaml.safe_dump(job))
    res = cli("config", "check", str(config_path), env_extra=env)
    assert res.returncode == 0, res.stderr

    # a Storm topology left partition 0 at offset 2; startOffsetTime -1 sends 1 to the end
    doc_path = f"{zk_root}/offsets/clicks-spout/partition_0"
    zk_client.ensure_path_async(doc_path.rsplit("/", 1)[0]).get(timeout=ZK_TIMEOUT)
    zk_client.create_async(doc_path, encode_document(
        topology_id="clicks-4-1514764800", topology_name="clicks", offset=2, partition=0,
        broker_host="kafka-1.example.com", broker_port=9092, topic=topic)).get(timeout=ZK_TIMEOUT)
    record = tmp_path / "record.jsonl"
    res = cli("run", str(config_path), "--until-caught-up", "--json",
              env_extra={**env, "STORM_KAFKA_COMPAT_TEST_RECORD": str(record)})
    assert res.returncode == 0, res.stderr
    summary = {p["partition"]: p for p in json.loads(res.stdout)["partitions"]}
    assert (summary[0]["decision"], summary[0]["resumed_from"]) == ("resume", 2)
    assert (summary[1]["decision"], summary[1]["resumed_from"]) == ("no_state", 6)
    seen = sorted((r["partition"], r["offset"], r["value"])
                  for r in map(json.loads, record.read_text().splitlines()))
    assert seen == [(0, i, f"click-0-{i}") for i in range(2, 6)]   # StringScheme: text
    stored = parse_document(zk_client.get_async(doc_path).get(timeout=ZK_TIMEOUT)[0])
    assert stored.offset == 6 and stored.problem is None
