"""How a stage's Spark task reaches the bolt host of its bolt task: the picklable
:class:`HostDirectory` (sent once with the job) and the worker's connections to it."""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Protocol, Tuple

from storm_kafka_compat.errors import PipelineError
from storm_kafka_compat.executor.calls import Address, Unreachable, call, open_connection
from storm_kafka_compat.executor.hosts.host import Slot


class TaskHosts(Protocol):
    """Where the bolt tasks of the crossing stages run: the bolt hosts'
    :class:`HostDirectory`, or an in-process double
    (:class:`~storm_kafka_compat.testing.hosts.InProcessBoltState`)."""

    def deposit(self, batch: int, source: Tuple[str, int], attempt: int,
                tuples: Mapping[Slot, Any]) -> None:
        """Keep ``tuples`` (slot -> tuples) for their tasks until their stage runs."""
        ...

    def run_stage(self, batch: int, stage: int, sources: Mapping[Tuple[str, int], int]
                  ) -> List[Any]:
        """Every host runs ``batch``'s ``stage`` on what ``sources`` deposited; their
        StageAnswers."""
        ...

    def open(self) -> None:
        """This worker's connections to the hosts, made ahead of its first deposit."""
        ...


class BoltHostError(PipelineError):
    """A bolt host could not be reached or could not do what it was asked."""


@dataclass(frozen=True)
class HostDirectory:
    """Where each bolt task lives: the hosts' addresses, the key they take, and the
    host of each slot (component, task)."""

    addresses: Tuple[Address, ...]
    authkey: bytes = field(repr=False)
    slot_host: Tuple[Tuple[Slot, int], ...]

    def address_of(self, slot: Slot) -> Address:
        for s, i in self.slot_host:
            if s == slot:
                return self.addresses[i]
        raise KeyError(f"no bolt host holds {slot[0]}[{slot[1]}]")

    def open(self) -> None:
        """Connect this worker to every host now
        (:func:`~storm_kafka_compat.executor.calls.open_connection`)."""
        for address in self.addresses:
            open_connection(address, self.authkey)

    def call(self, address: Address, request: Tuple[Any, ...]) -> Any:
        """Send ``request`` to the host at ``address`` (one connection per worker and
        host, :func:`~storm_kafka_compat.executor.calls.call`) and return its answer."""
        try:
            status, value = call(address, self.authkey, request)
        except Unreachable as exc:
            raise BoltHostError(
                f"bolt host at {address[0]}:{address[1]} cannot be reached ({exc}); the "
                "driver's bolt hosts serve the tasks behind a fields, global or all "
                "grouping") from exc
        if status != "ok":
            raise BoltHostError(str(value))
        return value

    def deposit(self, batch: int, source: Tuple[str, int], attempt: int,
                tuples: Mapping[Slot, Any]) -> None:
        """Hand ``tuples`` (slot -> tuples) to the hosts of their slots, to be run when
        the driver runs their stage
        (:meth:`~storm_kafka_compat.executor.hosts.host.BoltHost.deposit`): pickled
        here, sent to every host at once, unpickled by the host when the stage runs."""
        by_host: Dict[Address, Dict[Slot, Any]] = {}
        for slot, held in tuples.items():
            by_host.setdefault(self.address_of(slot), {})[slot] = held
        self.call_each({address: ("deposit", batch, source, attempt,
                                  pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
                        for address, part in by_host.items()})

    def call_each(self, requests: Mapping[Address, Tuple[Any, ...]]) -> List[Any]:
        """:meth:`call` each host with its request, all at once (one thread a host);
        the answers in the order of ``requests``."""
        if len(requests) == 1:
            (address, request), = requests.items()
            return [self.call(address, request)]
        with ThreadPoolExecutor(len(requests), thread_name_prefix="bolt-hosts") as ex:
            return list(ex.map(lambda item: self.call(*item), requests.items()))

    def run_stage(self, batch: int, stage: int, sources: Mapping[Tuple[str, int], int]
                  ) -> List[Any]:
        """Every host runs ``batch``'s ``stage`` on what ``sources`` deposited (at once,
        one thread a host); their StageAnswers."""
        request = ("run_stage", batch, stage, dict(sources))
        return self.call_each({address: request for address in self.addresses})


def slot_table(slot_host: Mapping[Slot, int]) -> Tuple[Tuple[Slot, int], ...]:
    return tuple(sorted(slot_host.items()))
