"""The runner seam: how a batch's fetch plans run on the executors and come back.

A :class:`Runner` gets the job once (:meth:`Runner.start`: the
:class:`~storm_kafka_compat.executor.worker.WorkerJob`, broadcast to the workers)
and then one :class:`~storm_kafka_compat.batch.BatchPlan` per batch, and
brings back a :class:`~storm_kafka_compat.batch.BatchResult`. The runners:

* :class:`SparkRunner` -- one Spark task per slice of plans, each reading,
  processing and acking its partitions (:mod:`.task`);
* :class:`StagedSparkRunner` -- a bolt topology whose groupings cross
  partitions, as several Spark stages (:mod:`.stages`);
* :class:`~storm_kafka_compat.engine.dataframe.DataFrameRunner` -- the
  DataFrame mode: each batch to a user function as one DataFrame;
* :class:`~storm_kafka_compat.testing.inprocess.InProcessRunner` -- every task
  in this process, without Spark (tests, and the planning benchmark).

:func:`runner_for` is the one place a job picks its runner.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import replace
from typing import (TYPE_CHECKING, Callable, Dict, Iterable, Iterator, Optional, Protocol,
                    Sequence, Tuple, Union)

from storm_kafka_compat.batch import (BatchPlan, BatchResult, FailureKind, FetchPlan,
                                      PartitionResult, TaskFailure)
from storm_kafka_compat.engine.dealing import DealerServer, PlanDealer, split_groups
from storm_kafka_compat.engine.hosted import run_hosted
from storm_kafka_compat.engine.stages import run_stages_spark
from storm_kafka_compat.executor.stage_records import Record, hosted_spout_stage
from storm_kafka_compat.executor.calls import Service
from storm_kafka_compat.executor.dealt import dealt_plans, run_dealt
from storm_kafka_compat.executor.stage_tasks import StageLayout
from storm_kafka_compat.executor.worker import WorkerJob

if TYPE_CHECKING:
    from pyspark import Broadcast, SparkContext
    from pyspark.sql import SparkSession

log = logging.getLogger("storm_kafka_compat.engine.driver")

#: the Spark session of a run, made on first use
SparkGetter = Callable[[], "SparkSession"]


class Runner(Protocol):
    """Runs one batch's fetch plans and brings back their results."""

    @property
    def whole_batches(self) -> bool:
        """The batch is processed whole (several stages, a user function): the
        driver then sizes batches by time (:mod:`.pacing`)."""
        ...

    @property
    def spark_context(self) -> Optional["SparkContext"]:
        """The SparkContext the runner uses (made on first use), None without Spark."""
        ...

    def start(self, job: WorkerJob) -> None:
        """Send ``job`` to the workers (again when the driver learned new brokers)."""
        ...

    def prepare(self) -> None:
        """Have the workers build their parts of the job sent, before the first batch
        (best effort; the driver calls it once, after Spark's start, unless stopping)."""
        ...

    def run(self, plan: BatchPlan) -> BatchResult:
        """Run one batch; one result per plan."""
        ...

    def cancel(self) -> None:
        """Stop the batch in flight (called from a signal handler's thread)."""
        ...

    def close(self) -> None:
        """Release what :meth:`start` sent."""
        ...


def task_attempt() -> int:
    """The running Spark task's attempt number (0 outside a Spark task); runs on the
    executor."""
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return ctx.attemptNumber() if ctx is not None else 0


