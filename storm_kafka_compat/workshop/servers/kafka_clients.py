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

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from storm_kafka_compat.workshop.servers.kafka_package import KAFKA_PYTHON_API_VERSION

#: what the producers here write: (partition, key, value)
Message = Tuple[int, Optional[bytes], Optional[bytes]]


def _version(api_version: Optional[Tuple[int, ...]]) -> Dict[str, Any]:
    return {} if api_version is None else {"api_version": api_version}


def log_range(bootstrap: str, topic: str, partition: int, *,
              api_version: Optional[Tuple[int, ...]] = KAFKA_PYTHON_API_VERSION,
              timeout_s: float = 60.0) -> Tuple[int, int]:
    """``(log start, high watermark)`` of ``topic``/``partition``. Each lookup waits up
    to ``timeout_s`` (kafka-python retries inside it): just after a broker dies a
    lookup can take longer than one 10 s request (seen once in CI, on a 0.9 pair right
    after a controller kill; the cause was not pinned down)."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), request_timeout_ms=10000,
                             client_id="skc-testing-offsets", **_version(api_version))
    try:
        tp = TopicPartition(topic, partition)
        start = consumer.beginning_offsets([tp], timeout_ms=int(timeout_s * 1000))[tp]
        end = consumer.end_offsets([tp], timeout_ms=int(timeout_s * 1000))[tp]
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

    A send is retried until ``timeout_s`` (kafka-python's default: no retry count,
    ``delivery_timeout_ms``), idempotent on 0.11+ brokers: a leadership moving back to
    its preferred replica can answer NOT_LEADER for longer than a few quick retries on
    a loaded machine (CI saw five used up in half a second during a rolling restart).

    A 0.9 broker drops the connection when one batch is larger than the topic's
    ``segment.bytes``: pass a smaller ``batch_size`` for tiny segments. Other
    ``KafkaProducer`` settings (``compression_type``, security) go in ``producer``."""
    from kafka import KafkaProducer
    client = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks=acks, linger_ms=5,
                           batch_size=batch_size, client_id="skc-testing-produce",
                           request_timeout_ms=30000, retry_backoff_ms=200,
                           delivery_timeout_ms=int(timeout_s * 1000),
                           **_version(api_version), **producer)
    try:
        futures = [client.send(topic, value=v, key=k, partition=p) for p, k, v in messages]
        client.flush(timeout_s)
        for f in futures:
            f.get(timeout=timeout_s)
    finally:
        client.close(timeout=10)
    return len(futures)


def produce_librdkafka(bootstrap: str, topic: str, messages: Iterable[Message], *,
                       settings: Mapping[str, Any] = {}, timeout_s: float = 300.0) -> int:
    """Produce with librdkafka's batching producer (confluent-kafka): the writer of
    large benchmark topics (millions of messages in seconds, where kafka-python's
    producer takes minutes). ``settings`` are extra librdkafka settings (the brokers'
    protocol pin for a 0.9 broker). Returns how many were acknowledged; raises on
    any failed delivery."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000,
                         "client.id": "skc-testing-produce", **dict(settings)})
    errors: List[str] = []
    acked = 0

    def delivered(err: Any, msg: Any) -> None:
        nonlocal acked
        if err is not None:
            errors.append(str(err))
        else:
            acked += 1

    sent = 0
    for partition, key, value in messages:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition,
                                 on_delivery=delivered)
                break
            except BufferError:               # the local queue is full: let it drain
                producer.poll(0.05)
        sent += 1
        if sent % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(timeout_s)
    if errors or remaining or acked != sent:
        raise RuntimeError(f"librdkafka produced {acked} of {sent} messages to {topic!r} "
                           f"({remaining} undelivered; first error: "
                           f"{errors[0] if errors else None})")
    return acked
