"""What a running pipeline reports: a status snapshot per progress interval, the
progress line drawn from it, and the end-of-run summary types.

The snapshot is a plain dict (JSON-ready): per partition where its position is
kept, emitted and committed offsets, log end, lag, pending and waiting retries,
messages processed in the interval and their rate; and the totals. The CLI prints
the progress line from it and serves it over HTTP (``run --status-port``;
:mod:`.status`). Pure: the samples and counters are passed in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

Key = Tuple[str, int]


def status_snapshot(*, managers: Mapping[Key, Any], log_ends: Mapping[Key, Optional[int]],
                    processed: Mapping[Key, int], processed_before: Mapping[Key, int],
                    interval_ms: float, batches: int, messages: int, commits: int,
                    commit_failures: int, fetch_failures: int,
                    now_s: Optional[float] = None) -> Dict[str, Any]:
    """One interval's status. ``processed``/``processed_before`` are cumulative
    messages per partition now and at the previous snapshot."""
    seconds = interval_ms / 1000.0 if interval_ms > 0 else 0.0
    parts = []
    for key, pm in managers.items():
        log_end = log_ends.get(key)
        done = pm.last_completed_offset()
        n = processed.get(key, 0) - processed_before.get(key, 0)
        parts.append({
            "topic": key[0], "partition": key[1], "location": pm.location,
            "emitted": pm.emitted_to, "committed": pm.committed_to,
            "completed": done, "log_end": log_end,
            "lag": max(0, log_end - done) if log_end is not None else None,
            "pending": pm.pending_count, "retries": len(pm.retry),
            "processed": n, "rate": round(n / seconds, 1) if seconds else 0.0})
    total = sum(p["processed"] for p in parts)
    return {
        "time": int(now_s if now_s is not None else time.time()),
        "interval_s": round(seconds, 3), "batches": batches, "messages": messages,
        "rate": round(total / seconds, 1) if seconds else 0.0,
        "lag": sum(p["lag"] for p in parts if p["lag"] is not None),
        "lag_unknown": sum(1 for p in parts if p["lag"] is None),
        "pending": sum(p["pending"] for p in parts),
        "retries": sum(p["retries"] for p in parts),
        "commits": commits, "commit_failures": commit_failures,
        "fetch_failures": fetch_failures, "partitions": parts}


def progress_line(snapshot: Mapping[str, Any]) -> str:
    """``batch N: R msg/s, lag L, pending P, retries T`` over the last interval."""
    unknown = snapshot.get("lag_unknown") or 0
    lag = f"{snapshot['lag']:,}" + (f" (+{unknown} unknown)" if unknown else "")
    return (f"batch {snapshot['batches']}: {snapshot['rate']:,.0f} msg/s, lag {lag}, "
            f"pending {snapshot['pending']:,}, retries {snapshot['retries']:,}")


STATUS_COLUMNS = ("TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "PENDING", "RETRIES",
                  "RATE")


def status_rows(snapshot: Mapping[str, Any]) -> Iterable[Dict[str, Any]]:
    """The snapshot as table rows under :data:`STATUS_COLUMNS`, then a TOTAL row."""
    for p in snapshot["partitions"]:
        yield {"TOPIC": p["topic"], "PARTITION": p["partition"], "COMMITTED": p["committed"],
               "LOG-END": p["log_end"], "LAG": p["lag"], "PENDING": p["pending"],
               "RETRIES": p["retries"], "RATE": p["rate"]}
    yield {"TOPIC": "TOTAL", "PARTITION": "all",
           "LAG": snapshot["lag"], "PENDING": snapshot["pending"],
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

    def as_dict(self) -> Dict[str, Any]:
        d = dict(self.__dict__)
        d["partitions"] = [p.__dict__ for p in self.partitions]
        return d


class Stats:
    """Messages processed, acked and failed per partition over the run."""

    def __init__(self) -> None:
        self.processed: Dict[Key, int] = {}
        self.acked: Dict[Key, int] = {}
        self.failed: Dict[Key, int] = {}

    def add(self, d: Dict[Key, int], key: Key, n: int) -> None:
        d[key] = d.get(key, 0) + n


def partition_summaries(decisions: Mapping[Key, Any], managers: Mapping[Key, Any],
                        stats: Stats) -> List[PartitionSummary]:
    """One :class:`PartitionSummary` per partition that started in the run."""
    out = []
    for key, decision in sorted(decisions.items()):
        pm = managers.get(key)
        out.append(PartitionSummary(
            topic=key[0], partition=key[1], location=pm.location if pm else "",
            decision=decision.decision, resumed_from=decision.start_offset,
            processed=stats.processed.get(key, 0), acked=stats.acked.get(key, 0),
            failed=stats.failed.get(key, 0),
            given_up=pm.total_given_up if pm else 0, lost=pm.total_lost if pm else 0,
            committed=pm.committed_to if pm else decision.start_offset))
    return out
