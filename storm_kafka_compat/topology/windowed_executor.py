"""The bolt that runs a windowed bolt (Storm's ``WindowedBoltExecutor``): it takes the
tuples, keeps the windows (:class:`~.windowing.Windows`), calls the user's
``execute(window)`` when one fires, anchors what the user emits to the window's tuples,
acks tuples when they leave the window, and keeps the window in the task's saved state.
See :mod:`.windowing` for the semantics. Pure; the clock is injected.
"""

from __future__ import annotations

import dataclasses
import pickle
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from storm_kafka_compat.topology.bolts import (OutputCollector, TopologyContext,
                                               normalize_output_fields)
from storm_kafka_compat.topology.state import TaskState
from storm_kafka_compat.topology.ticks import is_tick
from storm_kafka_compat.topology.tuples import DEFAULT_STREAM, StormTuple
from storm_kafka_compat.topology.windowing import (LATE_TUPLE_FIELD, Event, Fired, WindowedBolt,
                                                   Windows)

__all__ = ["WindowedBoltExecutor", "WindowCollector"]

#: (topic, partition, offset) of a tuple's Kafka message
Origin = Tuple[Optional[str], Optional[int], Optional[int]]


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class WindowCollector:
    """The collector a windowed bolt gets: ``emit`` without anchors anchors to every
    tuple of the window being executed (Storm's ``WindowedOutputCollector``)."""

    #: given by the runtime: never part of the bolt's saved state
    runtime_given = True

    def __init__(self, collector: OutputCollector) -> None:
        self.collector = collector
        self.window: List[StormTuple] = []

    def emit(self, values: Sequence[Any], anchors: Optional[Sequence[StormTuple]] = None,
             stream: str = DEFAULT_STREAM) -> List[int]:
        return self.collector.emit(values, anchors=self.window if anchors is None else anchors,
                                   stream=stream)

    def emit_direct(self, task: int, values: Sequence[Any],
                    anchors: Optional[Sequence[StormTuple]] = None,
                    stream: str = DEFAULT_STREAM) -> None:
        self.collector.emit_direct(task, values, self.window if anchors is None else anchors,
                                   stream)

    def ack(self, tup: StormTuple) -> None:
        """A no-op: a window's tuples are acked when they leave the window."""

    def fail(self, tup: StormTuple) -> None:
        self.collector.fail(tup)

    def report_error(self, error: BaseException) -> None:
        self.collector.report_error(error)


def origin(tup: StormTuple) -> Origin:
    return (tup.topic, tup.partition, tup.offset)


class WindowedBoltExecutor:
    """A rich bolt around a :class:`~.windowing.WindowedBolt` (one per task).

    Parameters
    ----------
    bolt : WindowedBolt
        The user's bolt, configured with its window.
    clock : callable returning ms, optional
        Wall-clock time in ms (processing-time windows); injected in tests.
    """

    def __init__(self, bolt: WindowedBolt, clock: Optional[Callable[[], int]] = None) -> None:
        self.bolt = bolt
        self.spec = bolt.window_spec(type(bolt).__name__)
        self.windows = Windows(self.spec)
        self.clock = clock or wall_clock_ms
        #: highest offset seen per (topic, partition): a replay at or below it after a
        #: restore was applied before the save
        self.seen: Dict[Tuple[str, int], int] = {}
        self.seen_at_restore: Dict[Tuple[str, int], int] = {}
        #: restored window events per Kafka message, waiting for their replay
        self.restored: Dict[Origin, List[Event]] = {}
        self.user: Optional[TaskState] = None

    # --- the bolt's face -----------------------------------------------------------------
    def declare_output_fields(self) -> Any:
        declared = normalize_output_fields(self.bolt.declare_output_fields())
        if self.spec.late_stream:
            declared[self.spec.late_stream] = (LATE_TUPLE_FIELD,)
        return declared

    def component_configuration(self) -> Dict[str, Any]:
        wake = self.spec.wake_secs()
        return {} if wake is None else {"topology.tick.tuple.freq.secs": wake}

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: OutputCollector) -> None:
        self.spec.check(context.component_id, conf)
        self.collector = collector
        self.window_collector = WindowCollector(collector)
        self.bolt.prepare(conf, context, self.window_collector)  # type: ignore[arg-type]
        self.user = TaskState(f"{context.component_id}[{context.task_index}]", self.bolt,
                              skip=("window_options",))

    def execute(self, tup: StormTuple) -> None:
        now = self.clock()
        if is_tick(tup):
            self.run(self.windows.advance(now))
            return
        if self.replayed(tup):
            return
        key = origin(tup)
        if key[0] is not None and key[1] is not None and key[2] is not None:
            part = (key[0], key[1])
            if key[2] > self.seen.get(part, -1):
                self.seen[part] = key[2]
        fired, late = self.windows.add(tup, now)
        for t in late:
            if self.spec.late_stream:
                self.collector.emit([t], anchors=[t], stream=self.spec.late_stream)
            self.collector.ack(t)
        self.run(fired)

    def run(self, fired: List[Fired]) -> None:
        for f in fired:
            if f.window is not None:
                self.window_collector.window = f.window.get()
                try:
                    self.bolt.execute(f.window)
                finally:
                    self.window_collector.window = []
            for t in f.expired:
                self.collector.ack(t)

    def cleanup(self) -> None:
        self.bolt.cleanup()

    # --- replay after a restore ------------------------------------------------------------
    def replayed(self, tup: StormTuple) -> bool:
        """True when ``tup`` is the replay of a tuple the restored state holds or had
        applied (it takes the held one's place, or is acked)."""
        if not self.seen_at_restore:
            return False
        key = origin(tup)
        waiting = self.restored.get(key)
        if waiting:
            ev = waiting.pop(0)
            ev.tup = tup
            if not waiting:
                del self.restored[key]
            return True
        if key[0] is None or key[1] is None or key[2] is None:
            return False
        if key[2] <= self.seen_at_restore.get((key[0], key[1]), -1):
            self.collector.ack(tup)
            return True
        return False

    # --- saved state ------------------------------------------------------------------------
    def pre_commit(self, txid: int) -> None:
        self._txid = txid

    def get_state(self) -> Dict[str, Any]:
        user = self.user.save(getattr(self, "_txid", 0)) if self.user is not None else None
        windows = {f.name: getattr(self.windows, f.name)     # the spec is the bolt's
                   for f in dataclasses.fields(self.windows) if f.name != "spec"}
        return {"windows": pickle.dumps(windows, protocol=pickle.HIGHEST_PROTOCOL),
                "seen": dict(self.seen), "user": user}

    def set_state(self, state: Mapping[str, Any]) -> None:
        self.windows = Windows(self.spec, **pickle.loads(state["windows"]))
        self.seen = dict(state["seen"])
        self.seen_at_restore = dict(self.seen)
        self.restored = {}
        for ev in self.windows.queue:
            self.restored.setdefault(origin(ev.tup), []).append(ev)
        if state.get("user") is not None and self.user is not None:
            self.user.restore(state["user"])
