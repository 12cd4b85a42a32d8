"""Storm's window model (topology/windowing.py), table-style, without servers: which
tuples each window holds, which are new, which expired, when windows fire, late tuples,
and the checks Storm makes."""

from __future__ import annotations

from typing import List, Optional, Tuple

import pytest

from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.topology.tuples import StormTuple
from storm_kafka_compat.topology.windowing import (Count, Duration, WindowSpec, Windows,
                                                   WindowedBolt)


def tup(ts: int, name: str = "") -> StormTuple:
    return StormTuple([ts, name or str(ts)], ("ts", "name"), source_component="parse")


def names(ts: List[StormTuple]) -> List[str]:
    return [t["name"] for t in ts]


Seen = Tuple[List[str], List[str], List[str], Optional[int]]


def fired_views(fired) -> List[Seen]:
    return [(names(f.window.get()), names(f.window.get_new()), names(f.window.get_expired()),
             f.window.get_end_timestamp()) for f in fired if f.window is not None]


@pytest.mark.parametrize("length, slide, n, expected", [
    # sliding by count: after every `slide` tuples, the last `length`
    (3, 2, 6, [(["1", "2"], ["1", "2"], [], None),
               (["2", "3", "4"], ["3", "4"], ["1"], None),
               (["4", "5", "6"], ["5", "6"], ["2", "3"], None)]),
    # tumbling by count
    (3, 3, 7, [(["1", "2", "3"], ["1", "2", "3"], [], None),
               (["4", "5", "6"], ["4", "5", "6"], ["1", "2", "3"], None)]),
    # Storm's default slide of a count window: one tuple
    (2, 1, 3, [(["1"], ["1"], [], None), (["1", "2"], ["2"], [], None),
               (["2", "3"], ["3"], ["1"], None)]),
])
def test_count_windows_in_processing_time(length, slide, n, expected):
    w = Windows(WindowSpec(Count(length), Count(slide)))
    fired = []
    for i in range(1, n + 1):
        got, late = w.add(tup(i), now_ms=i)
        assert late == []
        fired += got
    assert fired_views(fired) == expected


def test_duration_windows_in_processing_time_fire_on_the_clock():
    w = Windows(WindowSpec(Duration(2000), Duration(1000)))
    assert w.advance(0) == []                       # the first call sets the schedule
    for ts in (100, 500):
        w.add(tup(ts), now_ms=ts)
    first = fired_views(w.advance(1000))
    w.add(tup(1500), now_ms=1500)
    second = fired_views(w.advance(2000))
    w.add(tup(2600), now_ms=2600)
    third = fired_views(w.advance(3100))
    assert first == [(["100", "500"], ["100", "500"], [], 1000)]
    assert second == [(["100", "500", "1500"], ["1500"], [], 2000)]
    assert third == [(["1500", "2600"], ["2600"], ["100", "500"], 3000)]   # (1000, 3000]


def test_late_calls_fire_each_missed_window_with_its_own_end():
    w = Windows(WindowSpec(Duration(1000), Duration(1000)))
    w.advance(0)
    w.add(tup(200), now_ms=200)
    w.add(tup(1200), now_ms=1200)
    assert fired_views(w.advance(2500)) == [(["200"], ["200"], [], 1000),
                                           (["1200"], ["1200"], ["200"], 2000)]


def test_event_time_tumbling_with_lag_fires_on_watermarks_and_drops_late_tuples():
    spec = WindowSpec(Duration(10_000), Duration(10_000), timestamp_field="ts", lag_ms=2_000)
    w = Windows(spec)
    for ts in (1000, 5000, 9000):
        assert w.add(tup(ts), now_ms=0) == ([], [])
    assert fired_views(w.advance(0)) == []           # watermark 7000: (0, 10000] is open
    for ts in (12000, 11000):
        w.add(tup(ts), now_ms=0)
    assert fired_views(w.advance(0)) == [(["1000", "5000", "9000"], ["1000", "5000", "9000"],
                                          [], 10000)]
    fired, late = w.add(tup(8000), now_ms=0)          # below the watermark (10000): late
    assert fired == [] and names(late) == ["8000"]
    w.add(tup(9_999_000, "far"), now_ms=0)
    out = fired_views(w.advance(0))
    # the next window, then no empty windows in between; "far" is in the future
    assert out == [(["12000", "11000"], ["12000", "11000"], ["1000", "5000", "9000"], 20000)]


def test_event_time_window_end_is_inclusive_and_start_exclusive():
    w = Windows(WindowSpec(Duration(10), Duration(10), timestamp_field="ts"))
    for ts in (10, 11, 20, 31):
        w.add(tup(ts), now_ms=0)
    assert fired_views(w.advance(0)) == [(["10"], ["10"], [], 10),
                                         (["11", "20"], ["11", "20"], ["10"], 20),
                                         (["31"], ["31"], ["11", "20"], 40)][:2]


