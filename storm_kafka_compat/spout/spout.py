"""The driver-side spout: it owns the batch. One implementation, two offset policies.

The spout keeps this task's partitions (an
:class:`~storm_kafka_compat.spout.assignment.Assignment` over the job's
discovery) and one :class:`~storm_kafka_compat.spout.state.PartitionState` per
partition, and does every chore of their state, as Storm's KafkaSpout does:

* :meth:`Spout.plan` refreshes the partitions when due, fails the tuple trees
  open longer than ``topology.message.timeout.secs``, and plans one fetch per
  partition (due retries first, then new data, capped by backpressure);
* :meth:`Spout.apply` applies what a batch brought back
  (:class:`~storm_kafka_compat.batch.BatchResult`): offsets taken, acks,
  fails, trees still open, an out-of-range answer (the spout asks Kafka for the
  log range itself) and the tasks' failures;
* :meth:`Spout.maybe_commit` commits on its own timer, and :meth:`final_commit`
  on shutdown, every partition whose offset moved.

What differs between storm-kafka's KafkaSpout and storm-kafka-client's is an
:class:`~storm_kafka_compat.spout.policy.OffsetPolicy`:

* :class:`~storm_kafka_compat.spout.legacy.ZkDocuments` -- the start-up decision
  of storm-kafka on the partition's ZooKeeper document, PartitionManager, and
  one batched write of documents per commit, with the ownership guard;
* :class:`~storm_kafka_compat.spout.client.spout.GroupCommits` -- the first-poll
  decision on the consumer group's commit, ClientPartitionManager, and one
  OffsetCommit per commit with storm-kafka-client's metadata.

A commit that fails leaves every partition's ``committed_to`` unchanged (the
next commit retries it) and is counted and reported, never dropped.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, JobConfig
from storm_kafka_compat.discovery.base import Discovery, PartitionInfo
from storm_kafka_compat.errors import (KafkaAccessError, OwnershipConflictError, PipelineError,
                                       StormKafkaCompatError)
from storm_kafka_compat.kafka.client import DriverKafka
from storm_kafka_compat.spout.assignment import Assignment
from storm_kafka_compat.spout.policy import (OUTAGE_REMINDER_MS, CommitReport, CommitTimer,
                                             OffsetPolicy)
from storm_kafka_compat.batch import (BatchPlan, BatchResult, FailureKind, FetchPlan,
                                            LateAck, OpenRoot,
                                            PartitionResult)
from storm_kafka_compat.spout.retry import Clock, monotonic_ms
from storm_kafka_compat.spout.state import PartitionStart, PartitionState
from storm_kafka_compat.structs import TopicPartition

log = logging.getLogger(__name__)

@dataclass
class SpoutCounts:
    """What the spout did over its life: commits, failures, timeouts, and per
    partition the messages processed, acked and failed."""

    commits: int = 0
    commit_round_trips: int = 0
    #: every commit that failed (periodic, final, a revoked partition's, and
    #: storm-kafka-client's AT_MOST_ONCE commits before a fetch)
    commit_failures: int = 0
    fetch_failures: int = 0
    #: of the fetch failures, OFFSET_OUT_OF_RANGE answers not followed
    #: (useStartOffsetTimeIfOffsetOutOfRange false)
    out_of_range: int = 0
    timeouts: int = 0
    processed: Dict[TopicPartition, int] = field(default_factory=dict)
    acked: Dict[TopicPartition, int] = field(default_factory=dict)
    failed: Dict[TopicPartition, int] = field(default_factory=dict)

    def add(self, result: PartitionResult, taken: int) -> None:
        key = result.key
        self.processed[key] = self.processed.get(key, 0) + taken
        self.acked[key] = self.acked.get(key, 0) + result.acked_count
        if result.failed:
            self.failed[key] = self.failed.get(key, 0) + len(result.failed)


class Spout:
    """The spout's state on the driver, and every chore of it.

    Parameters
    ----------
    job : JobConfig
    kafka : DriverKafka
        The driver's Kafka access: leaders are learned into it, and the log range
        of an out-of-range partition is asked there.
    discovery : Discovery
        Where this task's partitions come from (closed with the spout).
    policy : OffsetPolicy
    clock : callable returning int ms, optional
        For the retry managers (monotonic by default).
    task_index, total_tasks : int
        This spout task among the spout's tasks.
    """

    def __init__(self, job: JobConfig, kafka: DriverKafka, discovery: Discovery,
                 policy: OffsetPolicy, *, clock: Optional[Clock] = None,
                 task_index: int = 0, total_tasks: int = 1) -> None:
        self.job = job
        self.kafka = kafka
        self.policy = policy
        self.clock = clock or monotonic_ms
        self.decisions: Dict[TopicPartition, PartitionStart] = {}
        self.counts = SpoutCounts()
        self.timer = CommitTimer(policy.commit_interval_ms)
        #: (partition, offset) of each tuple tree still open -> when its batch came back (ms)
        self._open_trees: Dict[Tuple[TopicPartition, int], int] = {}
        #: the open trees a later batch can still ack (multi-stage): root -> its entry
        self._open_roots: Dict[int, OpenRoot] = {}
        #: partitions whose last new-data fetch brought nothing
        self._caught_up: Dict[TopicPartition, bool] = {}
        #: the batch (count of results applied) in which each partition's task last ran:
        #: plans go least recently reached first, so a partition a task's budget did not
        #: reach is read first in the next batch
        self._reached_in: Dict[TopicPartition, int] = {}
        self._applied = 0
        #: batches planned with something to fetch (a batch's number in the run; the run
        #: summary and the progress line count the same batches)
        self._planned = 0
        #: partitions whose task failed, and how many batches in a row
        self._task_errors: Dict[TopicPartition, int] = {}
        #: partitions whose out-of-range fetches were said (until one succeeds)
        self._out_of_range_said: Set[TopicPartition] = set()
        #: since when commits fail (ms, self.clock), how many, the last reminder
        self._failing_since_ms: Optional[int] = None
        self._failed_in_outage = 0
        self._last_outage_log_ms = 0
        #: called with every partition's offset after the commit, before the commit
        #: writes (the bolt tasks' state is saved with the offsets it reflects); when it
        #: raises, the commit is not made
        self.before_commit: Optional[Callable[[Dict[TopicPartition, int]], None]] = None
        #: the log start and end of the partitions a refresh is starting, asked in one go
        self._ahead: Dict[Tuple[str, int], Tuple[int, int]] = {}
        self.assignment = Assignment(discovery, manager_factory=self._new_manager,
                                     on_removed=self._removed, read_ahead=self._read_ahead,
                                     task_index=task_index, total_tasks=total_tasks)

    # --- partitions ----------------------------------------------------------------------
    def _read_ahead(self, infos: Sequence[PartitionInfo]) -> None:
        """Before partitions start: what the policy reads of them (after its own
        checks, which raise here), and their log ranges (two requests a leader), each
        asked once for all. A failed read costs nothing: each partition then asks
        alone, and its start says what failed."""
        self._ahead = {}
        if len(infos) < 2:
            self.policy.read_ahead([])
            return
        for info in infos:
            self.kafka.learn(info.leader)
        self.policy.read_ahead(infos)
        if not isinstance(self.kafka, DriverKafka):
            return                  # a client of tests that answers per partition
        try:
            self._ahead = self.kafka.log_ranges([info.key for info in infos])
        except StormKafkaCompatError as exc:
            log.debug("asking %d partitions' log ranges at once failed (%s); each asks "
                      "alone", len(infos), exc)

    def log_offset(self, info: PartitionInfo, time: int) -> int:
        """Kafka's offset of ``info`` for ``time`` (-2 the log start, -1 its end, else
        epoch ms): read ahead where it was, else asked now."""
        ahead = self._ahead.get(info.key)
        if ahead is not None and time in (EARLIEST_TIME, LATEST_TIME):
            return ahead[0] if time == EARLIEST_TIME else ahead[1]
        return self.kafka.offset_for(info.topic, info.partition, time)

    def _new_manager(self, info: PartitionInfo) -> PartitionState:
        self.kafka.learn(info.leader)
        decision, state = self.policy.start(self, info)
        self.decisions[info.key] = decision
        return state

    def _removed(self, info: PartitionInfo, state: PartitionState) -> None:
        """A partition left the assignment: what the spout kept about it goes too (a
        partition assigned again starts as a new one, as its manager does)."""
        for kept in (self._reached_in, self._caught_up, self._task_errors):
            kept.pop(info.key, None)
        self._out_of_range_said.discard(info.key)
        if self.policy.commits_on_revoke:
            self.commit_managers([state])

    def managers(self) -> Dict[TopicPartition, PartitionState]:
        """This task's partitions, in discovery order."""
        return self.assignment.managed()

    def maybe_refresh(self, now_ms: int) -> bool:
        """Refresh the partitions when due (the first call always does: a wrong topic
        or host fails there)."""
        return self.assignment.maybe_refresh(now_ms)

    def storm_conf(self) -> Dict[str, object]:
        """The topology settings the bolts' ``prepare`` sees."""
        t = self.job.topology
        conf: Dict[str, object] = {
            "topology.name": t.name, "topology.message.timeout.secs": t.message_timeout_secs,
            "topology.max.spout.pending": t.max_spout_pending,
            "kafka.topic.wildcard.match": t.wildcard_match}
        if t.tick_tuple_freq_secs is not None:
            conf["topology.tick.tuple.freq.secs"] = t.tick_tuple_freq_secs
        conf.update(self.policy.storm_conf())
        return conf

    @property
    def commit_interval_ms(self) -> int:
        """How often the spout commits: storm-kafka's ``stateUpdateIntervalMs``,
        storm-kafka-client's ``offsetCommitPeriodMs``."""
        return self.policy.commit_interval_ms

    @property
    def ownership_conflicts(self) -> int:
        """Documents another job wrote under this job's paths (ZooKeeper store only)."""
        return self.policy.conflicts

    def kafka_offset_metric(self) -> Optional[Dict[str, int]]:
        """The policy's ``kafkaOffset`` data point; None means storm-kafka's, which
        the driver computes from its own log-range samples."""
        return self.policy.kafka_offset_metric(self.managers())

    # --- the batch -------------------------------------------------------------------------
    def plan(self, now_ms: int, max_messages: int) -> BatchPlan:
        """The next batch: refresh the partitions when due, fail the trees that timed
        out, then one fetch per partition (due retries first, else new data from the
        emitted position), at most ``max_messages`` new messages each and within
        ``topology.max.spout.pending``."""
        self.maybe_refresh(now_ms)
        self.expire_open_trees(now_ms)
        managers = self.managers()
        if not managers:
            return BatchPlan()
        cap = max_messages
        spout_pending = self.job.topology.max_spout_pending
        if spout_pending is not None:
            room = spout_pending - sum(pm.pending_count for pm in managers.values())
            if room <= 0:
                return BatchPlan()
            cap = min(cap, max(1, math.ceil(room / len(managers))))
        plans: List[FetchPlan] = []
        for key, pm in managers.items():
            plan = pm.plan_fetch(max_messages=cap)
            if plan is None:
                continue
            if not plan.retry and self._caught_up.get(key, False):
                # its last fetch brought nothing: the task asks the log end before it
                # fetches, so a partition still at its end costs a round trip, not a
                # fetch's wait at the end (~0.2 s) out of its task's budget
                plan = replace(plan, idle=True)
            plans.append(plan)
        if not plans:
            return BatchPlan()
        plans.sort(key=lambda p: self._reached_in.get(p.key, -1))     # stable
        self._planned += 1
        return BatchPlan(tuple(plans), self._planned)

    def apply(self, result: BatchResult, now_ms: int, *, max_task_errors: int) -> int:
        """Apply a batch's result to the partitions; return the messages taken.

        ``now_ms`` is when the result came back: open tuple trees time out
        ``topology.message.timeout.secs`` after it, and until then their offsets stay
        pending (they hold the commit back). A fetch failure refreshes the
        partitions. A partition whose task failed ``max_task_errors`` batches in a row
        ends the run (:class:`~storm_kafka_compat.errors.PipelineError`).
        """
        managers = self.managers()
        taken = 0
        refresh = False
        self._applied += 1
        for r in result:
            pm = managers.get(r.key)
            if not r.reached:     # left for the next batch: its state and last fetch stand
                continue
            self._reached_in[r.key] = self._applied
            if pm is None:
                log.info("%s is no longer assigned; dropping its batch result", r.key)
            elif r.failure is not None and r.failure.kind.task_error:
                self._task_failed(r, max_task_errors)
            else:
                self._task_errors.pop(r.key, None)
                if r.failure is None:
                    taken += self._settle(pm, r, now_ms)
                else:
                    refresh |= self._fetch_failed(pm, r)
        if refresh:
            self.assignment.on_fetch_failure()
        self._open_roots.update(result.open_roots)
        if result.late_acks:
            self.late_acks(result.late_acks)
        return taken

    def reserve_batch(self) -> int:
        """A batch number for a batch without fetches (ticks alone)."""
        self._planned += 1
        return self._planned

    def late_acks(self, acks: Mapping[int, LateAck]) -> int:
        """Fold acks and fails that bolts sent in a later batch into the open trees they
        belong to (a windowed bolt acks a tuple when it leaves the window): a tree
        whose XOR reaches 0 acks its offset, a failed one fails it. An ack for a tree the
        spout no longer holds (timed out, or of an earlier run) is ignored, as in Storm.
        Returns the trees completed or failed."""
        managers = self.managers()
        done = 0
        for root, ack in acks.items():
            held = self._open_roots.get(root)
            if held is None:
                continue
            xor = held.xor ^ ack.xor
            if not ack.failed and xor:
                self._open_roots[root] = held._replace(xor=xor)
                continue
            del self._open_roots[root]
            if self._open_trees.pop((held.partition, held.offset), None) is None:
                continue
            done += 1
            pm = managers.get(held.partition)
            if pm is None:
                continue
            if ack.failed:
                pm.fail(held.offset)
            else:
                pm.ack_ranges([(held.offset, held.offset + 1)])
        return done

    def _task_failed(self, r: PartitionResult, max_task_errors: int) -> None:
        assert r.failure is not None
        n = self._task_errors[r.key] = self._task_errors.get(r.key, 0) + 1
        log.error("task for %s failed (%d in a row): %s", r.key, n, r.failure.message)
        if r.failure.traceback:
            log.info("the task's traceback (%s):\n%s", r.key, r.failure.traceback.rstrip())
        if n >= max_task_errors:
            raise PipelineError(f"the task for {r.key} failed {n} batches in a row: "
                                f"{r.failure.message}; {r.failure.kind.hint}")

    def _fetch_failed(self, pm: PartitionState, r: PartitionResult) -> bool:
        """An out-of-range answer or a failed fetch; True when the partitions should
        be refreshed."""
        assert r.failure is not None
        if r.failure.kind is FailureKind.OUT_OF_RANGE:
            if not self.job.spout.use_start_offset_time_if_offset_out_of_range:
                self.counts.fetch_failures += 1
                self.counts.out_of_range += 1
                if r.key not in self._out_of_range_said:
                    # once per partition while it stays out of range: every batch says
                    # it again otherwise (the outOfRange metric counts them)
                    self._out_of_range_said.add(r.key)
                    log.warning("%s: %s; useStartOffsetTimeIfOffsetOutOfRange is false, so "
                                "this is a fetch failure, every batch until the offset is "
                                "moved (`offsets reset`; the outOfRange metric counts them)",
                                r.key, r.failure.message)
                else:
                    log.info("%s: still out of range: %s", r.key, r.failure.message)
                return True
            try:
                earliest = self.kafka.offset_for(r.key.topic, r.key.partition, EARLIEST_TIME)
                latest = self.kafka.offset_for(r.key.topic, r.key.partition, LATEST_TIME)
            except KafkaAccessError as exc:
                # the leader is moving (an unclean election truncated the log): the
                # partition stays where it is and the next batch asks again
                log.warning("%s: out of range, and its log range cannot be asked (%s); "
                            "refreshing partitions", r.key, exc)
                self.counts.fetch_failures += 1
                return True
            pm.out_of_range(r.plan, earliest, latest)
            return False
        log.warning("fetch failed for %s: %s; refreshing partitions", r.key, r.failure.message)
        self.counts.fetch_failures += 1
        return True

    def _settle(self, pm: PartitionState, r: PartitionResult, now_ms: int) -> int:
        """Apply a task's outcome: the offsets taken, acks, fails, open trees."""
        self._out_of_range_said.discard(r.key)
        pm.fetched(r.plan, r.taken, scanned_to=r.scanned_to, latency_ms=r.latency_ms)
        if not r.taken and not r.plan.retry:       # nothing new: the common idle case
            self._caught_up[r.key] = True
            return 0
        if r.acked:
            pm.ack_ranges(r.acked)
        for offset in r.failed:
            pm.fail(offset)
        for offset in r.open_trees:
            self._open_trees[(r.key, offset)] = now_ms
        n = r.taken_count
        self.counts.add(r, n)
        if not r.plan.retry:
            self._caught_up[r.key] = n == 0
        return n

    def expire_open_trees(self, now_ms: int) -> int:
        """Fail tuple trees open longer than ``topology.message.timeout.secs``."""
        timeout_s = self.job.topology.message_timeout_secs
        expired = [k for k, t in self._open_trees.items() if now_ms - t >= timeout_s * 1000]
        managers = self.managers()
        if expired:
            gone = set(expired)
            self._open_roots = {root: o for root, o in self._open_roots.items()
                                if (o.partition, o.offset) not in gone}
        for key, offset in expired:
            del self._open_trees[(key, offset)]
            pm = managers.get(key)
            if pm is not None:
                log.info("%s offset %d timed out after %d s; failing it", key, offset, timeout_s)
                pm.fail(offset)
        self.counts.timeouts += len(expired)
        return len(expired)

    def caught_up(self) -> bool:
        """Every partition has nothing pending, no tree open, and its last fetch of new
        data brought nothing."""
        managers = self.managers()
        return bool(managers) and not self._open_trees and all(
            self._caught_up.get(k, False) and not pm.has_work() for k, pm in managers.items())

    # --- commits ---------------------------------------------------------------------------
    def maybe_commit(self, now_ms: int) -> Optional[CommitReport]:
        """Commit when the commit timer says so; the report, or None when not due. The
        store is not waited for long (the next commit is due one interval later)."""
        if not self.timer.due(now_ms):
            return None
        report = self.commit(patient=False)
        self.timer.committed(now_ms)
        return report

    @property
    def store_unreachable_since(self) -> Optional[float]:
        """Since when (epoch s) the offset store has not answered; None while it does."""
        return self.policy.unreachable_since

    def commit_managers(self, managers: List[PartitionState], *,
                        patient: bool = True) -> CommitReport:
        """Store every partition whose offset changed, in as few round trips as the
        store allows. While the store stays away, the first failure is an error and
        the next ones are summed up once a minute."""
        due = [(pm, off) for pm in managers for off in [pm.commit_offset()] if off is not None]
        if not due:
            return CommitReport()
        try:
            trips = self.policy.write(due, patient=patient)
        except OwnershipConflictError:
            self.counts.commit_failures += 1
            raise                               # another writer: the run stops
        except StormKafkaCompatError as exc:
            self.counts.commit_failures += 1
            self._commit_failed(len(due), exc)
            return CommitReport(error=str(exc))
        if self._failing_since_ms is not None:
            log.warning("commit to %s succeeded again after %.0f s (%d commits failed); "
                        "%d partitions written", self.policy.store_name,
                        (self.clock() - self._failing_since_ms) / 1000.0,
                        self._failed_in_outage, len(due))
            self._failing_since_ms = None
        for pm, off in due:
            pm.mark_committed(off)
        self.counts.commits += len(due)
        self.counts.commit_round_trips += trips
        return CommitReport(written=len(due), round_trips=trips)

    def _commit_failed(self, partitions: int, exc: StormKafkaCompatError) -> None:
        now = self.clock()
        pending = sum(pm.pending_count for pm in self.managers().values())
        if self._failing_since_ms is None:
            self._failing_since_ms = self._last_outage_log_ms = now
            self._failed_in_outage = 1
            log.error("commit of %d partitions to %s failed: %s; keeping the state in memory "
                      "and retrying at the next commit (processing goes on; %d pending)",
                      partitions, self.policy.store_name, exc, pending)
            return
        self._failed_in_outage += 1
        if now - self._last_outage_log_ms >= OUTAGE_REMINDER_MS:
            self._last_outage_log_ms = now
            log.warning("commits to %s still fail after %.0f s (%d failed): %s; processing goes "
                        "on, %d pending", self.policy.store_name,
                        (now - self._failing_since_ms) / 1000.0, self._failed_in_outage, exc,
                        pending)
        else:
            log.info("commit of %d partitions to %s failed again: %s", partitions,
                     self.policy.store_name, exc)

    def offsets_after_commit(self) -> Dict[TopicPartition, int]:
        """Every partition's stored offset once a commit now is made (the next offset
        to process; at start-up, where each partition starts)."""
        out = {}
        for key, pm in self.managers().items():
            off = pm.commit_offset()
            out[key] = pm.committed_to if off is None else off
        return out

    def commit(self, *, patient: bool = True) -> CommitReport:
        managers = list(self.managers().values())
        moving = any(pm.commit_offset() is not None for pm in managers)
        if self.before_commit is not None:
            # called when no offset moves too: the bolt tasks' state may have (a window
            # fired while its tuples hold the offsets back); it decides what to save
            try:
                self.before_commit(self.offsets_after_commit())
            except StormKafkaCompatError as exc:
                self.counts.commit_failures += 1
                self._commit_failed(len(managers), exc)
                return CommitReport(error=str(exc))
        if not moving and self.before_commit is not None:
            return CommitReport()
        return self.commit_managers(managers, patient=patient)

    def final_commit(self, attempts: int, sleep: Callable[[float], None]) -> bool:
        """Commit on shutdown, retrying a failed write ``attempts`` times
        (``storm.zookeeper.retry.interval`` apart); False when it still failed (the
        uncommitted progress is processed again on the next start)."""
        interval_s = self.job.topology.zookeeper_retry_interval_ms / 1000.0
        for attempt in range(1, attempts + 1):
            if not self.commit().error:
                return True
            if attempt < attempts:
                sleep(interval_s)
        log.error("final commit failed %d times; the uncommitted progress will be processed "
                  "again on the next start (at-least-once is kept)", attempts)
        return False

    def release(self) -> None:
        """Release the assignment and the policy without writing (the caller committed)."""
        try:
            self.assignment.release()
        finally:
            self.policy.close()

    def close(self) -> CommitReport:
        """Final commit, then release."""
        report = self.commit()
        self.release()
        return report
