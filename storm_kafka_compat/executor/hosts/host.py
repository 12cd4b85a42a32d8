"""One bolt host's work: some bolt tasks of the crossing stages, prepared once, run
batch after batch, saved and restored. Pure: no sockets (:mod:`.server` serves it).
"""

from __future__ import annotations

import logging
import pickle
import time
from typing import (AbstractSet, Any, Callable, Dict, Iterable, List, Mapping, Sequence, Set,
                    Tuple, Union)

from storm_kafka_compat.config.topology_spec import TopologySpec
from storm_kafka_compat.executor.dag import LocalRuntime
from storm_kafka_compat.executor.gc_pause import collection_paused
from storm_kafka_compat.executor.stage_tasks import GroupResult, StageLayout, run_stage_group
from storm_kafka_compat.structs import BoltError, merge_errors
from storm_kafka_compat.topology.spec import from_spec
from storm_kafka_compat.topology.state import TaskState, slot_name
from storm_kafka_compat.topology.ticks import TickSchedule, tick_tuple
from storm_kafka_compat.topology.tuples import BatchedTuples, StormTuple, TupleBatch

log = logging.getLogger(__name__)

#: a bolt task: (component, task index)
Slot = Tuple[str, int]
#: who deposited tuples for a batch: ("s", Spark partition) for the fetching tasks,
#: ("d", stage) for what the driver forwards from an earlier host stage
Source = Tuple[str, int]
#: where a root's spout tuple came from: (topic, partition, offset)
Origin = Tuple[str, int, int]
#: one stage's run of one bolt task in one batch: (batch, stage, slot)
RunKey = Tuple[int, int, Slot]

#: what is deposited for one bolt task: its tuples, a TupleBatch of them, or a Spark
#: task's TupleBatches, one per plan it read
Deposited = Union[List[StormTuple], TupleBatch, List[TupleBatch]]

#: batches whose answers a host keeps for a retried Spark task
KEPT_BATCHES = 2


