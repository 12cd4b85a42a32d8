"""Coordinators: which partitions this task owns, and from which leader.

``StaticCoordinator`` (StaticHosts), ``ZkCoordinator`` (ZkHosts: Kafka's broker
registry in ZooKeeper) and ``BootstrapCoordinator`` (KRaft-era clusters) share
:class:`~storm_kafka_compat.coordinators.base.Coordinator`.
"""

from storm_kafka_compat.coordinators.assignment import partitions_for_task
from storm_kafka_compat.coordinators.base import Coordinator, PartitionInfo
from storm_kafka_compat.coordinators.bootstrap import BootstrapCoordinator
from storm_kafka_compat.coordinators.static import StaticCoordinator
from storm_kafka_compat.coordinators.zk import ZkCoordinator

__all__ = ["Coordinator", "PartitionInfo", "partitions_for_task", "StaticCoordinator",
           "ZkCoordinator", "BootstrapCoordinator"]
