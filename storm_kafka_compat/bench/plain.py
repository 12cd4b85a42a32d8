"""The baseline: the plain PySpark job a user would write by hand.

One Spark task per Kafka partition (``sc.parallelize(range(P), P).mapPartitions``),
each opening the client library directly, reading its partition from offset 0 to
the end offset the driver found, and calling a Python function once per message;
the driver sums the counts. No offsets are stored and nothing is acknowledged: it
is what the pipeline's guarantees cost compared with.

As in the pipeline figures, one run over the warm-up topic comes first, so Spark's
Python workers are forked and the modules imported; the client is opened in each
task, as such a job does.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Tuple

#: records per poll / consume call, as the raw consumers use
POLL_RECORDS = 10_000


def handle(value: bytes) -> int:
    """The per-message work of the plain job: what a trivial bolt does (touch the value)."""
    return 1 if value is not None else 0


def _read_kafka_python(bootstrap: str, topic: str, partition: int, end: int,
                       client: Mapping[str, Any]) -> int:
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             group_id=None, max_poll_records=POLL_RECORDS,
                             max_partition_fetch_bytes=4 << 20, fetch_max_bytes=16 << 20,
                             client_id="skc-bench-plain", **dict(client))
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen = position = 0
        while position < end:
            for records in consumer.poll(timeout_ms=1000,
                                         max_records=min(POLL_RECORDS, end - position)).values():
                for r in records:
                    seen += handle(r.value)
                    position = r.offset + 1
        return seen
    finally:
        consumer.close()


def _read_confluent(bootstrap: str, topic: str, partition: int, end: int,
                    client: Mapping[str, Any]) -> int:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "skc-bench-plain",
                         "enable.auto.commit": False, "client.id": "skc-bench-plain",
                         **dict(client)})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        seen = position = 0
        while position < end:
            batch: List[Any] = consumer.consume(min(POLL_RECORDS, end - position), 1.0)
            for m in batch:
                if m.error() is None:
                    seen += handle(m.value())
                    position = m.offset() + 1
        return seen
    finally:
        consumer.close()


def read_partitions(args: Iterator[Tuple[str, str, str, int, int, Tuple[Tuple[str, Any], ...]]]
                    ) -> Iterator[int]:
    """The ``mapPartitions`` function: ``(backend, bootstrap, topic, partition, end,
    client settings)`` -> messages handled."""
    for backend, bootstrap, topic, partition, end, client in args:
        read = _read_confluent if backend == "confluent" else _read_kafka_python
        yield read(bootstrap, topic, partition, end, dict(client))


def plain_rate(spark: Any, *, backend: str, bootstrap: str, topic: str,
               ends: Mapping[int, int], client: Mapping[str, Any],
               clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """Run the plain job over ``topic`` (partition -> end offset ``ends``); its rate.

    ``client`` is the backend's share of the ``kafka`` mapping
    (:meth:`~storm_kafka_compat.kafka.settings.KafkaSettings.for_backend`).
    """
    conf = tuple(sorted(client.items()))
    work: List[Any] = [(backend, bootstrap, topic, p, end, conf) for p, end in sorted(ends.items())]
    sc = spark.sparkContext
    t0 = clock()
    messages = sum(sc.parallelize(work, len(work)).mapPartitions(read_partitions).collect())
    seconds = clock() - t0
    expected = sum(ends.values())
    if messages != expected:
        raise RuntimeError(f"the plain {backend} job read {messages} messages of {expected}")
    return {"messages": messages, "seconds": seconds,
            "msgs_per_s": messages / seconds if seconds > 0 else 0.0}
