"""Task -> partition assignment (storm-kafka ``KafkaUtils.calculatePartitionsForTask``).

The partitions of every topic form one flat list ``L`` (topics in the order
discovery returned them, partitions ascending within a topic); task ``i`` of
``T`` owns ``L[i], L[i+T], L[i+2T], ...``. With fewer partitions than tasks
the extra tasks are idle (a warning is logged, as Storm does).

This module is pure.
"""

from __future__ import annotations

import logging
from typing import List, Sequence, TypeVar

from storm_kafka_compat.errors import ConfigError

log = logging.getLogger(__name__)

T = TypeVar("T")


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
