"""Helpers of the ``test_kafka09_*`` suites: CONFIGs for a job on a real Apache
Kafka 0.9.0.1 cluster (``KafkaCluster``), the installed console script, Storm's
documents in the cluster's own ZooKeeper, and the group's commits on the broker.

Every CONFIG pins the protocol (``kafka: {api_version: "0.9"}``): kafka-python's
version probe makes a 0.9 broker drop the connection.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import yaml

from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
from storm_kafka_compat.offsets.document import encode_document

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("storm-kafka-compat")
KAFKA_09 = {"api_version": "0.9"}
#: what kafka-python's clients take for a 0.9 broker
KAFKA_PYTHON_09 = {"api_version": (0, 9)}
ZK_TIMEOUT = 10


def cli(*args: str, record: Optional[Path] = None, timeout: float = 300
        ) -> subprocess.CompletedProcess:
    """Run ``storm-kafka-compat ARGS`` (the console script of this venv); a Spark job's
    test bolts append what they saw to ``record``."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO),
                                                        os.environ.get("PYTHONPATH")])))
    if record is not None:
        env["STORM_KAFKA_COMPAT_TEST_RECORD"] = str(record)
    return subprocess.run([str(CLI), *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def parse_table(text: str) -> List[Dict[str, str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    return [dict(zip(header, line.split(None, len(header) - 1))) for line in lines[1:]]


def zk_job(path: Path, cluster: Any, topic: str, zk_root: str, *, spout_id: str = "spout1",
           topology_id: str = "clicks-9-1700000000", name: str = "clicks",
           bolt: str = "tests.bolts:record", spout: Optional[Dict[str, Any]] = None,
           dataframe: Optional[str] = None) -> Path:
    """A storm-kafka (ZooKeeper store) CONFIG: ZkHosts on the registry the brokers
    wrote themselves, documents under ``zk_root/spout_id`` in the same ZooKeeper;
    ``dataframe`` (``module:callable``) replaces the bolt (DataFrame mode)."""
    processing = {"dataframe": dataframe} if dataframe else {"bolt": bolt}
    path.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": zk_root, "id": spout_id, "scheme": "string",
                  **(spout or {})},
        "hosts": {"zk": cluster.zk_connect},
        "topology": {"name": name, "id": topology_id,
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": cluster.zookeeper.port},
        "spark": {"master": "local[2]"},
        **processing,
        "kafka": dict(KAFKA_09)}))
    return path


def client_job(path: Path, cluster: Any, topic: str, group: str, *,
               topology_id: str = "orders-1-1700000000", bolt: str = "tests.bolts:record",
               **client: Any) -> Path:
    """A storm-kafka-client CONFIG (``kafkaSpout``, offsets in the Kafka group)."""
    path.write_text(yaml.safe_dump({
        "kafkaSpout": {"groupId": group, "bootstrapServers": cluster.bootstrap,
                       "topics": [topic], **client},
        "topology": {"name": "orders", "id": topology_id},
        "spark": {"master": "local[2]"},
        "bolt": bolt,
        "kafka": dict(KAFKA_09)}))
    return path


def storm_document(topic: str, partition: int, offset: int, *, broker: Tuple[str, int],
                   topology_id: str = "clicks-8-1690000000", name: str = "clicks") -> bytes:
    """What Storm 1.x's PartitionManager writes at ``zkRoot/id/partition_N``."""
    return encode_document(topology_id=topology_id, topology_name=name, offset=offset,
                           partition=partition, broker_host=broker[0], broker_port=broker[1],
                           topic=topic)


def put(zk: Any, path: str, data: bytes) -> None:
    zk.ensure_path_async(path.rsplit("/", 1)[0]).get(timeout=ZK_TIMEOUT)
    if zk.exists_async(path).get(timeout=ZK_TIMEOUT):
        zk.set_async(path, data).get(timeout=ZK_TIMEOUT)
    else:
        zk.create_async(path, data).get(timeout=ZK_TIMEOUT)


def get(zk: Any, path: str) -> Optional[bytes]:
    if not zk.exists_async(path).get(timeout=ZK_TIMEOUT):
        return None
    return zk.get_async(path).get(timeout=ZK_TIMEOUT)[0]


def group_commits(bootstrap: str, group: str, keys: Iterable[Tuple[str, int]],
                  client: Dict[str, Any] = KAFKA_PYTHON_09
                  ) -> Dict[int, Optional[Tuple[int, str]]]:
    """partition -> ``(offset, metadata)`` the group holds on the broker (None: none);
    ``client``: kafka-python settings (``{}`` for a 0.10+ broker)."""
    with KafkaGroupOffsets(bootstrap, group, client) as g:
        got = g.read_many(list(keys))
    return {p: v for (_, p), v in got.items()}
