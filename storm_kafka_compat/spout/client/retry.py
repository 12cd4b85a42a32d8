"""storm-kafka-client's ``KafkaSpoutRetryExponentialBackoff``, per partition.

Delay of the n-th failure of an offset (``n`` = its ``numFails``, 1, 2, ...):
``initialDelay`` for n = 1, ``delayPeriod * 2**(n-1)`` for n >= 2, capped at
``maxDelay``. ``maxRetries = N`` allows N re-emits; the failure after that is
not scheduled (the spout then acks the offset and drops the message).

Deliberate deviation: Java multiplies in 64-bit signed nanoseconds without an
overflow check, so with the default 2 ms period the delay wraps negative at the
44th failure and the message is retried at once, forever after. Here the delay
is clamped at ``maxDelay`` for every failure count.

This module is pure; time comes from an injected clock (milliseconds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.spout.retry import Clock

#: Java ``Integer.MAX_VALUE``: the default ``maxRetries`` (retry forever)
INT_MAX = 2**31 - 1

_UNITS_NS = {
    "ns": 1, "nanoseconds": 1,
    "us": 1_000, "µs": 1_000, "microseconds": 1_000,
    "ms": 1_000_000, "milliseconds": 1_000_000,
    "s": 1_000_000_000, "seconds": 1_000_000_000,
    "m": 60_000_000_000, "min": 60_000_000_000, "minutes": 60_000_000_000,
}
_INTERVAL_RE = re.compile(r"^\s*(\d+)\s*([a-zµ]+)\s*$", re.IGNORECASE)


@dataclass(frozen=True, order=True)
class TimeInterval:
    """storm-kafka-client's ``TimeInterval``: a non-negative length in nanoseconds.

    Build it with :meth:`seconds`, :meth:`milli_seconds` or :meth:`micro_seconds`
    (the Java factories) or :meth:`parse`.
    """

    nanos: int

    @classmethod
    def seconds(cls, length: int) -> "TimeInterval":
        return cls(length * 1_000_000_000)

    @classmethod
    def milli_seconds(cls, length: int) -> "TimeInterval":
        return cls(length * 1_000_000)

    @classmethod
    def micro_seconds(cls, length: int) -> "TimeInterval":
        return cls(length * 1_000)

    @property
    def millis(self) -> float:
        return self.nanos / 1_000_000

    def __str__(self) -> str:
        for unit, size in (("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
            if self.nanos % size == 0:
                return f"{self.nanos // size}{unit}"
        return f"{self.nanos}ns"

    @classmethod
    def parse(cls, value: Any, key: str) -> "TimeInterval":
        """Read a CONFIG value: an int (milliseconds), ``"2ms"``/``"10s"``/``"500us"``,
        or ``{length: N, timeUnit: SECONDS|MILLISECONDS|MICROSECONDS}``.

        Raises
        ------
        ConfigError
            Anything else, or a negative length.
        """
        if isinstance(value, bool):
            pass
        elif isinstance(value, int):
            if value >= 0:
                return cls.milli_seconds(value)
        elif isinstance(value, str):
            m = _INTERVAL_RE.match(value)
            if m and m.group(2).lower() in _UNITS_NS:
                return cls(int(m.group(1)) * _UNITS_NS[m.group(2).lower()])
        elif isinstance(value, dict):
            length = value.get("length")
            unit = str(value.get("timeUnit", value.get("unit", "MILLISECONDS"))).lower()
            if (isinstance(length, int) and not isinstance(length, bool) and length >= 0
                    and unit in _UNITS_NS and set(value) <= {"length", "timeUnit", "unit"}):
                return cls(length * _UNITS_NS[unit])
        raise ConfigError(
            f"{key} {value!r} is not a time interval; give milliseconds as an integer, a "
            f"string such as '2ms', '10s' or '500us', or {{length: 2, timeUnit: MILLISECONDS}}.",
            key=key, value=value)


DEFAULT_INITIAL_DELAY = TimeInterval.seconds(0)
DEFAULT_DELAY_PERIOD = TimeInterval.milli_seconds(2)
DEFAULT_MAX_DELAY = TimeInterval.seconds(10)


@dataclass(frozen=True)
class RetrySettings:
    """The four constructor arguments of ``KafkaSpoutRetryExponentialBackoff``
    (defaults: 0 s, 2 ms, ``Integer.MAX_VALUE``, 10 s)."""

    initial_delay: TimeInterval = DEFAULT_INITIAL_DELAY
    delay_period: TimeInterval = DEFAULT_DELAY_PERIOD
    max_retries: int = INT_MAX
    max_delay: TimeInterval = DEFAULT_MAX_DELAY

    def delay_nanos(self, num_fails: int) -> int:
        """Delay before re-emitting an offset that failed ``num_fails`` times
        (clamped at ``max_delay``; no overflow)."""
        if num_fails <= 1:
            delay = self.initial_delay.nanos
        elif num_fails - 1 >= 64 or self.delay_period.nanos == 0:
            # 2**63 already exceeds any maxDelay; skip the big multiplication
            delay = self.max_delay.nanos if self.delay_period.nanos else 0
        else:
            delay = self.delay_period.nanos << (num_fails - 1)
        return min(delay, self.max_delay.nanos)


class RetryService:
    """Retry schedules of one partition's failed offsets.

    Parameters
    ----------
    settings : RetrySettings
    clock : callable returning int
        Milliseconds.
    """

    def __init__(self, settings: RetrySettings = RetrySettings(),
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
