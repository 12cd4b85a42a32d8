"""The demo: a Storm topology's place in Kafka, picked up by the PySpark pipeline.

Everything runs on loopback: a real ZooKeeper from pyspark's jars and the tansu
Kafka-protocol broker. The demo writes Kafka's broker registry into ZooKeeper
(as a ZooKeeper-mode Kafka would), produces a topic, and writes the offset
documents a storm-kafka 1.2 topology would have left halfway through, byte for
byte; one partition has no document, as a partition Storm never committed.
Then the pipeline runs with ZkHosts until it has caught up, and the demo checks
that every partition resumed where Storm stopped and committed the log end.

With ``keep_dir`` the servers stay up after the demo, the job's CONFIG is written
there (``job.yaml``) and :func:`next_steps` lists the commands to run against
them (``demo --keep``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

import yaml

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.offsets.document import encode_document, parse_document
from storm_kafka_compat.offsets.paths import partition_path

log = logging.getLogger(__name__)

TOPIC = "clicks"
ZK_ROOT = "/kafka-offsets"
SPOUT_ID = "clicks-spout"
STORM_TOPOLOGY_ID = "clicks-12-1514764800"


def page_view_bolt(t: Any) -> None:
    """The demo's bolt: parses ``user=<u> page=<p>`` and acks; a malformed
    message raises, which fails the tuple (none is produced malformed)."""
    fields = dict(part.split("=", 1) for part in t["str"].split())
    if "user" not in fields or "page" not in fields:
        raise ValueError(f"not a page view: {t['str']!r}")


def demo_config(zk_connect: str, zk_port: int) -> Dict[str, Any]:
    """The demo job's CONFIG mapping (ZkHosts on the embedded ZooKeeper)."""
    return {
        "spout": {"topic": TOPIC, "zkRoot": ZK_ROOT, "id": SPOUT_ID,
                  "scheme": "string", "stateUpdateIntervalMs": 500},
        "hosts": {"zk": zk_connect, "refreshFreqSecs": 60},
        "topology": {"topology.name": "clicks",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": zk_port},
        "spark": {"master": "local[2]", "appName": "storm-kafka-compat-demo"},
        "bolt": "storm_kafka_compat.tools.demo:page_view_bolt",
    }


def next_steps(kept: Mapping[str, Any]) -> List[str]:
    """What to run against the servers ``demo --keep`` left up."""
    config = kept["config"]
    zk = kept["zookeeper"]
    return [
        f"storm-kafka-compat offsets show {config}",
        f"storm-kafka-compat offsets show --zk {zk} --zk-root {ZK_ROOT} --id {SPOUT_ID} "
        f"--topic {TOPIC}",
        f"storm-kafka-compat offsets explain {config}",
        f"storm-kafka-compat offsets reset {config} --to-earliest --partitions 0",
        f"storm-kafka-compat run {config} --until-caught-up",
        f"kill {kept['zookeeper_pid']} {kept['broker_pid']}   # stop the servers",
    ]


def run_demo(*, messages: int = 2_000, partitions: int = 4,
             log: Callable[[str], None] = lambda s: None,
             keep_dir: Optional[os.PathLike] = None) -> Dict[str, Any]:
    """Run the demo end to end; return the per-partition result and a verdict
    (and, with ``keep_dir``, ``kept``: the servers left running and the CONFIG)."""
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    from storm_kafka_compat.servers.tansu import EmbeddedTansu, create_topic, produce_exact
    from storm_kafka_compat.servers.registry import write_broker_registry
    from storm_kafka_compat.servers.zookeeper import EmbeddedZooKeeper
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions

    kept: Optional[Dict[str, Any]] = None
    with contextlib.ExitStack() as stack:
        if keep_dir is not None:
            base = Path(keep_dir).resolve()
            if base.exists() and any(base.iterdir()):
                from storm_kafka_compat.errors import ConfigError
                raise ConfigError(
                    f"--keep {keep_dir}: the directory is not empty (a kept demo? its job.yaml "
                    f"names the servers); stop those servers and remove it, or give another "
                    f"directory", key="--keep", value=str(keep_dir))
            base.mkdir(parents=True, exist_ok=True)
            zk = EmbeddedZooKeeper(base_dir=base / "zookeeper")
            broker = EmbeddedTansu(log_path=base / "tansu.log")
        else:
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="skc-demo-")))
            zk = EmbeddedZooKeeper(base_dir=base)
            broker = EmbeddedTansu()
        zk.start()
        stack.callback(zk.cleanup)          # dropped below when the servers are kept
        broker.start()
        stack.callback(broker.stop)
        log(f"ZooKeeper {zk.connect_string} (pid {zk.pid}), tansu broker {broker.bootstrap} "
            f"(pid {broker.pid})")
        create_topic(broker.bootstrap, TOPIC, partitions)
        produce_exact(broker.bootstrap, TOPIC,
                      [(i % partitions, f"user{i % 97}".encode(),
                        f"user=user{i % 97} page=/p/{i % 13}".encode()) for i in range(messages)])
        log_end = {p: len(range(p, messages, partitions)) for p in range(partitions)}

        client = KazooClient(hosts=zk.connect_string, connection_retry=KazooRetry(
            max_tries=-1, max_delay=1), command_retry=KazooRetry(max_tries=5))
        client.start(timeout=15)
        try:
            write_broker_registry(client, brokers={1: (broker.host, broker.port)},
                                  topics={TOPIC: {p: 1 for p in range(partitions)}})
            # where a storm-kafka topology stopped: partitions 0..n-2 halfway, the last untouched
            storm_offsets: Dict[int, Any] = {}
            for p in range(partitions - 1):
                offset = log_end[p] // 2 + p
                storm_offsets[p] = offset
                client.create(partition_path(ZK_ROOT, SPOUT_ID, p), encode_document(
                    topology_id=STORM_TOPOLOGY_ID, topology_name="clicks", offset=offset,
                    partition=p, broker_host=broker.host, broker_port=broker.port, topic=TOPIC),
                    makepath=True)
            storm_offsets[partitions - 1] = None
            log(f"seeded {messages} messages in {partitions} partitions and the Storm documents "
                f"under {ZK_ROOT}/{SPOUT_ID}")

            config = demo_config(zk.connect_string, zk.port)
            job = job_config_from_dict(config)
            started = time.monotonic()
            log("starting Spark and the pipeline (the first Spark start takes a few seconds)")
            summary = Pipeline(job, progress=log).run(RunOptions(until_caught_up=True))
            log(f"pipeline {summary.stopped_by} after {time.monotonic() - started:.1f} s: "
                f"{summary.messages} messages, {summary.batches} batches")

            rows: List[Dict[str, Any]] = []
            ok = True
            by_partition = {p.partition: p for p in summary.partitions}
            for p in range(partitions):
                data, _ = client.get(partition_path(ZK_ROOT, SPOUT_ID, p))
                committed = parse_document(data).offset
                s = by_partition[p]
                expected_start = storm_offsets[p] if storm_offsets[p] is not None else 0
                good = (s.resumed_from == expected_start and committed == log_end[p]
                        and s.processed == log_end[p] - expected_start)
                ok = ok and good
                rows.append({"PARTITION": p, "STORM-OFFSET": storm_offsets[p],
                             "DECISION": s.decision, "RESUMED-FROM": s.resumed_from,
                             "PROCESSED": s.processed, "LOG-END": log_end[p],
                             "COMMITTED": committed, "OK": "yes" if good else "NO"})
            sample = client.get(partition_path(ZK_ROOT, SPOUT_ID, 0))[0].decode()
        finally:
            client.stop()
            client.close()
        if keep_dir is not None:
            config_path = base / "job.yaml"
            config_path.write_text(yaml.safe_dump(config, sort_keys=False))
            zk.detach()
            broker.detach()
            stack.pop_all()                 # the servers outlive this process
            kept = {"config": str(config_path), "zookeeper": zk.connect_string,
                    "zookeeper_pid": zk.pid, "broker": broker.bootstrap,
                    "broker_pid": broker.pid, "dir": str(base)}
    verdict = ("every partition resumed where Storm stopped and committed the log end; "
               f"document now: {sample}") if ok else "MISMATCH: see the rows marked NO"
    result = {"ok": ok, "partitions": rows, "verdict": verdict, "summary": summary.as_dict()}
    if kept is not None:
        result["kept"] = kept
    return result
