"""kafka-python clients for the Apache Kafka 0.9.0.1 brokers of :mod:`.kafka`: a
partition's log range (:func:`log_range`) and a batching producer (:func:`produce`).

Both pin the 0.9 protocol (:data:`~.kafka_package.KAFKA_PYTHON_API_VERSION`) and
take a bootstrap string, so they serve any 0.9 cluster, not only a
:class:`~.kafka.KafkaCluster`::

    produce(cluster.bootstrap, "orders", [(p, None, b"x") for p in range(4)])
    start, end = log_range(cluster.bootstrap, "orders", 0)
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Tuple

from storm_kafka_compat.servers.kafka_package import KAFKA_PYTHON_API_VERSION

#: what the producers here write: (partition, key, value)
Message = Tuple[int, Optional[bytes], Optional[bytes]]


def log_range(bootstrap: str, topic: str, partition: int) -> Tuple[int, int]:
    """``(log start, high watermark)`` of ``topic``/``partition`` on a 0.9 cluster."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","),
                             api_version=KAFKA_PYTHON_API_VERSION, request_timeout_ms=10000,
                             client_id="skc-testing-offsets")
    try:
        tp = TopicPartition(topic, partition)
        start = consumer.beginning_offsets([tp])[tp]
        end = consumer.end_offsets([tp])[tp]
        return int(start), int(end)
    finally:
        consumer.close()


def produce(bootstrap: str, topic: str, messages: Iterable[Message], *,
            timeout_s: float = 120.0, acks: Any = "all", batch_size: int = 65536) -> int:
    """Produce ``(partition, key, value)`` messages with a normal batching producer
    (kafka-python, ``linger_ms`` 5, 64 KiB batches), as applications write; return
    how many were acknowledged. Raises on any failed send.

    A 0.9 broker drops the connection when one batch is larger than the topic's
    ``segment.bytes``: pass a smaller ``batch_size`` for tiny segments."""
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","),
                             api_version=KAFKA_PYTHON_API_VERSION, acks=acks, linger_ms=5,
                             batch_size=batch_size, retries=5, client_id="skc-testing-produce",
                             request_timeout_ms=30000)
    try:
        futures = [producer.send(topic, value=v, key=k, partition=p) for p, k, v in messages]
        producer.flush(timeout_s)
        for f in futures:
            f.get(timeout=timeout_s)
    finally:
        producer.close(timeout=10)
    return len(futures)
