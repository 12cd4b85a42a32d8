"""StaticCoordinator: a fixed partition -> leader map (storm-kafka ``StaticHosts``).

The first refresh builds every manager; later refreshes change nothing, so a
failing broker is retried forever (as in storm-kafka).
"""

from __future__ import annotations

from typing import List, Optional

from storm_kafka_compat.config import StaticHosts
from storm_kafka_compat.discovery.base import (Coordinator, ManagerFactory,
                                                  PartitionInfo, RemovedCallback)


class StaticCoordinator(Coordinator):
    """Coordinator over :class:`~storm_kafka_compat.config.StaticHosts`.

    Parameters
    ----------
    hosts : StaticHosts
        Partition -> leader; partitions are taken in ascending order.
    topic : str
        The topic (``SpoutConfig.topic``).
    manager_factory, on_removed, task_index, total_tasks
        See :class:`~storm_kafka_compat.discovery.base.Coordinator`.
    """

    def __init__(self, hosts: StaticHosts, topic: str, *, manager_factory: ManagerFactory,
                 on_removed: Optional[RemovedCallback] = None, task_index: int = 0,
                 total_tasks: int = 1) -> None:
        super().__init__(manager_factory=manager_factory, on_removed=on_removed,
                         task_index=task_index, total_tasks=total_tasks,
                         refresh_freq_ms=None)
        self.hosts = hosts
        self.topic = topic
        path_topic = topic if hosts.use_topic_name_for_partition_path_id else None
        self._partitions = [PartitionInfo(topic, p, hosts.partitions[p], path_topic)
                            for p in sorted(hosts.partitions)]

    def discover(self) -> List[PartitionInfo]:
        """The configured partitions, ascending."""
        return list(self._partitions)

    def refresh(self) -> None:
        """Build the managers the first time; a no-op afterwards."""
        if self.refresh_count == 0:
            super().refresh()

    def on_fetch_failure(self) -> None:
        """Nothing to rediscover: the same broker is retried."""
