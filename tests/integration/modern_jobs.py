"""Helpers of the ``test_modern_*`` suites (Apache Kafka 3.9 and 4.x): a job CONFIG on
a modern cluster, a run of the driver loop in this process with the executors' own
fetch path (``InProcessRunner``: the chosen backend, not the driver's client), a
librdkafka producer for what kafka-python's producer is not used for here (headers,
timestamps, transactions), and Storm's documents.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple


from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.engine.report import RunSummary
from storm_kafka_compat.testing.inprocess import InProcessRunner

SPOUT_ID = "modern"
SEEN: List[Tuple[str, int, int, Tuple[Any, ...]]] = []


def record(t: Any) -> None:
    """The bolt of these runs: acks, and keeps (topic, partition, offset, values)."""
    SEEN.append((t.topic, t.partition, t.offset, tuple(t.values)))


def seen(topic: Optional[str] = None) -> List[Tuple[str, int, int, Tuple[Any, ...]]]:
    return sorted(s for s in SEEN if topic is None or s[0] == topic)


def legacy_job(cluster: Any, zk_port: int, topic: str, zk_root: str, backend: str, *,
               hosts: Optional[Dict[str, Any]] = None, spout: Optional[Dict[str, Any]] = None,
               kafka: Optional[Dict[str, Any]] = None,
               topology: Optional[Dict[str, Any]] = None) -> Any:
    """A storm-kafka job (documents in the ZooKeeper on ``zk_port``) on ``cluster``;
    partitions from the bootstrap discovery unless ``hosts`` says otherwise."""
    return job_config_from_dict({
        "spout": {"topic": topic, "zkRoot": zk_root, "id": SPOUT_ID, "scheme": "string",
                  "stateUpdateIntervalMs": 200, **(spout or {})},
        "hosts": hosts or {"bootstrap": cluster.bootstrap},
        "topology": {"name": "modern", "id": "modern-1-1700000000",
                     "storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": zk_port,
                     **(topology or {})},
        "kafka": {"backend": backend, **(kafka or {})},
        "bolt": "tests.integration.modern_jobs:record"})


def client_job(cluster: Any, topic: str, group: str, backend: str, *,
               kafka: Optional[Dict[str, Any]] = None, topology_id: str = "orders-1-1700000000",
               **client: Any) -> Any:
    """A storm-kafka-client job (offsets in the Kafka consumer group ``group``)."""
    return job_config_from_dict({
        "kafkaSpout": {"groupId": group, "bootstrapServers": cluster.bootstrap,
                       "topics": [topic], "offsetCommitPeriodMs": 200, **client},
        "topology": {"name": "orders", "id": topology_id},
        "spout": {"topic": topic, "zkRoot": "/unused", "id": group, "scheme": "string"},
        "kafka": {"backend": backend, **(kafka or {})},
        "bolt": "tests.integration.modern_jobs:record"})


def run(job: Any, *, max_batches: Optional[int] = None, store: Any = None,
        max_messages: int = 10_000, one_task: bool = False) -> RunSummary:
    """Run the driver loop until caught up (or ``max_batches``), tasks in this process
    as a Spark executor runs them: through the worker's client of the job's backend
    (``InProcessRunner`` without a Kafka of its own); ``one_task``: a batch as one
    task, its plans read by the client's fetch group."""
    parts: Dict[str, Any] = {} if store is None else {"store": store}
    options = RunOptions(until_caught_up=max_batches is None, max_batches=max_batches,
                         max_messages_per_partition=max_messages, idle_sleep_ms=50)
    return Pipeline(job, runner=InProcessRunner(one_task=one_task), sleep=lambda s: None,
                    **parts).run(options)


def by_partition(summary: RunSummary) -> Dict[int, Any]:
    return {p.partition: p for p in summary.partitions}


def producer(bootstrap: str, **settings: Any) -> Any:
    """A librdkafka producer (headers, timestamps, compression, transactions)."""
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **settings})


def produce_records(bootstrap: str, topic: str, records: Iterable[Dict[str, Any]],
                    **settings: Any) -> int:
    """Produce ``{partition, key, value, headers, timestamp}`` dicts; raise on any
    failed delivery."""
    p = producer(bootstrap, **settings)
    failures: List[Any] = []
    n = 0
    for r in records:
        p.produce(topic, on_delivery=lambda err, _m: err and failures.append(err), **r)
        n += 1
    p.flush(60)
    assert not failures, failures
    return n


def zk_offset(zk: Any, zk_root: str, partition: int, *, spout_id: str = SPOUT_ID
              ) -> Optional[int]:
    """The offset of Storm's document for ``partition`` (None: no document)."""
    from storm_kafka_compat.offsets.document import parse_document
    path = f"{zk_root}/{spout_id}/partition_{partition}"
    if not zk.exists(path):
        return None
    return parse_document(zk.get(path)[0]).offset
