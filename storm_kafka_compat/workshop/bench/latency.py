"""End-to-end latency: from the moment a message is handed to the producer to the
moment the bolt sees it, at a stated rate.

A producer thread writes ``rate`` messages per second for ``seconds`` seconds, each
value carrying its send time (epoch milliseconds, 8 bytes big-endian); the
pipeline runs meanwhile with :func:`latency_bolt`, which writes the difference to
a file per Python worker under a directory named after the topic; the run stops
once the producer is done and the pipeline has caught up. Both clocks are this
machine's, so no skew enters.
"""

from __future__ import annotations

import os
import struct
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, IO, List, Optional

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_FILES: Dict[str, IO[str]] = {}


def latency_dir(topic: str) -> Path:
    """Where the bolts of a latency run over ``topic`` write."""
    return Path(tempfile.gettempdir()) / "skc-bench-latency" / topic


def latency_bolt(t: Any) -> None:
    """The bolt of the latency run: receive time minus send time, in ms, one line each."""
    sent = struct.unpack(">q", t.values[0][:8])[0]
    f = _FILES.get(t.topic)
    if f is None:
        d = latency_dir(t.topic)
        d.mkdir(parents=True, exist_ok=True)
        f = _FILES[t.topic] = open(d / f"worker-{os.getpid()}.txt", "a", buffering=1)
    f.write(f"{time.time() * 1000.0 - sent:.1f}\n")


def percentile(values: List[float], q: float) -> Optional[float]:
    """The ``q``-th percentile (0-100) by the nearest-rank method; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def produce_at_rate(bootstrap: str, topic: str, partitions: int, rate: float, seconds: float,
                    size: int, client: Dict[str, Any]) -> int:
    """Write ``rate`` messages/s for ``seconds`` with a batching kafka-python producer,
    each value starting with its send time; returns how many were written."""
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), linger_ms=5,
                             batch_size=65536, acks=1, client_id="skc-bench-latency", **client)
    pad = b"x" * max(0, size - 8)
    sent = 0
    started = time.monotonic()
    try:
        while True:
            elapsed = time.monotonic() - started
            if elapsed >= seconds:
                break
            due = int(elapsed * rate) + 1
            while sent < due:
                value = struct.pack(">q", int(time.time() * 1000)) + pad
                producer.send(topic, value=value, partition=sent % partitions)
                sent += 1
            time.sleep(0.002)
        producer.flush(60)
    finally:
        producer.close(timeout=10)
    return sent


def latency_run(spark: "SparkSession", *, job: Any, bootstrap: str, topic: str, partitions: int,
                rate: float, seconds: float, size: int, client: Dict[str, Any],
                clock: Callable[[], float] = time.monotonic) -> Dict[str, Any]:
    """Run the pipeline of ``job`` (its bolt :func:`latency_bolt`) while producing;
    return p50/p99/max latency in ms and the counts."""
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions
    pipe = Pipeline(job, spark=spark)
    written: List[int] = []

    def produce_then_stop() -> None:
        try:
            written.append(produce_at_rate(bootstrap, topic, partitions, rate, seconds, size,
                                           client))
            deadline = clock() + 120          # let the pipeline catch up, then stop it
            while clock() < deadline and pipe.summary.messages < written[0]:
                time.sleep(0.1)
        finally:
            pipe.stop("latency run complete")

    worker = threading.Thread(target=produce_then_stop, daemon=True)
    worker.start()
    summary = pipe.run(RunOptions())
    worker.join(10)
    values: List[float] = []
    d = latency_dir(topic)
    for f in sorted(d.glob("*.txt")) if d.exists() else ():
        values.extend(float(line) for line in f.read_text().split())
    return {"rate_msgs_per_s": rate, "seconds": seconds, "produced": (written or [0])[0],
            "processed": summary.messages, "samples": len(values),
            "p50_ms": percentile(values, 50), "p99_ms": percentile(values, 99),
            "max_ms": max(values) if values else None}
