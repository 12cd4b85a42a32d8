"""Documents changed by hand: a corrupt document found at start follows
corruptStatePolicy and says so; a document edited while the job runs is
overwritten at the next commit of that partition (as Storm does); two jobs with
the same zkRoot/id at once are detected and reported."""

from __future__ import annotations

import signal
import time

import pytest

from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.paths import partition_path
from tests.faults.harness import (
    JOB_START_TIMEOUT_S,
    committed_offsets, delivered_offsets, job_config, missing_offsets, read_deliveries,
    read_documents, set_document, wait_until, write_config, zk_tree)

pytestmark = [pytest.mark.fault, pytest.mark.integration]

PARTITIONS = 2
CORRUPT = b'{"topology":{"id":"storm-7-1500000000","name":"clicks"},"offset":"12"'


@pytest.mark.hard_timeout(700)
def test_corrupt_document_at_start_and_edit_while_running(zk_server_factory, tansu_factory,
                                                          seed, job_factory, tmp_path, unique):
    zk, broker = zk_server_factory(), tansu_factory()
    topic, root = unique("corrupt"), "/skc-faults/corrupt"
    p0 = partition_path(root, "spout", 0)
    log_end = seed(broker, topic, PARTITIONS, 100)
    set_document(zk.connect_string, p0, CORRUPT)
    base = dict(topic=topic, zk_root=root, spout_id="spout", zk_port=zk.port,
                static={p: broker.bootstrap for p in range(PARTITIONS)},
                topology={"topology.id": "faults-corrupt"})

    # policy "fail": the start stops with an error naming the path; nothing is written
    before = zk_tree(zk.connect_string, root)
    strict = job_config(**base, spout={"corruptStatePolicy": "fail"})
    job = job_factory(write_config(tmp_path / "strict.yaml", strict), ("--until-caught-up",),
                      name="strict")
    job.start()
    assert job.wait(timeout_s=JOB_START_TIMEOUT_S) == 1, job.stderr_tail()
    errors = [line for line in job.stderr().splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and p0 in errors[0] and "unusable" in errors[0], errors
    assert "corruptStatePolicy" in errors[0]
    assert zk_tree(zk.connect_string, root) == before
    assert read_deliveries(job.record_path) == []

    # policy "storm" (the default): WARN with the path and the bytes, start at
    # startOffsetTime (earliest), then the job owns the document
    lenient = job_config(**base, spout={"stateUpdateIntervalMs": 500})
    job = job_factory(write_config(tmp_path / "storm.yaml", lenient), ("--max-messages", "50"),
                      name="storm")
    job.start()
    wait_until(lambda: committed_offsets(zk.connect_string, root, "spout",
                                         range(PARTITIONS)) == log_end,
               timeout_s=JOB_START_TIMEOUT_S, what="commit of the log end",
               on_timeout=job.stderr_tail)
    warning = [line for line in job.stderr().splitlines() if "unusable" in line]
    assert warning and "WARNING" in warning[0] and p0 in warning[0], job.stderr_tail()
    assert "startOffsetTime -2 (earliest) offset 0" in warning[0]

    # edited by hand while running: kept until the partition commits again, then overwritten
    p1 = partition_path(root, "spout", 1)
    set_document(zk.connect_string, p1, encode_document(
        topology_id="faults-corrupt", topology_name="faults", offset=3, partition=1,
        broker_host="edited", broker_port=1, topic=topic))
    time.sleep(2.0)   # several commit intervals with nothing new: no write
    assert read_documents(zk.connect_string, [p1])[p1].offset == 3
    log_end = seed(broker, topic, PARTITIONS, 50, start=100)
    wait_until(lambda: committed_offsets(zk.connect_string, root, "spout",
                                         range(PARTITIONS)) == log_end,
               timeout_s=90, what="the edited document overwritten", on_timeout=job.stderr_tail)
    job.signal(signal.SIGTERM)
    assert job.wait(timeout_s=90) == 0, job.stderr_tail()
    counts = delivered_offsets(read_deliveries(job.record_path))
    assert missing_offsets(counts, log_end) == []


@pytest.mark.hard_timeout(600)
def test_two_jobs_with_the_same_zkroot_and_id(zk_server_factory, tansu_factory, seed,
                                              job_factory, tmp_path, unique):
    zk, broker = zk_server_factory(), tansu_factory()
    topic, root = unique("twojobs"), "/skc-faults/twojobs"
    seed(broker, topic, 1, 50)
    jobs = []
    for name in ("job-a", "job-b"):
        config = job_config(topic=topic, zk_root=root, spout_id="spout", zk_port=zk.port,
                            static={0: broker.bootstrap},
                            spout={"stateUpdateIntervalMs": 300},
                            topology={"topology.id": name})
        job = job_factory(write_config(tmp_path / f"{name}.yaml", config), name=name,
                          record_path=tmp_path / f"{name}.jsonl")
        jobs.append(job.start())
    path = partition_path(root, "spout", 0)
    # keep both busy until each has written at least once: the document changes hands
    ids = set()
    start = 50
    deadline = time.monotonic() + 200
    while len(ids) < 2 and time.monotonic() < deadline:
        seed(broker, topic, 1, 20, start=start)
        start += 20
        time.sleep(1.0)
        doc = read_documents(zk.connect_string, [path])[path]
        if doc is not None:
            ids.add(doc.topology_id)
    assert ids == {"job-a", "job-b"}, [j.stderr_tail() for j in jobs]

    def reported():
        return any("same zkRoot/id" in j.stderr() for j in jobs)

    try:
        wait_until(reported, timeout_s=30, what="the conflict reported")
    finally:
        for job in jobs:
            job.signal(signal.SIGTERM)
        for job in jobs:
            job.wait(timeout_s=90)
    text = "\n".join(j.stderr() for j in jobs)
    line = next(line for line in text.splitlines() if "same zkRoot/id" in line)
    assert path in line and "'job-a'" in line and "'job-b'" in line
