"""Discovery: every partition of the spout and its current leader.

A discovery answers one question, *which partitions exist and who leads them*,
as the ordered list ``L`` every task computes alike. It owns no partition
state: :class:`~storm_kafka_compat.spout.assignment.Assignment` takes this
task's share of ``L`` and keeps a manager per partition.

Implementations: :class:`~storm_kafka_compat.discovery.static.StaticDiscovery`
(``StaticHosts``), :class:`~storm_kafka_compat.discovery.zk.ZkDiscovery`
(``ZkHosts``: Kafka's broker registry), :class:`~storm_kafka_compat.discovery.
bootstrap.BootstrapDiscovery` (bootstrap servers' metadata) and
:class:`~storm_kafka_compat.discovery.topics.TopicsDiscovery` (storm-kafka-client's
topic names or pattern); :func:`storm_kafka_compat.discovery.discovery_for` picks
the one a job's config calls for.

This module is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from storm_kafka_compat.config import Broker
from storm_kafka_compat.structs import TopicPartition


@dataclass(frozen=True)
class PartitionInfo:
    """A partition, its current leader and its ZooKeeper path segment.

    ``path_topic`` is the topic segment of the offset path
    (``zkRoot/id/<path_topic>/partition_N``) in wildcard mode or with
    ``StaticHosts(use_topic_name_for_partition_path_id=True)``; ``None`` for
    the classic ``zkRoot/id/partition_N``.
    """

    topic: str
    partition: int
    leader: Broker
    path_topic: Optional[str] = None

    @property
    def key(self) -> TopicPartition:
        """``(topic, partition)``."""
        return TopicPartition(self.topic, self.partition)


class Discovery:
    """Base of the discoveries: :meth:`discover` and :meth:`close`.

    ``refresh_freq_ms`` is how often the partition list may change and is asked
    again; ``None`` means a fixed list (``StaticHosts``: discovered once, and a
    failing fetch retries the same broker).
    """

    refresh_freq_ms: Optional[int] = None

    def discover(self) -> List[PartitionInfo]:
        """The ordered partition list ``L`` (every task's partitions)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the discovery connected (a ZooKeeper client); idempotent."""
