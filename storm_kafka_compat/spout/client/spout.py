"""storm-kafka-client's offset policy: consumer-group commits and ClientPartitionManager.

The runtime picks it (:meth:`~storm_kafka_compat.runtime.Runtime.spout`) when
``kafkaSpout.offsetStore`` is ``kafka``. The spout's discovery is the
subscription (topic names or a pattern, every ``partitionRefreshPeriodMs``,
:class:`~storm_kafka_compat.discovery.topics.TopicsDiscovery`) and its
assignment this task's round-robin share; each newly assigned partition starts
at the first-poll decision, and commits go to the Kafka consumer group with
storm-kafka-client's metadata ``{"topologyId","taskId","threadName"}``:

* AT_LEAST_ONCE: acked offsets, on the driver's commit timer (set to
  ``offsetCommitPeriodMs``), when a partition is revoked, and on shutdown;
* AT_MOST_ONCE: the fetch's upper bound, synchronously before the fetch runs;
* NO_GUARANTEE: what was fetched, on the commit timer (and on shutdown).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Dict, Optional, Sequence, Tuple

from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, JobConfig
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.errors import ConfigError, StormKafkaCompatError
from storm_kafka_compat.kafka.client import KafkaAccess
from storm_kafka_compat.offsets.store import GroupStore
from storm_kafka_compat.config.kafka_spout import AT_LEAST_ONCE, KafkaSpoutConfig
from storm_kafka_compat.spout.client.first_poll import (CommitMetadata, FirstPollDecision,
                                                        decide_first_poll)
from storm_kafka_compat.spout.client.manager import ClientPartitionManager
from storm_kafka_compat.spout.client.metrics import ClientOffsetSample, kafka_offset_metric_v2
from storm_kafka_compat.spout.spout import Spout
from storm_kafka_compat.spout.state import PartitionState
from storm_kafka_compat.structs import Committed, TopicPartition
from storm_kafka_compat.topology.schemes import EMIT_NULL_TUPLES_KEY

log = logging.getLogger(__name__)
#: one line per partition at start: where it resumes and why (shown by the CLI)
decisions = logging.getLogger("storm_kafka_compat.decisions")


def group_location(group_id: str, key: TopicPartition) -> str:
    """Where a Kafka-store job keeps a partition's position: ``<group>:<topic>-<partition>``."""
    return f"{group_id}:{key.topic}-{key.partition}"