class BoltHost:
    """The bolt tasks ``slots`` of a topology, each one instance for the life of the job.

    Parameters
    ----------
    topology_spec : TopologySpec
        The bolt topology as the CONFIG writes it.
    storm_conf : mapping
        What the bolts' ``prepare`` sees.
    spout_fields : sequence of str
        The scheme's fields.
    layout : StageLayout
        The stages: which bolts run behind which shuffle.
    slots : sequence of (component, task)
        The bolt tasks this host holds.
    """

    def __init__(self, topology_spec: TopologySpec, storm_conf: Mapping[str, Any],
                 spout_fields: Sequence[str], layout: StageLayout,
                 slots: Sequence[Slot], clock: Callable[[], float] = time.monotonic) -> None:
        self.layout = layout
        self.slots = tuple(slots)
        self.clock = clock
        periods = layout.tick_periods()
        #: when each held task that takes ticks gets its next one
        self.ticks = TickSchedule({slot: periods[slot[0]] for slot in self.slots
                                   if slot[0] in periods}, clock)
        self.runtime = LocalRuntime(from_spec(topology_spec), storm_conf,
                                    spout_fields=spout_fields)
        self.states: Dict[Slot, TaskState] = {
            slot: TaskState(slot_name(slot), self.runtime.runners[slot[0]][slot[1]].bolt)
            for slot in self.slots}
        self._answers: Dict[RunKey, GroupResult] = {}
        #: the last batch each slot ran (a batch older than it is not run again)
        self.last_batch: Dict[Slot, int] = {}
        #: tuples deposited for a batch: (batch, source, attempt) -> slot -> their batches
        self._inbox: Dict[Tuple[int, Source, int], Dict[Slot, List[TupleBatch]]] = {}
        #: the same, as the Spark tasks sent them (pickled), until their stage runs
        self._packed: Dict[Tuple[int, Source, int], List[bytes]] = {}
        #: a stage's answer per batch, for a driver that asks again
        self._stage_answers: Dict[Tuple[int, int], StageAnswer] = {}
        #: the tasks that ran tuples or a tick since the last save
        self.dirty: Set[Slot] = set()

    def run(self, batch: int, stage: int, slot: Slot, batches: Sequence[TupleBatch]
            ) -> GroupResult:
        """Run the tuples of ``batches``, each made as it is run, on bolt task ``slot``
        (and the bolts of ``stage`` it feeds through shuffles, here); the same answer
        again for a (batch, stage, slot) it already ran (a Spark task run again after
        its worker died)."""
        key = (batch, stage, slot)
        held = self._answers.get(key)
        if held is not None:
            log.info("bolt task %s: batch %d stage %d ran already; answering from what was "
                     "kept (a retried Spark task)", slot_name(slot), batch, stage)
            return held
        if slot not in self.states:
            raise KeyError(f"bolt task {slot_name(slot)} is not held by this host "
                           f"(it holds {', '.join(map(slot_name, self.slots))})")
        period = self.ticks.due(slot)
        # Storm's executor puts the tick in the task's queue
        ticks = [tick_tuple(period)] if period is not None else []
        run = BatchedTuples(batches, ticks)
        if len(run):
            self.dirty.add(slot)
        result = run_stage_group({slot: run}, topology=self.runtime,
                                 local=frozenset(self.layout.stages[stage]))
        self._answers[key] = result
        self.last_batch[slot] = batch
        for old in [k for k in self._answers if k[0] <= batch - KEPT_BATCHES]:
            del self._answers[old]
        return result

    def deposit(self, batch: int, source: Source, attempt: int,
                tuples: "Mapping[Slot, Deposited] | bytes") -> None:
        """Keep ``tuples`` for their tasks until the driver runs ``batch``'s stage; a
        later attempt of the same source replaces nothing (the driver names the attempt
        whose results it took). ``tuples`` as bytes (a pickled mapping, as a Spark task
        sends them) are kept as they came and unpickled when their stage runs: the
        task that sent them does not wait for it, and an attempt the driver did not
        take is never unpickled."""
        key = (batch, tuple(source), attempt)
        if isinstance(tuples, (bytes, bytearray)):
            self._packed.setdefault(key, []).append(bytes(tuples))  # type: ignore[arg-type]
            return
        self._keep(key, tuples)  # type: ignore[arg-type]

    def _keep(self, key: Tuple[int, Source, int], tuples: "Mapping[Slot, Deposited]") -> None:
        box = self._inbox.setdefault(key, {})
        for slot, held in tuples.items():
            kept = box.setdefault(tuple(slot), [])  # type: ignore[arg-type]
            if isinstance(held, TupleBatch):
                kept.append(held)
                continue
            # a Spark task's batches, one per plan; or tuples (in process, the tests)
            kept.extend(part for part in held if isinstance(part, TupleBatch))
            loose = [t for t in held if isinstance(t, StormTuple)]
            if loose:
                kept.append(TupleBatch(loose))

    def _unpack(self, batch: int, sources: Mapping[Source, int]) -> None:
        """Unpickle what the taken attempts sent for ``batch``; drop the rest of it and
        what older batches left."""
        for key in [k for k in self._packed if k[0] <= batch]:
            blobs = self._packed.pop(key)
            if key[0] == batch and sources.get(key[1]) == key[2]:
                for blob in blobs:
                    self._keep(key, pickle.loads(blob))

    def run_stage(self, batch: int, stage: int, sources: Mapping[Source, int]) -> StageAnswer:
        """Run what was deposited for ``batch`` by ``sources`` (source -> the attempt the
        driver took) on this host's tasks of ``stage``; the same answer if asked again.
        Deposits of other attempts are dropped."""
        key = (batch, stage)
        held = self._stage_answers.get(key)
        if held is not None:
            return held
        with collection_paused():
            return self._run_stage(key, sources)

    def _run_stage(self, key: Tuple[int, int], sources: Mapping[Source, int]) -> StageAnswer:
        batch, stage = key
        self._unpack(batch, sources)
        names = frozenset(self.layout.stages[stage])
        inputs: Dict[Slot, List[TupleBatch]] = {}
        for (b, source, attempt), box in list(self._inbox.items()):
            if b != batch:
                if b < batch - KEPT_BATCHES:
                    del self._inbox[(b, source, attempt)]
                continue
            for slot in [s for s in box if s[0] in names]:
                tuples = box.pop(slot)
                if sources.get(source) == attempt:
                    inputs.setdefault(slot, []).extend(tuples)
            if not box:
                del self._inbox[(b, source, attempt)]
        answer = StageAnswer()
        started = self.clock()
        # every held task of the stage runs, input or not: its host delivers its ticks
        # and moves its windows' time
        for slot in sorted(set(inputs) | {s for s in self.slots if s[0] in names}):
            answer.add(self.run(batch, stage, slot, inputs.get(slot, [])))
        if answer.failed_roots:
            answer.origins = origins_of(answer.failed_roots, inputs.values())
        answer.seconds = self.clock() - started
        self._stage_answers[key] = answer
        for old in [k for k in self._stage_answers if k[0] <= batch - KEPT_BATCHES]:
            del self._stage_answers[old]
        return answer

    def save(self, txid: int) -> Dict[Slot, bytes]:
        """Every held task's state (see :mod:`storm_kafka_compat.topology.state`)."""
        self.dirty.clear()
        return {slot: state.save(txid) for slot, state in self.states.items()}

    def restore(self, saved: Mapping[Slot, bytes]) -> List[Slot]:
        """Put back the saved state of the held tasks; the tasks restored."""
        done = []
        for slot, data in saved.items():
            state = self.states.get(slot)
            if state is not None:
                state.restore(data)
                done.append(slot)
        return done

    def cleanup(self) -> None:
        self.runtime.cleanup()


