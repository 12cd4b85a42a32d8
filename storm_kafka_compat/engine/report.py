"""What a running pipeline reports: a status snapshot per progress interval, the
progress line drawn from it, the metric records, and the end-of-run summary types.

The snapshot is a plain dict (JSON-ready): per partition where its position is
kept, emitted and committed offsets, log end, lag, pending and waiting retries,
messages processed in the interval and their rate; and the totals. The CLI prints
the progress line from it and serves it over HTTP (``run --status-port``;
:mod:`.status`). The functions are pure: the samples and counters are passed in.

:class:`Reporter` is the driver's side of it: it reads the spout's partitions and
counts, asks Kafka for the log ranges (backing off while lookups fail), sends the
metric records with Storm's names (exported by :mod:`.prometheus`) every
``metricsTimeBucketSizeInSecs`` and publishes the snapshot every progress interval.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.engine.errors import BoltErrors
from storm_kafka_compat.errors import StormKafkaCompatError
from storm_kafka_compat.kafka.client import DriverKafka
from storm_kafka_compat.spout.metrics import (OffsetSample, kafka_offset_metric,
                                              kafka_partition_metric)
from storm_kafka_compat.spout.spout import Spout, SpoutCounts
from storm_kafka_compat.spout.state import PartitionStart, PartitionState
from storm_kafka_compat.structs import TopicPartition
from storm_kafka_compat.structs import lag as offset_lag

#: the driver loop's logger: these lines are the loop's, wherever their code lives
log = logging.getLogger("storm_kafka_compat.engine.driver")

#: receives each metric record
MetricsSink = Callable[[Dict[str, Any]], None]

#: first pause of the log-range lookups after one failed (ms); doubled after each
#: failed round up to LOOKUP_PAUSE_MAX_MS
LOOKUP_PAUSE_MS = 5_000
LOOKUP_PAUSE_MAX_MS = 60_000


def status_snapshot(*, managers: Mapping[TopicPartition, PartitionState],
                    log_ends: Mapping[TopicPartition, Optional[int]],
                    processed: Mapping[TopicPartition, int],
                    processed_before: Mapping[TopicPartition, int],
                    interval_ms: float, batches: int, messages: int, commits: int,
                    commit_failures: int, fetch_failures: int,
                    store_unreachable_since: Optional[float] = None,
                    now_s: Optional[float] = None) -> Dict[str, Any]:
    """One interval's status. ``processed``/``processed_before`` are cumulative
    messages per partition now and at the previous snapshot;
    ``store_unreachable_since`` (epoch s) is set while the offset store does not
    answer."""
    seconds = interval_ms / 1000.0 if interval_ms > 0 else 0.0
    parts: List[Dict[str, Any]] = []
    for key, pm in managers.items():
        log_end = log_ends.get(key)
        done = pm.last_completed_offset()
        n = processed.get(key, 0) - processed_before.get(key, 0)
        parts.append({
            "topic": key[0], "partition": key[1], "location": pm.location,
            "emitted": pm.emitted_to, "committed": pm.committed_to,
            "completed": done, "log_end": log_end,
            "lag": offset_lag(log_end, pm.committed_to),
            "spout_lag": offset_lag(log_end, done),
            "pending": pm.pending_count, "retries": len(pm.retry),
            "processed": n, "rate": round(n / seconds, 1) if seconds else 0.0})
    total = sum(p["processed"] for p in parts)
    return {
        "time": int(now_s if now_s is not None else time.time()),
        "interval_s": round(seconds, 3), "batches": batches, "messages": messages,
        "rate": round(total / seconds, 1) if seconds else 0.0,
        "lag": sum(p["lag"] for p in parts if p["lag"] is not None),
        "spout_lag": sum(p["spout_lag"] for p in parts if p["spout_lag"] is not None),
        "lag_unknown": sum(1 for p in parts if p["lag"] is None),
        "pending": sum(p["pending"] for p in parts),
        "retries": sum(p["retries"] for p in parts),
        "commits": commits, "commit_failures": commit_failures,
        "fetch_failures": fetch_failures,
        "store_unreachable_since": (int(store_unreachable_since)
                                    if store_unreachable_since is not None else None),
        "partitions": parts}


def with_batch_in_flight(snapshot: Optional[Mapping[str, Any]], batch: int, started_s: float,
                         plans: Iterable[Any], now_s: float) -> Dict[str, Any]:
    """``snapshot`` (or a starting one) with the batch that runs now: its number, for
    how long, and per partition where its fetch starts (``in_flight_from``) or how
    many retries it re-emits. Pending counts what came back; a batch in flight has
    not come back yet (issue 26: the status showed PENDING 0 then)."""
    out: Dict[str, Any] = dict(snapshot) if snapshot is not None else {"starting": True}
    by_key = {(p.topic, p.partition): p for p in plans}
    out["in_flight"] = {"batch": batch, "running_s": round(max(0.0, now_s - started_s), 1),
                        "partitions": len(by_key),
                        "retries": sum(len(p.reemit) for p in by_key.values() if p.retry)}
    if "partitions" in out:
        rows = []
        for row in out["partitions"]:
            plan = by_key.get((row["topic"], row["partition"]))
            row = dict(row)
            if plan is not None:
                row["in_flight"] = (f"retry {len(plan.reemit)}" if plan.retry
                                    else f"from {plan.offset}")
            rows.append(row)
        out["partitions"] = rows
    return out


def progress_line(snapshot: Mapping[str, Any]) -> str:
    """``batch N: R msg/s, lag L (spoutLag S), pending P, retries T`` over the last
    interval (N: the batches run so far, as the summary counts them; L from the
    committed offsets as ``offsets show`` computes it, S from the completed ones:
    :func:`storm_kafka_compat.structs.lag`), and for how long the offset store has not
    answered, if it does not."""
    unknown = snapshot.get("lag_unknown") or 0
    extra = [f"spoutLag {snapshot['spout_lag']:,}"] if snapshot.get(
        "spout_lag", snapshot["lag"]) != snapshot["lag"] else []
    extra += [f"+{unknown} unknown"] if unknown else []
    lag = f"{snapshot['lag']:,}" + (f" ({', '.join(extra)})" if extra else "")
    line = (f"batch {snapshot['batches']}: {snapshot['rate']:,.0f} msg/s, lag {lag}, "
            f"pending {snapshot['pending']:,}, retries {snapshot['retries']:,}")
    errors = sum(n for kinds in (snapshot.get("bolt_errors") or {}).values()
                 for n in kinds.values())
    if errors:
        line += f", bolt errors {errors:,}"
    for stuck in snapshot.get("stuck") or ():
        line += (f"; STUCK {stuck['topic']}/{stuck['partition']} at offset {stuck['offset']}"
                 f" ({stuck['batches']} batches" +
                 (f", bolt {stuck['bolt']!r} {stuck['error']})" if stuck["bolt"] else ")"))
    since = snapshot.get("store_unreachable_since")
    if since is not None:
        line += (f"; ZooKeeper unreachable for {max(0, int(snapshot['time'] - since))} s "
                 f"({snapshot['commit_failures']} commits failed; processing goes on)")
    return line


STATUS_COLUMNS = ("TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "SPOUT-LAG", "PENDING",
                  "RETRIES", "RATE", "IN-FLIGHT")


def status_rows(snapshot: Mapping[str, Any]) -> Iterable[Dict[str, Any]]:
    """The snapshot as table rows under :data:`STATUS_COLUMNS`, then a TOTAL row."""
    for p in snapshot["partitions"]:
        yield {"TOPIC": p["topic"], "PARTITION": p["partition"], "COMMITTED": p["committed"],
               "LOG-END": p["log_end"], "LAG": p["lag"], "SPOUT-LAG": p.get("spout_lag"),
               "PENDING": p["pending"],
               "RETRIES": p["retries"], "RATE": p["rate"], "IN-FLIGHT": p.get("in_flight")}
    yield {"TOPIC": "TOTAL", "PARTITION": "all",
           "LAG": snapshot["lag"], "SPOUT-LAG": snapshot.get("spout_lag"),
           "PENDING": snapshot["pending"],
           "RETRIES": snapshot["retries"], "RATE": snapshot["rate"]}


# --- the end-of-run summary ------------------------------------------------------------------

@dataclass
class PartitionSummary:
    """What one partition did over a run."""

    topic: str
    partition: int
    #: where the position is kept: a ZooKeeper path, or group:topic-partition
    location: str
    decision: str
    resumed_from: int
    processed: int = 0
    acked: int = 0
    failed: int = 0
    given_up: int = 0
    lost: int = 0
    committed: int = 0


@dataclass
class RunSummary:
    """What a run did: batches, messages, commits, failures, per partition."""

    batches: int = 0
    messages: int = 0
    elapsed_s: float = 0.0
    stopped_by: str = ""
    commits: int = 0
    commit_round_trips: int = 0
    commit_failures: int = 0
    fetch_failures: int = 0
    timeouts: int = 0
    final_commit_failed: bool = False
    partitions: List[PartitionSummary] = field(default_factory=list)
    #: bolt -> exception type -> errors over the run
    bolt_errors: Dict[str, Dict[str, int]] = field(default_factory=dict)
    #: partitions stuck when the run ended (see engine.errors.Stuck)
    stuck: List[Dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> Dict[str, Any]:
        d = dict(self.__dict__)
        d["partitions"] = [p.__dict__ for p in self.partitions]
        return d

    def finish(self, spout: Spout, managers: Mapping[TopicPartition, PartitionState], *,
               elapsed_s: float, stopped_by: str) -> None:
        """The end of the run: its length, why it stopped, the spout's counts, and one
        summary per partition that started (``managers``: those at the loop's end)."""
        self.elapsed_s = elapsed_s
        self.stopped_by = stopped_by
        counts = spout.counts
        self.partitions = partition_summaries(spout.decisions, managers, counts)
        self.commits = counts.commits
        self.commit_round_trips = counts.commit_round_trips
        self.commit_failures = counts.commit_failures
        self.fetch_failures = counts.fetch_failures
        self.timeouts = counts.timeouts


def partition_summaries(decisions: Mapping[TopicPartition, PartitionStart],
                        managers: Mapping[TopicPartition, PartitionState],
                        counts: SpoutCounts) -> List[PartitionSummary]:
    """One :class:`PartitionSummary` per partition that started in the run."""
    out = []
    for key, decision in sorted(decisions.items()):
        pm = managers.get(key)
        out.append(PartitionSummary(
            topic=key[0], partition=key[1], location=pm.location if pm else "",
            decision=decision.decision, resumed_from=decision.start_offset,
            processed=counts.processed.get(key, 0), acked=counts.acked.get(key, 0),
            failed=counts.failed.get(key, 0),
            given_up=pm.total_given_up if pm else 0, lost=pm.total_lost if pm else 0,
            committed=pm.committed_to if pm else decision.start_offset))
    return out


# --- the driver's side -----------------------------------------------------------------------

class Reporter:
    """Metrics and status of a running pipeline.

    Parameters
    ----------
    job : JobConfig
    spout : Spout
        Whose partitions and counts are reported.
    kafka : DriverKafka
        Where the log ranges are asked.
    summary : RunSummary
        The run's batches and messages so far.
    clock : callable returning int ms
    metrics : callable(dict), optional
        Receives each metric record (Storm names) every ``metricsTimeBucketSizeInSecs``.
    progress : callable(str), optional
        Receives the progress line every progress interval.
    """

    def __init__(self, job: JobConfig, spout: Spout, kafka: DriverKafka, summary: RunSummary,
                 *, clock: Callable[[], int], metrics: Optional[MetricsSink] = None,
                 progress: Optional[Callable[[str], None]] = None) -> None:
        self.job = job
        self.spout = spout
        self.kafka = kafka
        self.summary = summary
        self.clock = clock
        self.metrics = metrics
        self.progress = progress
        #: the bolts' errors and the stuck partitions
        self.errors = BoltErrors()
        #: log-range lookups for metrics and progress are not made before this time
        #: (ms, self.clock) after failures; the pause doubles with each failed round
        self._lookups_paused_until_ms = 0
        self._lookup_pause_ms = 0
        #: the last interval's status, published every progress interval
        self.status: Optional[Dict[str, Any]] = None
        self._reported_processed: Dict[TopicPartition, int] = {}
        self._last_progress_ms = 0
        self._next_metrics_ms = 0
        #: the store outage last published (its start, epoch s)
        self._published_outage: Optional[float] = None

    def start(self, now_ms: int) -> None:
        """The run starts now: the first metrics bucket, and the first progress interval
        (:meth:`start_interval` moves it past Spark's start)."""
        self._last_progress_ms = now_ms
        self._next_metrics_ms = now_ms + self.job.spout.metrics_time_bucket_size_in_secs * 1000

    def start_interval(self, now_ms: int) -> None:
        """The first progress interval starts now: rates are per interval, and Spark's
        start is not in them."""
        self._last_progress_ms = now_ms

    def tick(self, now_ms: int, progress_every_ms: float) -> None:
        """Send the metric records and publish the status when their time came, and at
        once when the offset store stops answering or answers again."""
        outage = self.spout.store_unreachable_since
        changed = outage != self._published_outage
        self._published_outage = outage
        if now_ms >= self._next_metrics_ms or changed:
            self.emit_metrics()
            self._next_metrics_ms = now_ms + self.job.spout.metrics_time_bucket_size_in_secs * 1000
        elapsed_ms = now_ms - self._last_progress_ms
        if elapsed_ms >= progress_every_ms or changed:
            snap = self.report(elapsed_ms)
            if self.progress:
                self.progress(progress_line(snap))
            self._last_progress_ms = now_ms

    def finish(self, now_ms: int, batches: int) -> None:
        """The run ended (after its final commit): one last progress line, so the last
        line printed counts the batches the summary counts and shows the lag as
        committed. A failure here must not hide how the run ended: it is logged."""
        if self.progress is None or batches == 0:
            return
        try:
            snap = self.report(max(0, now_ms - self._last_progress_ms))
        except Exception:  # noqa: BLE001 - the run's end is said by the summary
            log.warning("the last progress line could not be made", exc_info=True)
            return
        self.progress(progress_line(snap))

    def offset_samples(self) -> List[OffsetSample]:
        """Log start and end of every managed partition, for metrics and progress,
        asked in one go (two ListOffsets requests per leader: asked a partition at a
        time, 512 partitions cost the driver 2.5 s a report).

        After a lookup that fails (a leader being elected: it costs socketTimeoutMs)
        the partitions are reported unknown, and no lookup is made for a pause
        (LOOKUP_PAUSE_MS, doubled after each failed round up to LOOKUP_PAUSE_MAX_MS,
        reset by a good round), so the loop goes on fetching: measured on Kafka 0.9
        after a controller kill, the driver's kafka-python lookups kept timing out for
        minutes while the fetches went on.
        """
        managers = self.spout.managers()
        ranges: Dict[Tuple[str, int], Tuple[int, int]] = {}
        if self.clock() >= self._lookups_paused_until_ms and managers:
            try:
                ranges = self.kafka.log_ranges(list(managers))
                self._lookup_pause_ms = 0
            except StormKafkaCompatError as exc:
                self._lookup_pause_ms = min(LOOKUP_PAUSE_MAX_MS, max(
                    LOOKUP_PAUSE_MS, 2 * self._lookup_pause_ms))
                self._lookups_paused_until_ms = self.clock() + self._lookup_pause_ms
                log.info("log ranges unknown (%s); none asked for the next %d s", exc,
                         self._lookup_pause_ms // 1000)
        out = []
        for key, pm in managers.items():
            earliest, latest = ranges.get(key, (None, None))
            out.append(OffsetSample(key[0], key[1], earliest, latest, pm.emitted_to,
                                    pm.last_completed_offset(), self.job.topology.wildcard_match))
        return out

    def emit_metrics(self) -> None:
        """Send one record per metric (``{"time": epoch s, "name", "value"}``) with
        Storm's names: ``kafkaOffset`` (skipped when Storm would report null),
        ``kafkaPartition`` (reset at each report) and our ``stormKafkaCompat`` counters."""
        if self.metrics is None:
            return
        now = int(time.time())
        managers = self.spout.managers()
        wildcard = self.job.topology.wildcard_match
        offsets = self.spout.kafka_offset_metric()   # storm-kafka-client's 2.x names
        if offsets is None:
            offsets = kafka_offset_metric(self.offset_samples())
        if offsets is not None:   # Storm sends no data point for a null value
            self.metrics({"time": now, "name": "kafkaOffset", "value": offsets})
        self.metrics({"time": now, "name": "kafkaPartition", "value": kafka_partition_metric(
            [(t, p, wildcard, pm.take_metrics()) for (t, p), pm in managers.items()])})
        counts = self.spout.counts
        self.metrics({"time": now, "name": "stormKafkaCompat", "value": {
            "commitFailures": counts.commit_failures,
            "fetchFailures": counts.fetch_failures,
            "outOfRange": counts.out_of_range,
            "timeouts": counts.timeouts,
            "refreshFailures": self.spout.assignment.refresh_failures,
            "ownershipConflicts": self.spout.ownership_conflicts,
            "boltErrors": self.errors.total,
            "boltErrorsByBolt": {c: sum(k.values()) for c, k in self.errors.by_bolt().items()},
            "stuckPartitions": len(self.errors.stuck),
            # epoch s since when the offset store has not answered, 0 while it does
            "storeUnreachableSince": int(self.spout.store_unreachable_since or 0)}})

    def report(self, interval_ms: float) -> Dict[str, Any]:
        """Publish the status of the interval that just ended (:attr:`status`) and
        return it (:func:`~storm_kafka_compat.engine.report.status_snapshot`)."""
        counts = self.spout.counts
        processed = dict(counts.processed)
        snap = status_snapshot(
            managers=self.spout.managers(),
            log_ends={TopicPartition(s.topic, s.partition): s.latest
                      for s in self.offset_samples()},
            processed=processed, processed_before=self._reported_processed,
            interval_ms=interval_ms, batches=self.summary.batches,
            messages=self.summary.messages, commits=counts.commits,
            commit_failures=counts.commit_failures, fetch_failures=counts.fetch_failures,
            store_unreachable_since=self.spout.store_unreachable_since)
        self._reported_processed = processed
        snap.update(self.errors.status())
        self.status = snap
        return snap
