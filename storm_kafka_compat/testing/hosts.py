"""The bolt tasks of the crossing stages in this process, without bolt host processes:
``Pipeline(job, runner=InProcessRunner(kafka), bolt_tasks=InProcessBoltState.factory(
states, clock=clock))``. One :class:`~storm_kafka_compat.executor.hosts.host.BoltHost` holds every
task, its ticks on ``clock`` (seconds); state versions are kept in ``states`` (a
:class:`MemoryStates`), so a second pipeline given the same ``states`` restores what the
first saved with its last commit, as a restarted driver restores from disk.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.executor.stage_tasks import StageLayout
from storm_kafka_compat.executor.hosts.host import BoltHost, Slot, all_slots
from storm_kafka_compat.structs import TopicPartition


@dataclass
class MemoryStates:
    """Saved versions: (offsets, state per task), oldest first."""

    versions: List[Tuple[Dict[TopicPartition, int], Dict[Slot, bytes]]] = field(
        default_factory=list)


class InProcessBoltState:
    """A :class:`~storm_kafka_compat.engine.bolt_state.BoltTasks` in this process."""

    def __init__(self, job: JobConfig, layout: StageLayout, spout_fields: Sequence[str],
                 storm_conf: Mapping[str, object], *, states: MemoryStates,
                 clock: Callable[[], float] = time.monotonic) -> None:
        assert job.topology_spec is not None
        self.host = BoltHost(job.topology_spec, dict(storm_conf), spout_fields, layout,
                             all_slots(layout), clock=clock)
        self.states = states
        self.txid = len(states.versions)
        self.saved_offsets: Optional[Dict[TopicPartition, int]] = None

    @classmethod
    def factory(cls, states: MemoryStates, *, clock: Callable[[], float] = time.monotonic
                ) -> Callable[..., "InProcessBoltState"]:
        def make(job: JobConfig, layout: StageLayout, spout_fields: Sequence[str],
                 storm_conf: Mapping[str, object]) -> "InProcessBoltState":
            return cls(job, layout, spout_fields, storm_conf, states=states, clock=clock)
        return make

    @property
    def directory(self) -> "InProcessBoltState":
        return self

    def open(self) -> None:
        """Nothing to connect to: the host is in this process."""

    def deposit(self, batch: int, source: Tuple[str, int], attempt: int,
                tuples: Mapping[Slot, Any]) -> None:
        self.host.deposit(batch, source, attempt, tuples)

    def run_stage(self, batch: int, stage: int, sources: Mapping[Tuple[str, int], int]
                  ) -> List[Any]:
        return [self.host.run_stage(batch, stage, sources)]

    def restore(self, offsets: Mapping[TopicPartition, int]) -> None:
        for saved_offsets, saved in reversed(self.states.versions):
            if all(offsets.get(tp) == off for tp, off in saved_offsets.items()):
                self.host.restore(saved)
                self.saved_offsets = dict(offsets)
                return

    def save(self, offsets: Dict[TopicPartition, int]) -> None:
        if offsets == self.saved_offsets and not self.host.dirty:
            return
        self.saved_offsets = dict(offsets)
        self.txid += 1
        self.states.versions.append((dict(offsets), self.host.save(self.txid)))

    def check(self) -> None:
        """Nothing runs elsewhere to be gone."""

    def close(self) -> None:
        self.host.cleanup()
