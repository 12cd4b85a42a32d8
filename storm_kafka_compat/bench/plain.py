"""The baseline: the plain PySpark job a user would write by hand.

One Spark task per Kafka partition (``sc.parallelize(range(P), P).mapPartitions``),
each opening the client library directly, reading its partition from offset 0 to
the end offset the driver found, and calling a Python function once per message;
the driver sums the counts. No offsets are stored and nothing is acknowledged: it
is what the pipeline's guarantees cost compared with.

As in the pipeline figures, one run over the warm-up topic comes first, so Spark's
Python workers are forked and the modules imported; the client is opened in each
task, as such a job does.

**A baseline configured like the pipeline.** The job's consumer gets exactly the
settings the pipeline's adapter gives its own (:func:`careful_consumer`: the
adapter's ``consumer_config`` for the same SpoutConfig and ``kafka`` mapping), as a
careful user would set them: with librdkafka that means the prefetch queue's size and
``fetch.queue.backoff.ms`` (its 1 s default pauses a partition whenever the queue
fills). :func:`default_consumer` is the same job left on the library's defaults, a
second, labelled row.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Tuple

from storm_kafka_compat.config import SpoutConfig

#: records per poll / consume call, as the raw consumers use
POLL_RECORDS = 10_000


def handle(value: bytes) -> int:
    """The per-message work of the plain job: what a trivial bolt does (touch the value)."""
    return 1 if value is not None else 0


def careful_consumer(backend: str, bootstrap: str, spout: SpoutConfig,
                     client: Mapping[str, Any]) -> Dict[str, Any]:
    """The library settings the pipeline's adapter uses for ``spout`` and the job's
    ``client`` settings (its backend's share of the ``kafka`` mapping)."""
    if backend == "confluent":
        from storm_kafka_compat.kafka.confluent import consumer_config as librdkafka_config
        return librdkafka_config(bootstrap, spout, client)
    from storm_kafka_compat.kafka.kafka_python import consumer_config
    return consumer_config(bootstrap, spout, client)


def default_consumer(backend: str, bootstrap: str, client: Mapping[str, Any]) -> Dict[str, Any]:
    """The same consumer on the library's defaults: only what reading needs (the
    servers, no group commits, a client id) and the brokers' protocol pin."""
    if backend == "confluent":
        return {"bootstrap.servers": bootstrap, "group.id": "skc-bench-plain",
                "enable.auto.commit": False, "client.id": "skc-bench-plain", **dict(client)}
    return {"bootstrap_servers": bootstrap, "enable_auto_commit": False, "group_id": None,
            "client_id": "skc-bench-plain", **dict(client)}


def _read_kafka_python(topic: str, partition: int, end: int, config: Mapping[str, Any]) -> int:
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(**dict(config))
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


def _read_confluent(topic: str, partition: int, end: int, config: Mapping[str, Any]) -> int:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer(dict(config))
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


def read_partitions(args: Iterator[Tuple[str, str, int, int, Tuple[Tuple[str, Any], ...]]]
                    ) -> Iterator[int]:
    """The ``mapPartitions`` function: ``(backend, topic, partition, end, consumer
    settings)`` -> messages handled."""
    for backend, topic, partition, end, config in args:
        read = _read_confluent if backend == "confluent" else _read_kafka_python
        yield read(topic, partition, end, dict(config))


def plain_rate(spark: Any, *, backend: str, topic: str, ends: Mapping[int, int],
               consumer: Mapping[str, Any],
               clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """Run the plain job over ``topic`` (partition -> end offset ``ends``) with the
    library ``consumer`` settings (:func:`careful_consumer` or
    :func:`default_consumer`); its rate."""
    conf = tuple(sorted(consumer.items()))
    work: List[Any] = [(backend, topic, p, end, conf) for p, end in sorted(ends.items())]
    sc = spark.sparkContext
    t0 = clock()
    messages = sum(sc.parallelize(work, len(work)).mapPartitions(read_partitions).collect())
    seconds = clock() - t0
    expected = sum(ends.values())
    if messages != expected:
        raise RuntimeError(f"the plain {backend} job read {messages} messages of {expected}")
    return {"messages": messages, "seconds": seconds,
            "msgs_per_s": messages / seconds if seconds > 0 else 0.0}
