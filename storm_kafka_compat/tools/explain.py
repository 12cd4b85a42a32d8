"""``offsets explain``: what a start of the pipeline would do, partition by partition.

The decision is :func:`storm_kafka_compat.partition.startup.decide_start`, the
function the pipeline's spout runs, fed with the document the same
:class:`~storm_kafka_compat.state.zkstore.ZkStateStore` reads, the partition
list of the same coordinator and Kafka offsets through the same
:class:`~storm_kafka_compat.pipeline.spout.LazyKafka`. Nothing is written.

The topology id compared with the stored one (``ignoreZkOffsets``) is the one
a run would use: ``topology.id`` when configured, else a new
``<name>-1-<epoch seconds>`` (a run is a new submission), unless the caller
passes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ..errors import CorruptStateError
from ..partition.startup import INVALID_STATE, decide_start
from . import PartitionState, ToolEnv


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

    def as_dict(self) -> Dict[str, Any]:
        """The JSON object of CONTRACT section 4 (plus details)."""
        return {"topic": self.topic, "partition": self.partition, "zk_path": self.zk_path,
                "stored": self.stored, "decision": self.decision,
                "start_offset": self.start_offset, "reason": self.reason,
                "rejected": self.rejected, "stored_bytes": self.stored_bytes,
                "stored_offset": self.stored_offset,
                "stored_topology_id": self.stored_topology_id,
                "topology_id": self.topology_id, "reference_offset": self.reference_offset}


def explain_state(env: ToolEnv, state: PartitionState, topology_id: str) -> Explanation:
    """Run the pipeline's start decision on one partition state."""
    stored = state.stored
    shown_bytes = None
    if stored is not None and stored.problem is not None:
        shown_bytes = stored.text
    try:
        d = decide_start(stored, topology_id=topology_id, config=env.job.spout,
                         offset_for=lambda t: env.offset_for(state.topic, state.partition, t),
                         where=state.zk_path)
    except CorruptStateError as exc:
        return Explanation(
            topic=state.topic, partition=state.partition, zk_path=state.zk_path,
            stored=stored.parsed if stored is not None else None, stored_bytes=shown_bytes,
            rejected=exc.reason or None, decision=INVALID_STATE, start_offset=None,
            reason=f"{exc}; the pipeline refuses to start (corruptStatePolicy: fail)",
            reference_offset=None, stored_offset=state.stored_offset,
            stored_topology_id=state.stored_topology_id, topology_id=topology_id)
    return Explanation(
        topic=state.topic, partition=state.partition, zk_path=state.zk_path,
        stored=stored.parsed if stored is not None else None, stored_bytes=shown_bytes,
        rejected=stored.problem if stored is not None else None, decision=d.decision,
        start_offset=d.start_offset, reason=d.reason, reference_offset=d.reference_offset,
        stored_offset=state.stored_offset, stored_topology_id=state.stored_topology_id,
        topology_id=topology_id)


def explain(env: ToolEnv, *, topology_id: Optional[str] = None) -> List[Explanation]:
    """Explain the start of every partition, ordered by topic and partition.

    Parameters
    ----------
    env : ToolEnv
    topology_id : str, optional
        The id a run would write; default as the pipeline computes it
        (:func:`~storm_kafka_compat.pipeline.spout.topology_instance_id`).
    """
    from ..pipeline.spout import topology_instance_id
    tid = topology_id or topology_instance_id(env.job)
    states = sorted(env.states(with_log=False), key=lambda s: (s.topic, s.partition))
    return [explain_state(env, s, tid) for s in states]
