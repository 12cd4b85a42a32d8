"""``offsets explain``: what a start of the pipeline would do, partition by partition.

The decision is :func:`storm_kafka_compat.spout.startup.decide_start`, the
function the pipeline's spout runs, fed with the document the same
:class:`~storm_kafka_compat.offsets.zkstore.ZkStateStore` reads, the partition
list of the same discovery and Kafka offsets through the same
:class:`~storm_kafka_compat.kafka.lazy.LazyKafka`. Nothing is written.

The topology id compared with the stored one (``ignoreZkOffsets``) is the one
a run would use: ``topology.id`` when configured, else a new
``<name>-<driver pid>-<epoch seconds>`` (a run is a new submission), unless the caller
passes one.

For a Kafka-store job (``kafkaSpout.offsetStore: kafka``) the decision is
storm-kafka-client's first-poll rule,
:func:`storm_kafka_compat.spout.client.first_poll.decide_first_poll`, called by
:func:`client_first_poll` with exactly the arguments the spout passes
when a partition is assigned: the group's committed offset and metadata,
``firstPollOffsetStrategy``, the run's topology id, the log start and end,
and the spout's ``auto.offset.reset``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from storm_kafka_compat.spout.client.first_poll import (OUT_OF_RANGE, FirstPollDecision,
                                                        decide_first_poll)
from storm_kafka_compat.errors import NoOffsetResetError
from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME
from storm_kafka_compat.errors import CorruptStateError, KafkaAccessError
from storm_kafka_compat.spout.startup import INVALID_STATE, OutsideLog, decide_start, outside_log
from storm_kafka_compat.tools import GroupPartitionState, PartitionState, ToolEnv

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Explanation:
    """The start decision of one partition.

    ``start_offset`` is the next offset to read (None when the pipeline would
    refuse to start: ``corruptStatePolicy: fail`` on an unusable document).
    """

    topic: str
    partition: int
    zk_path: str
    stored: Any
    stored_bytes: Optional[str]
    rejected: Optional[str]
    decision: str
    start_offset: Optional[int]
    reason: str
    reference_offset: Optional[int]
    stored_offset: Optional[int]
    stored_topology_id: Optional[str]
    topology_id: str
    log_start: Optional[int] = None
    log_end: Optional[int] = None
    #: set when the start offset is outside the log: what the start would skip
    outside: Optional[OutsideLog] = None

    def as_dict(self) -> Dict[str, Any]:
        """The JSON object of CONTRACT section 4 (plus details)."""
        return {"topic": self.topic, "partition": self.partition, "zk_path": self.zk_path,
                "stored": self.stored, "decision": self.decision,
                "start_offset": self.start_offset, "reason": self.reason,
                "rejected": self.rejected, "stored_bytes": self.stored_bytes,
                "stored_offset": self.stored_offset,
                "stored_topology_id": self.stored_topology_id,
                "topology_id": self.topology_id, "reference_offset": self.reference_offset,
                "log_start_offset": self.log_start, "log_end_offset": self.log_end,
                "outside_log": self.outside.as_dict() if self.outside is not None else None}


def explain_state(env: ToolEnv, state: PartitionState, topology_id: str) -> Explanation:
    """Run the pipeline's start decision on one partition state."""
    stored = state.stored
    shown_bytes = None
    if stored is not None and stored.problem is not None:
        shown_bytes = stored.text
    try:
        d = decide_start(stored, topology_id=topology_id, config=env.job.spout,
                         offset_for=lambda t: env.offset_for(state.topic, state.partition, t),
                         where=state.zk_path, topic=state.topic, partition=state.partition)
    except CorruptStateError as exc:
        return Explanation(
            topic=state.topic, partition=state.partition, zk_path=state.zk_path,
            stored=stored.parsed if stored is not None else None, stored_bytes=shown_bytes,
            rejected=exc.reason or None, decision=INVALID_STATE, start_offset=None,
            reason=f"{exc}; the pipeline refuses to start (corruptStatePolicy: fail)",
            reference_offset=None, stored_offset=state.stored_offset,
            stored_topology_id=state.stored_topology_id, topology_id=topology_id)
    earliest, latest = _log_range(env, state.topic, state.partition)
    outside = outside_log(d.start_offset, earliest, latest, use_start_offset_time=(
        env.job.spout.use_start_offset_time_if_offset_out_of_range))
    reason = d.reason if outside is None else f"{d.reason}; but {outside.note}"
    return Explanation(
        topic=state.topic, partition=state.partition, zk_path=state.zk_path,
        stored=stored.parsed if stored is not None else None, stored_bytes=shown_bytes,
        rejected=stored.problem if stored is not None else None, decision=d.decision,
        start_offset=d.start_offset, reason=reason, reference_offset=d.reference_offset,
        stored_offset=state.stored_offset, stored_topology_id=state.stored_topology_id,
        topology_id=topology_id, log_start=earliest, log_end=latest, outside=outside)


def _log_range(env: ToolEnv, topic: str, partition: int) -> Tuple[Optional[int], Optional[int]]:
    """The log start and end, or Nones when Kafka cannot tell (the decision itself
    needed no offset: the explanation goes on without the range check)."""
    try:
        return (env.offset_for(topic, partition, EARLIEST_TIME),
                env.offset_for(topic, partition, LATEST_TIME))
    except KafkaAccessError as exc:
        log.warning("%s/%d: log range unknown (%s); stored offsets are not checked against it",
                    topic, partition, exc)
        return None, None


