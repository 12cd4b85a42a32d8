"""The driver-side storm-kafka-client spout: partitions, managers, group commits.

:class:`ClientSpout` plugs into the driver loop in place of the legacy
:class:`~storm_kafka_compat.spout.legacy.Spout`
(``Pipeline(job, spout_factory=ClientSpout)``; ``storm-kafka-compat run``
picks it when ``kafkaSpout.offsetStore`` is ``kafka``). It discovers the
subscribed partitions (topic names or a pattern, every
``partitionRefreshPeriodMs``), gives this task its round-robin share of the
partitions sorted by (topic, partition), starts each newly assigned partition
at the first-poll decision, and commits to the Kafka consumer group with
storm-kafka-client's metadata ``{"topologyId","taskId","threadName"}``:

* AT_LEAST_ONCE: acked offsets, on the driver's commit timer (set to
  ``offsetCommitPeriodMs``), when a partition is revoked, and on shutdown;
* AT_MOST_ONCE: the fetch's upper bound, synchronously before the fetch runs;
* NO_GUARANTEE: what was fetched, on the commit timer (and on shutdown).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, JobConfig
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.discovery.topics import TopicsDiscovery
from storm_kafka_compat.spout.assignment import Assignment
from storm_kafka_compat.errors import ConfigError, StormKafkaCompatError
from storm_kafka_compat.spout.legacy import CommitReport
from storm_kafka_compat.spout.client.config import AT_LEAST_ONCE, KafkaSpoutConfig
from storm_kafka_compat.spout.client.first_poll import CommitMetadata, FirstPollDecision, decide_first_poll
from storm_kafka_compat.spout.client.manager import ClientPartitionManager
from storm_kafka_compat.spout.client.metrics import ClientOffsetSample, kafka_offset_metric_v2
from storm_kafka_compat.spout.client.retry import Clock

log = logging.getLogger(__name__)

Key = Tuple[str, int]


class ClientSpout:
    """storm-kafka-client's ``KafkaSpout`` state on the driver.

    Parameters
    ----------
    job : JobConfig
        Must carry ``kafka_spout`` (the ``kafkaSpout`` section).
    store : any
        Unused (the offsets are in Kafka); accepted for the driver's interface.
    kafka : LazyKafka
    topology_id : str
        Written into every commit's metadata; a commit whose metadata names it is
        "ours" for the first-poll decision.
    clock : callable returning int ms
    groups : KafkaGroupOffsets-like, optional
        ``committed(keys)``, ``commit({key: (offset, metadata)})``, ``close()``;
        built from the config when omitted (and then closed with the spout; a
        given one is the caller's to close).
    task_index, total_tasks : int
        This spout task among the spout's tasks (``taskId`` is ``task_index + 1``).
    """

    def __init__(self, job: JobConfig, *, store: Any = None, kafka: Any, topology_id: str,
                 clock: Optional[Clock] = None, registry_reader: Any = None,
                 groups: Any = None, task_index: int = 0, total_tasks: int = 1) -> None:
        config = getattr(job, "kafka_spout", None)
        if config is None or not config.uses_kafka_store:
            raise ConfigError("the storm-kafka-client spout needs a kafkaSpout section with "
                              "offsetStore: kafka (see docs/storm-kafka-client.md)",
                              key="kafkaSpout.offsetStore", value=None)
        self.job = job
        self.config: KafkaSpoutConfig = config
        self.kafka = kafka
        self.topology_id = topology_id
        self.clock = clock
        self.decisions: Dict[Key, FirstPollDecision] = {}
        self.commit_failures = 0
        #: AT_MOST_ONCE commits made at plan time
        self.plan_commits = 0
        self.task_id = task_index + 1
        self.metadata = CommitMetadata(
            topology_id, self.task_id,
            f"{threading.current_thread().name}-kafka-spout-executor"
            f"[{self.task_id} {self.task_id}]").to_json()
        for server in config.bootstrap_servers:
            kafka.brokers.add(server)
        self._groups = groups
        self._owns_groups = groups is None
        if job.spout.state_update_interval_ms != config.offset_commit_period_ms:
            log.warning("the driver commits every %d ms (spout.stateUpdateIntervalMs), not "
                        "offsetCommitPeriodMs %d; load the job with job_config_from_dict to "
                        "align them", job.spout.state_update_interval_ms,
                        config.offset_commit_period_ms)
        self.assignment = Assignment(
            TopicsDiscovery(config, kafka), manager_factory=self._new_manager,
            on_removed=self._removed, task_index=task_index, total_tasks=total_tasks)

    # --- the group ------------------------------------------------------------------
    @property
    def groups(self) -> Any:
        if self._groups is None:
            from storm_kafka_compat.kafka.groups import KafkaGroupOffsets
            self._groups = KafkaGroupOffsets(list(self.config.bootstrap_servers),
                                             str(self.config.group_id),
                                             self.job.kafka_settings.for_kafka_python())
        return self._groups

    # --- managers -------------------------------------------------------------------
    def _path(self, topic: str, partition: int) -> str:
        return f"{self.config.group_id}:{topic}-{partition}"

    def _new_manager(self, info: PartitionInfo) -> ClientPartitionManager:
        self.kafka.learn(info.leader)
        topic, partition = info.topic, info.partition
        committed = self.groups.committed([info.key]).get(info.key)
        earliest = self.kafka.offset_for(topic, partition, EARLIEST_TIME)
        latest = self.kafka.offset_for(topic, partition, LATEST_TIME)
        where = f"{topic}/{partition} (group {self.config.group_id})"
        decision = decide_first_poll(
            self.config.first_poll_offset_strategy, committed, topology_id=self.topology_id,
            earliest=earliest, latest=latest, auto_offset_reset=self.config.auto_offset_reset,
            where=where)
        log.info("%s: %s", where, decision.reason)
        self.decisions[info.key] = decision
        return ClientPartitionManager(
            topic, partition, decision.start_offset, config=self.config, leader=info.leader,
            clock=self.clock, commit_before_process=self._commit_before_process,
            end_offset=lambda: self.kafka.offset_for(topic, partition, LATEST_TIME),
            zk_path=self._path(topic, partition))

    def _removed(self, info: PartitionInfo, manager: ClientPartitionManager) -> None:
        if self.config.processing_guarantee == AT_LEAST_ONCE:
            self.commit_managers([manager])     # commit before revoke

    def storm_conf(self) -> Dict[str, Any]:
        t = self.job.topology
        from storm_kafka_compat.topology.schemes import EMIT_NULL_TUPLES_KEY
        return {"topology.name": t.name, "topology.message.timeout.secs": t.message_timeout_secs,
                "topology.max.spout.pending": t.max_spout_pending,
                "kafka.topic.wildcard.match": t.wildcard_match,
                EMIT_NULL_TUPLES_KEY: bool(self.config.emit_null_tuples)}

    def managers(self) -> Dict[Key, ClientPartitionManager]:
        return self.assignment.managed()

    def kafka_offset_metric(self, offset_for: Callable[[str, int, int], int]
                            ) -> Optional[Dict[str, int]]:
        """storm-kafka-client 2.x's ``kafkaOffset`` data point (``spout/client/metrics.py``) for
        the assigned partitions; ``offset_for(topic, partition, time)`` asks Kafka for the
        log start (``EARLIEST_TIME``) and end (``LATEST_TIME``)."""
        samples = []
        for (topic, partition), pm in sorted(self.managers().items()):
            try:
                earliest: Optional[int] = offset_for(topic, partition, EARLIEST_TIME)
                latest: Optional[int] = offset_for(topic, partition, LATEST_TIME)
            except StormKafkaCompatError as exc:
                log.error("cannot read the log offsets of %s/%d for kafkaOffset: %s", topic,
                          partition, exc)
                earliest = latest = None
            emitted, committed = pm.offset_metric_values()
            samples.append(ClientOffsetSample(topic, partition, earliest, latest, emitted,
                                              committed))
        return kafka_offset_metric_v2(samples)

    def maybe_refresh(self, now_ms: int) -> bool:
        return self.assignment.maybe_refresh(now_ms)

    # --- commits ----------------------------------------------------------------------
    def _commit_before_process(self, pm: ClientPartitionManager, offset: int) -> bool:
        try:
            self.groups.commit({pm.key: (offset, self.metadata)})
        except StormKafkaCompatError as exc:
            self.commit_failures += 1
            log.error("AT_MOST_ONCE commit of %s/%d at %d failed: %s; not fetching it this "
                      "batch", pm.topic, pm.partition, offset, exc)
            return False
        self.plan_commits += 1
        return True

    def commit_managers(self, managers: List[ClientPartitionManager]) -> CommitReport:
        """Commit every manager whose offset changed, in one OffsetCommit. A
        failure keeps the state (retried at the next commit) and is reported."""
        due = [(pm, off) for pm in managers for off in [pm.commit_offset()] if off is not None]
        if not due:
            return CommitReport()
        try:
            self.groups.commit({pm.key: (off, self.metadata) for pm, off in due})
        except StormKafkaCompatError as exc:
            self.commit_failures += 1
            log.error("commit of %d partitions to group %s failed: %s; retrying at the next "
                      "commit", len(due), self.config.group_id, exc)
            return CommitReport(error=str(exc))
        for pm, off in due:
            pm.mark_committed(off)
        return CommitReport(written=len(due), round_trips=1)

    def commit(self) -> CommitReport:
        return self.commit_managers(list(self.managers().values()))

    def release(self) -> None:
        """Release the assignment and the group client without committing."""
        self.assignment.release()
        if self._owns_groups and self._groups is not None:
            self._groups.close()
            self._groups = None

    def close(self) -> CommitReport:
        report = self.commit()
        self.release()
        return report


def client_spout_factory(**overrides: Any) -> Callable[..., ClientSpout]:
    """A ``spout_factory`` for :class:`~storm_kafka_compat.engine.driver.Pipeline`
    that passes extra arguments (``groups=``, ``task_index=``) to ClientSpout."""
    def factory(job: JobConfig, **kw: Any) -> ClientSpout:
        return ClientSpout(job, **kw, **overrides)
    return factory