def test_event_time_watermark_is_the_lowest_stream_maximum():
    w = Windows(WindowSpec(Duration(10), Duration(10), timestamp_field="ts"))
    w.add(StormTuple([5, "a"], ("ts", "name"), source_component="one"), now_ms=0)
    w.add(StormTuple([50, "b"], ("ts", "name"), source_component="two"), now_ms=0)
    w.advance(0)
    assert w.watermark == 5


def test_event_time_count_windows_fire_per_slide_up_to_the_watermark():
    w = Windows(WindowSpec(Count(2), Count(2), timestamp_field="ts"))
    for ts in (1, 2, 3, 4, 5, 100):
        w.add(tup(ts), now_ms=0)
    # the watermark is 100 (no lag): every second tuple up to it closes a window, whose
    # end is that tuple's time
    assert fired_views(w.advance(0)) == [(["1", "2"], ["1", "2"], [], 2),
                                         (["3", "4"], ["3", "4"], ["1", "2"], 4),
                                         (["5", "100"], ["5", "100"], ["3", "4"], 100)]


def test_windowed_bolt_configuration_and_storms_checks():
    bolt = (WindowedBolt().with_window(Duration.seconds(20), Duration.seconds(5))
            .with_timestamp_field("ts").with_lag(Duration.seconds(2))
            .with_watermark_interval(Duration.of(250)).with_late_tuple_stream("late"))
    spec = bolt.window_spec("w")
    assert (spec.length, spec.slide, spec.lag_ms, spec.watermark_ms, spec.late_stream) == (
        Duration(20000), Duration(5000), 2000, 250, "late")
    assert spec.wake_secs() == 0.25
    spec.check("w", {"topology.message.timeout.secs": 30})
    with pytest.raises(TopologyError, match="exceeds topology.message.timeout.secs"):
        spec.check("w", {"topology.message.timeout.secs": 20})
    with pytest.raises(TopologyError, match="has no window"):
        WindowedBolt().window_spec("w")
    with pytest.raises(TopologyError, match="longer than the window"):
        WindowSpec(Count(2), Count(3)).check("w", {})
    assert WindowedBolt().with_window(Count(4)).window_spec().slide == Count(1)
    assert WindowedBolt().with_window(Duration(40)).window_spec().slide == Duration(40)
    assert WindowSpec(Count(2), Count(1)).wake_secs() is None


def test_a_window_with_an_extractor_is_saved_and_restored_with_its_tuples():
    """The window's tuples and progress are saved; its definition (a lambda here) is the
    bolt's own and is not pickled."""
    from storm_kafka_compat.topology.bolts import OutputCollector, TopologyContext
    from storm_kafka_compat.topology.state import TaskState
    from storm_kafka_compat.topology.windowed_executor import WindowedBoltExecutor

    class Sink:
        edge_free = frozenset()

        def targets(self, tup, direct=None):
            return []

        def deliver(self, component, task, tup):
            pass

        def keyed_route(self, source, source_task, stream, fields):
            return None

        def ack_root(self, root, value):
            acks.append(root)

        def fail_root(self, root):
            pass

        def reset_root(self, root):
            pass

    class Bolt(WindowedBolt):
        def __init__(self):
            super().__init__()
            self.with_tumbling_window(Duration(10)).with_timestamp_extractor(
                lambda t: t["ts"])
            self.fired = []

        def execute(self, window):
            self.fired.append([t["ts"] for t in window.get()])

    acks: list = []

    def executor():
        ex = WindowedBoltExecutor(Bolt(), clock=lambda: 0)
        ex.prepare({}, TopologyContext("w"), OutputCollector(TopologyContext("w"), Sink()))
        return ex

    first = executor()
    for ts, off in ((3, 0), (7, 1), (12, 2)):
        first.execute(StormTuple([ts, "x"], ("ts", "name"), topic="t", partition=0,
                                 offset=off, anchors={100 + off: 1}))
    saved = TaskState("w[0]", first).save(1)
    second = executor()
    TaskState("w[0]", second).restore(saved)
    assert [ev.tup["ts"] for ev in second.windows.queue] == [3, 7, 12]
    for ts, off in ((3, 0), (7, 1), (12, 2), (25, 3)):          # the replay, then new
        second.execute(StormTuple([ts, "x"], ("ts", "name"), topic="t", partition=0,
                                  offset=off, anchors={200 + off: 1}))
    from storm_kafka_compat.topology.ticks import tick_tuple
    second.execute(tick_tuple(1))
    assert second.bolt.fired == [[3, 7], [12]]
    assert acks == [200, 201]            # the window's tuples left it, acked as replayed
