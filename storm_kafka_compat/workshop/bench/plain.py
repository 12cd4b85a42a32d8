"""The baseline: the plain PySpark job a user would write by hand.

The partitions are dealt over as many Spark tasks as the pipeline's runner uses
(``sc.parallelize(work, slots).mapPartitions``; at most one task per partition),
each opening the client library directly with its partitions assigned, reading them
from offset 0 to the end offsets the driver found, and calling a Python function once
per message; the driver sums the counts. No offsets are stored and nothing is acknowledged: it
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
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Tuple

from storm_kafka_compat.config import SpoutConfig
from storm_kafka_compat.kafka.confluent_settings import group_config as librdkafka_group_config
from storm_kafka_compat.kafka.kafka_python_settings import group_config as kafka_python_group_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
        from storm_kafka_compat.kafka.confluent_settings import consumer_config as librdkafka_config
        return librdkafka_config(bootstrap, spout, client)
    from storm_kafka_compat.kafka.kafka_python_settings import consumer_config
    return consumer_config(bootstrap, spout, client)


def default_consumer(backend: str, bootstrap: str, client: Mapping[str, Any]) -> Dict[str, Any]:
    """The same consumer on the library's defaults: only what reading needs (the
    servers, no group commits, a client id) and the brokers' protocol pin."""
    if backend == "confluent":
        return {"bootstrap.servers": bootstrap, "group.id": "skc-bench-plain",
                "enable.auto.commit": False, "client.id": "skc-bench-plain", **dict(client)}
    return {"bootstrap_servers": bootstrap, "enable_auto_commit": False, "group_id": None,
            "client_id": "skc-bench-plain", **dict(client)}


def _batches_kafka_python(topic: str, ends: Mapping[int, int], config: Mapping[str, Any]
                          ) -> Iterator[List[Any]]:
    """kafka-python's records of ``ends``' partitions from offset 0 to their end
    offsets, one consumer assigned all of them, a list per poll and partition."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(**kafka_python_group_config(config))
    try:
        left = {TopicPartition(topic, p): end for p, end in ends.items() if end > 0}
        consumer.assign(list(left))
        for tp in left:
            consumer.seek(tp, 0)
        while left:
            for tp, records in consumer.poll(timeout_ms=1000,
                                             max_records=POLL_RECORDS).items():
                yield records
                if tp in left and consumer.position(tp) >= left[tp]:
                    del left[tp]
                    consumer.pause(tp)
    finally:
        consumer.close()


def _batches_confluent(topic: str, ends: Mapping[int, int], config: Mapping[str, Any]
                       ) -> Iterator[List[Any]]:
    """librdkafka's messages of ``ends``' partitions from offset 0 to their end
    offsets, one consumer assigned all of them, a list per ``consume`` call (an entry
    may be an error event: its ``error()`` is not None)."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer(librdkafka_group_config(config))
    try:
        left = {p: end for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in left])
        while left:
            # what librdkafka already holds, else wait for the next record (as the
            # pipeline's adapter does): consume(n, timeout) waits for n messages, so
            # with large values (fewer than n fit in the prefetch queue) every call
            # would wait out its whole timeout
            batch: List[Any] = consumer.consume(POLL_RECORDS, 0) or \
                consumer.consume(1, 1.0)
            if not batch:
                continue
            yield batch
            for tp in consumer.position([TopicPartition(topic, p) for p in left]):
                if tp.offset >= left[tp.partition]:
                    del left[tp.partition]
                    consumer.pause([tp])
    finally:
        consumer.close()


def read_count(work: "PlainWork") -> int:
    """One task's reading: its partitions from offset 0 to their end offsets, with one
    consumer assigned all of them, :func:`handle` called once per message."""
    backend, topic, ends, config = work
    seen = 0
    if backend == "confluent":
        for batch in _batches_confluent(topic, dict(ends), dict(config)):
            for m in batch:
                if m.error() is None:
                    seen += handle(m.value())
    else:
        for records in _batches_kafka_python(topic, dict(ends), dict(config)):
            for r in records:
                seen += handle(r.value)
    return seen


