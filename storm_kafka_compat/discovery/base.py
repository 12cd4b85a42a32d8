"""The coordinator base: which partitions this task owns, and their managers.

A coordinator discovers the ordered partition list ``L`` (subclasses implement
:meth:`Coordinator.discover`), keeps this task's share ``L[i::T]``, and owns one
*manager* object per ``(topic, partition)``. It does not know what a manager is:
it creates them through ``manager_factory(info)`` and hands removed ones to
``on_removed(info, manager)`` (the pipeline builds and closes PartitionManagers
there).

A leader change keeps the manager object (storm-kafka 1.1.4/1.2.3+, STORM-2296
and STORM-3090: state carried over, matched on topic *and* partition) and calls
``manager.set_leader(broker)`` when the manager has that method.

Deviation (Storm kills the executor on any refresh error, STORM-380/STORM-2394):
once a first refresh succeeded, a refresh that fails (a topic the brokers do not
know, a topic being created or deleted, ``leader: -1`` during an election,
ZooKeeper or the brokers unreachable) is logged at WARN, counted in
``refresh_failures`` and changes nothing: the managers of the last good refresh
keep running and the refresh is retried at the next period or fetch failure. A
new partition whose start offset cannot be asked yet (its leader is being
elected) is left for the next refresh; the others are built. The first refresh
still raises, so a wrong topic or host fails in seconds.

This module is pure: time is passed in (epoch ms).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from storm_kafka_compat.config import Broker
from storm_kafka_compat.discovery.assignment import partitions_for_task
from storm_kafka_compat.errors import CoordinatorError, KafkaAccessError

#: errors a refresh survives once a first refresh succeeded (see the module docstring)
RETRIABLE_REFRESH_ERRORS = (CoordinatorError, KafkaAccessError)

log = logging.getLogger(__name__)

PartitionKey = Tuple[str, int]


@dataclass(frozen=True)
class PartitionInfo:
    """A partition, its current leader and its ZooKeeper path segment.

    ``path_topic`` is the topic segment of the offset path
    (``zkRoot/id/<path_topic>/partition_N``) in wildcard mode or with
    ``StaticHosts(use_topic_name_for_partition_path_id=True)``; ``None`` for
    the classic ``zkRoot/id/partition_N``.
    """

    topic: str
    partition: int
    leader: Broker
    path_topic: Optional[str] = None

    @property
    def key(self) -> PartitionKey:
        """``(topic, partition)``."""
        return (self.topic, self.partition)


ManagerFactory = Callable[[PartitionInfo], Any]
RemovedCallback = Callable[[PartitionInfo, Any], None]


class Coordinator:
    """Base of the Static, Zk and bootstrap coordinators.

    Parameters
    ----------
    manager_factory : callable
        ``manager_factory(info) -> manager`` for each newly owned partition.
    on_removed : callable, optional
        ``on_removed(info, manager)`` for each partition no longer owned
        (storm-kafka closes, and so commits, the manager there).
    task_index, total_tasks : int
        This task's 0-based index and the spout's task count.
    refresh_freq_ms : int, optional
        Period of :meth:`maybe_refresh`; ``None`` refreshes only once.
    """

    def __init__(self, *, manager_factory: ManagerFactory,
                 on_removed: Optional[RemovedCallback] = None,
                 task_index: int = 0, total_tasks: int = 1,
                 refresh_freq_ms: Optional[int] = None) -> None:
        self._factory = manager_factory
        self._on_removed = on_removed
        self.task_index = task_index
        self.total_tasks = total_tasks
        self.refresh_freq_ms = refresh_freq_ms
        self._managers: Dict[PartitionKey, Any] = {}
        self._infos: Dict[PartitionKey, PartitionInfo] = {}
        self._last_refresh_ms: Optional[int] = None
        self.refresh_count = 0
        #: refreshes that failed and were survived (kept the last good assignment)
        self.refresh_failures = 0
        #: the message of the last refresh failure, None after a good refresh
        self.last_refresh_error: Optional[str] = None

    # --- for subclasses ---------------------------------------------------------

    def discover(self) -> List[PartitionInfo]:
        """Return the ordered partition list ``L`` (every task's partitions)."""
        raise NotImplementedError

    # --- public -------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-discover partitions and reconcile the managers.

        Removed partitions go to ``on_removed``; new ones get a manager from
        ``manager_factory``; a partition whose leader moved keeps its manager
        and gets ``set_leader(broker)``. Discovery errors propagate before
        anything changes. After the first refresh, a new partition whose manager
        cannot be built because Kafka cannot be asked (``KafkaAccessError``) is
        skipped until the next refresh.
        """
        everything = self.discover()
        keys = [info.key for info in everything]
        if len(set(keys)) != len(keys):
            raise CoordinatorError(f"discovery returned duplicate partitions: {keys}")
        mine = partitions_for_task(everything, self.task_index, self.total_tasks)
        wanted = {info.key: info for info in mine}
        for key in [k for k in self._managers if k not in wanted]:
            info = self._infos.pop(key)
            manager = self._managers.pop(key)
            log.info("no longer managing %s/%d (leader %s)", key[0], key[1], info.leader)
            if self._on_removed is not None:
                self._on_removed(info, manager)
        managers: Dict[PartitionKey, Any] = {}
        for key, info in wanted.items():
            if key in self._managers:
                old = self._infos[key]
                manager = self._managers[key]
                if old.leader != info.leader:
                    log.info("leader of %s/%d moved from %s to %s; keeping its state",
                             key[0], key[1], old.leader, info.leader)
                    set_leader = getattr(manager, "set_leader", None)
                    if callable(set_leader):
                        set_leader(info.leader)
            else:
                log.info("now managing %s/%d (leader %s)", key[0], key[1], info.leader)
                try:
                    manager = self._factory(info)
                except KafkaAccessError as exc:
                    if self.refresh_count == 0:
                        raise
                    log.warning("%s/%d cannot start yet (%s); trying again at the next "
                                "refresh", key[0], key[1], exc)
                    continue
            managers[key] = manager
            self._infos[key] = info
        self._managers = managers
        self.refresh_count += 1

    def maybe_refresh(self, now_ms: int) -> bool:
        """Refresh if never done, or if more than ``refresh_freq_ms`` passed since
        the last periodic refresh (Storm's ``getMyManagedPartitions``).

        Returns whether a refresh happened.
        """
        due = self._last_refresh_ms is None or (
            self.refresh_freq_ms is not None and now_ms - self._last_refresh_ms > self.refresh_freq_ms)
        if due:
            self._last_refresh_ms = now_ms
            self.safe_refresh()
        return due

    def on_fetch_failure(self) -> None:
        """A fetch failed (``FailedFetchError``): refresh now, without resetting
        the periodic timer (as storm-kafka does)."""
        self.safe_refresh()

    def safe_refresh(self) -> bool:
        """:meth:`refresh`, surviving :data:`RETRIABLE_REFRESH_ERRORS` once a first
        refresh succeeded (the assignment of the last good refresh is kept).

        Returns whether the refresh succeeded.
        """
        try:
            self.refresh()
        except RETRIABLE_REFRESH_ERRORS as exc:
            if self.refresh_count == 0:
                self._last_refresh_ms = None     # nothing to keep: the caller must know
                raise
            self.refresh_failures += 1
            self.last_refresh_error = str(exc)
            log.warning("partition refresh failed (%d so far): %s; keeping the %d partitions "
                        "of the last good refresh and trying again", self.refresh_failures,
                        exc, len(self._managers))
            return False
        self.last_refresh_error = None
        return True

    def managed(self) -> Dict[PartitionKey, Any]:
        """This task's managers by ``(topic, partition)``, in discovery order."""
        return dict(self._managers)

    def partition_info(self, key: PartitionKey) -> PartitionInfo:
        """The current :class:`PartitionInfo` of a managed partition.

        Raises ``KeyError`` when the partition is not managed by this task.
        """
        return self._infos[key]

    def close(self) -> None:
        """Hand every manager to ``on_removed`` and forget them."""
        for key in list(self._managers):
            info = self._infos.pop(key)
            manager = self._managers.pop(key)
            if self._on_removed is not None:
                self._on_removed(info, manager)
