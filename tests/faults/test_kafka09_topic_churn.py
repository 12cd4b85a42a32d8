"""Topic churn on a real Apache Kafka 0.9.0.1 broker while the job runs.

Wildcard mode (``kafka.topic.wildcard.match``): a topic created mid-run is picked up
at the next refresh and processed from its start; a topic deleted mid-run loses its
managers while the others keep going. Without wildcard, deleting the job's only
topic makes every refresh fail: the job keeps running (failures counted) and stops
cleanly on SIGTERM. Once with ZkHosts and once with bootstrap hosts.
"""

from __future__ import annotations

import signal
import time

import pytest

from storm_kafka_compat.offsets.paths import partition_path
from tests.faults.harness import (
    JOB_START_TIMEOUT_S,
    delivered_offsets, find_metric, job_config, missing_offsets, read_deliveries,
    read_documents, wait_until, write_config)

pytestmark = [pytest.mark.fault, pytest.mark.integration]

REFRESH_S = 2


def _hosts(cluster, coordinator: str) -> dict:
    if coordinator == "zk":
        return {"zk": cluster.zk_connect, "refreshFreqSecs": REFRESH_S}
    return {"bootstrap": cluster.bootstrap, "refreshFreqSecs": REFRESH_S}


def _produce(cluster, topic: str, partitions: int, per_partition: int) -> None:
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    produce(cluster.bootstrap, topic, [(p, None, f"{topic}-{p}-{i}".encode())
                                       for i in range(per_partition) for p in range(partitions)])


def _committed(connect: str, root: str, topic: str, partitions: int) -> dict:
    paths = {p: partition_path(root, "spout", p, topic=topic) for p in range(partitions)}
    docs = read_documents(connect, paths.values())
    return {p: (docs[path].offset if docs[path] is not None else None)
            for p, path in paths.items()}


def _seen(records, topic: str):
    return delivered_offsets(r for r in records if r["topic"] == topic)


@pytest.mark.hard_timeout(900)
@pytest.mark.parametrize("coordinator", ["zk", "bootstrap"])
def test_wildcard_topic_created_and_deleted_mid_run(coordinator, kafka09_factory, job_factory,
                                                    tmp_path, unique):
    cluster = kafka09_factory(1)
    prefix = unique("churn")
    first, second = f"{prefix}-a", f"{prefix}-b"
    root = f"/skc-faults/churn-{coordinator}"
    cluster.create_topic(first, partitions=2)
    _produce(cluster, first, 2, 200)
    config = job_config(topic=f"{prefix}-.*", zk_root=root, spout_id="spout",
                        zk_port=cluster.zookeeper.port, bootstrap=cluster.bootstrap,
                        topology={"topology.id": f"faults-churn-{coordinator}",
                                  "kafka.topic.wildcard.match": True},
                        spout={"metricsTimeBucketSizeInSecs": 1},
                        kafka={"api_version": "0.9"})
    config["hosts"] = _hosts(cluster, coordinator)
    job = job_factory(write_config(tmp_path / "job.yaml", config), ("--max-messages", "100"))
    job.start()
    connect = cluster.zookeeper.connect_string
    wait_until(lambda: _committed(connect, root, first, 2) == {0: 200, 1: 200},
               timeout_s=JOB_START_TIMEOUT_S, interval_s=0.5, what=f"{first} at its log end",
               on_timeout=job.stderr_tail)

    # a matching topic appears: picked up at the next refresh, read from its start
    created = time.time()
    cluster.create_topic(second, partitions=3)
    _produce(cluster, second, 3, 150)
    wait_until(lambda: _committed(connect, root, second, 3) == {0: 150, 1: 150, 2: 150},
               timeout_s=120, interval_s=0.5, what=f"{second} processed",
               on_timeout=job.stderr_tail)
    picked_up = min(r["time"] for r in read_deliveries(job.record_path)
                    if r["topic"] == second) - created
    assert missing_offsets(_seen(read_deliveries(job.record_path), second),
                           {p: 150 for p in range(3)}) == []

    # the first topic is deleted: its managers go, the second keeps going
    cluster.delete_topic(first)
    deleted = time.time()
    _produce(cluster, second, 3, 100)
    wait_until(lambda: _committed(connect, root, second, 3) == {0: 250, 1: 250, 2: 250},
               timeout_s=120, interval_s=0.5, what=f"{second} processed after {first} went",
               on_timeout=job.stderr_tail)
    wait_until(lambda: f"no longer managing {first}/0" in job.stderr()
               and f"no longer managing {first}/1" in job.stderr(),
               timeout_s=60, what=f"the managers of {first} dropped", on_timeout=job.stderr_tail)
    assert job.running, job.stderr_tail()
    job.signal(signal.SIGTERM)
    assert job.wait(timeout_s=120) == 0, job.stderr_tail()

    records = read_deliveries(job.record_path)
    assert missing_offsets(_seen(records, first), {0: 200, 1: 200}) == []
    assert missing_offsets(_seen(records, second), {p: 250 for p in range(3)}) == []
    # the deleted topic's documents stay where they were (Storm leaves them too)
    assert _committed(connect, root, first, 2) == {0: 200, 1: 200}
    print(f"\ntopic churn ({coordinator}): new topic's first delivery {picked_up:.1f} s after "
          f"its creation (refreshFreqSecs {REFRESH_S}); deletion survived "
          f"({time.time() - deleted:.1f} s observed)")


@pytest.mark.hard_timeout(900)
@pytest.mark.parametrize("coordinator", ["zk", "bootstrap"])
def test_the_only_topic_deleted_keeps_the_job_running(coordinator, kafka09_factory,
                                                      job_factory, tmp_path, unique):
    cluster = kafka09_factory(1)
    topic, root = unique("gone"), f"/skc-faults/gone-{coordinator}"
    cluster.create_topic(topic, partitions=2)
    _produce(cluster, topic, 2, 100)
    config = job_config(topic=topic, zk_root=root, spout_id="spout",
                        zk_port=cluster.zookeeper.port, bootstrap=cluster.bootstrap,
                        topology={"topology.id": f"faults-gone-{coordinator}"},
                        spout={"metricsTimeBucketSizeInSecs": 1},
                        kafka={"api_version": "0.9"})
    config["hosts"] = _hosts(cluster, coordinator)
    job = job_factory(write_config(tmp_path / "job.yaml", config), ("--max-messages", "100"))
    job.start()
    connect = cluster.zookeeper.connect_string
    wait_until(lambda: _committed(connect, root, None, 2) == {0: 100, 1: 100},
               timeout_s=JOB_START_TIMEOUT_S, interval_s=0.5, what="the topic at its log end",
               on_timeout=job.stderr_tail)
    cluster.delete_topic(topic)

    def refresh_failures() -> int:
        return max([m.get("refreshFailures", 0)
                    for m in find_metric(job.metrics(), "stormKafkaCompat")], default=0)

    # several refresh periods pass, every one failing: the job keeps running
    wait_until(lambda: refresh_failures() >= 3 or not job.running, timeout_s=120,
               what="three failed refreshes", on_timeout=job.stderr_tail)
    assert job.running, job.stderr_tail()
    assert "partition refresh failed" in job.stderr()
    job.signal(signal.SIGTERM)
    assert job.wait(timeout_s=120) == 0, job.stderr_tail()
    assert _committed(connect, root, None, 2) == {0: 100, 1: 100}
