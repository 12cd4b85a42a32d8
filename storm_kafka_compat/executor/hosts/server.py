"""A bolt host process: serves one :class:`~storm_kafka_compat.executor.hosts.host.BoltHost`
over an authenticated local connection (``multiprocessing.connection``).

Started by the driver (:mod:`.pool`) as ``python -m storm_kafka_compat.executor.hosts.server``;
it reads its :class:`HostInit` (pickled) on stdin, prints its address on stdout, and
serves requests until told to stop or until the driver that started it is gone.

Requests, each a tuple, answered ``("ok", value)`` or ``("error", text)``:
``("deposit", batch, source, attempt, {slot: tuples})`` -> tuples kept;
``("run_stage", batch, stage, {source: attempt})`` -> StageAnswer;
``("dirty",)`` -> whether a
task ran since the last save; ``("save", txid)`` ->
{slot: bytes}; ``("restore", {slot: bytes})`` -> restored slots; ``("stop",)``.
"""

from __future__ import annotations

import logging
import os
import pickle
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, Listener
from typing import Any, Dict, Mapping, Tuple

from storm_kafka_compat.config.topology_spec import TopologySpec
from storm_kafka_compat.executor.calls import Answer, accept_each, stop_accepting
from storm_kafka_compat.executor.stage_tasks import StageLayout
from storm_kafka_compat.executor.hosts.host import BoltHost, Slot

log = logging.getLogger(__name__)

#: how often a host checks that the driver that started it is still there (s)
PARENT_CHECK_S = 1.0


@dataclass(frozen=True)
class HostInit:
    """What a host is started with (pickled to its stdin)."""

    index: int
    topology_spec: TopologySpec
    storm_conf: Mapping[str, Any]
    spout_fields: Tuple[str, ...]
    layout: StageLayout
    slots: Tuple[Slot, ...]
    authkey: bytes
    bind: str
    sys_path: Tuple[str, ...]
    parent_pid: int


class HostServer:
    """Serves ``host``'s requests on ``listener``, one thread a connection."""

    def __init__(self, host: BoltHost, listener: Listener) -> None:
        self.host = host
        self.listener = listener
        self.lock = threading.Lock()
        self.stopped = threading.Event()

    def serve(self) -> None:
        accept_each(self.listener, self.stopped, self.connection, "bolt-host-conn")

    def connection(self, conn: Connection) -> None:
        with conn:
            while True:
                try:
                    request = conn.recv()
                except (EOFError, OSError):
                    return
                conn.send(self.answer(request))
                if request[0] == "stop":
                    self.stop()
                    return

    def answer(self, request: Tuple[Any, ...]) -> Answer:
        try:
            with self.lock:
                return "ok", self._handle(request)
        except Exception as exc:  # noqa: BLE001 - the caller gets it as text
            return "error", (f"bolt host: {type(exc).__name__}: {exc}\n"
                             + traceback.format_exc())

    def _handle(self, request: Tuple[Any, ...]) -> Any:
        what = request[0]
        if what == "deposit":
            _, batch, source, attempt, tuples = request
            return self.host.deposit(batch, tuple(source), attempt, tuples)
        if what == "run_stage":
            _, batch, stage, sources = request
            return self.host.run_stage(batch, stage, sources)
        if what == "dirty":
            return bool(self.host.dirty)
        if what == "save":
            return self.host.save(request[1])
        if what == "restore":
            return self.host.restore(request[1])
        if what == "ping":
            return os.getpid()
        if what == "stop":
            return None
        raise ValueError(f"unknown request {what!r}")

    def stop(self) -> None:
        try:
            self.host.cleanup()
        finally:
            stop_accepting(self.listener, self.stopped)


def watch_parent(parent_pid: int, server: HostServer) -> None:
    """Exit when the driver that started this host is gone (killed, crashed)."""
    while not server.stopped.is_set():
        if os.getppid() != parent_pid:
            os._exit(0)
        time.sleep(PARENT_CHECK_S)


def main() -> None:
    init: HostInit = pickle.load(sys.stdin.buffer)
    for entry in reversed(init.sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format=f"bolt host {init.index}: %(levelname)s %(message)s")
    host = BoltHost(init.topology_spec, init.storm_conf, init.spout_fields, init.layout,
                    init.slots)
    listener = Listener((init.bind, 0), authkey=init.authkey)
    server = HostServer(host, listener)
    address: Dict[str, Any] = {"address": listener.address, "pid": os.getpid()}
    sys.stdout.write(repr(address) + "\n")
    sys.stdout.flush()
    threading.Thread(target=watch_parent, args=(init.parent_pid, server), daemon=True).start()
    server.serve()


if __name__ == "__main__":
    main()
