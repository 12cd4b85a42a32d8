"""Bolts on time, as Storm topologies write them, ported to Python (issue 35): a rolling
count on tick tuples, windowed bolts (sliding by count; tumbling by duration in event
time with a lag) and a sink that buffers and writes on each tick. The record values
are ``"<event time ms> <word> [<word> ...]"``; ``tests/peers/java/storm2/skc/peer/
WindowTopologies.java`` holds the same bolts in Java for Storm 2.8.3.

Each result is recorded (tests/bolts.py's record file) as a dict with ``kind``."""

from __future__ import annotations

import os
from typing import Dict, List, Tuple

from storm_kafka_compat.topology.bolts import BasicBolt, RichBolt
from storm_kafka_compat.topology.ticks import is_tick
from storm_kafka_compat.topology.windowing import (Count, Duration, StatefulWindowedBolt,
                                                   WindowedBolt)
from tests.bolts import _record

#: event-time buckets of the rolling count, and how late a word may come (ms)
BUCKET_MS = 10_000
LAG_MS = 3_000


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


class ParseWords(BasicBolt):
    """``"ts w1 w2"`` -> one (ts, word) per word."""

    def declare_output_fields(self):
        return ("ts", "word")

    def execute(self, t, collector):
        ts, *words = _text(t.values[0]).split()
        for word in words:
            collector.emit([int(ts), word])


class ParseEvent(BasicBolt):
    """``"ts w1 ..."`` -> (ts, first word)."""

    def declare_output_fields(self):
        return ("ts", "word")

    def execute(self, t, collector):
        ts, word, *_ = _text(t.values[0]).split()
        collector.emit([int(ts), word])


class RollingCount(RichBolt):
    """Counts words per event-time bucket; on each tick emits (bucket, word, count) for
    the buckets that ended before the largest time seen less the lag, then forgets
    them (storm-starter's RollingCountBolt emits on ticks too; its buckets are the
    ticks themselves, which two engines cannot agree on). Acks each word at once."""

    def component_configuration(self):
        return {"topology.tick.tuple.freq.secs": 1}

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts: Dict[Tuple[int, str], int] = {}
        self.top = 0

    def declare_output_fields(self):
        return ("bucket", "word", "count")

    def execute(self, t):
        if is_tick(t):
            closed = sorted(k for k in self.counts if k[0] + BUCKET_MS <= self.top - LAG_MS)
            for key in closed:
                self.collector.emit([key[0], key[1], self.counts.pop(key)])
            return
        ts, word = t["ts"], t["word"]
        self.top = max(self.top, ts)
        key = (ts - ts % BUCKET_MS, word)
        self.counts[key] = self.counts.get(key, 0) + 1
        self.collector.ack(t)


class SlidingCount(WindowedBolt):
    """A window of the last 5 tuples, every 3: emits (first ts, last ts, count)."""

    def __init__(self):
        super().__init__()
        self.with_window(Count(5), Count(3))

    def declare_output_fields(self):
        return ("first", "last", "count")

    def execute(self, window):
        ts = [t["ts"] for t in window.get()]
        self.collector.emit([ts[0], ts[-1], len(ts)])


class TumblingByTime(WindowedBolt):
    """Tumbling 10 s windows on the tuples' own time, 3 s lag: emits (end, count)."""

    def __init__(self):
        super().__init__()
        (self.with_tumbling_window(Duration.seconds(10)).with_timestamp_field("ts")
         .with_lag(Duration.seconds(3)).with_watermark_interval(Duration.of(500)))

    def declare_output_fields(self):
        return ("end", "count")

    def execute(self, window):
        self.collector.emit([window.get_end_timestamp(), len(window.get())])


class WindowTotals(StatefulWindowedBolt):
    """The stateful windowed bolt: tumbling 10 s event-time windows; its KeyValueState
    counts windows and tuples; emits (end, count, windows so far, tuples so far)."""

    def __init__(self):
        super().__init__()
        (self.with_tumbling_window(Duration.seconds(10)).with_timestamp_field("ts")
         .with_lag(Duration.seconds(3)).with_watermark_interval(Duration.of(500)))

    def declare_output_fields(self):
        return ("end", "count", "windows", "tuples")

    def execute(self, window):
        n = len(window.get())
        self.state.put("windows", self.state.get("windows", 0) + 1)
        self.state.put("tuples", self.state.get("tuples", 0) + n)
        self.collector.emit([window.get_end_timestamp(), n, self.state.get("windows"),
                             self.state.get("tuples")])


