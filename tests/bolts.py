"""Bolts used by the tests (importable by Spark executors through PYTHONPATH).

Records go to the file named by STORM_KAFKA_COMPAT_TEST_RECORD (one JSON line per
call), so executor processes and the test process see the same history.
"""

import json
import os
import time

from storm_kafka_compat.topology.bolts import BasicBolt, FailedException, RichBolt

SEEN = []           # in-process record (local mode)


def _record(entry):
    SEEN.append(entry)
    path = os.environ.get("STORM_KAFKA_COMPAT_TEST_RECORD")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def record(t):
    """Acks everything; records (topic, partition, offset, first value)."""
    value = t.values[0]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    _record({"topic": t.topic, "partition": t.partition, "offset": t.offset, "value": value,
             "time": time.time()})


def record_slowly(t):
    """As :func:`record`, then 5 ms of work: paces a job so that a fault test can
    interrupt it mid-stream however fast the machine is."""
    record(t)
    time.sleep(0.005)


def fail_marked(t):
    """Fails messages whose value starts with "fail"; records every attempt."""
    value = t.values[0]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    _record({"topic": t.topic, "partition": t.partition, "offset": t.offset, "value": value,
             "time": time.time()})
    if str(value).startswith("fail"):
        raise RuntimeError(f"refusing {value}")


def read_records(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def first_time(tag):
    """True the first time ``tag`` is seen by any process of this test (a marker
    file next to the record file; in-process when no record file is set)."""
    path = os.environ.get("STORM_KAFKA_COMPAT_TEST_RECORD")
    if not path:
        if tag in _ONCE:
            return False
        _ONCE.add(tag)
        return True
    try:
        fd = os.open(f"{path}.once-{tag}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


_ONCE = set()


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class HoldOnce(RichBolt):
    """Acks every tuple except the first attempt of a value starting with "hold",
    which it keeps and never acks (its tuple tree stays open until it times out)."""

    def prepare(self, conf, context, collector):
        super().prepare(conf, context, collector)
        self.held = []

    def execute(self, t):
        value = _text(t.values[0])
        _record({"kind": "hold", "topic": t.topic, "partition": t.partition,
                 "offset": t.offset, "value": value, "time": time.time()})
        if value.startswith("hold") and first_time(f"hold-{t.topic}-{t.partition}-{t.offset}"):
            self.held.append(t)
            return
        self.collector.ack(t)


class SplitWords(BasicBolt):
    """Emits one ("word",) tuple per word of the message (anchored, auto-acked)."""

    def declare_output_fields(self):
        return ("word",)

    def execute(self, t, collector):
        for word in _text(t.values[0]).split():
            collector.emit([word])


class CountWords(BasicBolt):
    """Fields-grouped on "word": records which task saw the word for which
    offset, and emits (word, running count of this task)."""

    def declare_output_fields(self):
        return ("word", "count")

    def prepare(self, conf, context):
        self.task = context.task_index
        self.counts = {}

    def execute(self, t, collector):
        word = t["word"]
        self.counts[word] = self.counts.get(word, 0) + 1
        _record({"kind": "count", "word": word, "task": self.task, "topic": t.topic,
                 "partition": t.partition, "offset": t.offset, "pid": os.getpid(),
                 "time": time.time()})
        collector.emit([word, self.counts[word]])


class ReportOnce(BasicBolt):
    """Global sink: records every (word, offset); the first time it sees the word
    "boom" of an offset it fails the tuple (the root offset is replayed)."""

    def declare_output_fields(self):
        return ()

    def execute(self, t, collector):
        word = t["word"]
        _record({"kind": "report", "word": word, "topic": t.topic, "partition": t.partition,
                 "offset": t.offset, "time": time.time()})
        if word == "boom" and first_time(f"boom-{t.topic}-{t.partition}-{t.offset}"):
            raise FailedException(f"first sight of boom at {t.partition}@{t.offset}")


WORD_COUNT_SPEC = {"bolts": [
    {"name": "split", "bolt": "tests.bolts:SplitWords", "parallelism": 2,
     "inputs": [{"from": "spout", "grouping": "shuffle"}]},
    {"name": "count", "bolt": "tests.bolts:CountWords", "parallelism": 2,
     "inputs": [{"from": "split", "grouping": "fields", "fields": ["word"]}]},
    {"name": "report", "bolt": "tests.bolts:ReportOnce",
     "inputs": [{"from": "count", "grouping": "global"}]},
]}

HOLD_SPEC = {"bolts": [{"name": "hold", "bolt": "tests.bolts:HoldOnce", "kind": "rich"}]}


def record_10ms(t):
    """As :func:`record`, then 10 ms of work: the slow bolt of the bounded-replay
    fault test (at most 100 tuples a second per core)."""
    record(t)
    time.sleep(0.010)


class KeyErrorOnOdd(BasicBolt):
    """Reads a field the tuple does not have on odd offsets (a KeyError, as a misnamed
    field does), acks the rest."""

    def execute(self, t, collector):
        if t.offset % 2:
            t["no_such_field"]


class PrepareRecorder(BasicBolt):
    """Records each ``prepare`` (its Python worker, tagged by the topology's name) and
    each input's worker: when and where its task was prepared."""

    def prepare(self, conf, context):
        self.tag = conf.get("topology.name")
        _record({"kind": "prepare", "tag": self.tag, "pid": os.getpid(), "time": time.time()})

    def execute(self, t, collector):
        _record({"kind": "execute", "tag": self.tag, "topic": t.topic, "pid": os.getpid(),
                 "time": time.time()})


PREPARE_SPEC = {"bolts": [{"name": "seen", "bolt": "tests.bolts:PrepareRecorder"}]}
