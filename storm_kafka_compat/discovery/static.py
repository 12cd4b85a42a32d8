"""StaticDiscovery: a fixed partition -> leader map (storm-kafka ``StaticHosts``).

The list never changes (``refresh_freq_ms`` None): the assignment builds every
manager once and a failing broker is retried forever (as in storm-kafka).
"""

from __future__ import annotations

from typing import List

from storm_kafka_compat.config import StaticHosts
from storm_kafka_compat.discovery.base import Discovery, PartitionInfo


class StaticDiscovery(Discovery):
    """The partitions of :class:`~storm_kafka_compat.config.StaticHosts`.

    Parameters
    ----------
    hosts : StaticHosts
        Partition -> leader; partitions are taken in ascending order.
    topic : str
        The topic (``SpoutConfig.topic``).
    """

    refresh_freq_ms = None

    def __init__(self, hosts: StaticHosts, topic: str) -> None:
        self.hosts = hosts
        self.topic = topic
        path_topic = topic if hosts.use_topic_name_for_partition_path_id else None
        self._partitions = [PartitionInfo(topic, p, hosts.partitions[p], path_topic)
                            for p in sorted(hosts.partitions)]

    def discover(self) -> List[PartitionInfo]:
        """The configured partitions, ascending."""
        return list(self._partitions)
