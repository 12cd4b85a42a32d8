"""A runner without Spark: every task of a batch in this process.

``Pipeline(job, runner=InProcessRunner(kafka))`` runs the driver loop with the
single-stage tasks (:func:`~storm_kafka_compat.executor.task.run_task`) or every
stage of a multi-stage topology (:mod:`~storm_kafka_compat.engine.stages`),
partitioned as Spark would, reading with ``kafka`` (a
:class:`~storm_kafka_compat.testing.scripted.ScriptedKafka`, say) or, without
one, with the client a Spark worker would build from the job.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from storm_kafka_compat.batch import BatchPlan, BatchResult
from storm_kafka_compat.engine.hosted import run_hosted
from storm_kafka_compat.engine.stages import settle
from storm_kafka_compat.executor.group_task import run_tasks
from storm_kafka_compat.executor.stage_records import (Record, StagePartitioner, bolt_stage,
                                                       fold_records, hosted_spout_stage,
                                                       spout_stage, unresolved_roots)
from storm_kafka_compat.executor.task import run_task
from storm_kafka_compat.executor.worker import WorkerJob, worker_parts
from storm_kafka_compat.kafka.client import KafkaAccess


def run_stages_local(plan: BatchPlan, job: WorkerJob, *,
                     kafka: Optional[KafkaAccess] = None) -> BatchResult:
    """Every stage of ``job``'s layout in this process, partitioned as Spark would."""
    layout = job.layout
    if layout is None:
        raise ValueError("the job has no stage layout")
    records: List[Record] = list(spout_stage(plan, job, kafka=kafka))
    for stage in range(1, len(layout.stages)):
        partitioner = StagePartitioner.of(layout, stage)
        parts: List[List[Record]] = [[] for _ in range(partitioner.passthrough + 1)]
        for rec in records:
            parts[partitioner(rec[0])].append(rec)
        records = [out for i, part in enumerate(parts)
                   for out in bolt_stage(part, job, stage, plan.batch, i)]
    folded: Dict[Tuple[Any, ...], Any] = {}
    for key, value in records:
        if key[0] in ("a", "e") and key in folded:
            folded[key] = fold_records(folded[key], value)
        else:
            folded[key] = value
    return settle([out for r in folded.items() for out in unresolved_roots(r)])


class InProcessRunner:
    """A :class:`~storm_kafka_compat.engine.runner.Runner` that runs every task in
    this process, without Spark.

    Parameters
    ----------
    kafka : KafkaAccess, optional
        What the tasks read with; by default the worker client the job names.
    one_task : bool
        Run a single-stage batch as one Spark task runs its share
        (:func:`~storm_kafka_compat.executor.group_task.run_tasks`: a task's new-data
        plans read together by the worker client's fetch group) rather than plan by
        plan; only with the worker client (``kafka`` None).
    """

    spark_context = None

    def __init__(self, kafka: Optional[KafkaAccess] = None, *, one_task: bool = False) -> None:
        if one_task and kafka is not None:
            raise ValueError("one_task reads with the worker client: pass no kafka")
        self.kafka = kafka
        self.one_task = one_task
        self.job: Optional[WorkerJob] = None

    @property
    def whole_batches(self) -> bool:
        """A multi-stage batch is processed whole, as on Spark."""
        return self.job is not None and self.job.layout is not None

    def start(self, job: WorkerJob) -> None:
        self.job = job

    def run(self, plan: BatchPlan) -> BatchResult:
        job = self.job
        if job is None:
            raise RuntimeError("the runner was not started: call start(job) first")
        if job.layout is not None and job.hosts is not None:
            records = list(hosted_spout_stage(0, plan, job, plan.batch, 0, kafka=self.kafka))
            return run_hosted(records, job.layout, plan.batch, job.hosts)
        if job.layout is not None:
            return run_stages_local(plan, job, kafka=self.kafka)
        tools = worker_parts(job).tools(kafka=self.kafka)
        if self.one_task:
            return BatchResult(list(run_tasks(plan, tools)))
        return BatchResult([run_task(p, tools) for p in plan])

    def prepare(self) -> None:
        """Nothing is prepared ahead: the first batch builds this process's parts."""

    def cancel(self) -> None:
        """Nothing runs in the background to cancel."""

    def close(self) -> None:
        self.job = None
