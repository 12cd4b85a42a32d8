"""Storm's ``kafkaOffset`` and ``kafkaPartition`` metrics (1.2 names) as data.

``kafkaPartition`` keys are ``<partition id>/<name>`` where the partition id is
``partition_N`` or, in wildcard mode, ``<topic>/partition_N`` (the STORM-2775
prefix; the legacy ``Partition{...}`` keys, which always report zeros in 1.2,
are not produced). ``kafkaOffset`` keys are ``<topic>/partition_N/<name>`` plus
per-topic totals, and the whole metric is None unless every partition has data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from storm_kafka_compat.config import NO_OFFSET
from storm_kafka_compat.structs import lag as offset_lag


@dataclass(frozen=True)
class OffsetSample:
    """One partition's offsets for ``kafkaOffset``.

    ``earliest``/``latest`` are Kafka's log start and end (None when unknown).
    """

    topic: str
    partition: int
    earliest: Optional[int]
    latest: Optional[int]
    latest_emitted: int
    latest_completed: int
    wildcard: bool = False


def partition_id(topic: str, partition: int, wildcard: bool) -> str:
    """Storm's ``Partition.getId()``."""
    return f"{topic}/partition_{partition}" if wildcard else f"partition_{partition}"


def kafka_offset_metric(samples: Iterable[OffsetSample]) -> Optional[Dict[str, int]]:
    """``kafkaOffset`` for the managed partitions, or None as Storm reports it
    (no partitions, a partition without offsets, or latest == NO_OFFSET)."""
    out: Dict[str, int] = {}
    totals: Dict[str, Dict[str, int]] = {}
    seen = False
    for s in samples:
        seen = True
        if s.earliest is None or s.latest is None or s.latest == NO_OFFSET:
            return None
        lag = offset_lag(s.latest, s.latest_completed) or 0     # spoutLag: from completed
        # for wildcard partitions the id already starts with the topic
        prefix = partition_id(s.topic, s.partition, s.wildcard)
        if not s.wildcard:
            prefix = f"{s.topic}/{prefix}"
        out[f"{prefix}/spoutLag"] = lag
        out[f"{prefix}/earliestTimeOffset"] = s.earliest
        out[f"{prefix}/latestTimeOffset"] = s.latest
        out[f"{prefix}/latestEmittedOffset"] = s.latest_emitted
        out[f"{prefix}/latestCompletedOffset"] = s.latest_completed
        t = totals.setdefault(s.topic, {"totalSpoutLag": 0, "totalEarliestTimeOffset": 0,
                                        "totalLatestTimeOffset": 0, "totalLatestEmittedOffset": 0,
                                        "totalLatestCompletedOffset": 0})
        t["totalSpoutLag"] += lag
        t["totalEarliestTimeOffset"] += s.earliest
        t["totalLatestTimeOffset"] += s.latest
        t["totalLatestEmittedOffset"] += s.latest_emitted
        t["totalLatestCompletedOffset"] += s.latest_completed
    if not seen:
        return None
    for topic, values in totals.items():
        for name, value in values.items():
            out[f"{topic}/{name}"] = value
    return out


def kafka_partition_metric(per_partition: Iterable[Tuple[str, int, bool, Mapping[str, Any]]]
                           ) -> Dict[str, Any]:
    """``kafkaPartition`` from ``(topic, partition, wildcard, values)`` where
    ``values`` is :meth:`PartitionManager.take_metrics`'s mapping."""
    out: Dict[str, Any] = {}
    for topic, partition, wildcard, values in per_partition:
        prefix = partition_id(topic, partition, wildcard)
        for name, value in values.items():
            out[f"{prefix}/{name}"] = value
    return out