def spark_job_error(exc: BaseException) -> str:
    """The telling line of a failed Spark job (the Python error of the worker
    when there is one, not py4j's first line)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    python = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b:", line)
              and not line.startswith(("py4j.", "org.apache", "java."))]
    if python:
        return python[-1]
    return lines[0] if lines else repr(exc)


def spark_gone(exc: BaseException) -> bool:
    """``exc`` says that Spark's JVM is gone or its SparkContext stopped (the JVM was
    killed, or shut down under the batch): no later batch can run."""
    try:
        from py4j.protocol import Py4JNetworkError  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - pyspark brings py4j
        Py4JNetworkError = ConnectionError  # noqa: N806 - the class's name
    if isinstance(exc, (Py4JNetworkError, ConnectionError)):
        return True
    text = str(exc)
    return any(sign in text for sign in (
        "SparkContext was shut down", "Cannot call methods on a stopped SparkContext",
        "Answer from Java side is empty", "Error while receiving"))


class SparkRunner:
    """Single-stage batches on Spark: the plans are split over at most
    ``spark.tasks`` (else ``defaultParallelism``) tasks, each reading and
    processing its partitions. A failed Spark job fails every partition of the
    batch (a task error, counted towards giving the partition up).

    Parameters
    ----------
    spark : callable returning a SparkSession
        Called on first use.
    tasks : int, optional
        The most Spark tasks of a batch.
    deal_on : str, optional
        Where the executors reach the driver: a batch's groups of plans (a single-stage
        batch's, or stage 0's of a job with bolt hosts) are then dealt to its tasks by
        the Python worker that read them last (:mod:`~storm_kafka_compat.engine.dealing`);
        None: each task reads its own.
    """

    whole_batches = False

    def __init__(self, spark: SparkGetter, *, tasks: Optional[int] = None,
                 deal_on: Optional[str] = None) -> None:
        self._spark = spark
        self.tasks = tasks
        self._job: Optional["Broadcast[WorkerJob]"] = None
        self._deal_on = deal_on
        self.dealer: Optional[DealerServer] = None
        self._prepared = False

    @property
    def spark_context(self) -> "SparkContext":
        return self._spark().sparkContext

    @property
    def job(self) -> "Broadcast[WorkerJob]":
        if self._job is None:
            raise RuntimeError("the runner was not started: call start(job) first")
        return self._job

    def start(self, job: WorkerJob) -> None:
        self._unpersist()
        if self.deals(job) and self._deal_on is not None:
            if self.dealer is None:      # kept when the job is sent again: it knows the workers
                self.dealer = DealerServer(PlanDealer(), self._deal_on)
            job = replace(job, dealer=Service(self.dealer.address, self.dealer.authkey))
        self._job = self.spark_context.broadcast(job)

    def prepare(self) -> None:
        """:func:`prepare_workers` for the job sent (once: a job sent again when new
        leaders were learned keeps its id, and the workers their parts of it)."""
        if self._job is not None and not self._prepared:
            self._prepared = True
            prepare_workers(self.spark_context, self._job)

    def deals(self, job: WorkerJob) -> bool:
        """Whether ``job``'s tasks take their plans from the dealer."""
        return True

    def slices(self, plan: BatchPlan) -> int:
        return max(1, min(len(plan), self.tasks or self.spark_context.defaultParallelism))

    def run(self, plan: BatchPlan) -> BatchResult:
        if not len(plan) and not plan.tick:
            return BatchResult()
        try:
            return self._run(plan)
        except Exception as exc:  # Py4JJavaError: a task died (worker crash, import error)
            if spark_gone(exc):
                raise                  # not the batch's failure: the driver stops
            message = spark_job_error(exc)
            log.error("the Spark job of this batch failed: %s", message)
            return BatchResult.failed(plan, TaskFailure(FailureKind.BOLT_ERROR,
                                                        f"Spark job failed: {message}"))

    def _run(self, plan: BatchPlan) -> BatchResult:
        job = self.job
        groups = split_groups(list(plan), self.slices(plan))
        if self.dealer is not None:
            self.dealer.dealer.open(plan.batch, groups)
        batch = plan.batch

        def task(items: Iterable[Tuple[int, Sequence[FetchPlan]]]) -> Iterator[PartitionResult]:
            return run_dealt(items, job.value, batch, task_attempt())
        results = (self.spark_context.parallelize(list(enumerate(groups)), len(groups))
                   .mapPartitions(task).collect())
        return BatchResult(results)

    def cancel(self) -> None:
        sc = self.spark_context
        # off the signal handler: the main thread is inside a py4j call
        threading.Thread(target=sc.cancelAllJobs, name="cancel-batch", daemon=True).start()

    def close(self) -> None:
        if self.dealer is not None:
            dealer, self.dealer = self.dealer, None
            dealer.close()
        self._unpersist()

    def _unpersist(self) -> None:
        if self._job is not None:
            job, self._job = self._job, None
            try:
                job.unpersist()
            except Exception:  # noqa: BLE001 - the SparkContext may be gone already
                log.debug("unpersisting the job's broadcast failed", exc_info=True)


