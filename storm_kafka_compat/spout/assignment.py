"""Which partitions this spout task owns, and their managers.

:class:`Assignment` asks a :class:`~storm_kafka_compat.discovery.base.Discovery` for
the ordered partition list ``L``, keeps this task's share ``L[i::T]``
(:func:`partitions_for_task`), and owns one *manager* object per
``(topic, partition)``. It does not know what a manager is:
it creates them through ``manager_factory(info)`` and hands removed ones to
``on_removed(info, manager)`` (the pipeline builds and closes PartitionManagers
there). Before a refresh builds its new managers, ``read_ahead(infos)`` may ask in
one go what each build would ask (the spout: log offsets and stored offsets); it is
called again with none after them.

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
from typing import Callable, Dict, Generic, List, Optional, Sequence, TypeVar

from storm_kafka_compat.discovery.base import Discovery, PartitionInfo
from storm_kafka_compat.errors import ConfigError, CoordinatorError, KafkaAccessError
from storm_kafka_compat.structs import TopicPartition

#: errors a refresh survives once a first refresh succeeded (see the module docstring)
RETRIABLE_REFRESH_ERRORS = (CoordinatorError, KafkaAccessError)

log = logging.getLogger(__name__)

T = TypeVar("T")
#: what the assignment keeps per partition (the spout's partition states)
M = TypeVar("M")


def partitions_for_task(partitions: Sequence[T], task_index: int, total_tasks: int) -> List[T]:
    """Return the partitions task ``task_index`` of ``total_tasks`` owns: ``L[i::T]``.

    Parameters
    ----------
    partitions : sequence
        The flat, ordered partition list ``L``.
    task_index : int
        0-based position of this task among the spout's task ids sorted ascending.
    total_tasks : int
        Number of tasks of the spout component.

    Raises
    ------
    ConfigError
        ``total_tasks < 1``, ``task_index < 0`` or ``task_index >= total_tasks``
        (Storm's ``IllegalArgumentException``).
    """
    if total_tasks < 1:
        raise ConfigError(f"total tasks must be at least 1, got {total_tasks}; set the "
                          "spout parallelism to a positive number",
                          key="total_tasks", value=total_tasks)
    if task_index < 0 or task_index >= total_tasks:
        raise ConfigError(f"task index {task_index} must be in 0..{total_tasks - 1} "
                          f"(total tasks {total_tasks}); pass the 0-based position of "
                          "this task among the component's tasks",
                          key="task_index", value=task_index)
    count = len(partitions)
    if count < total_tasks:
        log.warning("there are more tasks than partitions (tasks: %d; partitions: %d), "
                    "some tasks will be idle", total_tasks, count)
    mine = list(partitions[task_index::total_tasks])
    if not mine:
        log.warning("task %d of %d has no partitions assigned", task_index, total_tasks)
    else:
        log.info("task %d of %d assigned %s", task_index, total_tasks, mine)
    return mine


class Assignment(Generic[M]):
    """This task's share of a discovery's partitions, one manager per partition.

    Parameters
    ----------
    discovery : Discovery
        Where the partition list comes from (closed by :meth:`close`).
    manager_factory : callable
        ``manager_factory(info) -> manager`` for each newly owned partition.
    on_removed : callable, optional
        ``on_removed(info, manager)`` for each partition no longer owned
        (storm-kafka closes, and so commits, the manager there).
    task_index, total_tasks : int
        This task's 0-based index and the spout's task count.

    The period of :meth:`maybe_refresh` is the discovery's ``refresh_freq_ms``;
    with ``None`` (a fixed list) only the first refresh does anything.
    """

    def __init__(self, discovery: Discovery, *, manager_factory: Callable[[PartitionInfo], M],
                 on_removed: Optional[Callable[[PartitionInfo, M], None]] = None,
                 read_ahead: Optional[Callable[[Sequence[PartitionInfo]], None]] = None,
                 task_index: int = 0, total_tasks: int = 1) -> None:
        self.discovery = discovery
        self._factory = manager_factory
        self._on_removed = on_removed
        self._read_ahead = read_ahead
        self.task_index = task_index
        self.total_tasks = total_tasks
        self.refresh_freq_ms = discovery.refresh_freq_ms
        self._managers: Dict[TopicPartition, M] = {}
        self._infos: Dict[TopicPartition, PartitionInfo] = {}
        self._last_refresh_ms: Optional[int] = None
        self.refresh_count = 0
        #: refreshes that failed and were survived (kept the last good assignment)
        self.refresh_failures = 0
        #: the message of the last refresh failure, None after a good refresh
        self.last_refresh_error: Optional[str] = None

    # --- public -------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-discover partitions and reconcile the managers.

        Removed partitions go to ``on_removed``; new ones get a manager from
        ``manager_factory``; a partition whose leader moved keeps its manager
        and gets ``set_leader(broker)``. Discovery errors propagate before
        anything changes. After the first refresh, a new partition whose manager
        cannot be built because Kafka cannot be asked (``KafkaAccessError``) is
        skipped until the next refresh. A fixed list (``refresh_freq_ms`` None) is
        only read the first time.
        """
        if self.refresh_freq_ms is None and self.refresh_count:
            return
        everything = self.discovery.discover()
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
        new = [info for key, info in wanted.items() if key not in self._managers]
        if new and self._read_ahead is not None:
            self._read_ahead(new)
        try:
            self._reconcile(wanted)
        finally:
            if new and self._read_ahead is not None:
                self._read_ahead([])
        self.refresh_count += 1

    def _reconcile(self, wanted: Dict[TopicPartition, PartitionInfo]) -> None:
        """Keep the managers of ``wanted`` (moving a leader where it moved) and build
        those of its new partitions."""
        managers: Dict[TopicPartition, M] = {}
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

    def maybe_refresh(self, now_ms: int) -> bool:
        """Refresh if never done, or if more than ``refresh_freq_ms`` passed since
        the last periodic refresh (Storm's ``getMyManagedPartitions``).

        Returns whether a refresh happened.
        """
        due = self._last_refresh_ms is None or (
            self.refresh_freq_ms is not None
            and now_ms - self._last_refresh_ms > self.refresh_freq_ms)
        if due:
            self._last_refresh_ms = now_ms
            self.safe_refresh()
        return due

    def on_fetch_failure(self) -> None:
        """A fetch failed (``FailedFetchError``): refresh now, without resetting
        the periodic timer (as storm-kafka does); a fixed list retries the same broker."""
        if self.refresh_freq_ms is not None:
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

    def managed(self) -> Dict[TopicPartition, M]:
        """This task's managers by ``(topic, partition)``, in discovery order."""
        return dict(self._managers)

    def partition_info(self, key: TopicPartition) -> PartitionInfo:
        """The current :class:`PartitionInfo` of a managed partition.

        Raises ``KeyError`` when the partition is not managed by this task.
        """
        return self._infos[key]

    def close(self) -> None:
        """Hand every manager to ``on_removed``, forget them, close the discovery."""
        try:
            for key in list(self._managers):
                info = self._infos.pop(key)
                manager = self._managers.pop(key)
                if self._on_removed is not None:
                    self._on_removed(info, manager)
        finally:
            self.discovery.close()

    def release(self) -> None:
        """Forget the managers without ``on_removed`` (the caller committed them) and
        close the discovery."""
        self._on_removed = None
        self.close()
