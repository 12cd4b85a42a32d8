"""Bolt-task state survives crashes with the offsets it reflects (issue 31, item 2).

storm-starter's WordCount (tests/stateful_bolts.py: split with 3 ms a sentence, a dict of
counts in each of 4 count tasks behind a fields grouping) runs as ``storm-kafka-compat
run`` on Spark local[2] over a real Apache Kafka 0.9 topic. Each count task's dict lives
in a bolt host for the life of the job and is saved with the offsets before each commit.
Killed mid-run (the driver, a Python worker, a bolt host) and run again, the job ends
with every word's count equal to the truth: not "nothing lost", but nothing counted
twice either.
"""

from __future__ import annotations

import os
import signal

import pytest

from storm_kafka_compat.workshop.servers.kafka_clients import produce
from tests import stateful_bolts
from tests.faults.harness import (JOB_START_TIMEOUT_S, job_config, process_table,
                                  read_deliveries, wait_until, write_config)
from tests.stateful_inputs import as_messages, sentences, word_counts

pytestmark = [pytest.mark.fault, pytest.mark.integration]

PARTITIONS = 4
SENTENCES = 2400


def _setup(kafka09, unique, tmp_path, job_factory, *, master="local[2]"):
    lines = sentences(SENTENCES, seed=35)
    topic = unique("wc-fault")
    kafka09.create_topic(topic, PARTITIONS)
    produce(kafka09.bootstrap, topic, as_messages(lines, PARTITIONS))
    config = job_config(topic=topic, zk_root=f"/skc-faults/{topic}", spout_id="wc",
                        zk_port=kafka09.zookeeper.port, bootstrap=kafka09.bootstrap,
                        spout={"stateUpdateIntervalMs": 500},
                        topology={"topology.id": "wc-1", "topology.state.dir":
                                  str(tmp_path / "state"), **stateful_bolts.SLOW_WORD_COUNT},
                        spark={"master": master}, kafka={"api_version": "0.9"})
    del config["bolt"]
    record = tmp_path / "records.jsonl"
    job = job_factory(write_config(tmp_path / "job.yaml", config), ("--until-caught-up",),
                      record_path=record)
    return lines, topic, job, record


def _counted(record):
    return [r for r in read_deliveries(record) if r.get("kind") == "state"]


def _final(record):
    return stateful_bolts.final_values(_counted(record))


def _wait_for_counts(job, record, more_than):
    wait_until(lambda: len(_counted(record)) > more_than, timeout_s=JOB_START_TIMEOUT_S,
               what="counting", on_timeout=job.stderr_tail)


def _children(pid, needle):
    procs = process_table()
    return [p for p, (ppid, cmd) in procs.items() if ppid == pid and needle in cmd]


@pytest.mark.hard_timeout(900)
def test_the_driver_killed_twice_mid_run_ends_with_the_true_counts(
        kafka09, unique, tmp_path, job_factory):
    lines, topic, job, record = _setup(kafka09, unique, tmp_path, job_factory)
    for kill in (1, 2):
        job.start()
        _wait_for_counts(job, record, 2000 * kill)
        job.kill_driver()
    job.start()
    assert job.wait(timeout_s=600) == 0, job.stderr_tail()
    assert "state was restored from" in job.stderr(), job.stderr_tail()
    assert _final(record) == word_counts(lines)


@pytest.mark.hard_timeout(900)
def test_a_python_worker_killed_mid_batch_changes_no_count(
        kafka09, unique, tmp_path, job_factory):
    lines, topic, job, record = _setup(kafka09, unique, tmp_path, job_factory)
    job.start()
    _wait_for_counts(job, record, 3000)
    procs = process_table()
    daemons = {pid for pid, (ppid, cmd) in procs.items()
               if b"pyspark.daemon" in cmd and procs.get(ppid, (0, b""))[0] == job.pid}
    workers = [pid for pid, (ppid, _) in procs.items() if ppid in daemons]
    assert workers, "no PySpark Python worker found"
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    assert job.wait(timeout_s=600) == 0, job.stderr_tail()
    assert _final(record) == word_counts(lines)


@pytest.mark.hard_timeout(900)
def test_a_bolt_host_killed_stops_the_run_and_the_next_start_restores_the_state(
        kafka09, unique, tmp_path, job_factory):
    lines, topic, job, record = _setup(kafka09, unique, tmp_path, job_factory)
    job.start()
    _wait_for_counts(job, record, 3000)
    hosts = _children(job.pid, b"storm_kafka_compat.executor.hosts.server")
    assert len(hosts) == 2, hosts          # 4 count tasks over the driver's 2 cores
    os.kill(hosts[0], signal.SIGKILL)
    assert job.wait(timeout_s=300) == 1, job.stderr_tail()
    assert "bolt host 0" in job.stderr() and "exited with -9" in job.stderr(), \
        job.stderr_tail()
    job.start()
    assert job.wait(timeout_s=600) == 0, job.stderr_tail()
    assert _final(record) == word_counts(lines)
