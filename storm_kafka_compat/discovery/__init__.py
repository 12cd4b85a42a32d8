"""Coordinators: which partitions this task owns, and from which leader.

``StaticCoordinator`` (StaticHosts), ``ZkCoordinator`` (ZkHosts: Kafka's broker
registry in ZooKeeper) and ``BootstrapCoordinator`` (KRaft-era clusters) share
:class:`~storm_kafka_compat.discovery.base.Coordinator`.
"""

from storm_kafka_compat.discovery.assignment import partitions_for_task
from storm_kafka_compat.discovery.base import Coordinator, PartitionInfo
from storm_kafka_compat.discovery.bootstrap import BootstrapCoordinator
from storm_kafka_compat.discovery.static import StaticCoordinator
from storm_kafka_compat.discovery.zk import ZkCoordinator

__all__ = ["Coordinator", "PartitionInfo", "partitions_for_task", "StaticCoordinator",
           "ZkCoordinator", "BootstrapCoordinator"]
