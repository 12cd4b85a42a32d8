"""Documents an operator (or another job) changes, on Apache Kafka 0.9 and a real
ZooKeeper (issue 26).

A document found at start that Storm would not resume from follows
``corruptStatePolicy`` and says why in words that match (a cut-off document is
"truncated"); ``fail`` refuses a negative offset and a document naming another
partition too, ``storm`` resumes from the latter with a warning. While a job
runs it owns its documents: a second job refuses to start naming it, ``offsets
reset --execute`` refuses naming it, and a reset forced past that makes the job
stop without overwriting the reset."""

from __future__ import annotations

import json
import socket
import time

import pytest

from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.paths import partition_path
from tests.faults.harness import (
    JOB_START_TIMEOUT_S,
    committed_offsets, job_config, produce_chunk, read_deliveries, read_documents, run_cli,
    set_document, wait_until, write_config, zk_tree)

pytestmark = [pytest.mark.fault, pytest.mark.integration]

PARTITIONS = 2
#: a document cut off after its offset (its closing brace is missing)
TRUNCATED = b'{"topology":{"id":"storm-7-1500000000","name":"clicks"},"offset":12'


def _doc(topic: str, partition: int, offset: int, *, named: int = -1,
         tid: str = "storm-7-1500000000") -> bytes:
    return encode_document(topology_id=tid, topology_name="clicks", offset=offset,
                           partition=partition if named < 0 else named, broker_host="old",
                           broker_port=9092, topic=topic)


@pytest.mark.hard_timeout(700)
def test_documents_found_at_start_and_a_reset_while_the_job_runs(kafka09, zk_server,
                                                                job_factory, tmp_path, unique):
    topic, root = unique("docs"), f"/skc-faults/{unique('docs')}"
    kafka09.create_topic(topic, PARTITIONS, 1)
    log_end = produce_chunk(kafka09, topic, {p: 0 for p in range(PARTITIONS)}, 100)
    p0, p1 = partition_path(root, "spout", 0), partition_path(root, "spout", 1)
    zk = zk_server.connect_string
    base = dict(topic=topic, zk_root=root, spout_id="spout", zk_port=zk_server.port,
                bootstrap=kafka09.bootstrap, kafka={"api_version": "0.9"},
                topology={"topology.id": "faults-docs"})

    # corruptStatePolicy fail: each refused before Spark starts, nothing written
    strict = write_config(tmp_path / "strict.yaml",
                          job_config(**base, spout={"corruptStatePolicy": "fail"}))
    for data, said in [
            (TRUNCATED, "invalid JSON (truncated: the document ends before the object's "
                        "closing '}')"),
            (_doc(topic, 0, -5), "offset -5 is negative"),
            (_doc(topic, 0, 30, named=7), "names partition 7 (this is partition 0)")]:
        set_document(zk, p0, data)
        before = zk_tree(zk, root)
        done = run_cli(["run", str(strict), "--until-caught-up"], timeout_s=120)
        assert done.returncode == 1, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and p0 in errors[0] and said in errors[0], done.stderr
        assert zk_tree(zk, root) == before
    # offsets explain says it too (the fault round saw only `resume 30`)
    explained = run_cli(["offsets", "explain", str(strict), "--json"], timeout_s=120)
    assert explained.returncode == 0, explained.stderr
    first = json.loads(explained.stdout)[0]
    assert first["decision"] == "invalid_state"
    assert "names partition 7 (this is partition 0)" in first["reason"]

    # corruptStatePolicy storm (the default): partition 0 resumes at 30 from the
    # document naming partition 7, with a warning; partition 1's truncated document
    # is named so, and the partition starts at the log start
    set_document(zk, p1, TRUNCATED)
    lenient = write_config(tmp_path / "job.yaml", job_config(
        **base, spout={"stateUpdateIntervalMs": 500}))
    job = job_factory(lenient, ("--max-messages", "50"), name="owner")
    job.start()
    wait_until(lambda: committed_offsets(zk, root, "spout", range(PARTITIONS)) == log_end,
               timeout_s=JOB_START_TIMEOUT_S, what="commit of the log end",
               on_timeout=job.stderr_tail)
    stderr = job.stderr()
    assert "names partition 7 (this is partition 0); resuming from its offset 30" in stderr
    assert f"{p1} is unusable (invalid JSON (truncated: the document ends" in stderr
    seen = {(r["partition"], r["offset"]) for r in read_deliveries(job.record_path)}
    assert min(o for p, o in seen if p == 0) == 30 and min(o for p, o in seen if p == 1) == 0

    # the job owns the documents: its record names it
    record = json.loads(read_documents(zk, [f"{root}/spout/owner~task-0"])[
        f"{root}/spout/owner~task-0"].data)
    assert (record["pid"], record["host"], record["topology_id"]) == \
        (job.pid, socket.gethostname(), "faults-docs")
    owner = f"topology 'faults-docs' (faults), driver pid {job.pid} on {socket.gethostname()}"

    # a second job on the same zkRoot/id, with the same topology.id: it does not start
    started = time.monotonic()
    second = run_cli(["run", str(lenient), "--until-caught-up"], timeout_s=120)
    assert second.returncode == 1, second.stderr
    assert f"Error: another job owns the documents under {root}/spout: {owner}" \
        in second.stderr, second.stderr
    assert "--take-over" in second.stderr and time.monotonic() - started < 60

    # a reset beside it is refused, naming it; nothing written
    before = zk_tree(zk, root)
    refused = run_cli(["offsets", "reset", str(lenient), "--to-offset", "10", "--partitions",
                       "0", "--execute"], timeout_s=120)
    assert refused.returncode == 1, refused.stderr
    assert f"offsets reset --execute refused: a running job owns these documents ({owner}" \
        in refused.stderr and "--force" in refused.stderr
    assert {p: v for p, v in zk_tree(zk, root).items() if "owner~" not in p} == \
        {p: v for p, v in before.items() if "owner~" not in p}

    # forced: written; the job stops at its next commit instead of overwriting it
    forced = run_cli(["offsets", "reset", str(lenient), "--to-offset", "10", "--partitions",
                      "0", "--execute", "--force"], timeout_s=120)
    assert forced.returncode == 0 and "wrote 1 document(s)" in forced.stderr, forced.stderr
    log_end = produce_chunk(kafka09, topic, log_end, 20)
    assert job.wait(timeout_s=120) == 1, job.stderr_tail()
    assert f"Error: {p0} was changed by another writer: offset 10 is stored where this job " \
           "('faults-docs') wrote 100" in job.stderr(), job.stderr_tail()
    final = committed_offsets(zk, root, "spout", range(PARTITIONS))
    assert final[0] == 10 and 100 <= (final[1] or 0) <= 120, final
