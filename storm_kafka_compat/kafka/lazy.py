"""The driver's Kafka access, built on first use.

The driver asks Kafka for metadata and log offsets (never for messages): one
kafka-python client, whatever the executors' ``backend``, built from the
brokers known when it is first needed -- the configured bootstrap servers, the
``StaticHosts`` leaders, or the leaders a discovery found in Kafka's registry.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from storm_kafka_compat.config import (EARLIEST_TIME, LATEST_TIME, BootstrapHosts, Broker,
                                       JobConfig, StaticHosts)
from storm_kafka_compat.errors import StateError
from storm_kafka_compat.kafka.client import KafkaAccess, KafkaMessage, RecordBatch
from storm_kafka_compat.kafka.fetch_group import GroupKafka, PartitionKey

#: how a LazyKafka builds its client from the bootstrap list (tests: a scripted Kafka)
KafkaFactory = Callable[[List[str]], KafkaAccess]


class LazyKafka:
    """A :class:`~storm_kafka_compat.kafka.client.DriverKafka` built on first use from
    the known brokers (leaders found by the discovery) or the configured bootstrap
    servers (a storm-kafka-client job's ``kafkaSpout.bootstrapServers`` included)."""

    def __init__(self, job: JobConfig, factory: Optional[KafkaFactory] = None) -> None:
        self.job = job
        self.factory = factory
        self.brokers: Set[str] = set()
        self._access: Optional[KafkaAccess] = None
        hosts = job.spout.hosts
        if isinstance(hosts, BootstrapHosts):
            self.brokers.update(hosts.servers)
        elif isinstance(hosts, StaticHosts):
            self.brokers.update(str(b) for b in hosts.partitions.values())
        self.brokers.update(job.kafka_settings.bootstrap_servers)
        if job.uses_kafka_offsets and job.kafka_spout is not None:
            # the group's brokers are where a storm-kafka-client job's metadata comes from
            self.brokers.update(job.kafka_spout.bootstrap_servers)

    def learn(self, broker: Broker) -> None:
        self.brokers.add(str(broker))

    @property
    def bootstrap(self) -> Tuple[str, ...]:
        return tuple(sorted(self.brokers))

    def get(self) -> KafkaAccess:
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

    def offset_for(self, topic: str, partition: int, time: int) -> int:
        return self.get().offset_for(topic, partition, time)

    def fetch(self, topic: str, partition: int, offset: int, *,
              max_messages: Optional[int] = None,
              max_offset: Optional[int] = None) -> List[KafkaMessage]:
        return self.get().fetch(topic, partition, offset, max_messages=max_messages,
                                max_offset=max_offset)

    def fetch_batch(self, topic: str, partition: int, offset: int, *,
                    max_messages: Optional[int] = None,
                    max_offset: Optional[int] = None) -> RecordBatch:
        return self.get().fetch_batch(topic, partition, offset, max_messages=max_messages,
                                      max_offset=max_offset)

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        return self.get().fetched_log_end(topic, partition)

    def fetched_position(self, topic: str, partition: int) -> Optional[int]:
        return self.get().fetched_position(topic, partition)

    def log_ranges(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, Tuple[int, int]]:
        """See :meth:`~storm_kafka_compat.kafka.client.DriverKafka.log_ranges`."""
        access = self.get()
        if isinstance(access, GroupKafka):
            starts, ends = access.log_starts(keys), access.log_ends(keys)
            return {key: (starts[key], ends[key]) for key in keys
                    if key in starts and key in ends}
        return {(t, p): (access.offset_for(t, p, EARLIEST_TIME),
                         access.offset_for(t, p, LATEST_TIME)) for t, p in keys}

    def log_ends(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """See :meth:`~storm_kafka_compat.kafka.client.DriverKafka.log_ends`."""
        access = self.get()
        ends = access.log_ends(keys) if isinstance(access, GroupKafka) else {}
        for topic, partition in keys:
            if (topic, partition) not in ends:
                ends[(topic, partition)] = access.offset_for(topic, partition, LATEST_TIME)
        return ends

    def leaders(self, topic: str) -> Dict[int, Broker]:
        return self.get().leaders(topic)

    def topics(self) -> List[str]:
        return self.get().topics()

    def close(self) -> None:
        if self._access is not None:
            self._access.close()
            self._access = None
