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

import difflib
from dataclasses import dataclass
from typing import Iterable, List, Optional

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


#: topics named in full by :func:`known_topics`; beyond it they are counted
TOPICS_SHOWN = 20


def known_topics(topic: str, existing: Optional[Iterable[str]]) -> str:
    """What to add to "topic X is unknown": the near names (``difflib``) and the topics
    that exist (Kafka's internal ``__`` topics left out), ``""`` when nobody could say.

    >>> known_topics("clikcs", ["clicks", "views", "__consumer_offsets"])
    "; did you mean 'clicks'? The topics there: clicks, views"
    """
    if existing is None:
        return ""
    names = sorted(t for t in existing if not t.startswith("__"))
    if not names:
        return "; there is no topic there yet"
    close = difflib.get_close_matches(topic, names, n=3, cutoff=0.6)
    hint = "; did you mean " + " or ".join(repr(t) for t in close) + "?" if close else ""
    shown = ", ".join(names[:TOPICS_SHOWN]) + (
        f" and {len(names) - TOPICS_SHOWN} more" if len(names) > TOPICS_SHOWN else "")
    return f"{hint}{' The' if hint else '; the'} topics there: {shown}"
