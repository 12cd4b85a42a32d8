"""storm-kafka-client 2.x's ``kafkaOffset`` metric set as data.

Storm 2.x (``metrics2.KafkaOffsetPartitionMetrics`` and ``KafkaOffsetTopicMetrics``,
registered under ``kafkaOffset``) reports per partition, under
``<topic>/partition_<N>/``:

=========================  ================================================
``spoutLag``               log end - committed offset
``earliestTimeOffset``     log start
``latestTimeOffset``       log end
``latestEmittedOffset``    highest offset emitted (0 before the first)
``latestCompletedOffset``  the committed offset (next offset to process)
``recordsInPartition``     log end - log start
=========================  ================================================

and per topic, under ``<topic>/``, the sums ``totalSpoutLag``,
``totalEarliestTimeOffset``, ``totalLatestTimeOffset``, ``totalLatestEmittedOffset``,
``totalLatestCompletedOffset`` and ``totalRecordsInPartitions``. Keys never carry the
wildcard form of storm-kafka 1.x, and a log offset Kafka did not answer makes the
gauges that need it 0 (a topic total that needs it is 0 as a whole), as Storm's gauges
return ``0L`` after logging the failure. The storm-kafka 1.x metric is
:mod:`storm_kafka_compat.spout.metrics`.

This module is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional

__all__ = ["ClientOffsetSample", "kafka_offset_metric_v2", "PARTITION_NAMES", "TOPIC_NAMES"]

#: per-partition gauge names, in Storm's registration order
PARTITION_NAMES = ("spoutLag", "earliestTimeOffset", "latestTimeOffset", "latestEmittedOffset",
                   "latestCompletedOffset", "recordsInPartition")
#: per-topic gauge names, in Storm's registration order
TOPIC_NAMES = ("totalSpoutLag", "totalEarliestTimeOffset", "totalLatestTimeOffset",
               "totalLatestEmittedOffset", "totalLatestCompletedOffset",
               "totalRecordsInPartitions")


@dataclass(frozen=True)
class ClientOffsetSample:
    """One partition's offsets for the 2.x ``kafkaOffset`` metric.

    Attributes
    ----------
    earliest, latest : int or None
        Kafka's log start and log end; None when Kafka did not answer.
    latest_emitted : int
        Highest offset emitted (an offset, not a position); 0 before the first.
    committed : int
        The committed offset: the next offset to process.
    """

    topic: str
    partition: int
    earliest: Optional[int]
    latest: Optional[int]
    latest_emitted: int
    committed: int


def _partition_values(s: ClientOffsetSample) -> Dict[str, Optional[int]]:
    known = s.earliest is not None and s.latest is not None
    return {
        "spoutLag": None if s.latest is None else s.latest - s.committed,
        "earliestTimeOffset": s.earliest,
        "latestTimeOffset": s.latest,
        "latestEmittedOffset": s.latest_emitted,
        "latestCompletedOffset": s.committed,
        "recordsInPartition": s.latest - s.earliest if known else None,  # type: ignore[operator]
    }


def kafka_offset_metric_v2(samples: Iterable[ClientOffsetSample]) -> Optional[Dict[str, int]]:
    """The ``kafkaOffset`` data point of storm-kafka-client 2.x for the assigned
    partitions, or None when none is assigned (Storm registers no gauge then)."""
    out: Dict[str, int] = {}
    by_topic: Dict[str, List[Dict[str, Optional[int]]]] = {}
    for s in samples:
        values = _partition_values(s)
        prefix = f"{s.topic}/partition_{s.partition}"
        for name in PARTITION_NAMES:
            value = values[name]
            out[f"{prefix}/{name}"] = 0 if value is None else value
        by_topic.setdefault(s.topic, []).append(values)
    if not by_topic:
        return None
    for topic, rows in by_topic.items():
        for total, name in zip(TOPIC_NAMES, PARTITION_NAMES):
            parts = [r[name] for r in rows]
            out[f"{topic}/{total}"] = 0 if any(p is None for p in parts) \
                else sum(p for p in parts if p is not None)
    return out
