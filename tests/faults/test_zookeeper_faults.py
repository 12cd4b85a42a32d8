"""ZooKeeper faults under a running job: the server stopped for 20 s, and a session
expired behind a cut TCP proxy. The job keeps processing (or waits), commits once
ZooKeeper is back, loses nothing, and shows the failure on stderr and in metrics."""

from __future__ import annotations

import signal
import time

import pytest

from tests.faults.harness import (
    JOB_START_TIMEOUT_S,
    committed_offsets, delivered_offsets, find_metric, job_config, missing_offsets,
    read_deliveries, wait_until, write_config)
from tests.faults.proxy import TcpProxy

pytestmark = [pytest.mark.fault, pytest.mark.integration]

PARTITIONS = 2

#: fail a commit within a few seconds instead of Storm's 5 x 15 s, so the outage shows
FAST_ZK = {"storm.zookeeper.connection.timeout": 2000, "storm.zookeeper.retry.times": 1,
           "storm.zookeeper.retry.interval": 500}


def _committed_to(zk_connect, root, log_end):
    def check():
        try:
            return committed_offsets(zk_connect, root, "spout", range(PARTITIONS),
                                     timeout_s=5) == log_end
        except Exception:       # ZooKeeper still coming back
            return False
    return check


def _stop_gracefully(job):
    job.signal(signal.SIGTERM)
    return job.wait(timeout_s=90)


@pytest.mark.hard_timeout(600)
def test_zookeeper_stopped_for_20_s(zk_server_factory, tansu_factory, seed, job_factory, tmp_path,
                                    unique):
    zk, broker = zk_server_factory(), tansu_factory()
    topic, root = unique("zkstop"), "/skc-faults/zkstop"
    log_end = seed(broker, topic, PARTITIONS, 200)
    config = job_config(topic=topic, zk_root=root, spout_id="spout", zk_port=zk.port,
                        static={p: broker.bootstrap for p in range(PARTITIONS)},
                        spout={"stateUpdateIntervalMs": 500, "metricsTimeBucketSizeInSecs": 1},
                        topology={"topology.id": "faults-zkstop", **FAST_ZK})
    job = job_factory(write_config(tmp_path / "job.yaml", config), ("--max-messages", "50"))
    job.start()
    wait_until(_committed_to(zk.connect_string, root, log_end), timeout_s=JOB_START_TIMEOUT_S,
               what="first commit of the log end", on_timeout=job.stderr_tail)

    zk.stop()
    stopped = time.monotonic()
    # the job keeps consuming while its offset store is down
    log_end = seed(broker, topic, PARTITIONS, 200, start=200)
    wait_until(lambda: len(read_deliveries(job.record_path)) >= sum(log_end.values()),
               timeout_s=60, what="processing during the outage", on_timeout=job.stderr_tail)
    wait_until(lambda: "commit of" in job.stderr(), timeout_s=60,
               what="a failed commit reported on stderr", on_timeout=job.stderr_tail)
    time.sleep(max(0.0, 20.0 - (time.monotonic() - stopped)))
    assert job.running, job.stderr_tail()
    zk.start()

    wait_until(_committed_to(zk.connect_string, root, log_end), timeout_s=90,
               what="commit after ZooKeeper came back", on_timeout=job.stderr_tail)
    assert _stop_gracefully(job) == 0, job.stderr_tail()

    counts = delivered_offsets(read_deliveries(job.record_path))
    assert missing_offsets(counts, log_end) == []
    stderr = job.stderr()
    assert "commit of" in stderr and "failed" in stderr and "retrying at the next commit" in stderr
    failures = [m["commitFailures"] for m in find_metric(job.metrics(), "stormKafkaCompat")]
    assert failures and max(failures) >= 1, failures


@pytest.mark.hard_timeout(600)
def test_zookeeper_session_expires_behind_a_cut_proxy(zk_server_factory, tansu_factory, seed,
                                                      job_factory, tmp_path, unique):
    zk, broker = zk_server_factory(), tansu_factory()
    topic, root = unique("expiry"), "/skc-faults/expiry"
    session_ms = 3000
    log_end = seed(broker, topic, PARTITIONS, 200)
    with TcpProxy("127.0.0.1", zk.port) as proxy:
        config = job_config(topic=topic, zk_root=root, spout_id="spout", zk_port=proxy.port,
                            static={p: broker.bootstrap for p in range(PARTITIONS)},
                            spout={"stateUpdateIntervalMs": 500,
                                   "metricsTimeBucketSizeInSecs": 1},
                            topology={"topology.id": "faults-expiry",
                                      "storm.zookeeper.session.timeout": session_ms, **FAST_ZK})
        job = job_factory(write_config(tmp_path / "job.yaml", config), ("--max-messages", "50"))
        job.start()
        wait_until(_committed_to(zk.connect_string, root, log_end), timeout_s=JOB_START_TIMEOUT_S,
                   what="first commit of the log end", on_timeout=job.stderr_tail)

        proxy.cut()
        log_end = seed(broker, topic, PARTITIONS, 200, start=200)
        # longer than the session timeout: the server expires the session
        time.sleep(3 * session_ms / 1000.0)
        proxy.heal()

        wait_until(_committed_to(zk.connect_string, root, log_end), timeout_s=90,
                   what="commit on a new session", on_timeout=job.stderr_tail)
        assert _stop_gracefully(job) == 0, job.stderr_tail()

    counts = delivered_offsets(read_deliveries(job.record_path))
    assert missing_offsets(counts, log_end) == []
    stderr = job.stderr()
    # kazoo reports the expired session as LOST, then connects with a new one
    assert "connection state LOST" in stderr, stderr[-3000:]


