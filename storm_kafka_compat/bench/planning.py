"""Driver work per batch with many partitions, on a simulated broker (no I/O).

The real :class:`~storm_kafka_compat.engine.driver.Pipeline` runs with
StaticHosts over ``partitions`` partitions, a
:class:`~storm_kafka_compat.testing.scripted.ScriptedKafka` and an in-memory
offset store. Each measured batch is what the driver does between two Spark
jobs: :meth:`Pipeline.plan` (one ``plan_fetch`` and one TaskSpec per
partition) and :meth:`Pipeline.apply` of results that took and acked
``per_partition`` offsets of every partition (as ranges).
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Dict, List

from storm_kafka_compat.config import Broker, JobConfig, SpoutConfig, StaticHosts, TopologyConfig

TOPIC = "bench-plan"


def planning_time(partitions: int, *, batches: int = 5, per_partition: int = 100,
                  clock: Any = time.perf_counter) -> Dict[str, Any]:
    """Median milliseconds of ``plan`` and ``apply`` per batch for ``partitions``.

    Returns
    -------
    dict
        ``partitions``, ``batches``, ``plan_ms``, ``apply_ms``, ``total_ms`` (medians)
        and ``setup_s`` (building the managers, once per run).
    """
    from storm_kafka_compat.testing.scripted import ScriptedKafka
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions
    from storm_kafka_compat.engine.stages import InProcess
    from storm_kafka_compat.engine.executor import TaskResult
    from storm_kafka_compat.testing.memory_store import MemoryStateStore

    kafka = ScriptedKafka()
    kafka.create_topic(TOPIC, partitions)
    hosts = StaticHosts({p: Broker("127.0.0.1", 9092) for p in range(partitions)})
    job = JobConfig(spout=SpoutConfig(hosts=hosts, topic=TOPIC, zk_root="/bench", id="plan"),
                    topology=TopologyConfig(name="bench", id="bench-1-1"),
                    bolt="storm_kafka_compat.bench.pipeline:noop_bolt")
    started = clock()
    pipe = Pipeline(job, executor=InProcess(), store=MemoryStateStore(),
                    kafka_factory=lambda boot: kafka, sleep=lambda s: None)
    pipe._max_task_errors = 3   # set by run(); apply() reads it
    pipe.spout.maybe_refresh(0)
    setup_s = clock() - started
    options = RunOptions(max_messages_per_partition=per_partition)
    plan_ms: List[float] = []
    apply_ms: List[float] = []
    for _ in range(batches):
        t0 = clock()
        specs = pipe.plan(options)
        t1 = clock()
        results = []
        for s in specs:
            p = s.plan
            done = [(p.offset, p.offset + per_partition)]
            results.append(TaskResult(p.topic, p.partition, p, taken=done, acked=done,
                                      scanned_to=p.offset + per_partition, latency_ms=1,
                                      tuples=per_partition))
        t2 = clock()
        pipe.apply(results, 0)
        t3 = clock()
        if len(specs) != partitions:
            raise RuntimeError(f"planned {len(specs)} of {partitions} partitions")
        plan_ms.append((t1 - t0) * 1000)
        apply_ms.append((t3 - t2) * 1000)
    plan = statistics.median(plan_ms)
    apply = statistics.median(apply_ms)
    return {"partitions": partitions, "batches": batches, "plan_ms": plan, "apply_ms": apply,
            "total_ms": plan + apply, "setup_s": setup_s}
