"""How offsets are committed: the role each spout flavour plays
(:class:`OffsetPolicy`: storm-kafka's ZooKeeper documents,
:class:`~storm_kafka_compat.spout.legacy.ZkDocuments`; storm-kafka-client's consumer
group, :class:`~storm_kafka_compat.spout.client.spout.GroupCommits`), the spout's commit
timer and what one commit reports (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Optional, Protocol, Sequence, Tuple

from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.spout.state import PartitionStart, PartitionState
from storm_kafka_compat.structs import TopicPartition

if TYPE_CHECKING:
    from storm_kafka_compat.spout.spout import Spout

#: while commits keep failing, a warning sums them up this often (ms)
OUTAGE_REMINDER_MS = 60_000


@dataclass
class CommitReport:
    """What one commit did: partitions written, round trips, or the error."""

    written: int = 0
    round_trips: int = 0
    error: Optional[str] = None


class CommitTimer:
    """``KafkaSpout``'s commit timing: the first check commits, later ones when
    more than ``interval_ms`` passed (strictly) or the clock went backwards."""

    def __init__(self, interval_ms: int) -> None:
        self.interval_ms = interval_ms
        self.last_ms = 0
        self._never = True

    def due(self, now_ms: int) -> bool:
        if self._never:
            return True
        elapsed = now_ms - self.last_ms
        return elapsed > self.interval_ms or elapsed < 0

    def committed(self, now_ms: int) -> None:
        self.last_ms = now_ms
        self._never = False


class OffsetPolicy(Protocol):
    """How a spout flavour starts a partition and commits offsets."""

    @property
    def store_name(self) -> str:
        """Names the store in messages ("ZooKeeper", "group g")."""
        ...

    @property
    def commit_interval_ms(self) -> int:
        """How often the spout commits (ms): stateUpdateIntervalMs or offsetCommitPeriodMs."""
        ...

    @property
    def conflicts(self) -> int:
        """Documents another job wrote under this job's paths (the ZooKeeper ownership
        guard)."""
        ...

    @property
    def commits_on_revoke(self) -> bool:
        """Commit a partition when it is revoked (storm-kafka always; storm-kafka-client
        with AT_LEAST_ONCE)."""
        ...

    def start(self, spout: "Spout", info: PartitionInfo) -> Tuple[PartitionStart, PartitionState]:
        """The start decision for ``info`` and the partition's new state (log offsets
        through :meth:`Spout.log_offset`)."""
        ...

    def read_ahead(self, infos: Sequence[PartitionInfo]) -> None:
        """Read in one go what :meth:`start` will read from the store for each of
        ``infos`` (none: forget what was read and not used). Raises only what
        :meth:`start` raises before reading (the policy's own checks); a failed read
        is logged and left to :meth:`start`, which then reads alone."""
        ...

    @property
    def unreachable_since(self) -> Optional[float]:
        """Since when (epoch s) the store has not answered; None while it answers."""
        ...

    def write(self, due: Sequence[Tuple[PartitionState, int]], *, patient: bool = True) -> int:
        """Store ``(state, offset)`` pairs; return the round trips. Raises a
        :class:`~storm_kafka_compat.errors.StormKafkaCompatError` on failure, an
        :class:`~storm_kafka_compat.errors.OwnershipConflictError` when another writer
        owns the documents (the run then stops). Not ``patient`` (the periodic
        commit): the store is not waited for long, the next commit tries again."""
        ...

    def storm_conf(self) -> Dict[str, object]:
        """Extra topology settings the bolts see."""
        ...

    def kafka_offset_metric(self, managers: Dict[TopicPartition, PartitionState]
                            ) -> Optional[Dict[str, int]]:
        """The policy's own ``kafkaOffset`` data point, or None for storm-kafka's."""
        ...

    def close(self) -> None:
        """Release what the policy built."""
        ...