def _status(job) -> dict:
    """The job's status endpoint (``run --status-port 0`` prints where)."""
    import json
    import re
    import urllib.request
    found = re.search(r"status: (http://127\.0\.0\.1:\d+/status)", job.stderr())
    assert found, job.stderr_tail()
    with urllib.request.urlopen(found.group(1), timeout=10) as answer:
        return json.loads(answer.read())


#: a fields grouping puts the bolt in a second Spark stage: batches are sized by the
#: driver's pacer (engine.pacing)
FIELDS_BOLTS = [{"name": "rec", "bolt": "tests.bolts:record",
                 "inputs": [{"from": "spout", "grouping": "fields", "fields": ["str"]}]}]


@pytest.mark.hard_timeout(600)
def test_a_paused_zookeeper_does_not_stall_a_paced_multi_stage_job(
        zk_server_factory, kafka09, job_factory, tmp_path, unique):
    """Issue 26, the fault round: (1) a fields-grouping topology with
    stateUpdateIntervalMs 500 locked its pacer at one message per partition per batch
    (2,000 messages in 486 batches); (2) with the offset store paused and Storm's
    default ZooKeeper timeouts, the driver blocked in the commit for the whole
    outage (0.8-4.7 msg/s), silently. Now the batches stay large, and during the
    pause the job goes on processing, and says so at once: an error line, the status
    endpoint and the metrics."""
    from tests.faults.harness import produce_chunk
    zk = zk_server_factory()
    topic, root = unique("zkpause"), "/skc-faults/zkpause"
    kafka09.create_topic(topic, PARTITIONS, 1)
    log_end = produce_chunk(kafka09, topic, {p: 0 for p in range(PARTITIONS)}, 1000)
    config = job_config(topic=topic, zk_root=root, spout_id="spout", zk_port=zk.port,
                        bootstrap=kafka09.bootstrap, kafka={"api_version": "0.9"},
                        spout={"stateUpdateIntervalMs": 500},
                        topology={"topology.id": "faults-zkpause", "bolts": FIELDS_BOLTS})
    del config["bolt"]
    job = job_factory(write_config(tmp_path / "job.yaml", config), ("--status-port", "0"))
    job.start()
    wait_until(_committed_to(zk.connect_string, root, log_end), timeout_s=JOB_START_TIMEOUT_S,
               what="the first 2,000 messages committed", on_timeout=job.stderr_tail)
    # the status has counts from the first progress interval on (5 s after the start)
    batches = wait_until(lambda: _status(job).get("batches"), timeout_s=30,
                         what="the first progress interval's status",
                         on_timeout=job.stderr_tail)
    # about 2 messages a batch when the pacer locked; dozens now
    assert batches <= 200, f"{batches} batches for 2,000 messages"

    zk.pause()                                     # SIGSTOP: connected, never answering
    paused = time.monotonic()
    try:
        log_end = produce_chunk(kafka09, topic, log_end, 100)
        wait_until(lambda: len(read_deliveries(job.record_path)) >= sum(log_end.values()),
                   timeout_s=14, what="processing while ZooKeeper is paused",
                   on_timeout=job.stderr_tail)
        status = wait_until(lambda: (lambda s: s if s.get("store_unreachable_since")
                                     else None)(_status(job)),
                            timeout_s=max(1.0, 14 - (time.monotonic() - paused)), what="the status",
                            on_timeout=job.stderr_tail)
        assert status["commit_failures"] >= 1
        outage = [m for m in find_metric(job.metrics(), "stormKafkaCompat")
                  if m.get("storeUnreachableSince")]
        assert outage and outage[0]["commitFailures"] >= 1, job.metrics()
        assert "processing goes on" in job.stderr(), job.stderr_tail()
    finally:
        zk.resume()
    wait_until(_committed_to(zk.connect_string, root, log_end), timeout_s=90,
               what="the commit once ZooKeeper answers again", on_timeout=job.stderr_tail)
    assert _stop_gracefully(job) == 0, job.stderr_tail()
    assert missing_offsets(delivered_offsets(read_deliveries(job.record_path)), log_end) == []
    assert "succeeded again after" in job.stderr()
