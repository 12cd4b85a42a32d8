"""Stopping a job the ways operators and supervisors do, on Apache Kafka 0.9 (issue 26).

Each stop must finish the batch in flight and commit exactly what was processed
(the next start resumes there: no duplicates at all over the three runs), exit 0
and print no traceback:

1. Ctrl-C in a terminal, the output piped through ``tee`` (the terminal's SIGINT
   ends ``tee`` too: the summary written after the commit meets a closed pipe);
2. SIGTERM to the job's process group (``setsid ... & kill -TERM -- -$!``, what a
   supervisor or a container runtime sends), which used to kill the Python workers
   under the batch;
3. SIGTERM to Spark's JVM alone, which used to end the run with exit 1 and a
   ``ConnectionRefusedError`` traceback.

A Ctrl-C while the job starts (Spark's start) stops it at once, exit 0.
"""

from __future__ import annotations

import os
import pty
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Dict, Optional

import pytest

from tests.faults.harness import (
    JOB_START_TIMEOUT_S, RECORD_ENV, REPO,
    committed_offsets, console_script, delivered_offsets, duplicates, job_config,
    process_table, produce_chunk, read_deliveries, wait_until, write_config)

pytestmark = [pytest.mark.fault, pytest.mark.integration]

PARTITIONS = 2
PER_PARTITION = 4000


class Terminal:
    """``bash -c COMMAND`` on a pseudo-terminal of its own (its session's controlling
    terminal), as an operator's shell runs it; Ctrl-C is the terminal's ^C."""

    def __init__(self, command: str, env: Dict[str, str]) -> None:
        self.output = bytearray()
        pid, fd = pty.fork()
        if pid == 0:                                            # the child: the shell
            os.execvpe("bash", ["bash", "-c", command], env)
        self.pid, self.fd = pid, fd
        self.status: Optional[int] = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output += chunk

    def text(self) -> str:
        return self.output.decode(errors="replace").replace("\r\n", "\n")

    def ctrl_c(self) -> None:
        os.write(self.fd, b"\x03")

    def wait(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                self._reader.join(timeout=5)
                return self.status
            time.sleep(0.1)
        os.kill(self.pid, signal.SIGKILL)
        raise TimeoutError(f"the terminal's command did not end in {timeout_s} s:\n"
                           f"{self.text()[-3000:]}")


def _env(record: Path) -> Dict[str, str]:
    env = dict(os.environ)
    env.update({RECORD_ENV: str(record), "PYSPARK_PYTHON": sys.executable,
                "SPARK_LOCAL_IP": "127.0.0.1", "TERM": "dumb",
                "PYTHONPATH": os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH", ""))
                                              if p)})
    return env


def _tops(record: Path) -> Dict[int, int]:
    """Per partition, one past the highest offset the bolt processed."""
    counts = delivered_offsets(read_deliveries(record))
    return {p: max(o for (q, o) in counts if q == p) + 1 for p in range(PARTITIONS)
            if any(q == p for (q, _) in counts)}


def _jvm_of(pid: int) -> int:
    """The pid of the java process the driver ``pid`` started (its child)."""
    for child, (parent, cmd) in process_table().items():
        if parent == pid and cmd.split(b"\0", 1)[0].endswith(b"java"):
            return child
    raise AssertionError(f"no java child of pid {pid}")


