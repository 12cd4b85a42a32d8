"""The driver-side spout: one implementation, two offset policies.

The spout keeps this task's partitions (an
:class:`~storm_kafka_compat.spout.assignment.Assignment` over the runtime's
discovery), one :class:`~storm_kafka_compat.spout.state.PartitionState` per
partition, and commits every partition whose offset moved. What differs between
storm-kafka's KafkaSpout and storm-kafka-client's is an :class:`OffsetPolicy`:

* :class:`~storm_kafka_compat.spout.legacy.ZkDocuments` -- the start-up decision
  of storm-kafka on the partition's ZooKeeper document, PartitionManager, and
  one batched write of documents per commit, with the ownership guard;
* :class:`~storm_kafka_compat.spout.client.spout.GroupCommits` -- the first-poll
  decision on the consumer group's commit, ClientPartitionManager, and one
  OffsetCommit per commit with storm-kafka-client's metadata.

A commit that fails leaves every partition's ``committed_to`` unchanged (the
next commit retries it) and is counted and reported, never dropped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.errors import StormKafkaCompatError
from storm_kafka_compat.spout.assignment import Assignment
from storm_kafka_compat.spout.retry import monotonic_ms
from storm_kafka_compat.spout.state import PartitionState

log = logging.getLogger(__name__)

Key = Tuple[str, int]


@dataclass
class CommitReport:
    """What one commit did: partitions written, round trips, or the error."""

    written: int = 0
    round_trips: int = 0
    error: Optional[str] = None


class OffsetPolicy(Protocol):
    """How a spout flavour starts a partition and commits offsets."""

    #: names the store in messages ("ZooKeeper", "group g")
    store_name: str
    #: how often the driver commits (ms): stateUpdateIntervalMs or offsetCommitPeriodMs
    commit_interval_ms: int
    #: documents another job wrote under this job's paths (the ZooKeeper ownership guard)
    conflicts: int
    #: commit a partition when it is revoked (storm-kafka always; storm-kafka-client
    #: with AT_LEAST_ONCE)
    commits_on_revoke: bool

    def start(self, spout: "Spout", info: PartitionInfo) -> Tuple[Any, PartitionState]:
        """The start decision for ``info`` and the partition's new state."""

    def write(self, due: Sequence[Tuple[PartitionState, int]]) -> int:
        """Store ``(state, offset)`` pairs; return the round trips. Raises a
        :class:`~storm_kafka_compat.errors.StormKafkaCompatError` on failure."""

    def storm_conf(self) -> Dict[str, Any]:
        """Extra topology settings the bolts see."""

    def kafka_offset_metric(self, spout: "Spout", offset_for: Callable[[str, int, int], int]
                            ) -> Optional[Dict[str, int]]:
        """The policy's own ``kafkaOffset`` data point, or None for storm-kafka's."""

    def close(self) -> None:
        """Release what the policy built."""


class Spout:
    """The spout's state on the driver.

    Parameters
    ----------
    runtime : Runtime
        The job's store, Kafka access, discovery and topology id.
    policy : OffsetPolicy
    clock : callable returning int ms, optional
        For the retry managers (monotonic by default).
    task_index, total_tasks : int
        This spout task among the spout's tasks.
    """

    def __init__(self, runtime: Any, policy: OffsetPolicy, *,
                 clock: Optional[Callable[[], int]] = None, task_index: int = 0,
                 total_tasks: int = 1) -> None:
        self.runtime = runtime
        self.job = runtime.job
        self.kafka = runtime.kafka
        self.topology_id = runtime.topology_id
        self.policy = policy
        self.clock = clock or monotonic_ms
        self.decisions: Dict[Key, Any] = {}
        self.commit_failures = 0
        self.assignment = Assignment(runtime.discovery(), manager_factory=self._new_manager,
                                     on_removed=self._removed, task_index=task_index,
                                     total_tasks=total_tasks)

    # --- partitions ----------------------------------------------------------------------
    def _new_manager(self, info: PartitionInfo) -> PartitionState:
        self.kafka.learn(info.leader)
        decision, state = self.policy.start(self, info)
        self.decisions[info.key] = decision
        return state

    def _removed(self, info: PartitionInfo, state: PartitionState) -> None:
        if self.policy.commits_on_revoke:
            self.commit_managers([state])

    def managers(self) -> Dict[Key, PartitionState]:
        """This task's partitions, in discovery order."""
        return self.assignment.managed()

    def maybe_refresh(self, now_ms: int) -> bool:
        return self.assignment.maybe_refresh(now_ms)

    def storm_conf(self) -> Dict[str, Any]:
        """The topology settings the bolts' ``prepare`` sees."""
        t = self.job.topology
        conf = {"topology.name": t.name, "topology.message.timeout.secs": t.message_timeout_secs,
                "topology.max.spout.pending": t.max_spout_pending,
                "kafka.topic.wildcard.match": t.wildcard_match}
        conf.update(self.policy.storm_conf())
        return conf

    # --- metrics -----------------------------------------------------------------------------
    def kafka_offset_metric(self, offset_for: Callable[[str, int, int], int]
                            ) -> Optional[Dict[str, int]]:
        """The policy's ``kafkaOffset`` data point; None means storm-kafka's, which
        the driver computes from its own log-range samples."""
        return self.policy.kafka_offset_metric(self, offset_for)

    @property
    def commit_interval_ms(self) -> int:
        """How often the driver commits: storm-kafka's ``stateUpdateIntervalMs``,
        storm-kafka-client's ``offsetCommitPeriodMs``."""
        return self.policy.commit_interval_ms

    @property
    def ownership_conflicts(self) -> int:
        """Documents another job wrote under this job's paths (ZooKeeper store only)."""
        return self.policy.conflicts

    # --- commits ---------------------------------------------------------------------------
    def commit_managers(self, managers: List[PartitionState]) -> CommitReport:
        """Store every partition whose offset changed, in as few round trips as the
        store allows."""
        due = [(pm, off) for pm in managers for off in [pm.commit_offset()] if off is not None]
        if not due:
            return CommitReport()
        try:
            trips = self.policy.write(due)
        except StormKafkaCompatError as exc:
            self.commit_failures += 1
            log.error("commit of %d partitions to %s failed: %s; keeping the state in memory "
                      "and retrying at the next commit", len(due), self.policy.store_name, exc)
            return CommitReport(error=str(exc))
        for pm, off in due:
            pm.mark_committed(off)
        return CommitReport(written=len(due), round_trips=trips)

    def commit(self) -> CommitReport:
        return self.commit_managers(list(self.managers().values()))

    def release(self) -> None:
        """Release the assignment and the policy without writing (the caller committed)."""
        try:
            self.assignment.release()
        finally:
            self.policy.close()

    def close(self) -> CommitReport:
        """Final commit, then release."""
        report = self.commit()
        self.release()
        return report
