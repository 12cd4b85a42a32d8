"""The driver's bolt hosts: started with the run, asked to save and restore state,
stopped with the run (:class:`HostPool`)."""

from __future__ import annotations

import ast
import logging
import os
import pickle
import secrets
import subprocess
import sys
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from storm_kafka_compat.config.topology_spec import TopologySpec
from storm_kafka_compat.executor.stage_tasks import StageLayout
from storm_kafka_compat.executor.calls import Address
from storm_kafka_compat.executor.hosts.client import (BoltHostError, HostDirectory,
                                                     slot_table)
from storm_kafka_compat.executor.hosts.host import Slot, all_slots, deal_slots, host_of
from storm_kafka_compat.executor.hosts.server import HostInit

log = logging.getLogger(__name__)

#: how long a host may take to start and say its address (s)
START_TIMEOUT_S = 60.0


class HostPool:
    """The bolt hosts of one run.

    Parameters
    ----------
    topology_spec : mapping
        The bolt topology as the CONFIG writes it.
    storm_conf : mapping
        What the bolts' ``prepare`` sees.
    spout_fields : sequence of str
        The scheme's fields.
    layout : StageLayout
        The stages; the hosts hold the bolt tasks of stages 1 and later.
    hosts : int, optional
        How many processes: by default one per bolt task up to the machine's cores.
    bind : str
        The address the hosts listen on (the driver's, as the executors reach it).
    """

    def __init__(self, topology_spec: TopologySpec, storm_conf: Mapping[str, Any],
                 spout_fields: Sequence[str], layout: StageLayout, *,
                 hosts: Optional[int] = None, bind: str = "127.0.0.1") -> None:
        slots = all_slots(layout)
        count = hosts or max(1, min(len(slots), os.cpu_count() or 1))
        self.dealt = deal_slots(slots, count)
        self.authkey = secrets.token_bytes(32)
        self.processes: List[subprocess.Popen[bytes]] = []
        self.addresses: List[Address] = []
        try:
            for i, held in enumerate(self.dealt):
                init = HostInit(i, topology_spec, dict(storm_conf), tuple(spout_fields),
                                layout, held, self.authkey, bind, tuple(sys.path), os.getpid())
                self._start(init)
        except BaseException:
            self.close()
            raise
        self.directory = HostDirectory(tuple(self.addresses), self.authkey,
                                       slot_table(host_of(self.dealt)))
        log.info("%d bolt hosts hold the %d bolt tasks behind crossing groupings: %s",
                 len(self.dealt), len(slots),
                 "; ".join(",".join(f"{c}[{t}]" for c, t in held) for held in self.dealt))

    def _start(self, init: HostInit) -> None:
        proc = subprocess.Popen([sys.executable, "-m", "storm_kafka_compat.executor.hosts.server"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.processes.append(proc)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(pickle.dumps(init, protocol=pickle.HIGHEST_PROTOCOL))
        proc.stdin.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        line = proc.stdout.readline()
        if not line or time.monotonic() > deadline:
            code = proc.wait(timeout=5)
            raise BoltHostError(
                f"bolt host {init.index} ({', '.join(f'{c}[{t}]' for c, t in init.slots)}) "
                f"did not start (exit {code}); its error is above")
        said = ast.literal_eval(line.decode().strip())
        self.addresses.append((str(said["address"][0]), int(said["address"][1])))

    def call_all(self, request: Tuple[Any, ...]) -> List[Any]:
        """``request`` to every host in turn; their answers."""
        self.check()
        return [self.directory.call(address, request) for address in self.addresses]

    def check(self) -> None:
        """Raise when a host is gone (its tasks' state since the last save with it)."""
        for i, proc in enumerate(self.processes):
            code = proc.poll()
            if code is not None:
                raise BoltHostError(
                    f"bolt host {i} (pid {proc.pid}, holding "
                    f"{', '.join(f'{c}[{t}]' for c, t in self.dealt[i])}) exited with {code}; "
                    "the run stops and the next start restores the state saved with the last "
                    "commit")

    def dirty(self) -> bool:
        """Some bolt task ran (tuples or a tick) since the last save."""
        return any(self.call_all(("dirty",)))

    def save(self, txid: int) -> Dict[Slot, bytes]:
        """Every bolt task's state (see :mod:`storm_kafka_compat.topology.state`)."""
        saved: Dict[Slot, bytes] = {}
        for part in self.call_all(("save", txid)):
            saved.update(part)
        return saved

    def restore(self, saved: Mapping[Slot, bytes]) -> int:
        """Give each host its tasks' saved state; the tasks restored."""
        restored = 0
        for i, held in enumerate(self.dealt):
            mine = {slot: data for slot, data in saved.items() if slot in held}
            if mine:
                restored += len(self.directory.call(self.addresses[i], ("restore", mine)))
        return restored

    def close(self) -> None:
        """Stop every host (cleanup called on its bolts), killing one that does not."""
        for i, proc in enumerate(self.processes):
            if proc.poll() is None and i < len(self.addresses):
                try:
                    self.directory_call_quietly(self.addresses[i], ("stop",))
                except Exception:  # noqa: BLE001 - it is killed below
                    log.debug("bolt host %d did not take stop", i, exc_info=True)
        for proc in self.processes:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self.processes = []

    def directory_call_quietly(self, address: Address, request: Tuple[Any, ...]) -> Any:
        directory = getattr(self, "directory", None) or HostDirectory(
            tuple(self.addresses), self.authkey, ())
        return directory.call(address, request)