class GroupCommits:
    """The :class:`~storm_kafka_compat.spout.policy.OffsetPolicy` of storm-kafka-client's
    KafkaSpout.

    Parameters
    ----------
    job : JobConfig
        With a ``kafkaSpout`` section keeping its offsets in Kafka.
    groups : callable returning a GroupStore
        The consumer group's commits (``read_many(keys)``,
        ``write_many({key: (offset, metadata)})``), built on first use.
    kafka : KafkaAccess
        Log offsets for the first-poll decision, the AT_MOST_ONCE bound and
        ``kafkaOffset``.
    topology_id : str
        Written into the commit metadata.
    task_index : int
        This spout task (``taskId`` in the commit metadata is ``task_index + 1``).
    """

    conflicts = 0

    def __init__(self, job: JobConfig, groups: Callable[[], GroupStore], kafka: KafkaAccess,
                 topology_id: str, *, task_index: int = 0) -> None:
        config = job.kafka_spout
        if config is None or not config.uses_kafka_store:
            raise ConfigError("the storm-kafka-client spout needs a kafkaSpout section with "
                              "offsetStore: kafka (see docs/storm-kafka-client.md)",
                              key="kafkaSpout.offsetStore", value=None)
        self.job = job
        self._groups = groups
        self.kafka = kafka
        self.topology_id = topology_id
        self.config: KafkaSpoutConfig = config
        self.store_name = f"group {config.group_id}"
        self.commits_on_revoke = config.processing_guarantee == AT_LEAST_ONCE
        #: the group's commits of the partitions being started, read in one go
        self._ahead: Dict[TopicPartition, Optional[Committed]] = {}
        #: AT_MOST_ONCE commits made at plan time
        self.plan_commits = 0
        self.task_id = task_index + 1
        self.metadata = CommitMetadata(
            topology_id, self.task_id,
            f"{threading.current_thread().name}-kafka-spout-executor"
            f"[{self.task_id} {self.task_id}]").to_json()
        self.commit_interval_ms = config.offset_commit_period_ms

    @property
    def groups(self) -> GroupStore:
        return self._groups()

    def read_ahead(self, infos: Sequence[PartitionInfo]) -> None:
        """See :meth:`~storm_kafka_compat.spout.policy.OffsetPolicy.read_ahead`: the
        group's commits of ``infos``, in one request."""
        self._ahead = {}
        if not infos:
            return
        keys = [info.key for info in infos]
        try:
            self._ahead = self.groups.read_many(keys)
        except StormKafkaCompatError as exc:
            log.debug("reading %d commits at once failed (%s); each is read alone",
                      len(keys), exc)

    def start(self, spout: Spout, info: PartitionInfo
              ) -> Tuple[FirstPollDecision, ClientPartitionManager]:
        kafka = self.kafka
        topic, partition = info.topic, info.partition
        committed = (self._ahead.pop(info.key) if info.key in self._ahead
                     else self.groups.read_many([info.key]).get(info.key))
        earliest = spout.log_offset(info, EARLIEST_TIME)
        latest = spout.log_offset(info, LATEST_TIME)
        where = f"{topic}/{partition} (group {self.config.group_id})"
        decision = decide_first_poll(
            self.config.first_poll_offset_strategy, committed,
            topology_id=self.topology_id, earliest=earliest, latest=latest,
            auto_offset_reset=self.config.auto_offset_reset, where=where)
        decisions.info("%s: %s", where, decision.reason)

        def commit_before_process(pm: ClientPartitionManager, offset: int) -> bool:
            return self._commit_before_process(spout, pm, offset)

        return decision, ClientPartitionManager(
            topic, partition, decision.start_offset, config=self.config, leader=info.leader,
            clock=spout.clock, commit_before_process=commit_before_process,
            end_offset=lambda: kafka.offset_for(topic, partition, LATEST_TIME),
            location=group_location(str(self.config.group_id), info.key))

    def storm_conf(self) -> Dict[str, object]:
        return {EMIT_NULL_TUPLES_KEY: bool(self.config.emit_null_tuples)}

    def kafka_offset_metric(self, managers: Dict[TopicPartition, PartitionState]
                            ) -> Optional[Dict[str, int]]:
        """storm-kafka-client 2.x's ``kafkaOffset`` data point (``spout/client/metrics.py``)
        for the assigned partitions, with the log start and end asked of Kafka."""
        samples = []
        for (topic, partition), pm in sorted(managers.items()):
            try:
                earliest: Optional[int] = self.kafka.offset_for(topic, partition, EARLIEST_TIME)
                latest: Optional[int] = self.kafka.offset_for(topic, partition, LATEST_TIME)
            except StormKafkaCompatError as exc:
                log.error("cannot read the log offsets of %s/%d for kafkaOffset: %s", topic,
                          partition, exc)
                earliest = latest = None
            assert isinstance(pm, ClientPartitionManager)
            emitted, committed = pm.offset_metric_values()
            samples.append(ClientOffsetSample(topic, partition, earliest, latest, emitted,
                                              committed))
        return kafka_offset_metric_v2(samples)

    def _commit_before_process(self, spout: Spout, pm: ClientPartitionManager,
                               offset: int) -> bool:
        try:
            self.groups.write_many({pm.key: (offset, self.metadata)})
        except StormKafkaCompatError as exc:
            spout.counts.commit_failures += 1
            log.error("AT_MOST_ONCE commit of %s/%d at %d failed: %s; not fetching it this "
                      "batch", pm.topic, pm.partition, offset, exc)
            return False
        self.plan_commits += 1
        return True

    #: a consumer group's commits are bounded by the admin client's own timeouts
    unreachable_since: Optional[float] = None

    def write(self, due: Sequence[Tuple[PartitionState, int]], *, patient: bool = True) -> int:
        return int(self.groups.write_many({pm.key: (off, self.metadata) for pm, off in due}))

    def close(self) -> None:
        """Nothing of its own: the group client is the runtime's."""