def explain(env: ToolEnv, *, topology_id: Optional[str] = None) -> List[Explanation]:
    """Explain the start of every partition, ordered by topic and partition.

    Parameters
    ----------
    env : ToolEnv
    topology_id : str, optional
        The id a run would write; default as the pipeline computes it
        (:func:`~storm_kafka_compat.runtime.topology_instance_id`).
    """
    from storm_kafka_compat.runtime import topology_instance_id
    tid = topology_id or topology_instance_id(env.job)
    states = sorted(env.states(with_log=False), key=lambda s: (s.topic, s.partition))
    return [explain_state(env, s, tid) for s in states]


# --- the Kafka offset store (storm-kafka-client) ------------------------------------------

def client_first_poll(config: Any, committed: Optional[Tuple[int, Optional[str]]], *,
                      topology_id: str, earliest: int, latest: int, topic: str,
                      partition: int) -> FirstPollDecision:
    """The first-poll decision the storm-kafka-client spout makes for a newly assigned partition.

    Parameters
    ----------
    config : KafkaSpoutConfig
        The job's ``kafkaSpout`` section (strategy, group, ``auto.offset.reset``).
    committed : (offset, metadata) or None
        The group's commit, as ``KafkaGroupOffsets.committed`` returns it.
    topology_id : str
        The id the run writes into its commit metadata.
    earliest, latest : int
        Log start and end offsets.
    topic, partition : str, int

    Raises
    ------
    NoOffsetResetError
        The commit is outside the log and ``auto.offset.reset`` is ``none``.
    """
    where = f"{topic}/{partition} (group {config.group_id})"
    return decide_first_poll(config.first_poll_offset_strategy, committed,
                             topology_id=topology_id, earliest=earliest, latest=latest,
                             auto_offset_reset=config.auto_offset_reset, where=where)


@dataclass(frozen=True)
class GroupExplanation:
    """The first-poll decision of one partition of a Kafka-store job.

    ``committed`` and ``start_offset`` are next offsets to read;
    ``start_offset`` is None when the spout would refuse to start
    (``auto.offset.reset: none`` and a commit outside the log).
    """

    topic: str
    partition: int
    group: str
    committed: Optional[int]
    metadata: Optional[str]
    committed_topology_id: Optional[str]
    strategy: str
    decision: str
    start_offset: Optional[int]
    reason: str
    log_start: int
    log_end: int
    topology_id: str

    def as_dict(self) -> Dict[str, Any]:
        """The JSON object: CONTRACT section 4's keys (``zk_path`` and ``stored``
        null) plus the group's commit."""
        return {"topic": self.topic, "partition": self.partition, "group": self.group,
                "zk_path": None, "stored": None, "committed": self.committed,
                "metadata": self.metadata, "committed_topology_id": self.committed_topology_id,
                "strategy": self.strategy, "decision": self.decision,
                "start_offset": self.start_offset, "reason": self.reason,
                "log_start_offset": self.log_start, "log_end_offset": self.log_end,
                "topology_id": self.topology_id}


def explain_group_state(env: ToolEnv, state: GroupPartitionState,
                        topology_id: str) -> GroupExplanation:
    """Run the storm-kafka-client spout's first-poll decision on one partition of a
    Kafka-store job."""
    config = env.job.kafka_spout
    assert config is not None, "a Kafka-store job has a kafkaSpout section"
    earliest = (state.log_start if state.log_start is not None
                else env.offset_for(state.topic, state.partition, EARLIEST_TIME))
    latest = (state.log_end if state.log_end is not None
              else env.offset_for(state.topic, state.partition, LATEST_TIME))
    try:
        d = client_first_poll(config, state.committed, topology_id=topology_id,
                              earliest=earliest, latest=latest, topic=state.topic,
                              partition=state.partition)
        decision, start, reason = d.decision, d.start_offset, d.reason
    except NoOffsetResetError as exc:
        decision, start = OUT_OF_RANGE, None
        reason = f"{exc}; the spout refuses to start"
    return GroupExplanation(
        topic=state.topic, partition=state.partition, group=state.group,
        committed=state.committed_offset, metadata=state.metadata,
        committed_topology_id=state.committed_topology_id,
        strategy=config.first_poll_offset_strategy, decision=decision, start_offset=start,
        reason=reason, log_start=earliest, log_end=latest, topology_id=topology_id)


def explain_group(env: ToolEnv, *, topology_id: Optional[str] = None) -> List[GroupExplanation]:
    """Explain the first poll of every partition of a Kafka-store job, ordered by
    topic and partition.

    Parameters
    ----------
    env : ToolEnv
        A Kafka-store job's (``env.kafka_store``).
    topology_id : str, optional
        The id a run would write; default as the pipeline computes it
        (:func:`~storm_kafka_compat.runtime.topology_instance_id`). A
        commit whose metadata names it counts as this topology's.
    """
    from storm_kafka_compat.runtime import topology_instance_id
    tid = topology_id or topology_instance_id(env.job)
    states = sorted(env.group_states(), key=lambda s: (s.topic, s.partition))
    return [explain_group_state(env, s, tid) for s in states]
