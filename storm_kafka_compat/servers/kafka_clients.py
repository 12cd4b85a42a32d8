"""kafka-python clients for the Apache Kafka brokers of :mod:`.kafka`: a
partition's log range (:func:`log_range`) and a batching producer (:func:`produce`).

Both pin the 0.9 protocol (:data:`~.kafka_package.KAFKA_PYTHON_API_VERSION`)
unless told another ``api_version`` (None: ask the broker, for 0.10+), and take a
bootstrap string, so they serve any cluster, not only a
:class:`~.kafka.KafkaCluster` (whose ``produce`` and ``log_range`` pass its
version)::

    produce(cluster.bootstrap, "orders", [(p, None, b"x") for p in range(4)])
    start, end = log_range(cluster.bootstrap, "orders", 0)
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Tuple

from storm_kafka_compat.servers.kafka_package import KAFKA_PYTHON_API_VERSION

#: what the producers here write: (partition, key, value)
Message = Tuple[int, Optional[bytes], Optional[bytes]]


def _version(api_version: Optional[Tuple[int, ...]]) -> Dict[str, Any]:
    return {} if api_version is None else {"api_version": api_version}


def log_range(bootstrap: str, topic: str, partition: int, *,
              api_version: Optional[Tuple[int, ...]] = KAFKA_PYTHON_API_VERSION
              ) -> Tuple[int, int]:
    """``(log start, high watermark)`` of ``topic``/``partition``."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), request_timeout_ms=10000,
                             client_id="skc-testing-offsets", **_version(api_version))
    try:
        tp = TopicPartition(topic, partition)
        start = consumer.beginning_offsets([tp])[tp]
        end = consumer.end_offsets([tp])[tp]
        return int(start), int(end)
    finally:
        consumer.close()


def produce(bootstrap: str, topic: str, messages: Iterable[Message], *,
            timeout_s: float = 120.0, acks: Any = "all", batch_size: int = 65536,
            api_version: Optional[Tuple[int, ...]] = KAFKA_PYTHON_API_VERSION,
            **producer: Any) -> int:
    """Produce ``(partition, key, value)`` messages with a normal batching producer
    (kafka-python, ``linger_ms`` 5, 64 KiB batches), as applications write; return
    how many were acknowledged. Raises on any failed send.

    A 0.9 broker drops the connection when one batch is larger than the topic's
    ``segment.bytes``: pass a smaller ``batch_size`` for tiny segments. Other
    ``KafkaProducer`` settings (``compression_type``, security) go in ``producer``."""
    from kafka import KafkaProducer
    client = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks=acks, linger_ms=5,
                           batch_size=batch_size, retries=5, client_id="skc-testing-produce",
                           request_timeout_ms=30000, **_version(api_version), **producer)
    try:
        futures = [client.send(topic, value=v, key=k, partition=p) for p, k, v in messages]
        client.flush(timeout_s)
        for f in futures:
            f.get(timeout=timeout_s)
    finally:
        client.close(timeout=10)
    return len(futures)
