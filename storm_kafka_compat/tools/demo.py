"""The demo: a Storm topology's place in Kafka, picked up by the PySpark pipeline.

Everything runs on loopback: a real ZooKeeper from pyspark's jars and the tansu
Kafka-protocol broker. The demo writes Kafka's broker registry into ZooKeeper
(as a ZooKeeper-mode Kafka would), produces a topic, and writes the offset
documents a storm-kafka 1.2 topology would have left halfway through, byte for
byte; one partition has no document, as a partition Storm never committed.
Then the pipeline runs with ZkHosts until it has caught up, and the demo checks
that every partition resumed where Storm stopped and committed the log end.
"""

from __future__ import annotations

import logging
import tempfile
import time
from typing import Any, Callable, Dict, List

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


def run_demo(*, messages: int = 2_000, partitions: int = 4,
             log: Callable[[str], None] = lambda s: None) -> Dict[str, Any]:
    """Run the demo end to end; return the per-partition result and a verdict."""
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    from storm_kafka_compat.servers.tansu import EmbeddedTansu, create_topic, produce_exact
    from storm_kafka_compat.servers.registry import write_broker_registry
    from storm_kafka_compat.servers.zookeeper import EmbeddedZooKeeper
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions

    with tempfile.TemporaryDirectory(prefix="skc-demo-") as tmp, \
            EmbeddedZooKeeper(base_dir=tmp) as zk, EmbeddedTansu() as broker:
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

            job = job_config_from_dict({
                "spout": {"topic": TOPIC, "zkRoot": ZK_ROOT, "id": SPOUT_ID,
                          "scheme": "string", "stateUpdateIntervalMs": 500},
                "hosts": {"zk": zk.connect_string, "refreshFreqSecs": 60},
                "topology": {"topology.name": "clicks",
                             "storm.zookeeper.servers": ["127.0.0.1"],
                             "storm.zookeeper.port": zk.port},
                "spark": {"master": "local[2]", "appName": "storm-kafka-compat-demo"},
                "bolt": "storm_kafka_compat.tools.demo:page_view_bolt",
            })
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
    verdict = ("every partition resumed where Storm stopped and committed the log end; "
               f"document now: {sample}") if ok else "MISMATCH: see the rows marked NO"
    return {"ok": ok, "partitions": rows, "verdict": verdict, "summary": summary.as_dict()}