def origins_of(roots: AbstractSet[int], inputs: Iterable[Sequence[TupleBatch]]
               ) -> Dict[int, Origin]:
    """Root -> ``(topic, partition, offset)`` for the ``roots`` that an input tuple of
    one root names: a stage 0 sends no acker record for a root whose tuples all went
    to bolts whose trees end in execute, so its host names the offset of a failure."""
    out: Dict[int, Origin] = {}
    for batches in inputs:
        for batch in batches:
            for topic, partition, offset, root in batch.root_origins():
                if root in roots and root not in out and topic is not None:
                    assert partition is not None and offset is not None
                    out[root] = (topic, partition, offset)
    return out


class StageAnswer:
    """What one host's tasks of a stage did in a batch: the tuples they send on, the
    acker messages folded per root, the roots failed (with the offset of those an
    input names: :func:`origins_of`), the errors, and the seconds the stage took
    (its tasks' work on the host)."""

    def __init__(self) -> None:
        self.routed: List[Tuple[str, int, StormTuple]] = []
        self.pairs: Dict[int, int] = {}
        self.failed_roots: Set[int] = set()
        self.origins: Dict[int, Origin] = {}
        self.errors: List[BoltError] = []
        self.seconds = 0.0

    def __getstate__(self) -> Dict[str, Any]:
        return {"slots": [(c, t) for c, t, _ in self.routed],
                "routed": TupleBatch([tup for _, _, tup in self.routed]),
                "pairs": self.pairs, "failed_roots": self.failed_roots,
                "origins": self.origins, "errors": self.errors, "seconds": self.seconds}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.routed = [(c, t, tup) for (c, t), tup in zip(state["slots"],
                                                          state["routed"].tuples)]
        self.pairs = state["pairs"]
        self.failed_roots = state["failed_roots"]
        self.origins = state["origins"]
        self.errors = state["errors"]
        self.seconds = state["seconds"]

    def add(self, result: GroupResult) -> None:
        self.routed.extend(result.routed)
        pairs = self.pairs
        for root, value in result.pairs.items():
            pairs[root] = pairs.get(root, 0) ^ value
        self.failed_roots.update(result.failed_roots)
        self.errors = merge_errors(self.errors + result.errors)


def deal_slots(slots: Sequence[Slot], hosts: int) -> List[Tuple[Slot, ...]]:
    """``slots`` dealt over ``hosts`` hosts in turn (a component's tasks spread)."""
    dealt: List[List[Slot]] = [[] for _ in range(max(1, min(hosts, len(slots))))]
    for i, slot in enumerate(slots):
        dealt[i % len(dealt)].append(slot)
    return [tuple(d) for d in dealt]


def host_of(dealt: Sequence[Sequence[Slot]]) -> Dict[Slot, int]:
    """Slot -> the index of the host that holds it."""
    return {slot: i for i, held in enumerate(dealt) for slot in held}


def all_slots(layout: StageLayout) -> Tuple[Slot, ...]:
    """The bolt tasks of every crossing stage, in stage order."""
    return tuple(slot for stage in layout.slots for slot in stage)
