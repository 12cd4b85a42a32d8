"""Discovery: which partitions exist and who leads them (no partition state).

:func:`discovery_for` is the one place a job's config is turned into its
discovery: ``StaticHosts`` -> :class:`StaticDiscovery`, ``ZkHosts`` ->
:class:`ZkDiscovery` (Kafka's broker registry), bootstrap servers ->
:class:`BootstrapDiscovery`, and a storm-kafka-client job (``kafkaSpout``
with ``offsetStore: kafka``) -> :class:`TopicsDiscovery`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from storm_kafka_compat.discovery.base import Discovery, PartitionInfo
from storm_kafka_compat.kafka.client import KafkaAccess

if TYPE_CHECKING:
    from storm_kafka_compat.config import JobConfig
    from storm_kafka_compat.discovery.zk import RegistryReader

__all__ = ["Discovery", "PartitionInfo", "discovery_for"]


def discovery_for(job: "JobConfig", kafka: KafkaAccess, *,
                  reader: Optional["RegistryReader"] = None) -> Discovery:
    """The discovery ``job`` calls for.

    Parameters
    ----------
    job : JobConfig
    kafka : KafkaAccess
        Metadata for the bootstrap and storm-kafka-client discoveries.
    reader : RegistryReader, optional
        For ``ZkHosts``: read the registry through this (tests) instead of a
        kazoo client of the discovery's own.
    """
    from storm_kafka_compat.config import StaticHosts, ZkHosts
    if job.uses_kafka_offsets:
        from storm_kafka_compat.discovery.topics import TopicsDiscovery
        return TopicsDiscovery(job.kafka_spout, kafka)
    hosts = job.spout.hosts
    if isinstance(hosts, ZkHosts):
        from storm_kafka_compat.discovery.zk import ZkDiscovery
        return ZkDiscovery(hosts, job.spout, job.topology, reader=reader)
    if isinstance(hosts, StaticHosts):
        from storm_kafka_compat.discovery.static import StaticDiscovery
        return StaticDiscovery(hosts, job.spout.topic)
    from storm_kafka_compat.discovery.bootstrap import BootstrapDiscovery
    return BootstrapDiscovery(hosts, job.spout, job.topology, kafka)
