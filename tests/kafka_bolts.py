"""Bolts feeding a KafkaBolt in the KafkaBolt tests (importable by Spark executors).

``to_record`` turns each input into the ``key``/``message`` fields Storm's
``FieldNameBasedTupleToKafkaMapper`` reads, the key naming the input offset
(``topic/partition/offset``) so a test can check every input offset reached the
output topic. It records what it saw like ``tests.bolts.record``.
"""

import time

from tests.bolts import record


def to_record(t):
    record(t)
    time.sleep(0.003)  # paces the job so a broker kill lands mid-run
    value = t.values[0]
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return [[f"{t.topic}/{t.partition}/{t.offset}", value]]


to_record.fields = ("key", "message")