@pytest.mark.hard_timeout(900)
def test_ctrl_c_through_tee_a_process_group_sigterm_and_a_sigterm_to_the_jvm(
        kafka09, zk_server, job_factory, tmp_path, unique):
    topic, root = unique("stops"), f"/skc-faults/{unique('stops')}"
    kafka09.create_topic(topic, PARTITIONS, 1)
    produce_chunk(kafka09, topic, {p: 0 for p in range(PARTITIONS)}, PER_PARTITION)
    zk = zk_server.connect_string
    config = write_config(tmp_path / "job.yaml", job_config(
        topic=topic, zk_root=root, spout_id="spout", zk_port=zk_server.port,
        bootstrap=kafka09.bootstrap, kafka={"api_version": "0.9"},
        spout={"stateUpdateIntervalMs": 1000}, topology={"topology.id": "faults-stops"},
        bolt="tests.bolts:record_slowly"))
    record = tmp_path / "deliveries.jsonl"

    def processing(beyond: int) -> None:
        wait_until(lambda: len(read_deliveries(record)) > beyond + 200,
                   timeout_s=JOB_START_TIMEOUT_S, what="processing")

    def committed_what_was_processed() -> None:
        assert committed_offsets(zk, root, "spout", range(PARTITIONS)) == _tops(record)

    # 1. Ctrl-C in a terminal, `run ... | tee LOG`
    skc = " ".join(shlex.quote(c) for c in console_script())
    log = tmp_path / "tee.log"
    status = tmp_path / "status"
    term = Terminal(f"trap true INT; {skc} run {shlex.quote(str(config))} | tee "
                    f"{shlex.quote(str(log))}; echo ${{PIPESTATUS[0]}} > "
                    f"{shlex.quote(str(status))}",
                    _env(record))
    try:
        processing(0)
        term.ctrl_c()
        assert term.wait(timeout_s=120) == 0, term.text()[-3000:]
    finally:
        if term.status is None:
            os.kill(term.pid, signal.SIGKILL)
    assert status.read_text().strip() == "0", term.text()[-3000:]
    out = term.text()
    assert "SIGINT received: finishing the batch in flight" in out, out[-3000:]
    assert "stopped: SIGINT" in out and "Traceback" not in out, out[-3000:]
    committed_what_was_processed()

    # 2. SIGTERM to the process group (JobProcess starts the job with setsid)
    job = job_factory(config, (), record_path=record, name="group")
    job.start()
    processing(len(read_deliveries(record)))
    os.killpg(job.pid, signal.SIGTERM)
    assert job.wait(timeout_s=120) == 0, job.stderr_tail()
    assert "Traceback" not in job.stderr() and "stopped: SIGTERM" in job.stderr()
    committed_what_was_processed()

    # 3. SIGTERM to Spark's JVM alone
    job.start()
    processing(len(read_deliveries(record)))
    os.kill(_jvm_of(job.pid), signal.SIGTERM)
    assert job.wait(timeout_s=120) == 0, job.stderr_tail()
    stderr = job.stderr()
    assert "SIGTERM to Spark's JVM received: finishing the batch in flight" in stderr, \
        job.stderr_tail()
    assert "Traceback" not in stderr and "ConnectionRefusedError" not in stderr
    committed_what_was_processed()

    # every stop committed exactly what was processed: each start resumed there
    assert duplicates(delivered_offsets(read_deliveries(record))) == 0


@pytest.mark.hard_timeout(300)
def test_ctrl_c_while_spark_starts_stops_at_once(kafka09, zk_server, tmp_path, unique):
    """The fault round: 8.7 s for a Ctrl-C at 0.6 s, the second one 9.5 s in all."""
    topic = unique("early")
    kafka09.create_topic(topic, 1, 1)
    config = write_config(tmp_path / "job.yaml", job_config(
        topic=topic, zk_root=f"/skc-faults/{topic}", spout_id="spout",
        zk_port=zk_server.port, bootstrap=kafka09.bootstrap, kafka={"api_version": "0.9"},
        topology={"topology.id": "faults-early"}))
    skc = " ".join(shlex.quote(c) for c in console_script())
    term = Terminal(f"exec {skc} run {shlex.quote(str(config))}",
                    _env(tmp_path / "deliveries.jsonl"))
    try:
        # the start decisions are printed once the partitions are known, as Spark starts
        wait_until(lambda: "no document; starting at" in term.text(), timeout_s=120,
                   what="the start decision", on_timeout=term.text)
        stopped = time.monotonic()
        term.ctrl_c()
        assert term.wait(timeout_s=60) == 0, term.text()
        took = time.monotonic() - stopped
    finally:
        if term.status is None:
            os.kill(term.pid, signal.SIGKILL)
    assert "stopped during start-up (SIGINT): no batch ran; nothing was read or committed" \
        in term.text(), term.text()
    assert took < 5.0, f"{took:.1f} s"
    assert "Traceback" not in term.text()