class Record(BasicBolt):
    """Records each result tuple as a dict of its fields, with ``kind`` its source and
    ``topic`` its Kafka topic (an unanchored result has none: ``SKC_TEST_RUN`` as the
    bolt host found it at its start)."""

    def execute(self, t, collector):
        _record({"kind": t.source_component, **t.as_dict(),
                 "topic": t.topic or os.environ.get("SKC_TEST_RUN")})


class BufferingSink(RichBolt):
    """Storm's HDFS/HBase sink pattern: buffer tuples, write them all on each tick and
    ack them only then (the write is what makes them safe)."""

    def component_configuration(self):
        return {"topology.tick.tuple.freq.secs": 1}

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.buffer: List = []
        self.flushes = 0

    def execute(self, t):
        if not is_tick(t):
            self.buffer.append(t)
            return
        self.flushes += 1
        for held in self.buffer:
            _record({"kind": "sink", "value": _text(held.values[0]), "flush": self.flushes,
                     "topic": held.topic, "partition": held.partition, "offset": held.offset})
            self.collector.ack(held)
        self.buffer = []


def rolling_spec(parallelism: int = 2) -> dict:
    return {"bolts": [
        {"name": "parse", "bolt": "tests.windowed_bolts:ParseWords",
         "inputs": [{"from": "spout", "grouping": "shuffle"}]},
        {"name": "rolling", "bolt": "tests.windowed_bolts:RollingCount",
         "parallelism": parallelism,
         "inputs": [{"from": "parse", "grouping": "fields", "fields": ["word"]}]},
        {"name": "report", "bolt": "tests.windowed_bolts:Record",
         "inputs": [{"from": "rolling", "grouping": "shuffle"}]}]}


def window_spec(bolt: str) -> dict:
    return {"bolts": [
        {"name": "parse", "bolt": "tests.windowed_bolts:ParseEvent",
         "inputs": [{"from": "spout", "grouping": "shuffle"}]},
        {"name": "window", "bolt": f"tests.windowed_bolts:{bolt}",
         "inputs": [{"from": "parse", "grouping": "global"}]},
        {"name": "report", "bolt": "tests.windowed_bolts:Record",
         "inputs": [{"from": "window", "grouping": "shuffle"}]}]}


SINK_SPEC = {"bolts": [{"name": "sink", "bolt": "tests.windowed_bolts:BufferingSink",
                        "parallelism": 2,
                        "inputs": [{"from": "spout", "grouping": "shuffle"}]}]}


# --- truth ------------------------------------------------------------------------------

def rolling_truth(lines: List[str]) -> Dict[Tuple[int, str], int]:
    """(bucket, word) -> count of every bucket that closes before the last line's time."""
    top = max(int(line.split()[0]) for line in lines)
    out: Dict[Tuple[int, str], int] = {}
    for line in lines:
        ts, *words = line.split()
        bucket = int(ts) - int(ts) % BUCKET_MS
        if bucket + BUCKET_MS <= top - LAG_MS:
            for w in words:
                out[(bucket, w)] = out.get((bucket, w), 0) + 1
    return out


def sliding_truth(lines: List[str]) -> List[Tuple[int, int, int]]:
    """(first ts, last ts, count) of each window of the last 5, every 3, in order."""
    ts = [int(line.split()[0]) for line in lines]
    return [(ts[max(0, k - 5):k][0], ts[k - 1], len(ts[max(0, k - 5):k]))
            for k in range(3, len(ts) + 1, 3)]


def tumbling_truth(lines: List[str]) -> Dict[int, int]:
    """window end -> count, for the windows that close before the last line less lag."""
    ts = [int(line.split()[0]) for line in lines]
    watermark = max(ts) - LAG_MS
    out: Dict[int, int] = {}
    for t in ts:
        end = t - t % BUCKET_MS + BUCKET_MS if t % BUCKET_MS else t
        if end <= watermark:
            out[end] = out.get(end, 0) + 1
    return out