class StagedSparkRunner(SparkRunner):
    """A bolt topology whose groupings cross partitions, as one Spark job of
    several stages per batch (:func:`~storm_kafka_compat.engine.stages.run_stages_spark`)."""

    whole_batches = True

    def deals(self, job: WorkerJob) -> bool:
        """Stage 0 of a job with bolt hosts reads dealt plans; a job without them runs
        each stage's tasks as Spark places them."""
        return job.hosts is not None

    def _run(self, plan: BatchPlan) -> BatchResult:
        job = self.job
        layout = job.value.layout
        if layout is None:
            raise ValueError("the staged runner needs a job with a stage layout")
        if job.value.hosts is not None:
            return run_hosted_spark(self.spark_context, plan, job, layout, self.slices(plan),
                                    None if self.dealer is None else self.dealer.dealer)
        return run_stages_spark(self.spark_context, plan, job, layout, self.slices(plan))


def prepare_workers(sc: "SparkContext", job: "Broadcast[WorkerJob]") -> None:
    """Before the first batch, as Storm prepares its bolts before the spout's first
    tuple: one Spark task per slot builds its Python worker's parts of the job
    (:func:`~storm_kafka_compat.executor.prepare.prepare_worker`; each holds its worker
    :data:`~storm_kafka_compat.executor.prepare.HOLD_S` at least, so that the slots'
    tasks run together, each in a worker of its own). The first batch then runs at the
    speed of the next ones, and the batch pacer sizes the second from it rather than
    from the workers' start. Best effort: what fails here fails again, and is reported,
    in the first batch. (Not a barrier stage: one waits for all its slots to be free
    and retries its check for minutes when they are not.)"""
    def prepare(_items: Iterable[int]) -> Iterator[Dict[str, Union[int, float]]]:
        from storm_kafka_compat.executor.prepare import prepare_worker
        yield prepare_worker(job.value)

    try:
        slots = max(1, int(sc.defaultParallelism))
        done = sc.parallelize(range(slots), slots).mapPartitions(prepare).collect()
    except Exception as exc:  # noqa: BLE001 - the first batch meets it again
        if spark_gone(exc):
            raise
        log.info("preparing the Python workers before the first batch failed; the first "
                 "batch prepares them (%s)", spark_job_error(exc))
        return
    log.debug("prepared %d Python worker(s) in %.2f s at most", len({d["pid"] for d in done}),
              max(d["seconds"] for d in done))


def run_hosted_spark(sc: "SparkContext", plan: BatchPlan, job: "Broadcast[WorkerJob]",
                     layout: StageLayout, slices: int,
                     dealer: Optional[PlanDealer] = None) -> BatchResult:
    """A batch whose bolt tasks live in bolt hosts: stage 0 as one Spark job, then
    the hosts' stages (:mod:`~storm_kafka_compat.engine.hosted`). With the ``dealer``
    (the job's :attr:`~storm_kafka_compat.executor.worker.WorkerJob.dealer`), stage 0's
    tasks read the plans it deals them: a partition stays with the Python worker that
    read it last, its consumer where the last batch left it."""
    batch = plan.batch
    groups = split_groups(list(plan), slices)
    if dealer is not None:
        dealer.open(batch, groups)

    def first(items: Iterable[Tuple[int, Sequence[FetchPlan]]]) -> Iterator[Record]:
        attempt = task_attempt()
        worker_job = job.value
        for index, own in items:
            plans = own if worker_job.dealer is None else dealt_plans(
                worker_job.dealer, batch, index, own, attempt)
            yield from hosted_spout_stage(index, plans, worker_job, batch, attempt)

    # a batch of ticks alone (nothing to fetch) runs only the hosts' stages
    records = (sc.parallelize(list(enumerate(groups)), len(groups)).mapPartitions(first)
               .collect() if len(plan) else [])
    hosts = job.value.hosts
    assert hosts is not None
    return run_hosted(records, layout, batch, hosts)
