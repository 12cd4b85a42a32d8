"""Raw fetch rates: one consumer, no processing, the library at its best.

``raw_*`` use the client library directly (every partition assigned from
offset 0, large polls), as a team would measure "what the client can do".
``access_rate`` reads the same data through this project's KafkaAccess
adapters, one partition at a time as a Spark task does, in one thread.
Every function reads until it has seen ``expected`` messages and returns the
rate over that whole read (first fetch included).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Dict, List, Optional

from storm_kafka_compat.config import SpoutConfig
from storm_kafka_compat.config.kafka_settings import KafkaSettings

log = logging.getLogger(__name__)

#: records per poll / consume call of the raw consumers
POLL_RECORDS = 10_000


def _result(messages: int, payload: int, elapsed: float) -> Dict[str, Any]:
    return {"messages": messages, "bytes": payload, "seconds": elapsed,
            "msgs_per_s": messages / elapsed if elapsed > 0 else 0.0}


def raw_kafka_python(bootstrap: str, topic: str, partitions: int, expected: int, *,
                     settings: Optional[KafkaSettings] = None, timeout_s: float = 300.0,
                     clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """A kafka-python ``KafkaConsumer``: assign, seek to 0, ``poll`` until ``expected``.
    ``settings`` gives the client its share of the job's ``kafka`` mapping (the
    brokers' ``api_version``)."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             group_id=None, max_poll_records=POLL_RECORDS,
                             max_partition_fetch_bytes=4 << 20, fetch_max_bytes=16 << 20,
                             client_id="skc-bench-raw",
                             **(settings or KafkaSettings()).for_kafka_python())
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        seen = payload = 0
        started = clock()
        deadline = started + timeout_s
        while seen < expected:
            if clock() > deadline:
                raise TimeoutError(f"kafka-python read {seen} of {expected} messages of "
                                   f"{topic!r} in {timeout_s} s")
            for records in consumer.poll(timeout_ms=1000, max_records=POLL_RECORDS).values():
                seen += len(records)
                for r in records:
                    payload += len(r.value)
        return _result(seen, payload, clock() - started)
    finally:
        consumer.close()


def raw_confluent(bootstrap: str, topic: str, partitions: int, expected: int, *,
                  settings: Optional[KafkaSettings] = None, timeout_s: float = 300.0,
                  clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """A confluent-kafka ``Consumer``: assign at 0, ``consume`` until ``expected``."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "skc-bench-raw",
                         "enable.auto.commit": False, "client.id": "skc-bench-raw",
                         **(settings or KafkaSettings()).for_librdkafka()})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        seen = payload = 0
        started = clock()
        deadline = started + timeout_s
        while seen < expected:
            if clock() > deadline:
                raise TimeoutError(f"confluent-kafka read {seen} of {expected} messages of "
                                   f"{topic!r} in {timeout_s} s")
            batch: List[Any] = consumer.consume(min(POLL_RECORDS, expected - seen), 1.0)
            for m in batch:
                if m.error() is None:
                    seen += 1
                    payload += len(m.value())
        return _result(seen, payload, clock() - started)
    finally:
        consumer.close()


def access_rate(backend: str, bootstrap: str, spout: SpoutConfig, partitions: int,
                expected: int, *, settings: Optional[KafkaSettings] = None,
                batch: int = 10_000, timeout_s: float = 300.0,
                clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """This project's adapter (``kafka-python`` or ``confluent``) in one thread:
    ``fetch(max_messages=batch)`` round-robin over the partitions, as the
    pipeline's tasks call it."""
    client = (settings or KafkaSettings()).for_backend(backend)
    if backend == "confluent":
        from storm_kafka_compat.kafka.confluent import ConfluentAccess
        access: Any = ConfluentAccess(bootstrap, spout, client)
    else:
        from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
        access = KafkaPythonAccess(bootstrap, spout, client)
    try:
        from storm_kafka_compat.errors import FailedFetchError
        offsets = {p: 0 for p in range(partitions)}
        seen = payload = failures = 0
        started = clock()
        deadline = started + timeout_s
        while seen < expected:
            if clock() > deadline:
                raise TimeoutError(f"{backend} adapter read {seen} of {expected} messages "
                                   f"in {timeout_s} s")
            for p in range(partitions):
                try:
                    messages = access.fetch(spout.topic, p, offsets[p], max_messages=batch)
                except FailedFetchError as exc:   # retried, as the pipeline does; counted
                    failures += 1
                    log.warning("%s adapter: %s", backend, exc)
                    continue
                if messages:
                    offsets[p] = messages[-1].offset + 1
                    seen += len(messages)
                    payload += sum(len(m.value or b"") for m in messages)
        return dict(_result(seen, payload, clock() - started), failed_fetches=failures)
    finally:
        access.close()
