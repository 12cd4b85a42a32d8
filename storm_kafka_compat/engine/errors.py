"""The bolts' failures as the driver shows them: on the console, in the status, in the
metrics and in the run's summary.

A bolt or scheme that raises fails its input (the message is retried per the retry
settings); the worker records the exception as a value
(:class:`~storm_kafka_compat.structs.BoltError`) and the batch's result brings it back.
:class:`BoltErrors` logs the first error of each (bolt, exception type) at WARNING with
its traceback, then at most one line per kind every ``REMINDER_MS`` with the count
since, and keeps the totals. A partition whose batches keep failing offsets and acking
none is *stuck*: it is named with the offset, the bolt and the error, once when it
becomes stuck and once when it moves again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from storm_kafka_compat.batch import BatchResult
from storm_kafka_compat.structs import BoltError, TopicPartition

#: the driver loop's logger: these lines are the loop's
log = logging.getLogger("storm_kafka_compat.engine.driver")

#: after the first error of a kind, one line per kind at most this often (ms)
REMINDER_MS = 60_000
#: batches in a row that failed offsets of a partition and acked none: stuck
STUCK_BATCHES = 3


@dataclass
class Stuck:
    """A partition failing the same offsets batch after batch."""

    partition: TopicPartition
    offset: int
    batches: int
    error: Optional[BoltError]

    def describe(self) -> str:
        what = (f"bolt {self.error.component!r} {self.error.kind}: {self.error.message}"
                if self.error is not None else "tuple trees failed without a bolt error "
                "(an explicit fail or a timeout)")
        return (f"{self.partition} is stuck at offset {self.offset}: its offsets failed in "
                f"{self.batches} batches in a row and none was acked ({what})")

    def as_dict(self) -> Dict[str, Any]:
        return {"topic": self.partition.topic, "partition": self.partition.partition,
                "offset": self.offset, "batches": self.batches,
                "bolt": self.error.component if self.error else None,
                "error": f"{self.error.kind}: {self.error.message}" if self.error else None}


class BoltErrors:
    """The run's bolt and scheme errors, and its stuck partitions (driver side)."""

    def __init__(self) -> None:
        #: (component, kind) -> errors so far
        self.totals: Dict[Tuple[str, str], int] = {}
        self._said_ms: Dict[Tuple[str, str], int] = {}
        self._unsaid: Dict[Tuple[str, str], int] = {}
        self._streak: Dict[TopicPartition, int] = {}
        self._last_error: Dict[TopicPartition, BoltError] = {}
        self.stuck: Dict[TopicPartition, Stuck] = {}

    def observe(self, result: BatchResult, now_ms: int) -> None:
        """Take one batch's errors and its partitions' acks and fails."""
        for error in result.all_errors():
            self._count(error, now_ms)
            if error.topic is not None and error.partition is not None:
                self._last_error[TopicPartition(error.topic, error.partition)] = error
        for r in result:
            if r.failure is not None or not r.reached:
                continue
            self._follow(r.key, r.failed, r.acked_count)

    def _count(self, error: BoltError, now_ms: int) -> None:
        key = error.key
        first = key not in self.totals
        self.totals[key] = self.totals.get(key, 0) + error.count
        if first:
            self._said_ms[key] = now_ms
            log.warning("bolt %r raised %s on %s: %s; the input is failed and retried per "
                        "the retry settings (one line a minute for more of these)\n%s",
                        error.component, error.kind, error.where(), error.message,
                        error.traceback.rstrip())
            if error.count > 1:
                self._unsaid[key] = error.count - 1
            return
        self._unsaid[key] = self._unsaid.get(key, 0) + error.count
        if now_ms - self._said_ms[key] >= REMINDER_MS:
            self.remind(key, now_ms)

    def remind(self, key: Tuple[str, str], now_ms: int) -> None:
        more = self._unsaid.pop(key, 0)
        if more:
            log.warning("bolt %r raised %s %d more times in the last %d s (%d in all)",
                        key[0], key[1], more, (now_ms - self._said_ms[key]) // 1000,
                        self.totals[key])
        self._said_ms[key] = now_ms

    def _follow(self, key: TopicPartition, failed: List[int], acked: int) -> None:
        if failed and not acked:
            streak = self._streak.get(key, 0) + 1
            self._streak[key] = streak
            if streak >= STUCK_BATCHES:
                was = key in self.stuck
                self.stuck[key] = Stuck(key, min(failed), streak, self._last_error.get(key))
                if not was:
                    log.warning("%s", self.stuck[key].describe())
            return
        self._streak.pop(key, None)
        gone = self.stuck.pop(key, None)
        if gone is not None and (acked or not failed):
            log.warning("%s moves again (was stuck at offset %d for %d batches)", key,
                        gone.offset, gone.batches)

    def by_bolt(self) -> Dict[str, Dict[str, int]]:
        """Bolt -> exception type -> errors so far."""
        out: Dict[str, Dict[str, int]] = {}
        for (component, kind), n in sorted(self.totals.items()):
            out.setdefault(component, {})[kind] = n
        return out

    @property
    def total(self) -> int:
        return sum(self.totals.values())

    def status(self) -> Dict[str, Any]:
        return {"bolt_errors": self.by_bolt(),
                "stuck": [s.as_dict() for s in self.stuck.values()]}
