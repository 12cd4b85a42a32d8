"""The PySpark driver loop.

Each batch the driver plans one fetch per partition (due retries first, else new
data from the emitted position, capped by backpressure), runs the fetches as
Spark tasks that read Kafka, apply the scheme and run the bolts on the
executors, and applies what comes back (offsets taken, acks, fails, tuple trees
still open, out-of-range and fetch errors) to the PartitionManagers. It commits
to ZooKeeper every ``stateUpdateIntervalMs`` and on shutdown. Its metric records
and status come from :class:`~storm_kafka_compat.engine.report.Reporting`.

A topology whose groupings cross partitions (fields, global, all) runs as
several Spark stages (:mod:`storm_kafka_compat.engine.stages`); simple bolts
and shuffle-only topologies run in the fetching task.

Tuple trees still open when a batch ends stay pending (they hold the commit
back) and fail once ``topology.message.timeout.secs`` has passed since their
batch started; the failed offset is then retried per the retry settings.

SIGTERM or SIGINT stops planning; the batch in flight is settled, a final commit
is made and :meth:`Pipeline.run` returns normally: nothing acknowledged is lost
and nothing unacknowledged is committed.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, JobConfig
from storm_kafka_compat.errors import KafkaAccessError, PipelineError
from storm_kafka_compat.spout.manager import CommitTimer, FetchPlan
from storm_kafka_compat.engine.executor import TaskResult, TaskSpec, run_tasks, task_budget_s
from storm_kafka_compat.engine.pacing import BatchPacer
from storm_kafka_compat.engine.report import (Reporting, RunSummary, Stats,
                                              partition_summaries, progress_line)
from storm_kafka_compat.engine.signals import install_jvm_stop_hook, install_stop_handlers
from storm_kafka_compat.engine.stages import (InProcess, StageJob, build_stage_job, needs_stages,
                                              run_stages_spark)
from storm_kafka_compat.runtime import Runtime

log = logging.getLogger(__name__)

Key = Tuple[str, int]


def _job_error(exc: BaseException) -> str:
    """The telling line of a failed Spark job (the Python error of the worker
    when there is one, not py4j's first line)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    python = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception)\b:", line)
              and not line.startswith(("py4j.", "org.apache", "java."))]
    if python:
        return python[-1]
    return lines[0] if lines else repr(exc)


#: new messages per partition per batch. Measured with `bench` (1M x 100 B, 4
#: partitions, local[2], Kafka 0.9): 10,000 gave 26 batches and 222k msg/s with the
#: confluent backend, 100,000 gave 4 batches and 454k msg/s (each batch is a Spark
#: job and a fresh wait for data); the task's fill budget keeps a batch short
DEFAULT_MAX_MESSAGES_PER_PARTITION = 100_000


@dataclass
class RunOptions:
    """How long and how fast :meth:`Pipeline.run` goes."""

    until_caught_up: bool = False
    max_batches: Optional[int] = None
    #: new messages fetched per partition per batch (the task's time budget bounds
    #: it too: see executor.FILL_BUDGET_MS)
    max_messages_per_partition: int = DEFAULT_MAX_MESSAGES_PER_PARTITION
    idle_sleep_ms: int = 200
    progress_every_s: float = 5.0
    #: give up on a partition whose task keeps failing this many batches in a row
    max_consecutive_task_errors: int = 3
    #: attempts of the commit made on shutdown
    final_commit_attempts: int = 5


