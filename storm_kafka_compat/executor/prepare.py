"""What a Python worker builds of a job before its first batch (executor side).

Storm prepares every bolt task when its worker starts, before the spout's first
tuple. Here a Python worker builds its parts of a job on first use
(:mod:`~storm_kafka_compat.executor.worker`), so without this the first batch paid
for them: the scheme, the bolts' ``prepare``, the worker's Kafka client and its
connection (0.3 s of a word count's first batch of 64 sentences, against 0.1 s for
the next), and its connections to the driver's plan dealer and bolt hosts.
:func:`prepare_worker` builds them in a Spark job of its own, one task per slot, before
the first batch (:func:`~storm_kafka_compat.engine.runner.prepare_workers`).
"""

from __future__ import annotations

import os
import time
from typing import Dict, Union

from storm_kafka_compat.executor.dag import runtime_for
from storm_kafka_compat.executor.stage_records import stage_runtime
from storm_kafka_compat.executor.worker import WorkerJob, worker_parts

#: the least time a preparing task holds its Python worker (s): a worker that finished
#: at once could take the next slot's task, and that slot's worker stay unprepared
HOLD_S = 0.05


def prepare_worker(job: WorkerJob) -> Dict[str, Union[int, float]]:
    """Build this Python worker's parts of ``job``: the scheme, the bolt tasks it runs
    itself (stage 0 of a staged topology, else the whole topology or the simple
    bolt), its Kafka client and its connections to the driver's services. What it
    did: ``pid`` and ``seconds``."""
    started = time.monotonic()
    parts = worker_parts(job)
    scheme = parts.scheme()
    if job.layout is not None:
        stage_runtime(job)
    elif job.topology_spec is not None:
        runtime_for(parts.topology(), dict(job.storm_conf), scheme.fields)
    elif job.bolt:
        parts.processor()
    parts.kafka()
    if job.dealer is not None:
        job.dealer.open()
    if job.hosts is not None:
        job.hosts.open()
    took = time.monotonic() - started
    if took < HOLD_S:
        time.sleep(HOLD_S - took)
    return {"pid": os.getpid(), "seconds": took}
