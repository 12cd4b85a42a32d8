"""The PySpark driver loop: plan -> run -> apply -> maybe commit.

Each batch the spout plans one fetch per partition
(:meth:`~storm_kafka_compat.spout.spout.Spout.plan`), a runner reads and
processes the plans on the executors (:mod:`storm_kafka_compat.engine.runner`),
the spout applies what came back
(:meth:`~storm_kafka_compat.spout.spout.Spout.apply`) and commits when its timer
says so (:meth:`~storm_kafka_compat.spout.spout.Spout.maybe_commit`). The loop
only moves batches: the partitions' state, the open tuple trees, the commit
timer and the tasks' failures are the spout's. Metric records and the status
come from :class:`~storm_kafka_compat.engine.report.Reporter`.

A topology whose groupings cross partitions (fields, global, all) runs as
several Spark stages (:mod:`storm_kafka_compat.engine.stages`); simple bolts
and shuffle-only topologies run in the fetching task.

SIGTERM or SIGINT stops planning; the batch in flight is settled, a final commit
is made and :meth:`Pipeline.run` returns normally: nothing acknowledged is lost
and nothing unacknowledged is committed. Before the first batch (the partition
refresh, Spark's start) there is nothing to wait for: :meth:`Pipeline.run` raises
:class:`~storm_kafka_compat.engine.signals.StopBeforeStart` at once.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, Unpack

from storm_kafka_compat.batch import BatchPlan, BatchResult
from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.config.model import DEFAULT_MAX_MESSAGES_PER_PARTITION
from storm_kafka_compat.engine.bolt_state import (BoltState, BoltTasks, BoltTasksFactory,
                                                  host_address)
from storm_kafka_compat.engine.dataframe import DataFrameRunner
from storm_kafka_compat.engine.pacing import BatchPacer
from storm_kafka_compat.engine.report import MetricsSink, Reporter, RunSummary, with_batch_in_flight
from storm_kafka_compat.engine.runner import (Runner, SparkGetter, SparkRunner, StagedSparkRunner,
                                              spark_gone)
from storm_kafka_compat.engine.signals import (StopBeforeStart, StopState, install_stop_handlers,
                                               take_stop_signals)
from storm_kafka_compat.engine.stages import layout_for
from storm_kafka_compat.errors import NoLeaderError, PipelineError
from storm_kafka_compat.executor.reader import task_budget_s
from storm_kafka_compat.executor.stage_tasks import StageLayout
from storm_kafka_compat.executor.worker import WorkerJob, worker_parts
from storm_kafka_compat.runtime import Runtime, RuntimeParts
from storm_kafka_compat.spout.spout import Spout

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: how many times (a second apart) the first refresh asks for a topic whose partitions
#: have no leader yet before the run fails (a Kafka broker's ZooKeeper session is 18 s)
FIRST_REFRESH_ATTEMPTS = 30


@dataclass
class RunOptions:
    """How long and how fast :meth:`Pipeline.run` goes."""

    until_caught_up: bool = False
    max_batches: Optional[int] = None
    #: new messages fetched per partition per batch (the task's time budget bounds
    #: it too: see reader.FILL_BUDGET_MS)
    max_messages_per_partition: int = DEFAULT_MAX_MESSAGES_PER_PARTITION
    idle_sleep_ms: int = 200
    progress_every_s: float = 5.0
    #: give up on a partition whose task keeps failing this many batches in a row
    max_consecutive_task_errors: int = 3
    #: attempts of the commit made on shutdown
    final_commit_attempts: int = 5


class Pipeline:
    """Storm's KafkaSpout and bolts on Spark.

    Parameters
    ----------
    job : JobConfig
    runtime : Runtime, optional
        The job's offset store, Kafka access, discovery and spout; built from
        ``job`` and ``parts`` when omitted (and then closed when :meth:`run` ends).
    spark : SparkSession, optional
        Created from ``job.spark`` when omitted.
    runner : Runner, optional
        Runs the batches; the one the job calls for by default
        (:func:`~storm_kafka_compat.engine.runner.runner_for`: Spark tasks, Spark
        stages, or the DataFrame mode). Tests run
        :class:`~storm_kafka_compat.testing.inprocess.InProcessRunner`.
    clock : callable returning int ms (monotonic)
    sleep : callable(seconds)
    progress : callable(str), optional
        Receives the progress line (the CLI prints it on stderr).
    metrics : callable(dict), optional
        Receives each metrics record (Storm names) every ``metricsTimeBucketSizeInSecs``.
    stages : bool, optional
        Run a bolt topology as several Spark stages: None (default) when a
        grouping crosses partitions (fields, global, all), True always, False never.
    pace : bool, optional
        Size batches by time on the driver (:mod:`~storm_kafka_compat.engine.pacing`):
        None (default) when the runner processes a batch whole (several Spark
        stages, the DataFrame mode), True always, False never.
    task_index, total_tasks : int
        This spout task among the spout's tasks (each driver runs one).
    bolt_tasks : callable, optional
        Makes the run's bolt tasks of the crossing stages (default: bolt host processes,
        :class:`~storm_kafka_compat.engine.bolt_state.BoltState`).
    take_over : bool
        Start even while another job's ownership record of the documents is there
        (:mod:`~storm_kafka_compat.offsets.ownership`); that job stops at its next
        commit.
    new_id : bool
        The spout id may be new: start it although other ids under the zkRoot hold
        offsets of the topic, with a warning naming them (the default of the library,
        whose callers run several ids side by side). False refuses such a start with
        what they hold (:meth:`~storm_kafka_compat.spout.legacy.ZkDocuments.check_id`):
        what ``run`` does unless given ``--new-id``.
    **parts
        ``store``, ``kafka``, ``kafka_factory``, ``groups``, ``registry_reader``,
        ``topology_id`` for the :class:`~storm_kafka_compat.runtime.Runtime`.
    """

    def __init__(self, job: JobConfig, *, runtime: Optional[Runtime] = None,
                 spark: Optional["SparkSession"] = None, runner: Optional[Runner] = None,
                 clock: Optional[Callable[[], int]] = None,
                 sleep: Callable[[float], None] = time.sleep,
                 progress: Optional[Callable[[str], None]] = None,
                 metrics: Optional[MetricsSink] = None, stages: Optional[bool] = None,
                 task_index: int = 0, total_tasks: int = 1, pace: Optional[bool] = None,
                 take_over: bool = False, new_id: bool = True,
                 bolt_tasks: Optional[BoltTasksFactory] = None,
                 **parts: Unpack[RuntimeParts]) -> None:
        if runtime is not None and parts:
            raise TypeError(f"give either a runtime or its parts ({', '.join(parts)}), not both")
        self.job = job
        self._spark = spark
        self.clock = clock or (lambda: int(time.monotonic() * 1000))
        self.sleep = sleep
        self._owns_runtime = runtime is None
        self.runtime = runtime if runtime is not None else Runtime(job, **parts)
        self.spout = self.runtime.spout(clock=self.clock, task_index=task_index,
                                        total_tasks=total_tasks, take_over=take_over,
                                        new_id=new_id)
        self.summary = RunSummary()
        self.reporter = Reporter(job, self.spout, self.runtime.kafka, self.summary,
                                 clock=self.clock, metrics=metrics, progress=progress)
        self._runner = runner
        self._stages = stages
        self._pace = pace
        self._bolt_tasks = bolt_tasks
        #: what the workers know of the job, once the run started
        self.worker_job: Optional[WorkerJob] = None
        #: the bolt hosts and saved state of a topology cut into stages (after open())
        self.bolt_state: Optional[BoltTasks] = None
        #: sizes batches by time when the runner processes them whole (after open())
        self.pacer: Optional[BatchPacer] = None
        #: the stop asked for, the signals taken, the run's phase (engine.signals)
        self.stops = StopState()
        #: the batch the runner runs now: its number, start (epoch s) and plan
        self._in_flight: Optional[Tuple[int, float, BatchPlan]] = None
        #: when an idle run next runs the bolt stages alone for their ticks (ms)
        self._next_tick_batch_ms = 0

    # --- control ---------------------------------------------------------------------
    def stop(self, reason: str = "stop requested") -> None:
        """Ask the loop to stop after the batch in flight."""
        self.stops.stop(reason)

    @property
    def stopping(self) -> bool:
        """A stop was asked for; the loop ends after the batch in flight."""
        return self.stops.stopping

    def force_stop(self) -> None:
        """Stop now: cancel the batch in flight (its tasks' results are dropped,
        nothing of it is acknowledged), then commit and return."""
        self.stops.force_stop()

    @property
    def status(self) -> Optional[Dict[str, Any]]:
        """The status of the last progress interval (``run --status-port``), with the
        batch in flight, if one runs now."""
        flight = self._in_flight
        if flight is None:
            return self.reporter.status
        batch, started_s, plan = flight
        return with_batch_in_flight(self.reporter.status, batch, started_s, plan, time.time())

    # --- the run's parts ---------------------------------------------------------------
    def spark(self) -> "SparkSession":
        """The Spark session: the one given, else made from ``job.spark`` on first use."""
        if self._spark is None:
            from storm_kafka_compat.engine.spark import get_spark
            self._spark = get_spark(self.job.spark)
        return self._spark

    @functools.cached_property
    def layout(self) -> Optional[StageLayout]:
        """The stages of the bolt topology, or None for one stage."""
        return layout_for(self.job, self._stages)

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            self._runner = runner_for(self.job, self.spark, staged=self.layout is not None)
        return self._runner

    def open(self) -> None:
        """Start the run's parts: the first partition refresh (a wrong topic or host
        fails here, in seconds, before Spark starts), the job sent to the workers
        once, the batch pacer. :meth:`run` calls it."""
        if self.worker_job is not None:
            return
        self._first_refresh()
        layout = self.layout
        self.worker_job = worker_job(self.job, self.spout, self.runtime.kafka.bootstrap,
                                     layout)
        if layout is not None and any(layout.slots):
            make = self._bolt_tasks or BoltState
            self.bolt_state = make(self.job, layout, worker_parts(self.worker_job).scheme().fields,
                                   self.spout.storm_conf())
            self.bolt_state.restore(self.spout.offsets_after_commit())
            self.spout.before_commit = self.bolt_state.save
            self.worker_job = replace(self.worker_job, hosts=self.bolt_state.directory)
        self.runner.start(self.worker_job)
        pace = self._pace if self._pace is not None else self.runner.whole_batches
        if pace:
            self.pacer = BatchPacer(self.worker_job.budget_s * 1000.0)
            log.info("batches are sized to last about %d ms (the task budget)",
                     self.pacer.budget_ms)

    def _first_refresh(self) -> None:
        """The first partition refresh. A topic that exists with no partition led yet
        (:class:`NoLeaderError`: an election, a broker restarting or back from a lost
        ZooKeeper session) is asked again each second for up to
        :data:`FIRST_REFRESH_ATTEMPTS` seconds, a warning each time; anything else fails
        at once."""
        for attempt in range(1, FIRST_REFRESH_ATTEMPTS + 1):
            try:
                self.spout.maybe_refresh(self.clock())
                return
            except NoLeaderError as exc:
                if attempt == FIRST_REFRESH_ATTEMPTS:
                    raise
                log.warning("%s; asking again in 1 s (%d of %d)", exc, attempt,
                            FIRST_REFRESH_ATTEMPTS)
                self.sleep(1.0)

    # --- one batch -------------------------------------------------------------------------
    def batch(self, options: RunOptions) -> int:
        """Plan, run and apply one batch; return the messages taken."""
        now = self.clock()
        cap = options.max_messages_per_partition
        partitions = len(self.spout.managers())
        if self.pacer is not None:
            cap = self.pacer.cap(partitions, cap)
        plan = self.spout.plan(now, cap)
        if not len(plan) and self._ticks_due(now):
            plan = BatchPlan((), self.spout.reserve_batch(), tick=True)
        started_ms = self.clock()
        result = self._run(plan)
        self.reporter.errors.observe(result, self.clock())
        # open trees date from when the result came back, after the bolts ran: at
        # least topology.message.timeout.secs after the emit
        taken = self.spout.apply(result, self.clock(),
                                 max_task_errors=options.max_consecutive_task_errors)
        if self.pacer is not None:
            self.pacer.observe(taken, self.clock() - started_ms, partitions,
                               None if result.work_s is None else result.work_s * 1000.0)
        if len(plan):
            self.summary.batches += 1
            log.debug("batch %d: %d tasks (%d retries), %d messages in %d ms",
                      self.summary.batches, len(plan), plan.retries, taken, self.clock() - now)
        self.summary.messages += taken
        return taken

    def _ticks_due(self, now_ms: int) -> bool:
        """No batch runs now: should the bolt stages run alone for their ticks (and
        their windows' time)? Every half of the shortest tick period, so a tick is late
        by at most half a period plus a batch while the spout has nothing to fetch."""
        layout = self.layout
        if layout is None or not layout.ticks:
            return False
        if now_ms < self._next_tick_batch_ms:
            return False
        half_ms = max(10, int(min(p for _c, p in layout.ticks) * 500))
        self._next_tick_batch_ms = now_ms + half_ms
        return True

    def _run(self, plan: BatchPlan) -> BatchResult:
        if not len(plan) and not plan.tick:
            return BatchResult()
        assert self.worker_job is not None, "open() first"
        bootstrap = self.runtime.kafka.bootstrap
        self._in_flight = (plan.batch, time.time(), plan)
        try:
            if self.bolt_state is not None:
                self.bolt_state.check()
            if bootstrap != self.worker_job.bootstrap:      # new leaders were learned
                self.worker_job = self.worker_job.with_bootstrap(bootstrap)
                self.runner.start(self.worker_job)
            return self.runner.run(plan)
        except Exception as exc:
            if not spark_gone(exc):
                raise
            raise PipelineError(
                f"Spark's JVM went away during batch {plan.batch} "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                "stopping: what was acknowledged before is committed and this batch is read "
                "again at the next start. To stop a job, send SIGTERM to the driver (pid "
                f"{os.getpid()}) or its process group") from exc
        finally:
            self._in_flight = None

    # --- the loop -----------------------------------------------------------------------------
    def run(self, options: Optional[RunOptions] = None) -> RunSummary:
        """Run until stopped, caught up (``until_caught_up``) or ``max_batches``."""
        options = options or RunOptions()
        restore = install_stop_handlers(self.stops)
        loop_ended: Optional[Callable[[], None]] = None
        started = time.monotonic()
        try:
            self.stops.start()
            self.reporter.start(self.clock())
            try:
                self.open()
                loop_ended = take_stop_signals(self.stops, self.runner.spark_context)
            except KeyboardInterrupt:    # pyspark's own SIGINT handler, while Spark starts
                self.stop("SIGINT")
                raise StopBeforeStart("SIGINT") from None
            self.stops.running(cancel=self.runner.cancel)
            if self.stops.stopping and self.stops.signals_received:   # as Spark's start ended
                raise StopBeforeStart(self.stops.reason)
            self.runner.prepare()      # a stop now cancels it, as it cancels a batch
            self.reporter.start_interval(self.clock())
            while not self.stops.stopping:
                taken = self.batch(options)
                now = self.clock()
                self.spout.maybe_commit(now)
                self.reporter.tick(now, options.progress_every_s * 1000)
                if self._done(options):
                    break
                if taken == 0:
                    self.sleep(options.idle_sleep_ms / 1000.0)
        finally:
            managers = self.spout.managers()
            try:
                self._shut_down(options)
            finally:
                if loop_ended is not None:
                    loop_ended()
                restore()
        self.summary.finish(self.spout, managers, elapsed_s=time.monotonic() - started,
                            stopped_by=self.stops.reason or "stopped")
        self.summary.bolt_errors = self.reporter.errors.by_bolt()
        self.summary.stuck = [s.as_dict() for s in self.reporter.errors.stuck.values()]
        return self.summary

    def _done(self, options: RunOptions) -> bool:
        if options.until_caught_up and self.spout.caught_up():
            self.stops.reason = "caught up"
            return True
        if options.max_batches is not None and self.summary.batches >= options.max_batches:
            self.stops.reason = f"{options.max_batches} batches"
            return True
        return False

    def _shut_down(self, options: RunOptions) -> None:
        """The final commit (what still fails is replayed on the next start), the last
        interval's metrics, and the release of what the run built."""
        try:
            self.summary.final_commit_failed = not self.spout.final_commit(
                options.final_commit_attempts, self.sleep)
            try:
                self.reporter.emit_metrics()   # the last interval's, a short run's only ones
            except Exception:  # noqa: BLE001 - a metrics sink must not hide how the run ended
                log.warning("the metrics of the last interval could not be sent",
                            exc_info=True)
            self.reporter.finish(self.clock(), self.summary.batches)
            self.spout.release()
        finally:
            if self._runner is not None:
                self._runner.close()
            if self.bolt_state is not None:
                self.bolt_state.close()
            if self._owns_runtime:
                self.runtime.close()


def runner_for(job: JobConfig, spark: SparkGetter, *, staged: bool) -> Runner:
    """The runner ``job`` calls for: the DataFrame mode for ``dataframe:``, the
    staged runner for a topology cut into stages, else single-stage tasks."""
    if job.dataframe is not None:
        return DataFrameRunner.from_config(job, spark)
    if staged:
        return StagedSparkRunner(spark, tasks=job.spark.tasks)
    return SparkRunner(spark, tasks=job.spark.tasks, deal_on=host_address(job))


def worker_job(job: JobConfig, spout: Spout, bootstrap: Tuple[str, ...],
               layout: Optional[StageLayout]) -> WorkerJob:
    """The :class:`WorkerJob` of ``job`` (built on the driver when the run starts): the
    bolts see ``spout``'s topology settings, and a task's budget follows its commit
    interval."""
    settings = job.kafka_settings
    backend = settings.backend
    return WorkerJob(
        job_id=uuid.uuid4().hex, spout=job.spout, bootstrap=bootstrap, backend=backend,
        kafka_conf=tuple(sorted(settings.for_backend(backend).items())),
        storm_conf=tuple(sorted(spout.storm_conf().items())), bolt=job.bolt,
        topology_spec=job.topology_spec, layout=layout,
        budget_s=task_budget_s(job.spark.trigger_interval_ms or 0,
                               spout.commit_interval_ms or job.spout.state_update_interval_ms))
