"""The runtime: one job's parts, built once from its :class:`~storm_kafka_compat.config.JobConfig`.

Every entry point builds a :class:`Runtime` and asks it for the same parts, so
they cannot drift apart: the pipeline's driver loop
(:class:`~storm_kafka_compat.engine.driver.Pipeline`, and the DataFrame mode
through it), the Structured Streaming source
(:class:`~storm_kafka_compat.streaming.positions.ZkPositions`) and every
operator tool (:class:`~storm_kafka_compat.tools.ToolEnv`).

* ``store`` -- the ZooKeeper document store (``zkRoot/id/partition_N``),
  connecting on first use;
* :meth:`Runtime.group_offsets` -- the Kafka consumer-group store of a
  storm-kafka-client job (``kafkaSpout.offsetStore: kafka``);
* ``kafka`` -- the driver's Kafka access (metadata and log offsets);
* :meth:`Runtime.discovery` / :meth:`Runtime.partitions` -- the partitions and
  leaders the hosts (or the subscription) call for;
* :meth:`Runtime.location` -- where a partition's position is kept;
* :meth:`Runtime.spout` -- the spout, with the start decision and the commit
  policy the config calls for (storm-kafka's or storm-kafka-client's).

The runtime is where a job's parts are picked (which store, which policy,
which discovery); every part gets the others it needs as parameters, never the
runtime itself. What the runtime built it closes (:meth:`Runtime.close`); what
it was given stays the caller's.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, List, Optional, Protocol, TypedDict

from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.discovery import Discovery, PartitionInfo, discovery_for
from storm_kafka_compat.discovery.zk import RegistryReader
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.kafka.client import DriverKafka
from storm_kafka_compat.kafka.lazy import KafkaFactory, LazyKafka
from storm_kafka_compat.offsets.paths import document_path
from storm_kafka_compat.offsets.store import DocumentStore, GroupStore
from storm_kafka_compat.spout.retry import Clock
from storm_kafka_compat.spout.policy import OffsetPolicy
from storm_kafka_compat.spout.spout import Spout

log = logging.getLogger(__name__)


class _Closeable(Protocol):
    def close(self) -> None: ...


class RuntimeParts(TypedDict, total=False):
    """The parts a caller may give a :class:`Runtime` instead of letting it build them
    (the keyword arguments of the front ends that build one)."""

    store: Optional[DocumentStore]
    kafka: Optional[DriverKafka]
    kafka_factory: Optional[KafkaFactory]
    groups: Optional[GroupStore]
    registry_reader: Optional[RegistryReader]
    topology_id: Optional[str]


def topology_instance_id(job: JobConfig, now_s: Optional[float] = None) -> str:
    """The topology id written into documents: ``topology.id`` when configured,
    else a Storm-style ``<name>-<n>-<epoch seconds>`` new for each run (a run is a
    submission, so ``ignoreZkOffsets`` behaves as on a Storm re-submission). Storm's
    ``<n>`` is Nimbus's submission counter; here it is the driver's process id, so
    two jobs started in the same second on one host still differ."""
    if job.topology.id:
        return job.topology.id
    return f"{job.topology.name}-{os.getpid()}-{int(now_s if now_s is not None else time.time())}"


def zk_path_for(job: JobConfig, info: PartitionInfo) -> str:
    """The document path of a partition (classic or topic-qualified).

    Raises
    ------
    ConfigError
        The CONFIG names no documents (a Kafka-store job without zkRoot/id).
    """
    return document_path(job.spout.zk_root, job.spout.id, info.partition, info.path_topic)


class Runtime:
    """The parts of one job.

    Parameters
    ----------
    job : JobConfig
    store : DocumentStore, optional
        The ZooKeeper document store; ``ZkStateStore.from_config`` (servers,
        timings, digest auth) on first use when omitted, or the Trident store for a
        job moved from Trident (``topology.trident.txStateId``).
    kafka : DriverKafka, optional
        Metadata, log offsets and the brokers learned; a
        :class:`~storm_kafka_compat.kafka.lazy.LazyKafka` over ``kafka_factory``
        when omitted.
    kafka_factory : callable(list of bootstrap) -> KafkaAccess, optional
        How the omitted ``kafka`` builds its client (tests: a scripted Kafka).
    groups : GroupStore, optional
        The consumer-group store of a Kafka-store job; built on first use from
        ``kafkaSpout.bootstrapServers``/``groupId`` when omitted.
    registry_reader : RegistryReader, optional
        For ``ZkHosts``: read Kafka's registry through this instead of a kazoo
        client of the discovery's own.
    topology_id : str, optional
        Written into documents and commit metadata; ``topology.id`` or a new
        Storm-style id by default.
    """

    def __init__(self, job: JobConfig, *, store: Optional[DocumentStore] = None,
                 kafka: Optional[DriverKafka] = None,
                 kafka_factory: Optional[KafkaFactory] = None,
                 groups: Optional[GroupStore] = None,
                 registry_reader: Optional[RegistryReader] = None,
                 topology_id: Optional[str] = None) -> None:
        self.job = job
        self._owns: List[_Closeable] = []
        self._store = store
        if kafka is None:
            lazy = LazyKafka(job, kafka_factory)
            self._owns.append(lazy)
            kafka = lazy
        self.kafka: DriverKafka = kafka
        self._groups = groups
        self.registry_reader = registry_reader
        self.topology_id = topology_id or topology_instance_id(job)
        self._infos: Optional[List[PartitionInfo]] = None

    # --- offset stores ------------------------------------------------------------------

    @property
    def store(self) -> DocumentStore:
        """The ZooKeeper document store, built on first use (a Kafka-store job that
        never reads documents needs no ZooKeeper). The choice of store is made here:
        a job moved from Trident reads Trident's state where it has no document."""
        if self._store is None:
            if self.job.topology.trident_tx_state_id:
                from storm_kafka_compat.trident.store import TridentStateStore
                store: DocumentStore = TridentStateStore.for_job(self.job.spout,
                                                                 self.job.topology)
            else:
                from storm_kafka_compat.offsets.zkstore import ZkStateStore
                store = ZkStateStore.from_config(self.job.spout, self.job.topology)
            self._store = store
            self._owns.append(store)
        return self._store

    @property
    def kafka_store(self) -> bool:
        """The job keeps its offsets in a Kafka consumer group
        (``kafkaSpout.offsetStore: kafka``), not in ZooKeeper documents."""
        return bool(self.job.uses_kafka_offsets)

    @property
    def group_id(self) -> Optional[str]:
        """``kafkaSpout.groupId`` of a Kafka-store job, else None."""
        if not self.kafka_store or self.job.kafka_spout is None:
            return None
        return str(self.job.kafka_spout.group_id)

    def group_offsets(self) -> GroupStore:
        """The consumer group's offset store (built on first use).

        Raises
        ------
        ConfigError
            The job keeps its offsets in ZooKeeper.
        """
        config = self.job.kafka_spout
        if not self.kafka_store or config is None:
            raise ConfigError("this CONFIG keeps its offsets in ZooKeeper; the Kafka group "
                              "store needs a kafkaSpout section with offsetStore: kafka",
                              key="kafkaSpout.offsetStore", value=None)
        if self._groups is None:
            from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
            groups = KafkaGroupOffsets(list(config.bootstrap_servers), str(config.group_id),
                                       self.job.kafka_settings.for_kafka_python())
            self._groups = groups
            self._owns.append(groups)
        return self._groups

    def location(self, info: PartitionInfo) -> str:
        """Where ``info``'s position is kept: its document path, or
        ``<group>:<topic>-<partition>`` for a Kafka-store job."""
        if self.group_id is not None:
            from storm_kafka_compat.spout.client.spout import group_location
            return group_location(self.group_id, info.key)
        return zk_path_for(self.job, info)

    def zk_path(self, info: PartitionInfo) -> str:
        """The document path of ``info`` (whatever the store: migrations read both)."""
        return zk_path_for(self.job, info)

    # --- partitions ------------------------------------------------------------------------

    def discovery(self) -> Discovery:
        """A new discovery for this job (the caller closes it)."""
        return discovery_for(self.job, self.kafka, reader=self.registry_reader)

    def partitions(self) -> List[PartitionInfo]:
        """Every partition of the spout (all tasks), discovered once per runtime."""
        if self._infos is None:
            discovery = self.discovery()
            try:
                infos = discovery.discover()
            finally:
                discovery.close()
            for info in infos:
                self.kafka.learn(info.leader)
            self._infos = infos
        return list(self._infos)

    def offset_for(self, topic: str, partition: int, time_ms: int) -> int:
        """Kafka's offset for a Storm time (-2, -1 or epoch ms)."""
        return int(self.kafka.offset_for(topic, partition, time_ms))

    # --- the spout -----------------------------------------------------------------------

    def policy(self, *, task_index: int = 0, total_tasks: int = 1,
               take_over: bool = False, new_id: bool = False) -> OffsetPolicy:
        """The offset policy the config calls for: storm-kafka-client's consumer-group
        commits for a Kafka-store job, storm-kafka's documents otherwise (with the
        ownership record of task ``task_index`` of ``total_tasks``; ``take_over``
        starts even while another job's record is there; ``new_id`` starts an id that
        has no document although other ids under the zkRoot hold offsets of the topic)."""
        if self.kafka_store:
            from storm_kafka_compat.spout.client.spout import GroupCommits
            return GroupCommits(self.job, self.group_offsets, self.kafka, self.topology_id,
                                task_index=task_index)
        from storm_kafka_compat.spout.legacy import ZkDocuments
        return ZkDocuments(self.job, self.store, self.topology_id,
                           task_index=task_index, total_tasks=total_tasks, take_over=take_over,
                           new_id=new_id)

    def spout(self, *, clock: Optional[Clock] = None, task_index: int = 0,
              total_tasks: int = 1, take_over: bool = False, new_id: bool = False) -> Spout:
        """The driver-side spout: this task's share of the discovery's partitions, with
        the offset policy the config calls for (:meth:`policy`)."""
        policy = self.policy(task_index=task_index, total_tasks=total_tasks,
                             take_over=take_over, new_id=new_id)
        return Spout(self.job, self.kafka, self.discovery(), policy, clock=clock,
                     task_index=task_index, total_tasks=total_tasks)

    # --- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close what this runtime built, last built first; errors are logged."""
        for thing in reversed(self._owns):
            try:
                thing.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                log.debug("closing %r failed", thing, exc_info=True)
        self._owns.clear()

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
