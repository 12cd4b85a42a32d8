"""The driver-side spout: assignment, PartitionManagers, offset store, commits.

This is storm-kafka's ``KafkaSpout`` minus emitting: it builds a
PartitionManager for each partition the assignment gives this task (reading the
ZooKeeper document and running the start-up decision), commits every manager
whose offset changed in one batched write, and commits a manager when its
partition goes away (Storm's ``close()``).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from storm_kafka_compat.config import BootstrapHosts, Broker, JobConfig, StaticHosts
from storm_kafka_compat.discovery import PartitionInfo, discovery_for
from storm_kafka_compat.spout.assignment import Assignment
from storm_kafka_compat.errors import StateError
from storm_kafka_compat.spout.manager import PartitionManager
from storm_kafka_compat.spout.retry import Clock, monotonic_ms
from storm_kafka_compat.spout.startup import StartDecision, decide_start
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.ownership import OwnershipGuard
from storm_kafka_compat.offsets.paths import partition_path

log = logging.getLogger(__name__)

#: keys of the CONFIG ``kafka`` mapping that are ours, not client settings


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
    """The document path of a partition (classic or topic-qualified)."""
    return partition_path(job.spout.zk_root, job.spout.id, info.partition, topic=info.path_topic)


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


def make_assignment(job: JobConfig, kafka: LazyKafka, *, manager_factory: Callable[[PartitionInfo], Any],
                    on_removed: Optional[Callable[[PartitionInfo, Any], None]] = None,
                    task_index: int = 0, total_tasks: int = 1, reader: Any = None) -> Assignment:
    """This task's share of the partitions the job's discovery finds."""
    return Assignment(discovery_for(job, kafka, reader=reader), manager_factory=manager_factory,
                      on_removed=on_removed, task_index=task_index, total_tasks=total_tasks)


@dataclass
class CommitReport:
    written: int = 0
    round_trips: int = 0
    error: Optional[str] = None


class Spout:
    """Driver-side state of the spout.

    Parameters
    ----------
    job : JobConfig
    store : ZkStateStore-like
        ``read(path)``, ``write_many({path: bytes}) -> round trips``.
    kafka : LazyKafka
    topology_id : str
    clock : callable returning int ms
        For the retry managers.
    """

    def __init__(self, job: JobConfig, *, store: Any, kafka: LazyKafka, topology_id: str,
                 clock: Clock = monotonic_ms, task_index: int = 0, total_tasks: int = 1,
                 registry_reader: Any = None) -> None:
        self.job = job
        self.store = store
        self.kafka = kafka
        self.topology_id = topology_id
        self.clock = clock
        self.decisions: Dict[Tuple[str, int], StartDecision] = {}
        self.commit_failures = 0
        #: detects another job writing our documents (Storm never did): one pipelined
        #: read of the documents we wrote last, per commit
        self.ownership = OwnershipGuard(topology_id)
        self.assignment = make_assignment(job, kafka, manager_factory=self._new_manager,
                                          on_removed=self._removed, task_index=task_index,
                                          total_tasks=total_tasks, reader=registry_reader)

    # --- managers ----------------------------------------------------------------
    def _new_manager(self, info: PartitionInfo) -> PartitionManager:
        self.kafka.learn(info.leader)
        path = zk_path_for(self.job, info)
        stored = self.store.read(path)
        decision = decide_start(
            stored, topology_id=self.topology_id, config=self.job.spout,
            offset_for=lambda t: self.kafka.offset_for(info.topic, info.partition, t), where=path)
        log.info("%s/%d at %s: %s", info.topic, info.partition, path, decision.reason)
        self.decisions[info.key] = decision
        return PartitionManager(info.topic, info.partition, decision.start_offset,
                                config=self.job.spout, zk_path=path, leader=info.leader,
                                clock=self.clock, storm_conf=self.storm_conf())

    def _removed(self, info: PartitionInfo, manager: PartitionManager) -> None:
        self.commit_managers([manager])

    def storm_conf(self) -> Dict[str, Any]:
        t = self.job.topology
        return {"topology.name": t.name, "topology.message.timeout.secs": t.message_timeout_secs,
                "topology.max.spout.pending": t.max_spout_pending,
                "kafka.topic.wildcard.match": t.wildcard_match}

    def managers(self) -> Dict[Tuple[str, int], PartitionManager]:
        return self.assignment.managed()

    def maybe_refresh(self, now_ms: int) -> bool:
        return self.assignment.maybe_refresh(now_ms)

    # --- commits -------------------------------------------------------------------
    def document(self, pm: PartitionManager, offset: int) -> bytes:
        leader = pm.leader or Broker("", -1)
        return encode_document(topology_id=self.topology_id, topology_name=self.job.topology.name,
                               offset=offset, partition=pm.partition, broker_host=leader.host,
                               broker_port=leader.port, topic=pm.topic)

    def commit_managers(self, managers: List[PartitionManager]) -> CommitReport:
        """Write every manager whose offset changed, in as few round trips as the
        server allows. A failure leaves ``committed_to`` unchanged (retried next
        interval) and is reported, never silently dropped."""
        due = [(pm, off) for pm in managers for off in [pm.commit_offset()] if off is not None]
        if not due:
            return CommitReport()
        docs = {pm.zk_path: self.document(pm, off) for pm, off in due}
        try:
            for conflict in self.ownership.check(self.store, docs):
                log.error("%s", conflict.message)
            trips = self.store.write_many(docs)
            self.ownership.wrote(docs)
        except StateError as exc:
            self.commit_failures += 1
            log.error("commit of %d partitions failed: %s; keeping the state in memory and "
                      "retrying at the next commit", len(docs), exc)
            return CommitReport(error=str(exc))
        for pm, off in due:
            pm.mark_committed(off)
        return CommitReport(written=len(due), round_trips=trips)

    def commit(self) -> CommitReport:
        return self.commit_managers(list(self.managers().values()))

    def release(self) -> None:
        """Release the assignment without writing (the caller committed)."""
        self.assignment.release()

    def close(self) -> CommitReport:
        """Final commit, then release the assignment."""
        report = self.commit()
        self.release()
        return report
