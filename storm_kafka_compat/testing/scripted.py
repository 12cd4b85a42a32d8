"""A scripted, in-memory Kafka behind :class:`~storm_kafka_compat.kafka.client.KafkaAccess`.

``ScriptedKafka`` is a test double shipped for users: it answers exactly as an
Apache Kafka broker does for the calls the spout makes, including the cases the
embedded tansu broker cannot reproduce (``OFFSET_OUT_OF_RANGE``, retention,
truncation, a re-created topic)::

    from storm_kafka_compat.testing.scripted import ScriptedKafka
    from storm_kafka_compat.errors import FailedFetchError

    kafka = ScriptedKafka()
    kafka.create_topic("orders", partitions=2)
    kafka.append("orders", 0, b"a", b"b", b"c")        # offsets 0, 1, 2
    kafka.set_log_start("orders", 0, 2)                # retention removed 0 and 1
    kafka.fetch("orders", 0, 0)                        # -> OffsetOutOfRangeError
    kafka.fetch("orders", 0, 3)                        # -> [] (at the log end)
    kafka.fail_next("orders", 0, FailedFetchError("boom"))
    kafka.calls                                        # every call, in order

Rules (Apache Kafka's):

* a fetch below the log start offset or beyond the log end offset raises
  :class:`~storm_kafka_compat.errors.OffsetOutOfRangeError`;
* a fetch *at* the log end returns ``[]``;
* an unknown topic or partition, or a partition without leader, raises
  :class:`~storm_kafka_compat.errors.FailedFetchError`
  (``UNKNOWN_TOPIC_OR_PARTITION`` / ``LEADER_NOT_AVAILABLE``);
* a fetch returns at least one message even when it is larger than
  ``fetch_size_bytes`` (modern fetch, KIP-74), then stops at that budget;
* ``offset_for(time)`` answers ``-2`` with the log start, ``-1`` with the log
  end, a timestamp with the first message whose timestamp is at or after it
  (ListOffsets v1), or ``NO_OFFSET`` (-5) when there is none.

This module is pure: time comes from the injected ``clock`` (epoch ms).
"""

from __future__ import annotations

import bisect
import threading
import time as _time
from collections import deque
from dataclasses import dataclass, field
from typing import (Any, Callable, Deque, Dict, Iterable, List, Mapping, Optional, Sequence,
                    Tuple, Union)

from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, NO_OFFSET, Broker
from storm_kafka_compat.errors import (FailedFetchError, KafkaAccessError,
                                       OffsetOutOfRangeError)
from storm_kafka_compat.kafka.client import (TIMESTAMP_CREATE_TIME, KafkaMessage, RecordBatch,
                                             slice_messages)
from storm_kafka_compat.kafka.fetch_group import (GroupAnswer, GroupFetchBase, HeldRecords,
                                                  PartitionKey)

Payload = Union[bytes, str, None]

#: the leader every partition gets unless told otherwise
DEFAULT_LEADER = Broker("127.0.0.1", 9092)


def _wall_clock_ms() -> int:
    return int(_time.time() * 1000)


def _as_bytes(value: Payload) -> Optional[bytes]:
    if value is None or isinstance(value, bytes):
        return value
    return value.encode("utf-8")


@dataclass
class _Log:
    """One partition's log: messages sorted by offset, possibly with gaps."""

    start: int = 0          # log start offset
    end: int = 0            # log end offset: the next offset to be written
    offsets: List[int] = field(default_factory=list)
    messages: List[KafkaMessage] = field(default_factory=list)

    def drop_below(self, offset: int) -> None:
        i = bisect.bisect_left(self.offsets, offset)
        del self.offsets[:i]
        del self.messages[:i]

    def drop_from(self, offset: int) -> None:
        i = bisect.bisect_left(self.offsets, offset)
        del self.offsets[i:]
        del self.messages[i:]


