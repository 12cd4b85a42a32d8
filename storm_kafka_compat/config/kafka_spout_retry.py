"""The retry settings of storm-kafka-client's ``KafkaSpoutRetryExponentialBackoff``: its
``TimeInterval`` and the four constructor arguments, read from the ``kafkaSpout`` section's
``retry`` (the service that schedules retries is
:mod:`storm_kafka_compat.spout.client.retry`).

This module is pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from storm_kafka_compat.errors import ConfigError

__all__ = ["INT_MAX", "TimeInterval", "RetrySettings", "DEFAULT_INITIAL_DELAY",
           "DEFAULT_DELAY_PERIOD", "DEFAULT_MAX_DELAY"]

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
