"""Bolts used by the tests (importable by Spark executors through PYTHONPATH).

Records go to the file named by STORM_KAFKA_COMPAT_TEST_RECORD (one JSON line per
call), so executor processes and the test process see the same history.
"""

import json
import os
import time

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