class Pipeline(Reporting):
    """Storm's KafkaSpout and bolts on Spark.

    Parameters
    ----------
    job : JobConfig
    runtime : Runtime, optional
        The job's offset store, Kafka access, discovery and spout; built from
        ``job`` and ``parts`` when omitted (and then closed when :meth:`run` ends).
    spark : SparkSession, optional
        Created from ``job.spark`` when omitted.
    executor : callable(list of TaskSpec) -> list of TaskResult, optional
        Runs one batch's tasks instead of Spark: the DataFrame mode,
        :class:`~storm_kafka_compat.engine.stages.InProcess` (no Spark at all).
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
        None (default) when the executor cannot stop a batch by itself (several
        Spark stages, or an executor with ``whole_batches`` true, as the DataFrame
        mode's), True always, False never.
    task_index, total_tasks : int
        This spout task among the spout's tasks (each driver runs one).
    **parts
        ``store``, ``kafka``, ``kafka_factory``, ``groups``, ``registry_reader``,
        ``topology_id`` for the :class:`~storm_kafka_compat.runtime.Runtime`.
    """

    def __init__(self, job: JobConfig, *, runtime: Optional[Runtime] = None, spark: Any = None,
                 executor: Optional[Callable[[List[TaskSpec]], List[TaskResult]]] = None,
                 clock: Optional[Callable[[], int]] = None,
                 sleep: Callable[[float], None] = time.sleep,
                 progress: Optional[Callable[[str], None]] = None,
                 metrics: Optional[Callable[[Dict[str, Any]], None]] = None,
                 stages: Optional[bool] = None, task_index: int = 0, total_tasks: int = 1,
                 pace: Optional[bool] = None, **parts: Any) -> None:
        if runtime is not None and parts:
            raise TypeError(f"give either a runtime or its parts ({', '.join(parts)}), not both")
        self.job = job
        self._spark = spark
        self.clock = clock or (lambda: int(time.monotonic() * 1000))
        self.sleep = sleep
        self.progress = progress
        self.metrics = metrics
        self._owns_runtime = runtime is None
        self.runtime = runtime if runtime is not None else Runtime(job, **parts)
        self.kafka = self.runtime.kafka
        self.topology_id = self.runtime.topology_id
        self.spout = self.runtime.spout(clock=self.clock, task_index=task_index,
                                        total_tasks=total_tasks)
        self._executor = executor
        self._stages_pref = stages
        self._pace_pref = pace
        self._pacer: Optional[BatchPacer] = None
        self._pacer_known = False
        self._stage_job: Any = None
        self._stage_job_known = False
        self.timer = CommitTimer(self.spout.commit_interval_ms)
        self._stop = threading.Event()
        self._stop_reason = ""
        #: SIGTERM/SIGINT this process took (engine.signals: the second stops at once)
        self.signals_received = 0
        self._open_trees: Dict[Tuple[Key, int], int] = {}   # (key, offset) -> emitted at ms
        self._caught_up: Dict[Key, bool] = {}
        self._task_errors: Dict[Key, int] = {}
        self._stats = Stats()
        self.summary = RunSummary()
        #: the managers when the loop ended (their figures go into the summary)
        self._last_managers: Dict[Key, Any] = {}
        self._init_reporting()   # metrics and status: engine.report.Reporting

    # --- control ---------------------------------------------------------------------
    def stop(self, reason: str = "stop requested") -> None:
        """Ask the loop to stop after the batch in flight."""
        self._stop_reason = reason
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """A stop was asked for; the loop ends after the batch in flight."""
        return self._stop.is_set()

    def force_stop(self) -> None:
        """Stop now: cancel the Spark jobs of the batch in flight (its tasks' results
        are dropped, nothing of it is acknowledged), then commit and return."""
        self._stop_reason = self._stop_reason or "forced stop"
        self._stop.set()
        if self._spark is not None and not isinstance(self._executor, InProcess):
            sc = self._spark.sparkContext
            # off the signal handler: the main thread is inside a py4j call
            threading.Thread(target=sc.cancelAllJobs, name="cancel-batch", daemon=True).start()

    @property
    def spark(self) -> Any:
        if self._spark is None:
            from storm_kafka_compat.engine.spark import get_spark
            self._spark = get_spark(self.job.spark)
        return self._spark

    # --- one batch -------------------------------------------------------------------------
    def plan(self, options: RunOptions) -> List[TaskSpec]:
        managers = self.spout.managers()
        if not managers:
            return []
        cap = options.max_messages_per_partition
        pacer = self.pacer()
        if pacer is not None:
            cap = pacer.cap(len(managers), cap)
        spout_pending = self.job.topology.max_spout_pending
        if spout_pending is not None:
            room = spout_pending - sum(pm.pending_count for pm in managers.values())
            if room <= 0:
                return []
            cap = min(cap, max(1, math.ceil(room / len(managers))))
        bootstrap = self.kafka.bootstrap
        settings = self.job.kafka_settings
        backend = settings.backend
        kafka_conf = tuple(sorted(settings.for_backend(backend).items()))
        storm_conf = tuple(sorted(self.spout.storm_conf().items()))
        trigger_ms = self.job.spark.trigger_interval_ms or 0
        specs = []
        for pm in managers.values():
            plan = pm.plan_fetch(max_messages=cap)
            if plan is not None:
                specs.append(TaskSpec(plan, bootstrap, self.job.spout, self.job.bolt,
                                      self.job.topology_spec, kafka_conf, storm_conf, backend,
                                      self.spout.commit_interval_ms, trigger_ms))
        return specs

    def pacer(self) -> Optional[BatchPacer]:
        """The batch pacer when batches are sized by time on the driver, else None."""
        if not self._pacer_known:
            self._pacer_known = True
            pace = self._pace_pref
            if pace is None:
                pace = self.stage_job() is not None or bool(
                    getattr(self._executor, "whole_batches", False))
            if pace:
                budget_ms = task_budget_s(TaskSpec(
                    FetchPlan.at(0), (), self.job.spout,
                    commit_interval_ms=self.spout.commit_interval_ms,
                    trigger_interval_ms=self.job.spark.trigger_interval_ms or 0)) * 1000.0
                self._pacer = BatchPacer(budget_ms)
                log.info("batches are sized to last about %d ms (the task budget)", budget_ms)
        return self._pacer

    def stage_job(self) -> Optional[StageJob]:
        """The multi-stage plan of the bolt topology, or None for the single-stage path."""
        if not self._stage_job_known:
            self._stage_job_known = True
            spec = self.job.topology_spec
            if spec is not None and self._stages_pref is not False:
                from storm_kafka_compat.topology.builder import from_spec
                topology = from_spec(spec)
                if self._stages_pref or needs_stages(topology):
                    self._stage_job = build_stage_job(spec, self.job.spout.scheme,
                                                      self.spout.storm_conf(), topology)
                    log.info("the topology runs as %d Spark stages: %s",
                             len(self._stage_job.layout.stages),
                             " | ".join(",".join(s) or "-" for s in
                                        self._stage_job.layout.stages))
        return self._stage_job

    def execute(self, specs: List[TaskSpec]) -> List[TaskResult]:
        """Run one batch's tasks; a failed Spark job becomes a ``bolt_error``
        result for every task (counted towards ``max_consecutive_task_errors``)."""
        if not specs:
            return []
        if isinstance(self._executor, InProcess):
            self._executor.kafka = self.kafka.get()
            self._executor.stage_job = self.stage_job()
        if self._executor is not None:
            return self._executor(specs)
        stage_job = self.stage_job()
        sc = self.spark.sparkContext
        slices = min(len(specs), self.job.spark.tasks or sc.defaultParallelism)
        try:
            if stage_job is not None:
                return run_stages_spark(sc, specs, stage_job, slices)
            return sc.parallelize(specs, slices).mapPartitions(run_tasks).collect()
        except Exception as exc:  # Py4JJavaError: a task died (worker crash, import error)
            message = _job_error(exc)
            log.error("the Spark job of this batch failed: %s", message)
            out = []
            for s in specs:
                r = TaskResult(s.plan.topic, s.plan.partition, s.plan)
                r.error, r.error_message = "bolt_error", f"Spark job failed: {message}"
                out.append(r)
            return out

    def apply(self, results: List[TaskResult], now_ms: int) -> int:
        """Apply task results to the managers; returns messages taken.

        ``now_ms`` is when the results came back: open tuple trees
        (``TaskResult.unacked``) time out ``topology.message.timeout.secs`` after it.
        Their offsets stay pending until then, so they hold the commit back.
        """
        managers = self.spout.managers()
        taken_total = 0
        refresh = False
        task_errors = self._task_errors
        stats = self._stats
        processed, acked, failed = stats.processed, stats.acked, stats.failed
        for r in results:
            key = (r.topic, r.partition)
            pm = managers.get(key)
            if pm is None:
                log.info("%s/%d is no longer assigned; dropping its batch result", *key)
                continue
            if r.error in ("bolt_error", "client_error"):
                n = task_errors[key] = task_errors.get(key, 0) + 1
                log.error("task for %s/%d failed (%d in a row): %s", r.topic, r.partition, n,
                          r.error_message)
                if r.error_traceback:
                    log.info("the task's traceback (%s/%d):\n%s", r.topic, r.partition,
                             r.error_traceback.rstrip())
                if n >= self._max_task_errors:
                    hint = ("fix the bolt or scheme (is its module importable on the "
                            "executors?)" if r.error == "bolt_error" else
                            "this is not your bolt: the Kafka client failed; check the kafka "
                            "settings (api_version for brokers before 0.10) and report the "
                            "traceback that -v shows")
                    raise PipelineError(
                        f"the task for {r.topic}/{r.partition} failed {n} batches in a row: "
                        f"{r.error_message}; {hint}")
                continue
            if task_errors:
                task_errors.pop(key, None)
            if r.error == "out_of_range":
                if self.job.spout.use_start_offset_time_if_offset_out_of_range:
                    try:
                        earliest = self.kafka.offset_for(r.topic, r.partition, EARLIEST_TIME)
                        latest = self.kafka.offset_for(r.topic, r.partition, LATEST_TIME)
                    except KafkaAccessError as exc:
                        # the leader is moving (an unclean election truncated the log):
                        # the partition stays where it is and the next batch asks again
                        log.warning("%s/%d: out of range, and its log range cannot be asked "
                                    "(%s); refreshing partitions", r.topic, r.partition, exc)
                        self.summary.fetch_failures += 1
                        refresh = True
                        continue
                    pm.out_of_range(r.plan, earliest, latest)
                else:
                    log.warning("%s/%d: %s; useStartOffsetTimeIfOffsetOutOfRange is false, so "
                                "this is a fetch failure", r.topic, r.partition, r.error_message)
                    self.summary.fetch_failures += 1
                    refresh = True
                continue
            if r.error == "failed_fetch":
                log.warning("fetch failed for %s/%d: %s; refreshing partitions", r.topic,
                            r.partition, r.error_message)
                self.summary.fetch_failures += 1
                refresh = True
                continue
            taken = r.taken
            pm.fetched(r.plan, taken, scanned_to=r.scanned_to, latency_ms=r.latency_ms)
            if not taken and not r.plan.retry:       # nothing new: the common idle case
                self._caught_up[key] = True
                continue
            if r.acked:
                pm.ack_ranges(r.acked)
            for offset in r.failed:
                pm.fail(offset)
            for offset in r.unacked:
                self._open_trees[(key, offset)] = now_ms
            n = sum(e - s for s, e in taken)
            taken_total += n
            processed[key] = processed.get(key, 0) + n
            acked[key] = acked.get(key, 0) + sum(e - s for s, e in r.acked)
            if r.failed:
                failed[key] = failed.get(key, 0) + len(r.failed)
            if not r.plan.retry:
                self._caught_up[key] = n == 0
        if refresh:
            self.spout.assignment.on_fetch_failure()
        return taken_total

    def expire_open_trees(self, now_ms: int) -> int:
        """Fail tuple trees open longer than ``topology.message.timeout.secs``."""
        timeout_ms = self.job.topology.message_timeout_secs * 1000
        expired = [k for k, t in self._open_trees.items() if now_ms - t >= timeout_ms]
        managers = self.spout.managers()
        for key, offset in expired:
            del self._open_trees[(key, offset)]
            pm = managers.get(key)
            if pm is not None:
                log.info("%s/%d offset %d timed out after %d s; failing it", key[0], key[1],
                         offset, self.job.topology.message_timeout_secs)
                pm.fail(offset)
        self.summary.timeouts += len(expired)
        return len(expired)

    def maybe_commit(self, now_ms: int, force: bool = False) -> None:
        if not (force or self.timer.due(now_ms)):
            return
        report = self.spout.commit()
        self.timer.committed(now_ms)
        if report.error:
            self.summary.commit_failures += 1
        elif report.written:
            self.summary.commits += report.written
            self.summary.commit_round_trips += report.round_trips

    def caught_up(self) -> bool:
        managers = self.spout.managers()
        return bool(managers) and not self._open_trees and all(
            self._caught_up.get(k, False) and not pm.has_work() for k, pm in managers.items())

    # --- the loop -----------------------------------------------------------------------------
    def run(self, options: Optional[RunOptions] = None) -> RunSummary:
        """Run until stopped, caught up (``until_caught_up``) or ``max_batches``."""
        options = options or RunOptions()
        self._max_task_errors = options.max_consecutive_task_errors
        restore = install_stop_handlers(self)
        loop_ended: Callable[[], None] = lambda: None
        started = time.monotonic()
        last_progress_ms = self.clock()
        metrics_period_ms = self.job.spout.metrics_time_bucket_size_in_secs * 1000
        next_metrics_ms = self.clock() + metrics_period_ms
        try:
            # reach ZooKeeper and Kafka first: a wrong host fails in seconds, not after
            # Spark's start-up
            self.spout.maybe_refresh(self.clock())
            if not isinstance(self._executor, InProcess):
                self.spark   # SparkContext installs its own SIGINT handler: take ours back
                install_stop_handlers(self)   # `restore` still restores the originals
                # under spark-submit a SIGTERM or Ctrl-C to the JVM stops as gracefully
                loop_ended = install_jvm_stop_hook(self, self.spark.sparkContext)
            # rates are per progress interval, from here: Spark's start is not in them
            last_progress_ms = self.clock()
            while not self._stop.is_set():
                now = self.clock()
                self.spout.maybe_refresh(now)
                self.expire_open_trees(now)
                specs = self.plan(options)
                started_ms = self.clock()
                results = self.execute(specs)
                # open trees date from when the results came back, after the bolts
                # ran: at least topology.message.timeout.secs after the emit
                taken = self.apply(results, self.clock())
                if self._pacer is not None:
                    self._pacer.observe(taken, self.clock() - started_ms)
                if specs:
                    log.debug("batch %d: %d tasks (%d retries), %d messages in %d ms",
                              self.summary.batches + 1, len(specs),
                              sum(1 for s in specs if s.plan.retry), taken, self.clock() - now)
                self.summary.messages += taken
                if specs:
                    self.summary.batches += 1
                now = self.clock()
                self.maybe_commit(now)
                if now >= next_metrics_ms:
                    self.emit_metrics()
                    next_metrics_ms = now + metrics_period_ms
                elapsed_ms = now - last_progress_ms
                if elapsed_ms >= options.progress_every_s * 1000:
                    snap = self.report(elapsed_ms)
                    if self.progress:
                        self.progress(progress_line(snap))
                    last_progress_ms = now
                if options.until_caught_up and self.caught_up():
                    self._stop_reason = "caught up"
                    break
                if options.max_batches is not None and self.summary.batches >= options.max_batches:
                    self._stop_reason = f"{options.max_batches} batches"
                    break
                if taken == 0:
                    self.sleep(options.idle_sleep_ms / 1000.0)
        finally:
            self._last_managers = self.spout.managers()
            try:
                self._final_commit(options)
            finally:
                loop_ended()
                restore()
                if self._owns_runtime:
                    self.runtime.close()
        self.summary.elapsed_s = time.monotonic() - started
        self.summary.stopped_by = self._stop_reason or "stopped"
        self.summary.partitions = partition_summaries(self.spout.decisions, self._last_managers,
                                                      self._stats)
        return self.summary

    def _final_commit(self, options: RunOptions) -> None:
        """Commit on shutdown, retrying a failed write ``final_commit_attempts``
        times; what still fails is reported (and replayed on the next start)."""
        interval_s = self.job.topology.zookeeper_retry_interval_ms / 1000.0
        for attempt in range(1, options.final_commit_attempts + 1):
            report = self.spout.commit()
            if report.written:
                self.summary.commits += report.written
                self.summary.commit_round_trips += report.round_trips
            if not report.error:
                break
            self.summary.commit_failures += 1
            if attempt < options.final_commit_attempts:
                self.sleep(interval_s)
        else:
            self.summary.final_commit_failed = True
            log.error("final commit failed %d times; the uncommitted progress will be "
                      "processed again on the next start (at-least-once is kept)",
                      options.final_commit_attempts)
        try:
            self.emit_metrics()      # the last interval's figures, and a short run's only ones
        except Exception:  # noqa: BLE001 - a metrics sink must not hide how the run ended
            log.warning("the metrics of the last interval could not be sent", exc_info=True)
        self.spout.release()
