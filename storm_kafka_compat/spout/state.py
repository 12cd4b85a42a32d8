"""The partition-state protocol: what the spout asks of one partition.

Two implementations keep the offsets of one partition for a spout:
:class:`~storm_kafka_compat.spout.manager.PartitionManager` (storm-kafka's
PartitionManager: pending offsets, the retry manager, ZooKeeper documents) and
:class:`~storm_kafka_compat.spout.client.manager.ClientPartitionManager`
(storm-kafka-client: acked offsets with gaps, the retry service, group
commits). The spout, the plans it makes and the metrics use only what this
protocol declares; ``location`` names where the partition's position is kept
(a ZooKeeper path, or ``group:topic-partition``).

Every offset is the next offset to read, unless a name says otherwise.
"""

from __future__ import annotations

from typing import Dict, Optional, Protocol, Sequence, runtime_checkable

from storm_kafka_compat.config import Broker
from storm_kafka_compat.offsets.ranges import Range
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.structs import TopicPartition


class PartitionStart(Protocol):
    """Where a partition starts, and why: storm-kafka's
    :class:`~storm_kafka_compat.spout.startup.StartDecision` or storm-kafka-client's
    :class:`~storm_kafka_compat.spout.client.first_poll.FirstPollDecision`."""

    @property
    def decision(self) -> str: ...

    @property
    def start_offset(self) -> int: ...

    @property
    def reason(self) -> str: ...


class RetryState(Protocol):
    """The retry bookkeeping as the driver reports it."""

    def __len__(self) -> int:
        """Offsets waiting for a retry."""
        ...


@runtime_checkable
class PartitionState(Protocol):
    """One partition's offsets as the driver sees them."""

    topic: str
    partition: int
    location: str
    leader: Optional[Broker]
    #: the next offset not yet fetched
    emitted_to: int
    #: the last offset written to the store
    committed_to: int
    total_lost: int
    total_given_up: int
    @property
    def retry(self) -> RetryState:
        """The retry bookkeeping (``len()`` is the number of offsets waiting)."""
        ...

    @property
    def key(self) -> TopicPartition: ...

    @property
    def pending_count(self) -> int: ...

    def set_leader(self, leader: Broker) -> None: ...

    def plan_fetch(self, max_messages: Optional[int] = None) -> Optional[FetchPlan]: ...

    def fetched(self, plan: FetchPlan, taken: Sequence[Range], *,
                scanned_to: Optional[int] = None, latency_ms: Optional[int] = None) -> None: ...

    def ack_ranges(self, ranges: Sequence[Range]) -> None: ...

    def fail(self, offset: int) -> bool: ...

    def out_of_range(self, plan: FetchPlan, earliest: int, latest: int) -> int: ...

    def has_work(self) -> bool: ...

    def last_completed_offset(self) -> int: ...

    def commit_offset(self) -> Optional[int]: ...

    def mark_committed(self, offset: int) -> None: ...

    def take_metrics(self) -> Dict[str, Optional[float]]: ...
