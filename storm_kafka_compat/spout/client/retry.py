"""storm-kafka-client's ``KafkaSpoutRetryExponentialBackoff``, per partition.

Delay of the n-th failure of an offset (``n`` = its ``numFails``, 1, 2, ...):
``initialDelay`` for n = 1, ``delayPeriod * 2**(n-1)`` for n >= 2, capped at
``maxDelay``. ``maxRetries = N`` allows N re-emits; the failure after that is
not scheduled (the spout then acks the offset and drops the message).

Deliberate deviation: Java multiplies in 64-bit signed nanoseconds without an
overflow check, so with the default 2 ms period the delay wraps negative at the
44th failure and the message is retried at once, forever after. Here the delay
is clamped at ``maxDelay`` for every failure count.

This module is pure; time comes from an injected clock (milliseconds). The four settings
are read at config time (:mod:`storm_kafka_compat.config.kafka_spout_retry`).
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional

from storm_kafka_compat.config.kafka_spout_retry import RetrySettings
from storm_kafka_compat.spout.retry import Clock

#: Storm's defaults (0 s, 2 ms, ``Integer.MAX_VALUE``, 10 s)
DEFAULT_SETTINGS = RetrySettings()


class RetryService:
    """Retry schedules of one partition's failed offsets.

    Parameters
    ----------
    settings : RetrySettings
    clock : callable returning int
        Milliseconds.
    """

    def __init__(self, settings: RetrySettings = DEFAULT_SETTINGS,
                 clock: Optional[Clock] = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or (lambda: 0)
        self._due_ns: Dict[int, int] = {}          # offset -> retry time (ns)

    def schedule(self, offset: int, num_fails: int) -> bool:
        """Schedule ``offset`` after its ``num_fails``-th failure.

        Returns False (and schedules nothing) when ``num_fails > maxRetries``:
        the caller then gives the message up, as Storm does.
        """
        if num_fails > self.settings.max_retries:
            self._due_ns.pop(offset, None)
            return False
        self._due_ns[offset] = self.clock() * 1_000_000 + self.settings.delay_nanos(num_fails)
        return True

    def retry_time_ms(self, offset: int) -> Optional[float]:
        """When ``offset`` becomes due, in clock milliseconds (None if not scheduled)."""
        due = self._due_ns.get(offset)
        return None if due is None else due / 1_000_000

    def is_scheduled(self, offset: int) -> bool:
        return offset in self._due_ns

    def is_ready(self, offset: int) -> bool:
        """Scheduled and due now."""
        due = self._due_ns.get(offset)
        return due is not None and due <= self.clock() * 1_000_000

    def remove(self, offset: int) -> bool:
        """Drop the schedule of ``offset`` (re-emitted, acked or revoked)."""
        return self._due_ns.pop(offset, None) is not None

    def remove_range(self, start: int, end: int) -> None:
        if not self._due_ns:
            return
        if end - start < len(self._due_ns):
            for o in range(start, end):
                self._due_ns.pop(o, None)
        else:
            for o in [o for o in self._due_ns if start <= o < end]:
                del self._due_ns[o]

    def remove_below(self, bound: int) -> List[int]:
        gone = sorted(o for o in self._due_ns if o < bound)
        for o in gone:
            del self._due_ns[o]
        return gone

    def due_offsets(self) -> List[int]:
        """Every due offset, ascending."""
        now = self.clock() * 1_000_000
        return sorted(o for o, t in self._due_ns.items() if t <= now)

    def earliest_retriable_offset(self) -> Optional[int]:
        """The smallest due offset (where Storm seeks to re-poll), or None."""
        due = self.due_offsets()
        return due[0] if due else None

    def next_retry_time_ms(self) -> Optional[float]:
        return min(self._due_ns.values()) / 1_000_000 if self._due_ns else None

    def clear(self) -> None:
        self._due_ns.clear()

    def __len__(self) -> int:
        return len(self._due_ns)

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._due_ns))
