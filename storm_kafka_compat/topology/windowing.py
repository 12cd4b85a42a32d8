"""Storm's windowed bolts (``BaseWindowedBolt``): the bolt is given windows of tuples,
not tuples.

A window is defined by its length and its sliding interval, each a :class:`Count` of
tuples or a :class:`Duration`; a tumbling window slides by its length. Without a
timestamp field, time is the time a tuple reaches the bolt task (processing time);
with ``with_timestamp_field`` (or ``with_timestamp_extractor``) it is the tuple's own
(event time, in ms): windows then close on *watermarks*, computed every
``with_watermark_interval`` as the lowest, over the input streams seen, of the largest
timestamp seen on each, less ``with_lag``; a tuple older than the last watermark is
late: sent on ``with_late_tuple_stream`` (one field ``tuple``) or dropped, and acked.

Windows, as Storm computes them:

* count slide: the window fires after every ``slide`` tuples (event time: after every
  ``slide`` tuples up to the watermark), holding the last ``length`` tuples (by
  count), or those younger than ``length`` (by duration);
* duration slide, processing time: every ``slide`` ms; event time: windows end on
  multiples of ``slide`` (from the epoch), ``(end - length, end]``, and fire once the
  watermark reaches their end; windows without a tuple are skipped.

The bolt's ``execute(window)`` gets a :class:`TupleWindow`: ``get()``, ``get_new()``
(not in the previous window), ``get_expired()`` (left since the previous window),
``get_start_timestamp()``, ``get_end_timestamp()``. What it emits is anchored to every
tuple of the window. A tuple is acked when it leaves the window (it expires), so its
Kafka offset is committed only then, as in Storm: ``topology.message.timeout.secs``
must exceed the window's length plus its slide (checked).

Time comes from the ticks the bolt host delivers (:mod:`.ticks`: every batch, and at
the window's own period when idle): the executor's clock is injected.

State across a crash: the window (its tuples' values and where each came from, the
watermark, the next window end) is part of the task's saved state
(:meth:`WindowedBoltExecutor.get_state`), saved with the offsets the commit writes. The
tuples still in a window were not acked, so their offsets are above the commit: a
restart replays them. A replayed tuple already in the restored window takes its place
there (so it is acked when it leaves, under its new tree), and one the task had seen
before the save (its offset at or below the highest the task saw from its partition)
is acked and not added again; so each window fires once across a crash. A stateful
windowed bolt (``init_state``) keeps its :class:`~.state.KeyValueState` in the same
saved state.

Pure; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple, Union

from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.topology.bolts import OutputCollector, TopologyContext
from storm_kafka_compat.topology.state import KeyValueState
from storm_kafka_compat.topology.tuples import StormTuple

__all__ = ["Count", "Duration", "WindowedBolt", "StatefulWindowedBolt", "TupleWindow",
           "WindowSpec", "Windows", "LATE_TUPLE_FIELD"]

#: the field of a late tuple on the late-tuple stream (Storm: "tuple")
LATE_TUPLE_FIELD = "tuple"
#: Storm's default watermark interval
DEFAULT_WATERMARK_MS = 1000


@dataclass(frozen=True)
class Count:
    """A window length or slide in tuples (Storm's ``BaseWindowedBolt.Count``)."""

    value: int

    @classmethod
    def of(cls, value: int) -> "Count":
        return cls(value)


@dataclass(frozen=True)
class Duration:
    """A window length, slide, lag or interval in ms (``BaseWindowedBolt.Duration``)."""

    value: int

    @classmethod
    def of(cls, ms: int) -> "Duration":
        return cls(int(ms))

    @classmethod
    def seconds(cls, s: float) -> "Duration":
        return cls(int(s * 1000))

    @classmethod
    def minutes(cls, m: float) -> "Duration":
        return cls(int(m * 60000))


Length = Union[Count, Duration]


@dataclass(frozen=True)
class WindowSpec:
    """A window's definition, checked."""

    length: Length
    slide: Length
    timestamp_field: Optional[str] = None
    timestamp_extractor: Optional[Callable[[StormTuple], int]] = None
    lag_ms: int = 0
    watermark_ms: int = DEFAULT_WATERMARK_MS
    late_stream: Optional[str] = None

    @property
    def event_time(self) -> bool:
        return self.timestamp_field is not None or self.timestamp_extractor is not None

    def timestamp(self, tup: StormTuple) -> int:
        if self.timestamp_extractor is not None:
            return int(self.timestamp_extractor(tup))
        value = tup[str(self.timestamp_field)]
        if value is None:
            raise ValueError(f"tuple {tup!r} has no timestamp in field {self.timestamp_field!r}")
        return int(value)

    def wake_secs(self) -> Optional[float]:
        """How often the executor needs the time (its tick period), None when only
        tuples move it (count windows in processing time)."""
        if self.event_time:
            return self.watermark_ms / 1000.0
        if isinstance(self.slide, Duration) or isinstance(self.length, Duration):
            step = self.slide.value if isinstance(self.slide, Duration) else self.length.value
            return max(0.05, step / 4000.0)
        return None

    def check(self, name: str, conf: Mapping[str, Any]) -> None:
        """Storm's checks: positive sizes, a slide no longer than the length, and a
        message timeout longer than a duration window plus its slide."""
        for what, v in (("length", self.length), ("sliding interval", self.slide)):
            if v.value <= 0:
                raise TopologyError(f"windowed bolt {name!r}: window {what} {v} must be > 0",
                                    key=f"bolts.{name}", value=v.value)
        if type(self.length) is type(self.slide) and self.slide.value > self.length.value:
            raise TopologyError(f"windowed bolt {name!r}: sliding interval {self.slide} is "
                                f"longer than the window {self.length}", key=f"bolts.{name}")
        timeout_s = conf.get("topology.message.timeout.secs")
        if timeout_s and isinstance(self.length, Duration):
            span = self.length.value + (self.slide.value if isinstance(self.slide, Duration)
                                        else 0)
            if span + self.lag_ms > int(timeout_s) * 1000:
                raise TopologyError(
                    f"windowed bolt {name!r}: window length plus sliding interval plus lag "
                    f"({span + self.lag_ms} ms) exceeds topology.message.timeout.secs "
                    f"({timeout_s} s): its tuples would time out in the window; raise the "
                    f"timeout", key="topology.message.timeout.secs", value=timeout_s)


class TupleWindow:
    """The tuples of one window (Storm's ``TupleWindow``)."""

    def __init__(self, tuples: List[StormTuple], new: List[StormTuple],
                 expired: List[StormTuple], start_ts: Optional[int], end_ts: Optional[int]
                 ) -> None:
        self._tuples = tuples
        self._new = new
        self._expired = expired
        self._start = start_ts
        self._end = end_ts

    def get(self) -> List[StormTuple]:
        """Every tuple in the window, oldest first."""
        return list(self._tuples)

    def get_new(self) -> List[StormTuple]:
        """The tuples not in the previous window."""
        return list(self._new)

    def get_expired(self) -> List[StormTuple]:
        """The tuples that left since the previous window."""
        return list(self._expired)

    def get_start_timestamp(self) -> Optional[int]:
        """Start of the window (ms, exclusive) for a duration window, else None."""
        return self._start

    def get_end_timestamp(self) -> Optional[int]:
        """End of the window (ms, inclusive): its reference time."""
        return self._end

    getNew = get_new  # noqa: N815 - Storm's spelling
    getExpired = get_expired  # noqa: N815
    getStartTimestamp = get_start_timestamp  # noqa: N815
    getEndTimestamp = get_end_timestamp  # noqa: N815

    def __len__(self) -> int:
        return len(self._tuples)

    def __repr__(self) -> str:
        return (f"TupleWindow({len(self._tuples)} tuples, {len(self._new)} new, "
                f"{len(self._expired)} expired, end={self._end})")


# --- the window manager (pure) ----------------------------------------------------------

@dataclass
class Event:
    tup: StormTuple
    ts: int
    seq: int


@dataclass
class Fired:
    """One evaluation: the window to give the bolt (None when it held no tuple) and
    the tuples that left since the previous one (to ack)."""

    window: Optional[TupleWindow]
    expired: List[StormTuple] = field(default_factory=list)


@dataclass
class Windows:
    """The windows of one task: events in arrival order, triggers, watermarks.

    Every method returns what happened: windows fired, tuples expired (to ack), late
    tuples (to send on the late stream and ack). Times are ms.
    """

    spec: WindowSpec
    queue: List[Event] = field(default_factory=list)
    prev: Set[int] = field(default_factory=set)
    expired: List[StormTuple] = field(default_factory=list)
    seq: int = 0
    since_trigger: int = 0
    next_trigger_ms: Optional[int] = None
    stream_max: Dict[Tuple[str, str], int] = field(default_factory=dict)
    watermark: Optional[int] = None
    next_window_end: int = 0
    last_processed_ts: int = -(2 ** 62)

    def add(self, tup: StormTuple, now_ms: int) -> Tuple[List[Fired], List[StormTuple]]:
        """Take one tuple; (windows fired, late tuples)."""
        spec = self.spec
        if spec.event_time:
            ts = spec.timestamp(tup)
            key = (tup.source_component, tup.stream)
            if ts > self.stream_max.get(key, -(2 ** 62)):
                self.stream_max[key] = ts
            if self.watermark is not None and ts < self.watermark:
                return [], [tup]
        else:
            ts = now_ms
        self.seq += 1
        self.queue.append(Event(tup, ts, self.seq))
        fired: List[Fired] = []
        if not spec.event_time and isinstance(spec.slide, Count):
            self.since_trigger += 1
            if self.since_trigger >= spec.slide.value:
                fired.extend(self.trigger(now_ms))
        return fired, []

    def advance(self, now_ms: int) -> List[Fired]:
        """Time moved to ``now_ms`` (the executor's tick): processing-time triggers due;
        in event time, a watermark (the tick's period is the watermark interval)."""
        spec = self.spec
        fired: List[Fired] = []
        if spec.event_time:
            fired.extend(self.emit_watermark())
        elif isinstance(spec.slide, Duration):
            if self.next_trigger_ms is None:
                self.next_trigger_ms = now_ms + spec.slide.value
            while now_ms >= self.next_trigger_ms:
                fired.extend(self.trigger(self.next_trigger_ms))
                self.next_trigger_ms += spec.slide.value
        return fired

    def emit_watermark(self) -> List[Fired]:
        if not self.stream_max:
            return []
        wm = min(self.stream_max.values()) - self.spec.lag_ms
        if self.watermark is not None and wm <= self.watermark:
            return []
        self.watermark = wm
        if isinstance(self.spec.slide, Count):
            return self._count_on_watermark(wm)
        return self._time_on_watermark(wm)

    def _count_on_watermark(self, wm: int) -> List[Fired]:
        n = self.spec.slide.value
        fired: List[Fired] = []
        seen = 0
        refs = []
        for ev in self.queue:
            if self.last_processed_ts < ev.ts <= wm:
                seen += 1
                if seen % n == 0:
                    refs.append(ev.ts)
        for ref in refs:
            fired.extend(self.trigger(ref))
            self.last_processed_ts = ref
        return fired

    def _time_on_watermark(self, wm: int) -> List[Fired]:
        slide = self.spec.slide.value
        fired: List[Fired] = []
        end = self.next_window_end
        while end <= wm:
            got = self.trigger(end)
            if any(f.window is not None for f in got):
                fired.extend(got)
                end += slide
                continue
            later = [ev.ts for ev in self.queue if end < ev.ts <= wm]
            if not later:
                break
            first = min(later)
            end = first if first % slide == 0 else first + slide - first % slide
        self.next_window_end = end
        return fired

    def _action(self, ev: Event, ref: int, count_keep: Dict[int, bool]) -> str:
        """EXPIRE, PROCESS or KEEP (a future event) for ``ev`` at reference ``ref``."""
        length = self.spec.length
        if isinstance(length, Count):
            if self.spec.event_time and ev.ts > ref:
                return "KEEP"
            return "PROCESS" if count_keep.get(ev.seq, False) else "EXPIRE"
        diff = ref - ev.ts
        if diff < 0:
            return "KEEP"
        return "PROCESS" if diff < length.value else "EXPIRE"

    def trigger(self, ref: int) -> List[Fired]:
        """Evaluate the window whose reference time (end) is ``ref``."""
        self.since_trigger = 0
        count_keep: Dict[int, bool] = {}
        if isinstance(self.spec.length, Count):
            eligible = [ev.seq for ev in self.queue
                        if not self.spec.event_time or ev.ts <= ref]
            count_keep = {s: True for s in eligible[-self.spec.length.value:]}
        window: List[Event] = []
        kept: List[Event] = []
        for ev in self.queue:
            action = self._action(ev, ref, count_keep)
            if action == "EXPIRE":
                self.expired.append(ev.tup)
                continue
            kept.append(ev)
            if action == "PROCESS":
                window.append(ev)
        self.queue = kept
        expired, self.expired = self.expired, []
        new = [ev.tup for ev in window if ev.seq not in self.prev]
        self.prev = {ev.seq for ev in window}
        if not window:
            return [Fired(None, expired)] if expired else []
        start = ref - self.spec.length.value if isinstance(self.spec.length, Duration) else None
        end = ref if (self.spec.event_time or isinstance(self.spec.slide, Duration)) else None
        return [Fired(TupleWindow([ev.tup for ev in window], new, expired, start, end),
                      expired)]


# --- the bolts and their executor ----------------------------------------------------------

class WindowedBolt:
    """Storm's ``BaseWindowedBolt``: configure the window with the ``with_*`` methods
    (each returns the bolt), then ``execute(window)`` is called with a
    :class:`TupleWindow` whenever a window fires."""

    def __init__(self) -> None:
        self.window_options: Dict[str, Any] = {}

    def _opts(self) -> Dict[str, Any]:
        if not hasattr(self, "window_options"):
            self.window_options = {}
        return self.window_options

    def with_window(self, length: Length, slide: Optional[Length] = None) -> "WindowedBolt":
        """A sliding window (``slide`` None: slides by one tuple for a count window,
        tumbles for a duration window, as Storm's single-argument forms)."""
        if slide is None:
            slide = Count(1) if isinstance(length, Count) else length
        self._opts().update(length=length, slide=slide)
        return self

    def with_tumbling_window(self, length: Length) -> "WindowedBolt":
        self._opts().update(length=length, slide=length)
        return self

    def with_timestamp_field(self, name: str) -> "WindowedBolt":
        """Event time: the field holding each tuple's timestamp (ms)."""
        self._opts()["timestamp_field"] = name
        return self

    def with_timestamp_extractor(self, extract: Callable[[StormTuple], int]
                                 ) -> "WindowedBolt":
        self._opts()["timestamp_extractor"] = extract
        return self

    def with_lag(self, lag: Duration) -> "WindowedBolt":
        """How far out of order tuples may arrive (event time)."""
        self._opts()["lag_ms"] = int(lag.value)
        return self

    def with_watermark_interval(self, interval: Duration) -> "WindowedBolt":
        self._opts()["watermark_ms"] = int(interval.value)
        return self

    def with_late_tuple_stream(self, stream: str) -> "WindowedBolt":
        """Late tuples go there (one field, ``tuple``) instead of being dropped."""
        self._opts()["late_stream"] = stream
        return self

    def window_spec(self, name: str = "bolt") -> WindowSpec:
        o = self._opts()
        if "length" not in o:
            raise TopologyError(f"windowed bolt {name!r} has no window; call with_window() "
                                f"or with_tumbling_window()", key=f"bolts.{name}")
        return WindowSpec(o["length"], o["slide"], o.get("timestamp_field"),
                          o.get("timestamp_extractor"), o.get("lag_ms", 0),
                          o.get("watermark_ms", DEFAULT_WATERMARK_MS), o.get("late_stream"))

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: OutputCollector) -> None:
        self.collector = collector

    def execute(self, window: TupleWindow) -> None:
        raise NotImplementedError

    def declare_output_fields(self) -> Any:
        return ()

    def cleanup(self) -> None:
        """Called when the runtime is torn down."""

    # Storm's spellings
    withWindow = with_window  # noqa: N815
    withTumblingWindow = with_tumbling_window  # noqa: N815
    withTimestampField = with_timestamp_field  # noqa: N815
    withLag = with_lag  # noqa: N815
    withWatermarkInterval = with_watermark_interval  # noqa: N815
    withLateTupleStream = with_late_tuple_stream  # noqa: N815


class StatefulWindowedBolt(WindowedBolt):
    """Storm's ``BaseStatefulWindowedBolt``: a windowed bolt with a
    :class:`~.state.KeyValueState` (``init_state``), saved with the window."""

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def pre_commit(self, txid: int) -> None:
        """Called before the task's state is saved."""


def is_windowed_factory(factory: Any) -> bool:
    """``factory`` is a windowed bolt class or instance."""
    return isinstance(factory, WindowedBolt) or (
        isinstance(factory, type) and issubclass(factory, WindowedBolt))


def instantiate_windowed(factory: Any, name: str) -> WindowedBolt:
    import copy
    bolt = copy.deepcopy(factory) if isinstance(factory, WindowedBolt) else factory()
    if not isinstance(bolt, WindowedBolt):
        raise TopologyError(f"bolt {name!r}: {factory!r} did not give a windowed bolt",
                            key=f"bolts.{name}.bolt")
    return bolt
