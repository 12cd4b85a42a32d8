"""Storm's ``ShellBolt``: a script run as a subprocess that speaks the multilang protocol
(:mod:`.multilang`), one subprocess per bolt task, kept for the life of the task, as Storm
keeps it for the life of the executor.

The script starts with the task's first batch (a process prepares every bolt task of the
topology; only those that get tuples there start theirs).

``ShellBolt("python", "splitsentence.py")`` over Storm's ``storm.py``, a pystorm or
streamparse component run by its module, Node's ``storm.js`` or Ruby's ``storm.rb`` run
unchanged: the task sends the tuples of an engine batch, then a heartbeat, and reads the
script's emits, acks and fails until the script answers the heartbeat with ``sync``, so the
batch's outcome is complete when the batch ends. Tuples go in chunks that fit in the pipe,
so neither side can block the other.

What differs from Storm (docs/python-storm.md): ``python`` and ``python3`` are the
interpreter running the task (the job's environment); task ids are task indexes; a direct
emit is refused; a script that exits or breaks the protocol fails the tuples it held, is
counted as an error of the bolt on the driver, and is started again for the next batch
(Storm restarts the worker); what the script keeps in memory is not saved with the offsets.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import weakref
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from storm_kafka_compat.topology.compat.multilang import (HEARTBEAT, ProtocolError, encode,
                                                 handshake, read_message, tuple_message)
from storm_kafka_compat.topology.compat.streamparse import multilang_context
from storm_kafka_compat.errors import BatchEndError
from storm_kafka_compat.topology.bolts import (OutputCollector, OutputFields, RichBolt,
                                               TopologyContext, normalize_output_fields)
from storm_kafka_compat.topology.tuples import DEFAULT_STREAM, StormTuple

log = logging.getLogger(__name__)

__all__ = ["ShellBolt", "ShellBoltError", "shell_bolt_factory", "PYTHON_COMMANDS"]

#: commands that mean "the Python of this job" (Storm runs whatever ``python`` is on PATH)
PYTHON_COMMANDS = ("python", "python3")

#: bytes of tuples written before a heartbeat: well under a pipe's 64 KiB, so the write
#: never waits on the script while the script waits on us to read its emits
CHUNK_BYTES = 16 * 1024

_LEVELS = {0: 5, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}


class ShellBoltError(BatchEndError):
    """What a multilang script reported (``reportError``), or its exit."""


def _stop(proc: "subprocess.Popen[bytes]", pid_dir: str) -> None:
    if proc.poll() is None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
    shutil.rmtree(pid_dir, ignore_errors=True)


class ShellBolt(RichBolt):
    """One bolt task run by a multilang subprocess.

    Parameters
    ----------
    command : sequence of str
        The command and its arguments, as given to Storm's ``ShellBolt``
        (``["python", "splitsentence.py"]``).
    output_fields : sequence or mapping
        What the ShellBolt's Java class declared (``declareOutputFields``).
    resources : str, optional
        The directory the command runs in: the topology jar's ``resources/``, where the
        script and ``storm.py`` are (default: the current directory).
    """

    def __init__(self, command: Sequence[str], output_fields: OutputFields,
                 resources: Optional[str] = None) -> None:
        self.command = list(command)
        self.fields = normalize_output_fields(output_fields)
        self.resources = os.path.abspath(resources) if resources else None
        self.proc: Optional["subprocess.Popen[bytes]"] = None
        self.queue: List[StormTuple] = []
        self.pending: Dict[str, StormTuple] = {}
        self.next_id = 0
        self.conf: Dict[str, Any] = {}
        self.errors: List[str] = []

    def __repr__(self) -> str:
        return f"ShellBolt({' '.join(self.command)!r})"

    def declare_output_fields(self) -> Dict[str, Tuple[str, ...]]:
        return self.fields

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: OutputCollector) -> None:
        self.collector = collector
        self.conf = dict(conf)
        # the script starts with the task's first batch: a worker prepares every task of
        # the topology, and most of them never get a tuple there

    def argv(self) -> List[str]:
        head = self.command[0]
        return [sys.executable if head in PYTHON_COMMANDS else head, *self.command[1:]]

    def start(self) -> None:
        """Start the script and do Storm's handshake (conf, context, pidDir; its pid back)."""
        pid_dir = tempfile.mkdtemp(prefix="skc-shellbolt-")
        ctx = self.collector.context
        try:
            proc = subprocess.Popen(self.argv(), cwd=self.resources, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE)
        except OSError as exc:
            shutil.rmtree(pid_dir, ignore_errors=True)
            raise ShellBoltError(f"bolt {ctx.component_id!r}: cannot run {self.command} in "
                                 f"{self.resources or os.getcwd()}: {exc}") from exc
        self.proc = proc
        self._finalizer = weakref.finalize(self, _stop, proc, pid_dir)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(handshake(self.conf, multilang_context(ctx), pid_dir))
        proc.stdin.flush()
        answer = read_message(proc.stdout, self._what())
        if not isinstance(answer, dict) or "pid" not in answer:
            raise ShellBoltError(f"{self._what()} answered the handshake with {answer!r}, "
                                 f"not its pid")

    def _what(self) -> str:
        ctx = self.collector.context
        return f"bolt {ctx.component_id}[{ctx.task_index}] ({' '.join(self.command)})"

    def execute(self, tup: StormTuple) -> None:
        """Queued: the batch goes to the script at :meth:`finish_batch`."""
        self.queue.append(tup)

    def finish_batch(self) -> None:
        """Send the queued tuples in chunks, each followed by a heartbeat; carry out what the
        script says until its ``sync``. Raises :class:`ShellBoltError` for what the script
        reported or its exit, after failing the tuples it held."""
        queue, self.queue = self.queue, []
        if not queue:
            return
        try:
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            self._send(queue)
        except (ProtocolError, OSError, ShellBoltError) as exc:
            self._died(exc)
        if self.errors:
            errors, self.errors = self.errors, []
            raise ShellBoltError(errors[0] if len(errors) == 1 else
                                 f"{len(errors)} errors; the first: {errors[0]}")

    def _send(self, queue: List[StormTuple]) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        messages = []
        for t in queue:  # all held first: a death mid-batch fails the whole batch
            self.next_id += 1
            tid = str(self.next_id)
            self.pending[tid] = t
            messages.append(tuple_message(tid, t.source_component, t.stream, t.source_task,
                                          t.values))
        chunk: List[bytes] = []
        size = 0
        for data in messages:
            chunk.append(data)
            size += len(data)
            if size >= CHUNK_BYTES:
                self._exchange(proc.stdin, proc.stdout, chunk)
                chunk, size = [], 0
        if chunk:
            self._exchange(proc.stdin, proc.stdout, chunk)

    def _exchange(self, stdin: IO[bytes], stdout: IO[bytes], chunk: List[bytes]) -> None:
        chunk.append(encode(HEARTBEAT))
        stdin.write(b"".join(chunk))
        stdin.flush()
        what = self._what()
        while True:
            msg = read_message(stdout, what)
            if not isinstance(msg, dict):
                raise ProtocolError(f"{what} wrote {msg!r} where a command was expected")
            kind = msg.get("command")
            if kind == "sync":
                return
            if kind == "emit":
                tasks = self._emit(msg)
                if msg.get("need_task_ids", True):
                    stdin.write(encode(tasks))
                    stdin.flush()
            else:
                self._command(kind, msg)

    def _emit(self, msg: Dict[str, Any]) -> List[int]:
        if msg.get("task") is not None:
            raise ShellBoltError(f"{self._what()} emitted to task {msg['task']} (emitDirect): "
                                 f"direct groupings are not supported")
        pending = self.pending
        anchors = [pending[a] for a in msg.get("anchors") or () if a in pending]
        return self.collector.emit(msg.get("tuple") or [], anchors=anchors or None,
                                   stream=msg.get("stream") or DEFAULT_STREAM)

    def _command(self, kind: Any, msg: Dict[str, Any]) -> None:
        if kind == "ack" or kind == "fail":
            t = self.pending.pop(str(msg.get("id")), None)
            if t is not None:
                (self.collector.ack if kind == "ack" else self.collector.fail)(t)
        elif kind == "error":
            self.errors.append(str(msg.get("msg", "")).strip())
        elif kind == "log":
            logging.getLogger(f"storm.multilang.{self.collector.context.component_id}").log(
                _LEVELS.get(msg.get("level", 2), logging.INFO), "%s", msg.get("msg"))
        elif kind != "metrics":
            log.debug("%s: command %r ignored", self._what(), kind)

    def _died(self, exc: BaseException) -> None:
        """The script is gone or broke the protocol: fail what it held, stop it."""
        held = list(self.pending.values())
        self.pending.clear()
        for t in held:
            self.collector.fail(t)
        code = None
        if self.proc is not None:
            self._finalizer()
            code = self.proc.returncode
            self.proc = None
        self.errors.append(f"{exc} (exit code {code}; {len(held)} tuple(s) failed; the "
                           f"script starts again with the next batch)")

    def cleanup(self) -> None:
        if self.proc is not None:
            self._finalizer()
            self.proc = None

    def get_state(self) -> Dict[str, Any]:
        """Nothing: the script's memory is its own (lost on a restart, as in Storm)."""
        return {}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Nothing to restore (see :meth:`get_state`)."""


def shell_bolt_factory(command: Sequence[str], output_fields: OutputFields,
                       resources: Optional[str] = None) -> "ShellBoltFactory":
    """A zero-argument factory of :class:`ShellBolt` for the topology builder."""
    return ShellBoltFactory(tuple(command), output_fields, resources)


class ShellBoltFactory:
    """Builds one :class:`ShellBolt` per task (picklable: it crosses to the executors)."""

    def __init__(self, command: Tuple[str, ...], output_fields: OutputFields,
                 resources: Optional[str]) -> None:
        self.command = command
        self.output_fields = output_fields
        self.resources = resources

    def __call__(self) -> ShellBolt:
        return ShellBolt(self.command, self.output_fields, self.resources)

    def __repr__(self) -> str:
        return f"ShellBolt({' '.join(self.command)!r})"
