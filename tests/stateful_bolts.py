"""Stateful bolts as Storm topologies write them, ported to Python: storm-starter's
WordCount (a dict of counts in the bolt instance, as its HashMap) and a running maximum
on Storm's stateful-bolt API (``init_state(KeyValueState)``). Each state bolt emits its
new value; ``Report`` records it (tests/bolts.py's record file), so a key's final value
is the largest one recorded (both states only grow)."""

from __future__ import annotations

import json
import os
from typing import Dict, Iterable

from storm_kafka_compat.topology.bolts import BasicBolt
from storm_kafka_compat.topology.state import StatefulBolt
from tests.bolts import _record


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


class SplitSentence(BasicBolt):
    def declare_output_fields(self):
        return ("word",)

    def execute(self, t, collector):
        for word in _text(t.values[0]).split():
            collector.emit([word])


class WordCount(BasicBolt):
    """storm-starter's WordCount: a map of counts per task, (word, count) emitted."""

    def prepare(self, conf, context):
        self.counts = {}

    def declare_output_fields(self):
        return ("word", "count")

    def execute(self, t, collector):
        word = t["word"]
        count = self.counts.get(word, 0) + 1
        self.counts[word] = count
        collector.emit([word, count])


class ParseKeyValue(BasicBolt):
    def declare_output_fields(self):
        return ("key", "value")

    def execute(self, t, collector):
        key, value = _text(t.values[0]).split(",")
        collector.emit([key, int(value)])


class RunningMax(StatefulBolt):
    """Storm's stateful-bolt API: the maximum per key in the task's KeyValueState."""

    def declare_output_fields(self):
        return ("key", "value")

    def execute(self, t):
        key, value = t["key"], t["value"]
        held = self.state.get(key)
        if held is None or value > held:
            self.state.put(key, value)
            held = value
        self.collector.emit([key, held], anchors=[t])
        self.collector.ack(t)


class Report(BasicBolt):
    """Records (key, value) with the Kafka message it came from."""

    def execute(self, t, collector):
        _record({"kind": "state", "key": t.values[0], "value": t.values[1],
                 "topic": t.topic, "partition": t.partition, "offset": t.offset,
                 "pid": os.getpid()})


def spec(first: str, state: str, fields: str, parallelism: int) -> Dict[str, object]:
    """split/parse (shuffle, 2 tasks) -> state bolt (fields grouping) -> report (shuffle)."""
    return {"bolts": [
        {"name": "first", "bolt": f"tests.stateful_bolts:{first}", "parallelism": 2,
         "inputs": [{"from": "spout", "grouping": "shuffle"}]},
        {"name": "state", "bolt": f"tests.stateful_bolts:{state}",
         "parallelism": parallelism,
         "inputs": [{"from": "first", "grouping": "fields", "fields": [fields]}]},
        {"name": "report", "bolt": "tests.stateful_bolts:Report",
         "inputs": [{"from": "state", "grouping": "shuffle"}]},
    ]}


WORD_COUNT = spec("SplitSentence", "WordCount", "word", 4)
RUNNING_MAX = spec("ParseKeyValue", "RunningMax", "key", 3)


def final_values(records: Iterable[dict]) -> Dict[str, int]:
    """Key -> the largest value reported (the final state of a growing one)."""
    out: Dict[str, int] = {}
    for r in records:
        if r.get("kind") == "state":
            out[r["key"]] = max(out.get(r["key"], r["value"]), r["value"])
    return out


def read_state_records(path: str, topic: str) -> list:
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("topic") == topic and r.get("kind") == "state":
                out.append(r)
    return out


class SlowSplitSentence(SplitSentence):
    """SplitSentence with 3 ms of work a sentence: paces a job so that a fault test
    can interrupt it mid-stream however fast the machine is."""

    def execute(self, t, collector):
        import time
        time.sleep(0.003)
        super().execute(t, collector)


SLOW_WORD_COUNT = spec("SlowSplitSentence", "WordCount", "word", 4)