def read_keyed(work: "PlainWork", key: Callable[[int], Any]) -> Iterator[Tuple[Any, bytes]]:
    """As :func:`read_count`, yielding ``(key(offset), value)`` per message: the first
    stage of the plain multi-stage job."""
    backend, topic, ends, config = work
    if backend == "confluent":
        for batch in _batches_confluent(topic, dict(ends), dict(config)):
            for m in batch:
                if m.error() is None:
                    yield key(m.offset()), m.value()
    else:
        for records in _batches_kafka_python(topic, dict(ends), dict(config)):
            for r in records:
                yield key(r.offset), r.value


#: one task's work: (backend, topic, partition -> end offset, consumer settings)
PlainWork = Tuple[str, str, Tuple[Tuple[int, int], ...], Tuple[Tuple[str, Any], ...]]


def read_partitions(works: Iterable[PlainWork]) -> Iterator[int]:
    """The ``mapPartitions`` function of the plain job: messages handled per task."""
    for work in works:
        yield read_count(work)


def plain_work(backend: str, topic: str, ends: Mapping[int, int],
               consumer: Mapping[str, Any], tasks: int) -> List[PlainWork]:
    """The partitions dealt over ``tasks`` tasks, as the pipeline's runner deals its
    plans (at most one task per partition)."""
    conf = tuple(sorted(consumer.items()))
    parts = sorted(ends.items())
    n = max(1, min(tasks, len(parts)))
    return [(backend, topic, tuple(parts[i::n]), conf) for i in range(n)]


def plain_rate(spark: "SparkSession", *, backend: str, topic: str, ends: Mapping[int, int],
               consumer: Mapping[str, Any],
               clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """Run the plain job over ``topic`` (partition -> end offset ``ends``) with the
    library ``consumer`` settings (:func:`careful_consumer` or
    :func:`default_consumer`); its rate. The partitions are dealt over as many
    tasks as the pipeline's runner uses (Spark's default parallelism)."""
    sc = spark.sparkContext
    work = plain_work(backend, topic, ends, consumer, sc.defaultParallelism)
    t0 = clock()
    messages = sum(sc.parallelize(work, len(work)).mapPartitions(read_partitions).collect())
    seconds = clock() - t0
    return rate_of(f"the plain {backend} job", messages, sum(ends.values()), seconds)


def rate_of(what: str, messages: int, expected: int, seconds: float) -> Dict[str, Any]:
    """A throughput figure (``messages``, ``seconds``, ``msgs_per_s``), checked against
    the messages the topic holds."""
    if messages != expected:
        raise RuntimeError(f"{what} read {messages} messages of {expected}")
    return {"messages": messages, "seconds": seconds,
            "msgs_per_s": messages / seconds if seconds > 0 else 0.0}


def _offset_key(offset: int) -> int:
    return offset


def count_pairs(pairs: Iterable[Tuple[Any, bytes]]) -> Iterator[int]:
    """The second stage of the plain multi-stage job: :func:`handle` per message."""
    yield sum(handle(value) for _key, value in pairs)


def plain_multi_stage_rate(spark: "SparkSession", *, backend: str, topic: str,
                           ends: Mapping[int, int], consumer: Mapping[str, Any],
                           clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """The plain job of a two-stage topology, as a user writes it in PySpark: read
    (as :func:`plain_rate`), key each message by its offset, ``partitionBy`` over the
    default parallelism (one shuffle, as the pipeline's fields grouping on the
    offset), then the per-message function; its rate."""
    sc = spark.sparkContext
    slots = sc.defaultParallelism
    work = plain_work(backend, topic, ends, consumer, slots)
    t0 = clock()
    messages = (sc.parallelize(work, len(work))
                .flatMap(lambda w: read_keyed(w, _offset_key))
                .partitionBy(slots).mapPartitions(count_pairs).sum())
    seconds = clock() - t0
    return rate_of(f"the plain multi-stage {backend} job", messages, sum(ends.values()),
                   seconds)
