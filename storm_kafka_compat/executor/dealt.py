"""A single-stage task whose plans the driver deals (:mod:`storm_kafka_compat.engine.dealing`):
the task asks for them with its worker's name, then reads them as any task does
(:func:`~storm_kafka_compat.executor.group_task.run_tasks`).

A first attempt that cannot reach the dealer reads the group it was sent (its own,
which the dealer gives nobody else unless this task checked in); a retried attempt
must be told, since its first attempt may have been dealt another group.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Iterable, Iterator, Sequence, Tuple

from storm_kafka_compat.batch import FetchPlan, PartitionResult
from storm_kafka_compat.errors import PipelineError
from storm_kafka_compat.executor.calls import Service, Unreachable
from storm_kafka_compat.executor.group_task import run_tasks
from storm_kafka_compat.executor.worker import WorkerJob, worker_parts

log = logging.getLogger(__name__)


def worker_name() -> str:
    """This Python worker's name for the dealer: its host and process id."""
    return f"{socket.gethostname()}/{os.getpid()}"


def dealt_plans(dealer: Service, batch: int, task: int, own: Sequence[FetchPlan],
                attempt: int) -> Sequence[FetchPlan]:
    """The plans task ``task`` of ``batch`` reads: what the dealer answers; ``own``
    when a first attempt cannot reach it.

    Raises PipelineError when the dealer answers an error, or a retried attempt
    cannot reach it.
    """
    try:
        status, value = dealer.call(("claim", batch, task, worker_name()))
    except Unreachable as exc:
        if attempt > 0:
            raise PipelineError(
                f"the driver's plan dealer at {dealer.address[0]}:{dealer.address[1]} "
                f"cannot be reached ({exc}) by a retried task, which must read what its "
                "first attempt was dealt") from exc
        log.warning("the driver's plan dealer at %s:%d cannot be reached (%s): this task "
                    "reads the plans it was sent", dealer.address[0], dealer.address[1], exc)
        return own
    if status != "ok":
        raise PipelineError(f"the driver's plan dealer refused: {value}")
    plans: Sequence[FetchPlan] = value
    return plans


def run_dealt(items: Iterable[Tuple[int, Sequence[FetchPlan]]], job: WorkerJob,
              batch: int, attempt: int) -> Iterator[PartitionResult]:
    """The ``mapPartitions`` function of a dealt batch: each ``(task, own plans)`` item
    (one a Spark partition) read as :func:`run_tasks` reads its plans."""
    tools = worker_parts(job).tools()
    for task, own in items:
        plans = own if job.dealer is None else dealt_plans(job.dealer, batch, task, own,
                                                           attempt)
        yield from run_tasks(plans, tools)
