"""Failed-message retry managers (storm-kafka ``FailedMsgRetryManager``, 1.0.2+).

The default is Storm's exponential backoff: the n-th failure of an offset is
retried after ``min(retryInitialDelayMs * retryDelayMultiplier**(n-1),
retryDelayMaxMs)`` milliseconds, due retries come out in order of retry *time*,
and ``retryLimit`` N allows N re-emits before the offset is given up.

``failedMsgRetryManagerClass`` is pluggable: Storm's class name selects the
built-in; ``package.module:Class`` or ``package.module.Class`` loads a Python
class implementing :class:`FailedMsgRetryManager`.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from abc import ABC, abstractmethod
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

from storm_kafka_compat.config import DEFAULT_RETRY_MANAGER, LONG_MAX, SpoutConfig
from storm_kafka_compat.config.objects import load_object
from storm_kafka_compat.errors import ConfigError

Clock = Callable[[], int]


def monotonic_ms() -> int:
    """Default clock: monotonic milliseconds (immune to wall-clock jumps)."""
    return int(time.monotonic() * 1000)


class FailedMsgRetryManager(ABC):
    """The retry-state interface of storm-kafka 1.0.2+, in Python names.

    All offsets are Kafka offsets of one partition. ``clock`` returns milliseconds.
    """

    def __init__(self, clock: Clock = monotonic_ms) -> None:
        self.clock = clock

    @abstractmethod
    def prepare(self, spout_config: SpoutConfig, storm_conf: Mapping[str, Any]) -> None:
        """Read settings; called once before use."""

    @abstractmethod
    def failed(self, offset: int) -> None:
        """Record a failure and schedule the retry."""

    @abstractmethod
    def acked(self, offset: int) -> None:
        """Forget the offset."""

    @abstractmethod
    def retry_started(self, offset: int) -> None:
        """The offset was re-queued for emission; keep its retry count."""

    @abstractmethod
    def next_failed_message_to_retry(self) -> Optional[int]:
        """The due offset with the earliest retry time, or None."""

    @abstractmethod
    def should_re_emit_msg(self, offset: int) -> bool:
        """True if the offset failed, waits for a retry and is due."""

    @abstractmethod
    def retry_further(self, offset: int) -> bool:
        """False when the offset reached its retry limit and must be given up."""

    @abstractmethod
    def clear_offsets_before(self, offset: int) -> Set[int]:
        """Forget every offset below ``offset``; return them."""

    # --- beyond Storm's interface, with correct defaults for plug-ins ----------
    def due_offsets(self, limit: Optional[int] = None) -> List[int]:
        """Every due offset in ascending order (at most ``limit``)."""
        nxt = self.next_failed_message_to_retry()
        return [] if nxt is None else [nxt]

    def acked_range(self, start: int, end: int) -> None:
        """Forget ``[start, end)``."""
        for o in range(start, end):
            self.acked(o)

    def __len__(self) -> int:
        return 0


class ExponentialBackoffMsgRetryManager(FailedMsgRetryManager):
    """Storm's ``ExponentialBackoffMsgRetryManager`` with an injected clock.

    Parameters
    ----------
    clock : callable returning int
        Milliseconds; tests pass a simulated clock.
    """

    def __init__(self, clock: Clock = monotonic_ms) -> None:
        super().__init__(clock)
        self.initial_delay_ms = 0
        self.multiplier = 1.0
        self.max_delay_ms = 60000
        self.retry_limit = -1
        # offset -> (retry_num, retry_time_ms, waiting)
        self._records: Dict[int, Tuple[int, int, bool]] = {}
        # (retry_time_ms, seq, offset); stale heap entries are skipped lazily
        self._waiting: List[Tuple[int, int, int]] = []
        self._seq = itertools.count()

    def prepare(self, spout_config: SpoutConfig, storm_conf: Mapping[str, Any]) -> None:
        self.initial_delay_ms = spout_config.retry_initial_delay_ms
        self.multiplier = spout_config.retry_delay_multiplier
        self.max_delay_ms = spout_config.retry_delay_max_ms
        self.retry_limit = spout_config.retry_limit

    def delay_ms(self, retry_num: int) -> int:
        """Delay before retry number ``retry_num`` (1 for the first failure)."""
        try:
            factor = math.pow(self.multiplier, retry_num - 1)
            delay = self.initial_delay_ms * factor
        except OverflowError:
            delay = math.inf
        capped = LONG_MAX if delay >= float(LONG_MAX) else int(delay)
        return min(capped, self.max_delay_ms)

    def failed(self, offset: int) -> None:
        previous = self._records.get(offset)
        retry_num = previous[0] + 1 if previous else 1
        retry_time = self.clock() + self.delay_ms(retry_num)
        self._records[offset] = (retry_num, retry_time, True)
        heapq.heappush(self._waiting, (retry_time, next(self._seq), offset))

    def acked(self, offset: int) -> None:
        self._records.pop(offset, None)

    def acked_range(self, start: int, end: int) -> None:
        records = self._records
        if not records:
            return
        if len(records) < end - start:
            for o in [o for o in records if start <= o < end]:
                del records[o]
        else:
            for o in range(start, end):
                records.pop(o, None)

    def retry_started(self, offset: int) -> None:
        record = self._records.get(offset)
        if record is None or not record[2]:
            raise ValueError(f"cannot retry offset {offset}: it has not failed "
                             "or its retry already started")
        self._records[offset] = (record[0], record[1], False)

    def _head(self) -> Optional[Tuple[int, int]]:
        """(retry_time, offset) of the earliest live waiting record."""
        waiting = self._waiting
        while waiting:
            retry_time, _, offset = waiting[0]
            record = self._records.get(offset)
            if record is not None and record[2] and record[1] == retry_time:
                return retry_time, offset
            heapq.heappop(waiting)   # acked, started or rescheduled since
        return None

    def next_failed_message_to_retry(self) -> Optional[int]:
        head = self._head()
        if head is None or head[0] > self.clock():
            return None
        return head[1]

    def next_retry_time_ms(self) -> Optional[int]:
        """When the earliest waiting retry comes due, or None."""
        head = self._head()
        return None if head is None else head[0]

    def should_re_emit_msg(self, offset: int) -> bool:
        record = self._records.get(offset)
        return record is not None and record[2] and record[1] <= self.clock()

    def retry_further(self, offset: int) -> bool:
        record = self._records.get(offset)
        return not (record is not None and self.retry_limit > 0
                    and record[0] >= self.retry_limit)

    def retry_count(self, offset: int) -> int:
        record = self._records.get(offset)
        return record[0] if record else 0

    def clear_offsets_before(self, offset: int) -> Set[int]:
        cleared = {o for o in self._records if o < offset}
        for o in cleared:
            del self._records[o]
        return cleared

    def clear_offsets_from(self, offset: int) -> Set[int]:
        """Forget every offset ``>= offset``; return them."""
        cleared = {o for o in self._records if o >= offset}
        for o in cleared:
            del self._records[o]
        return cleared

    def due_offsets(self, limit: Optional[int] = None) -> List[int]:
        now = self.clock()
        due = sorted(o for o, (_, t, waiting) in self._records.items() if waiting and t <= now)
        return due if limit is None else due[:limit]

    def __len__(self) -> int:
        return len(self._records)


_BUILTIN = {
    DEFAULT_RETRY_MANAGER: ExponentialBackoffMsgRetryManager,
    "storm.kafka.ExponentialBackoffMsgRetryManager": ExponentialBackoffMsgRetryManager,
    "ExponentialBackoffMsgRetryManager": ExponentialBackoffMsgRetryManager,
}


def load_retry_manager(class_name: str, spout_config: SpoutConfig,
                       storm_conf: Mapping[str, Any] = {},
                       clock: Clock = monotonic_ms) -> FailedMsgRetryManager:
    """Build and prepare the retry manager named by ``failedMsgRetryManagerClass``.

    Raises
    ------
    ConfigError
        The class cannot be imported or does not implement FailedMsgRetryManager.
    """
    cls: Any = _BUILTIN.get(class_name)
    if cls is None:
        module_name, sep, attr = class_name.partition(":")
        if not sep:  # Java style: package.module.Class
            module_name, _, attr = class_name.rpartition(".")
        try:
            cls = load_object(f"{module_name}:{attr}", key="failedMsgRetryManagerClass")
        except ConfigError as exc:
            raise ConfigError(
                f"failedMsgRetryManagerClass {class_name!r} cannot be loaded "
                f"({exc.__cause__ or exc}); use {DEFAULT_RETRY_MANAGER!r} or a Python class "
                f"as 'package.module:Class'",
                key="failedMsgRetryManagerClass", value=class_name) from exc
    if not (isinstance(cls, type) and issubclass(cls, FailedMsgRetryManager)):
        raise ConfigError(
            f"failedMsgRetryManagerClass {class_name!r} is not a subclass of "
            "storm_kafka_compat.spout.retry.FailedMsgRetryManager",
            key="failedMsgRetryManagerClass", value=class_name)
    manager = cls(clock)
    manager.prepare(spout_config, storm_conf)
    return manager
