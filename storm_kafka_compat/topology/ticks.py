"""Tick tuples, as Storm sends them: on the ``__system`` component's ``__tick`` stream,
one value ``rate_secs``, unanchored, to every task of a bolt whose configuration sets
``topology.tick.tuple.freq.secs`` (the topology's key, or the bolt's own
``component_configuration()`` / ``get_component_configuration()``, or ``tick_freq_secs``
in its CONFIG entry; the bolt's own setting wins, as Storm merges a component's
configuration over the topology's).

A tick is not anchored, so acking or failing one through a collector does nothing and
no acker ever hears of it. :func:`is_tick` is Storm's ``TupleUtils.isTick``.

When ticks arrive: a bolt task that takes ticks runs in a bolt host
(:mod:`storm_kafka_compat.executor.hosts`) and is called once per batch, input or not; the host
delivers one tick before the batch's tuples when the task's period has passed since
its last tick (:class:`TickSchedule`, at most one per period per task; a call later
than a whole period does not make up the missed ones). While no batch runs (nothing to
fetch), the driver runs the bolt stages alone every half period, so a tick is late by
at most half a period plus a batch (docs/bolts-and-acker.md, "Tick tuples").

Pure; time is injected.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Mapping, Optional

from storm_kafka_compat.config.topology_spec import TICK_FREQ_KEY, check_tick_freq
from storm_kafka_compat.topology.tuples import StormTuple

__all__ = ["SYSTEM_COMPONENT", "TICK_STREAM", "TICK_FREQ_KEY", "is_tick", "tick_tuple",
           "tick_freq_of", "TickSchedule"]

#: Storm's ``Constants.SYSTEM_COMPONENT_ID``
SYSTEM_COMPONENT = "__system"
#: Storm's ``Constants.SYSTEM_TICK_STREAM_ID``
TICK_STREAM = "__tick"
#: Storm's ``Constants.SYSTEM_TASK_ID``
SYSTEM_TASK = -1
TICK_FIELDS = ("rate_secs",)


def is_tick(tup: Any) -> bool:
    """True for a tick tuple (Storm's ``TupleUtils.isTick``)."""
    return (getattr(tup, "source_component", None) == SYSTEM_COMPONENT
            and getattr(tup, "stream", None) == TICK_STREAM)


def tick_tuple(rate_secs: float) -> StormTuple:
    """One tick: unanchored, from ``__system`` on ``__tick``, value ``rate_secs``."""
    rate: Any = int(rate_secs) if float(rate_secs).is_integer() else rate_secs
    return StormTuple([rate], TICK_FIELDS, stream=TICK_STREAM,
                      source_component=SYSTEM_COMPONENT, source_task=SYSTEM_TASK)


def component_conf(bolt: Any) -> Mapping[str, Any]:
    """The bolt's own configuration: ``component_configuration()`` or Storm's spelling
    ``get_component_configuration()`` / ``getComponentConfiguration()``; {} without."""
    for name in ("component_configuration", "get_component_configuration",
                 "getComponentConfiguration"):
        method = getattr(bolt, name, None)
        if callable(method):
            conf = method()
            return dict(conf) if conf else {}
    return {}


def tick_freq_of(bolt: Any, entry_secs: Optional[float], topology_conf: Mapping[str, Any],
                 name: str = "bolt") -> Optional[float]:
    """The tick period of a bolt, in seconds, or None: its CONFIG entry's
    ``tick_freq_secs``, else its own configuration's key, else the topology's."""
    if entry_secs is not None:
        return check_tick_freq(entry_secs, f"bolts.{name}.tick_freq_secs")
    own = component_conf(bolt).get(TICK_FREQ_KEY)
    if own is not None:
        return check_tick_freq(own, f"bolts.{name} component configuration {TICK_FREQ_KEY}")
    return check_tick_freq(topology_conf.get(TICK_FREQ_KEY), f"topology.{TICK_FREQ_KEY}")


class TickSchedule:
    """When each task gets its next tick.

    Parameters
    ----------
    periods : mapping
        Task key -> period in seconds.
    clock : callable returning seconds
        Monotonic time; the first tick of a task is one period after it is first asked.
    """

    def __init__(self, periods: Mapping[Any, float],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.periods: Dict[Any, float] = dict(periods)
        self.clock = clock
        self._next: Dict[Any, float] = {}

    def due(self, key: Any) -> Optional[float]:
        """The period of ``key`` when a tick is due now (and schedule the next), else
        None. At most one per call: a task called after several periods gets one."""
        period = self.periods.get(key)
        if period is None:
            return None
        now = self.clock()
        nxt = self._next.get(key)
        if nxt is None:
            self._next[key] = now + period
            return None
        if now < nxt:
            return None
        nxt += period
        self._next[key] = nxt if nxt > now else now + period
        return float(period)

    def next_due(self) -> Optional[float]:
        """The earliest time a tick falls due, None before any task was asked."""
        if not self._next:
            return None
        return float(min(self._next.values()))
