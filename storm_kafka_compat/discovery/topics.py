"""TopicsDiscovery: storm-kafka-client's subscription (topic names or a pattern).

``NamedTopicFilter`` or ``PatternTopicFilter``: the partitions of the named
topics, or of every topic the pattern fully matches, sorted by (topic,
partition), asked from the brokers every ``partitionRefreshPeriodMs``. The
assignment then splits them round-robin over the tasks
(``RoundRobinManualPartitioner``). A named topic the brokers do not know is
logged and skipped.
"""

from __future__ import annotations

import logging
from typing import Any, List

from storm_kafka_compat.discovery.base import Discovery, PartitionInfo, known_topics

log = logging.getLogger(__name__)


class TopicsDiscovery(Discovery):
    """The subscribed partitions of a ``kafkaSpout`` section.

    Parameters
    ----------
    config : KafkaSpoutConfig
        ``topics`` or ``topic_pattern`` and ``partition_refresh_period_ms``.
    access : KafkaAccess-like
        ``topics()`` and ``leaders(topic)`` (not closed by this object).
    """

    def __init__(self, config: Any, access: Any) -> None:
        self.refresh_freq_ms = config.partition_refresh_period_ms
        self.config = config
        self.access = access

    def discover(self) -> List[PartitionInfo]:
        if self.config.topic_pattern is not None:
            topics = [t for t in self.access.topics() if self.config.matches(t)]
        else:
            topics = list(self.config.topics or ())
        out: List[PartitionInfo] = []
        for topic in sorted(set(topics)):
            leaders = self.access.leaders(topic)
            if not leaders:
                log.warning("topic %r has no partitions (missing?); skipped%s", topic,
                            known_topics(topic, self.access.topics()))
                continue
            out.extend(PartitionInfo(topic, p, leaders[p]) for p in sorted(leaders))
        return out
