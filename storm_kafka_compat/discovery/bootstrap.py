"""BootstrapDiscovery: partitions and leaders from the brokers' metadata.

KRaft-era clusters (Kafka 3.3+, only mode from 4.0) no longer register brokers
in ZooKeeper, so ``ZkHosts`` discovery finds nothing there (or stale data after a
migration). This discovery asks the bootstrap servers through
:meth:`KafkaAccess.leaders` / :meth:`KafkaAccess.topics` instead; everything
else (wildcard, leaders) is as for ZkDiscovery.
Partitions the metadata reports without a leader are left out (logged at WARN).
When the brokers cannot be asked, ``refresh`` raises the access's
:class:`~storm_kafka_compat.errors.FailedFetchError` (retriable). A topic that exists
with no partition led (an election or a broker restart under way) raises
:class:`~storm_kafka_compat.errors.NoLeaderError`; a topic the brokers do not know,
:class:`~storm_kafka_compat.errors.CoordinatorError` with the names they do know.
"""

from __future__ import annotations

import logging
from typing import List, Optional

from storm_kafka_compat.config import BootstrapHosts, SpoutConfig, TopologyConfig
from storm_kafka_compat.discovery.base import Discovery, PartitionInfo, known_topics
from storm_kafka_compat.discovery.registry import java_full_match
from storm_kafka_compat.errors import CoordinatorError, NoLeaderError, StormKafkaCompatError
from storm_kafka_compat.kafka.client import KafkaAccess

log = logging.getLogger(__name__)


class BootstrapDiscovery(Discovery):
    """The partitions of :class:`~storm_kafka_compat.config.BootstrapHosts` (brokers' metadata).

    Parameters
    ----------
    hosts : BootstrapHosts
        Bootstrap servers and ``refresh_freq_secs``.
    spout : SpoutConfig
        ``topic`` (a Java regex in wildcard mode).
    topology : TopologyConfig
        ``wildcard_match``.
    access : KafkaAccess
        Metadata source (not closed by this object).
    """

    def __init__(self, hosts: BootstrapHosts, spout: SpoutConfig, topology: TopologyConfig,
                 access: KafkaAccess) -> None:
        self.refresh_freq_ms = hosts.refresh_freq_secs * 1000
        self.hosts = hosts
        self.topic = spout.topic
        self.wildcard = topology.wildcard_match
        self.access = access

    def _topics(self) -> Optional[List[str]]:
        """The topics the brokers know, None when they cannot say."""
        try:
            return list(self.access.topics())
        except StormKafkaCompatError:
            return None

    def _unled(self, topic: str) -> CoordinatorError:
        """The error for a topic with no partition led: NoLeaderError when the brokers
        know the topic (it passes), else the names they know."""
        servers = ",".join(self.hosts.servers)
        known = self._topics()
        if known is not None and topic in known:
            return NoLeaderError(
                f"topic {topic!r} exists on {servers} but none of its partitions has a "
                "leader now (an election or a broker restart under way)", topic=topic)
        return CoordinatorError(
            f"topic {topic!r} has no partitions with a leader on {servers}; check the "
            "topic name and that the brokers are up" + known_topics(topic, known),
            topic=topic)

    def discover(self) -> List[PartitionInfo]:
        """Topics (regex-matched in wildcard mode, sorted) and their leaders.

        Raises
        ------
        NoLeaderError
            Outside wildcard mode, the topic exists and no partition has a leader.
        CoordinatorError
            Outside wildcard mode, the brokers do not know the topic.
        """
        if self.wildcard:
            topics = [t for t in self.access.topics() if java_full_match(self.topic, t)]
            if not topics:
                log.warning("no topic on %s matches the regex %r",
                            ",".join(self.hosts.servers), self.topic)
        else:
            topics = [self.topic]
        out: List[PartitionInfo] = []
        for t in topics:
            leaders = self.access.leaders(t)
            if not leaders and not self.wildcard:
                raise self._unled(t)
            expected = range(max(leaders) + 1) if leaders else range(0)
            missing = [p for p in expected if p not in leaders]
            if missing:
                log.warning("partitions %s of %s have no leader; skipped this refresh",
                            missing, t)
            for p in sorted(leaders):
                out.append(PartitionInfo(t, p, leaders[p], t if self.wildcard else None))
        return out
