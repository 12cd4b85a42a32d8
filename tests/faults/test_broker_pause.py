"""The broker is paused (SIGSTOP) longer than socketTimeoutMs and resumed: the pause is
reported (a task's fetch fails, is counted and the coordinator refreshes; or, when the
driver's log-end lookup meets the pause first, that lookup fails and is said), the job
recovers, nothing is lost."""

from __future__ import annotations

import signal
import time

import pytest

from tests.faults.harness import (
    JOB_START_TIMEOUT_S,
    committed_offsets, delivered_offsets, find_metric, job_config, missing_offsets,
    read_deliveries, wait_until, write_config)

pytestmark = [pytest.mark.fault, pytest.mark.integration]

PARTITIONS = 2
SOCKET_TIMEOUT_MS = 1500


@pytest.mark.hard_timeout(600)
def test_broker_paused_longer_than_socket_timeout(zk_server_factory, tansu_factory, seed,
                                                  job_factory, tmp_path, unique):
    zk, broker = zk_server_factory(), tansu_factory()
    topic, root = unique("pause"), "/skc-faults/pause"
    log_end = seed(broker, topic, PARTITIONS, 200)
    config = job_config(topic=topic, zk_root=root, spout_id="spout", zk_port=zk.port,
                        static={p: broker.bootstrap for p in range(PARTITIONS)},
                        spout={"stateUpdateIntervalMs": 500, "metricsTimeBucketSizeInSecs": 1,
                               "socketTimeoutMs": SOCKET_TIMEOUT_MS},
                        topology={"topology.id": "faults-pause"})
    job = job_factory(write_config(tmp_path / "job.yaml", config), ("--max-messages", "50"))
    job.start()

    def committed(expected):
        return lambda: committed_offsets(zk.connect_string, root, "spout",
                                         range(PARTITIONS)) == expected

    wait_until(committed(log_end), timeout_s=JOB_START_TIMEOUT_S,
               what="first commit of the log end", on_timeout=job.stderr_tail)
    broker.pause()
    try:
        time.sleep(4 * SOCKET_TIMEOUT_MS / 1000.0)
        assert job.running, job.stderr_tail()
    finally:
        broker.resume()
    log_end = seed(broker, topic, PARTITIONS, 200, start=200)
    wait_until(committed(log_end), timeout_s=120, what="commit after the broker resumed",
               on_timeout=job.stderr_tail)
    job.signal(signal.SIGTERM)
    assert job.wait(timeout_s=90) == 0, job.stderr_tail()

    counts = delivered_offsets(read_deliveries(job.record_path))
    assert missing_offsets(counts, log_end) == []
    stderr = job.stderr()
    # which side meets the pause first depends on the timing: a batch in flight (its fetch
    # fails) or the driver's log-end lookup (the job had caught up; one CI run of 2,087
    # tests went that way, and no fetch was planned while the ranges were unknown)
    fetch_seen = "fetch failed for" in stderr and "refreshing partitions" in stderr
    lookup_seen = "log ranges unknown" in stderr and "no answer from" in stderr
    assert fetch_seen or lookup_seen, stderr[-3000:]
    if fetch_seen:
        fetch_failures = [m["fetchFailures"]
                          for m in find_metric(job.metrics(), "stormKafkaCompat")]
        assert fetch_failures and max(fetch_failures) >= 1, fetch_failures
