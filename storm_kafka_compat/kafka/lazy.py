"""The driver's Kafka access, built on first use.

The driver asks Kafka for metadata and log offsets (never for messages): one
kafka-python client, whatever the executors' ``backend``, built from the
brokers known when it is first needed -- the configured bootstrap servers, the
``StaticHosts`` leaders, or the leaders a discovery found in Kafka's registry.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Set, Tuple

from storm_kafka_compat.config import BootstrapHosts, Broker, JobConfig, StaticHosts
from storm_kafka_compat.errors import StateError


class LazyKafka:
    """A KafkaAccess built on first use from the known brokers (leaders found by
    the discovery) or the configured bootstrap servers."""

    def __init__(self, job: JobConfig, factory: Optional[Callable[[List[str]], Any]] = None) -> None:
        self.job = job
        self.factory = factory
        self.brokers: Set[str] = set()
        self._access: Any = None
        hosts = job.spout.hosts
        if isinstance(hosts, BootstrapHosts):
            self.brokers.update(hosts.servers)
        elif isinstance(hosts, StaticHosts):
            self.brokers.update(str(b) for b in hosts.partitions.values())
        self.brokers.update(job.kafka_settings.bootstrap_servers)

    def learn(self, broker: Broker) -> None:
        self.brokers.add(str(broker))

    @property
    def bootstrap(self) -> Tuple[str, ...]:
        return tuple(sorted(self.brokers))

    def get(self) -> Any:
        if self._access is None:
            if not self.brokers:
                raise StateError("no Kafka broker known yet: discovery found no leader")
            if self.factory is not None:
                self._access = self.factory(list(self.bootstrap))
            else:
                from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
                self._access = KafkaPythonAccess(list(self.bootstrap), self.job.spout,
                                                 self.job.kafka_settings.for_kafka_python())
        return self._access

    def __getattr__(self, name: str) -> Any:     # offset_for, fetch, leaders, topics
        return getattr(self.get(), name)

    def close(self) -> None:
        if self._access is not None:
            self._access.close()
            self._access = None
