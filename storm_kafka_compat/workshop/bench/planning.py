"""Driver work per batch with many partitions, on a simulated broker (no I/O).

The real driver-side :class:`~storm_kafka_compat.spout.spout.Spout` runs with
StaticHosts over ``partitions`` partitions, on the simulated broker and
in-memory store of :func:`storm_kafka_compat.workshop.embedded.simulated_spout`. Each
measured batch is what the driver does between two Spark jobs:
:meth:`Spout.plan` (one ``plan_fetch`` per partition) and :meth:`Spout.apply`
of a result that took and acked ``per_partition`` offsets of every partition
(as ranges). Apart from the timed batches, :func:`driver_memory` traces what the
driver holds for so many partitions and what a batch adds.
"""

from __future__ import annotations

import pickle
import statistics
import time
import tracemalloc
from typing import Any, Callable, Dict, List

from storm_kafka_compat.config import Broker, JobConfig, SpoutConfig, StaticHosts, TopologyConfig
from storm_kafka_compat.batch import BatchResult, PartitionResult

TOPIC = "bench-plan"


def planning_time(partitions: int, *, batches: int = 5, per_partition: int = 100,
                  clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """Median milliseconds of ``plan`` and ``apply`` per batch for ``partitions``.

    Returns
    -------
    dict
        ``partitions``, ``batches``, ``plan_ms``, ``apply_ms``, ``total_ms`` (medians)
        and ``setup_s`` (building the managers, once per run).
    """
    from storm_kafka_compat.workshop.embedded import simulated_spout

    hosts = StaticHosts({p: Broker("127.0.0.1", 9092) for p in range(partitions)})
    job = JobConfig(spout=SpoutConfig(hosts=hosts, topic=TOPIC, zk_root="/bench", id="plan"),
                    topology=TopologyConfig(name="bench", id="bench-1-1"),
                    bolt="storm_kafka_compat.workshop.bench.pipeline:noop_bolt")
    started = clock()
    spout = simulated_spout(job, partitions)
    spout.maybe_refresh(0)
    setup_s = clock() - started
    plan_ms: List[float] = []
    apply_ms: List[float] = []
    for _ in range(batches):
        t0 = clock()
        plan = spout.plan(0, per_partition)
        t1 = clock()
        result = _batch_result(plan, per_partition)
        t2 = clock()
        spout.apply(result, 0, max_task_errors=3)
        t3 = clock()
        if len(plan) != partitions:
            raise RuntimeError(f"planned {len(plan)} of {partitions} partitions")
        plan_ms.append((t1 - t0) * 1000)
        apply_ms.append((t3 - t2) * 1000)
    plan_median = statistics.median(plan_ms)
    apply_median = statistics.median(apply_ms)
    return {"partitions": partitions, "batches": batches, "plan_ms": plan_median,
            "apply_ms": apply_median, "total_ms": plan_median + apply_median,
            "setup_s": setup_s, **driver_memory(job, partitions, per_partition)}


def _batch_result(plan: Any, per_partition: int) -> BatchResult:
    """What the tasks bring back for ``plan``: ``per_partition`` offsets of every
    partition taken and acked, as ranges."""
    return BatchResult([
        PartitionResult(p, taken=[(p.offset, p.offset + per_partition)],
                        acked=[(p.offset, p.offset + per_partition)],
                        scanned_to=p.offset + per_partition, latency_ms=1,
                        tuples=per_partition) for p in plan])


def driver_memory(job: JobConfig, partitions: int, per_partition: int) -> Dict[str, Any]:
    """The driver's memory for ``partitions``, traced by ``tracemalloc`` (apart from the
    timed batches, which tracing would slow down): the spout's state once every
    partition has its manager (``state_bytes``, and per partition), the peak a
    batch's plan and apply add on top of it (``batch_peak_bytes``), and the pickled
    sizes of a batch's plans (sent to the executors) and results (brought back). A first
    spout starts untraced and is dropped, so that the modules it imports are not
    counted as state."""
    from storm_kafka_compat.workshop.embedded import simulated_spout

    # the modules a spout imports as it starts are not its state: imported untraced
    simulated_spout(job, partitions).maybe_refresh(0)
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        spout = simulated_spout(job, partitions)
        spout.maybe_refresh(0)
        state = tracemalloc.get_traced_memory()[0] - before
        plan = spout.plan(0, per_partition)
        result = _batch_result(plan, per_partition)
        spout.apply(result, 0, max_task_errors=3)       # the first batch's one-off growth
        settled = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        plan = spout.plan(0, per_partition)
        result = _batch_result(plan, per_partition)
        spout.apply(result, 0, max_task_errors=3)
        peak = tracemalloc.get_traced_memory()[1] - settled
        plan_bytes = len(pickle.dumps(list(plan), protocol=pickle.HIGHEST_PROTOCOL))
        result_bytes = len(pickle.dumps(list(result), protocol=pickle.HIGHEST_PROTOCOL))
    finally:
        if not tracing:
            tracemalloc.stop()
    return {"state_bytes": state, "state_bytes_per_partition": state / partitions,
            "batch_peak_bytes": peak, "plan_bytes": plan_bytes, "result_bytes": result_bytes}