class ScriptedKafka:
    """An in-memory Kafka implementing ``KafkaAccess`` (see the module docstring).

    Parameters
    ----------
    clock : callable, optional
        Returns epoch milliseconds; stamps appended messages. Defaults to the
        wall clock.
    default_leader : Broker
        Leader given to every new partition.
    fetch_size_bytes : int, optional
        Byte budget of one fetch (key + value sizes), like ``fetchSizeBytes``;
        ``None`` for no budget. The first message is always returned.
    """

    def __init__(self, *, clock: Callable[[], int] = _wall_clock_ms,
                 default_leader: Broker = DEFAULT_LEADER,
                 fetch_size_bytes: Optional[int] = None) -> None:
        self._clock = clock
        self._default_leader = default_leader
        self.fetch_size_bytes = fetch_size_bytes
        self._logs: Dict[str, List[_Log]] = {}
        self._leaders: Dict[Tuple[str, int], Optional[Broker]] = {}
        self._errors: Dict[Tuple[str, int], Deque[Tuple[str, BaseException]]] = {}
        self._lock = threading.RLock()
        self._fetched_to: Dict[Tuple[str, int], int] = {}
        self.closed = False
        #: every call made through the ``KafkaAccess`` interface, in order:
        #: ``("fetch", topic, partition, offset)``, ``("offset_for", topic,
        #: partition, time)``, ``("leaders", topic)``, ``("topics",)``, ``("close",)``
        self.calls: List[Tuple[Any, ...]] = []

    # --- scripting ----------------------------------------------------------

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """Create ``topic`` with ``partitions`` empty partitions (0..n-1)."""
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions} for topic {topic!r}")
        with self._lock:
            if topic in self._logs:
                raise ValueError(f"topic {topic!r} already exists; use recreate_topic() "
                                 "to start it afresh")
            self._logs[topic] = [_Log() for _ in range(partitions)]
            for p in range(partitions):
                self._leaders[(topic, p)] = self._default_leader

    def add_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions (Kafka can only add)."""
        with self._lock:
            logs = self._topic(topic)
            if total < len(logs):
                raise ValueError(f"topic {topic!r} has {len(logs)} partitions; "
                                 f"cannot shrink to {total}")
            for p in range(len(logs), total):
                logs.append(_Log())
                self._leaders[(topic, p)] = self._default_leader

    def delete_topic(self, topic: str) -> None:
        """Delete ``topic`` and its data."""
        with self._lock:
            logs = self._logs.pop(topic, None)
            if logs is None:
                raise ValueError(f"unknown topic {topic!r}")
            for p in range(len(logs)):
                self._leaders.pop((topic, p), None)

    def recreate_topic(self, topic: str, partitions: Optional[int] = None) -> None:
        """Delete and create ``topic`` again: offsets restart at 0.

        ``partitions`` defaults to the current count.
        """
        with self._lock:
            count = partitions if partitions is not None else len(self._topic(topic))
            self.delete_topic(topic)
            self.create_topic(topic, count)

    def append(self, topic: str, partition: int, *values: Payload,
               key: Payload = None, timestamp: Optional[int] = None,
               headers: Sequence[Tuple[str, bytes]] = ()) -> List[int]:
        """Append messages; creates the topic (one partition more than asked,
        as needed) like a broker with auto-creation. Returns their offsets.

        ``timestamp`` (epoch ms) defaults to the clock.
        """
        with self._lock:
            if topic not in self._logs:
                self.create_topic(topic, partition + 1)
            log = self._log(topic, partition)
            out = []
            for value in values:
                ts = self._clock() if timestamp is None else timestamp
                msg = KafkaMessage(log.end, _as_bytes(key), _as_bytes(value), int(ts),
                                   TIMESTAMP_CREATE_TIME, tuple(headers), topic, partition)
                log.offsets.append(log.end)
                log.messages.append(msg)
                out.append(log.end)
                log.end += 1
            return out

    def set_log_start(self, topic: str, partition: int, offset: int) -> None:
        """Retention or DeleteRecords: messages below ``offset`` disappear.

        ``offset`` may not pass the log end (Kafka refuses that too).
        """
        with self._lock:
            log = self._log(topic, partition)
            if offset > log.end:
                raise ValueError(f"log start {offset} for {topic}/{partition} is beyond "
                                 f"the log end {log.end}")
            log.start = max(log.start, offset)
            log.drop_below(log.start)

    def truncate(self, topic: str, partition: int, end_offset: int) -> None:
        """Unclean leader election: the log end moves back to ``end_offset``.

        Later appends reuse the offsets from ``end_offset`` on.
        """
        with self._lock:
            log = self._log(topic, partition)
            if end_offset < log.start:
                raise ValueError(f"end offset {end_offset} for {topic}/{partition} is below "
                                 f"the log start {log.start}")
            log.end = min(log.end, end_offset)
            log.drop_from(log.end)

    def compact(self, topic: str, partition: int, remove: Iterable[int]) -> None:
        """Remove single offsets (log compaction); leaves gaps, offsets unchanged."""
        with self._lock:
            log = self._log(topic, partition)
            gone = set(remove)
            keep = [(o, m) for o, m in zip(log.offsets, log.messages) if o not in gone]
            log.offsets = [o for o, _ in keep]
            log.messages = [m for _, m in keep]

    def set_leader(self, topic: str, partition: int, broker: Optional[Broker]) -> None:
        """Move a partition's leader; ``None`` means no leader (fetches fail)."""
        with self._lock:
            self._log(topic, partition)
            self._leaders[(topic, partition)] = broker

    def fail_next(self, topic: str, partition: int, exc: BaseException, *,
                  times: int = 1, call: str = "fetch") -> None:
        """Make the next ``times`` ``call``\\ s (``"fetch"`` or ``"offset_for"``)
        for this partition raise ``exc`` instead of answering."""
        if call not in ("fetch", "offset_for"):
            raise ValueError(f"call must be 'fetch' or 'offset_for', got {call!r}")
        with self._lock:
            q = self._errors.setdefault((topic, partition), deque())
            for _ in range(times):
                q.append((call, exc))

    def log_start(self, topic: str, partition: int) -> int:
        """The log start offset (earliest)."""
        with self._lock:
            return self._log(topic, partition).start

    def log_end(self, topic: str, partition: int) -> int:
        """The log end offset (latest; the next offset to be written)."""
        with self._lock:
            return self._log(topic, partition).end

    def partitions(self, topic: str) -> int:
        """Number of partitions of ``topic``."""
        with self._lock:
            return len(self._topic(topic))

    # --- KafkaAccess --------------------------------------------------------

    def offset_for(self, topic: str, partition: int, time: int) -> int:
        """See :meth:`KafkaAccess.offset_for`."""
        with self._lock:
            self.calls.append(("offset_for", topic, partition, time))
            self._raise_scripted("offset_for", topic, partition)
            log = self._readable_log(topic, partition, None)
            if time == EARLIEST_TIME:
                return log.start
            if time == LATEST_TIME:
                return log.end
            for m in log.messages:
                if m.timestamp >= time:
                    return m.offset
            return NO_OFFSET

    def fetch(self, topic: str, partition: int, offset: int, *,
              max_messages: Optional[int] = None,
              max_offset: Optional[int] = None) -> List[KafkaMessage]:
        """See :meth:`KafkaAccess.fetch`."""
        with self._lock:
            self.calls.append(("fetch", topic, partition, offset))
            self._raise_scripted("fetch", topic, partition)
            log = self._readable_log(topic, partition, offset)
            if offset < log.start or offset > log.end:
                raise OffsetOutOfRangeError(
                    f"offset {offset} for {topic}/{partition} is out of range "
                    f"[{log.start}, {log.end}] (OFFSET_OUT_OF_RANGE); restart from "
                    "startOffsetTime or a valid offset",
                    topic=topic, partition=partition, offset=offset)
            i = bisect.bisect_left(log.offsets, offset)
            batch: List[KafkaMessage] = []
            budget = self.fetch_size_bytes
            used = 0
            for m in log.messages[i:]:
                size = len(m.key or b"") + len(m.value or b"")
                if budget is not None and batch and used + size > budget:
                    break
                used += size
                batch.append(m)
            out = slice_messages(batch, offset, max_messages=max_messages, max_offset=max_offset)
            # nothing left to read before the log end: the position is the end
            self._fetched_to[(topic, partition)] = (
                out[-1].offset + 1 if out else log.end if i >= len(log.messages) else offset)
            return out

    def fetch_batch(self, topic: str, partition: int, offset: int, *,
                    max_messages: Optional[int] = None,
                    max_offset: Optional[int] = None) -> RecordBatch:
        """See :meth:`KafkaAccess.fetch_batch`: :meth:`fetch`'s messages as a batch."""
        return RecordBatch.of(self.fetch(topic, partition, offset, max_messages=max_messages,
                                         max_offset=max_offset), topic, partition)

    def fetched_position(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`KafkaAccess.fetched_position`: the scripted log has no
        invisible entries, so one past the last record fetched (None: none yet)."""
        with self._lock:
            return self._fetched_to.get((topic, partition))

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`KafkaAccess.fetched_log_end`: the log end now."""
        with self._lock:
            logs = self._logs.get(topic)
            if not logs or not 0 <= partition < len(logs):
                return None
            return logs[partition].end

    def leaders(self, topic: str) -> Dict[int, Broker]:
        """See :meth:`KafkaAccess.leaders`."""
        with self._lock:
            self.calls.append(("leaders", topic))
            logs = self._logs.get(topic)
            if logs is None:
                return {}
            out = {}
            for p in range(len(logs)):
                leader = self._leaders.get((topic, p))
                if leader is not None:
                    out[p] = leader
            return out

    def topics(self) -> List[str]:
        """See :meth:`KafkaAccess.topics`."""
        with self._lock:
            self.calls.append(("topics",))
            return sorted(self._logs)

    def close(self) -> None:
        """Mark closed (data is kept so a test can inspect it)."""
        with self._lock:
            self.calls.append(("close",))
            self.closed = True

    # --- internals --------------------------------------------------------------

    def _topic(self, topic: str) -> List[_Log]:
        logs = self._logs.get(topic)
        if logs is None:
            raise ValueError(f"unknown topic {topic!r}; create it with create_topic()")
        return logs

    def _log(self, topic: str, partition: int) -> _Log:
        logs = self._topic(topic)
        if not 0 <= partition < len(logs):
            raise ValueError(f"topic {topic!r} has partitions 0..{len(logs) - 1}, "
                             f"not {partition}")
        return logs[partition]

    def _readable_log(self, topic: str, partition: int, offset: Optional[int]) -> _Log:
        logs = self._logs.get(topic)
        if logs is None or not 0 <= partition < len(logs):
            raise FailedFetchError(
                f"UNKNOWN_TOPIC_OR_PARTITION for {topic}/{partition}; check the topic "
                "name and partition count", topic=topic, partition=partition, offset=offset)
        if self._leaders.get((topic, partition)) is None:
            raise FailedFetchError(
                f"LEADER_NOT_AVAILABLE for {topic}/{partition}; retry after the "
                "coordinator refreshes", topic=topic, partition=partition, offset=offset)
        return logs[partition]

    def _raise_scripted(self, call: str, topic: str, partition: int) -> None:
        q = self._errors.get((topic, partition))
        if not q:
            return
        for i, (kind, exc) in enumerate(q):
            if kind == call:
                del q[i]
                if isinstance(exc, KafkaAccessError):
                    if exc.topic is None:
                        exc.topic = topic
                    if exc.partition is None:
                        exc.partition = partition
                raise exc


class ScriptedGroupKafka(ScriptedKafka):
    """A :class:`ScriptedKafka` that also fetches groups
    (:class:`~storm_kafka_compat.kafka.client.GroupKafka`), as both shipped adapters do:
    each poll hands out up to ``per_poll`` records of every partition the group still
    reads, interleaved as one consumer's fetch brings them. Errors scripted with
    :meth:`fail_next` for ``"fetch"`` are the partition's answer."""

    def __init__(self, *, per_poll: int = 3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.per_poll = per_poll
        self.held = HeldRecords()

    def fetch_group(self, positions: Mapping[PartitionKey, int]) -> "ScriptedGroup":
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.fetch_group`."""
        with self._lock:
            self.calls.append(("fetch_group", tuple(sorted(positions.items()))))
        for key, offset in positions.items():
            self.held.start(key, offset)
        return ScriptedGroup(self, positions)

    def reads_groups(self) -> bool:
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.reads_groups` (always)."""
        return True

    def log_ends(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.log_ends`."""
        with self._lock:
            self.calls.append(("log_ends", tuple(keys)))
        return {key: self.offset_for(key[0], key[1], LATEST_TIME) for key in keys}

    def log_starts(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.log_starts`."""
        with self._lock:
            self.calls.append(("log_starts", tuple(keys)))
        return {key: self.offset_for(key[0], key[1], EARLIEST_TIME) for key in keys}


class ScriptedGroup(GroupFetchBase):
    """The group of a :class:`ScriptedGroupKafka`."""

    def __init__(self, kafka: ScriptedGroupKafka, positions: Mapping[PartitionKey, int]) -> None:
        super().__init__(kafka.held, positions)
        self.kafka = kafka
        #: what the client fetches: every partition of the group until paused, as the
        #: shipped clients do (a partition the task no longer reads included)
        self.fetching = set(positions)

    def receive(self, timeout_s: float, answer: GroupAnswer) -> None:
        for key in sorted(self.fetching):
            offset = self.held.handed[key]
            try:
                batch = self.kafka.fetch_batch(key[0], key[1], offset,
                                               max_messages=self.kafka.per_poll)
            except KafkaAccessError as exc:
                answer.errors[key] = exc
                continue
            if len(batch):
                self.hand(answer, key, batch)
            elif self.kafka.log_end(*key) <= offset:
                answer.ended[key] = offset

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        return self.kafka.fetched_log_end(topic, partition)

    def pause(self, key: PartitionKey) -> None:
        self.kafka.calls.append(("pause", key))
        self.fetching.discard(key)
