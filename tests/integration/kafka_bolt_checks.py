"""Reading a KafkaBolt's output topic on a Kafka 0.9 cluster and checking it
against the input offsets (shared by the integration and fault tests)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Dict, List, Tuple

Record = Tuple[str, str]


def read_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float = 60.0
               ) -> List[Record]:
    """Every (key, value) of ``topic`` from its start to its high watermark."""
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), api_version=(0, 9),
                             enable_auto_commit=False, request_timeout_ms=15000,
                             client_id="skc-kafkabolt-check")
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        out: List[Record] = []
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < end[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {len(out)} records of {topic}; end {end}")
            for recs in consumer.poll(timeout_ms=500).values():
                out.extend((r.key.decode(), r.value.decode()) for r in recs)
        return out
    finally:
        consumer.close()


def coverage(records: List[Record], topic: str, log_end: Dict[int, int]
             ) -> Tuple[int, int, int]:
    """``(expected, lost, duplicates)``: input offsets ``[0, log_end[p])`` of every
    partition against the output keys ``topic/partition/offset``."""
    counts = Counter(key for key, _ in records)
    expected = {f"{topic}/{p}/{o}" for p, end in log_end.items() for o in range(end)}
    lost = len(expected - set(counts))
    duplicates = sum(n - 1 for key, n in counts.items() if key in expected)
    return len(expected), lost, duplicates
