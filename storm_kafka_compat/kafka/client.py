"""The Kafka access interface the partition logic and coordinators use.

Two implementations ship: :class:`storm_kafka_compat.kafka.kafka_python.KafkaPythonAccess`
(a real broker through kafka-python) and
:class:`storm_kafka_compat.testing.scripted.ScriptedKafka` (an in-memory Kafka that
answers exactly as Apache Kafka does, for tests).

This module is pure: it imports neither kazoo, kafka-python nor pyspark.

Error mapping (storm-kafka ``KafkaUtils.fetchMessages``):

* ``OFFSET_OUT_OF_RANGE`` -> :class:`~storm_kafka_compat.errors.OffsetOutOfRangeError`,
  always. When ``useStartOffsetTimeIfOffsetOutOfRange`` is false the *caller*
  turns it into a fetch failure, as storm-kafka does.
* socket errors, timeouts, ``NOT_LEADER_FOR_PARTITION``,
  ``UNKNOWN_TOPIC_OR_PARTITION`` and every other retriable condition ->
  :class:`~storm_kafka_compat.errors.FailedFetchError`; the coordinator refreshes
  and the fetch is retried.
"""

from __future__ import annotations

import bisect
import logging
from typing import (Any, Callable, Dict, Iterator, List, MutableSet, NamedTuple,
                    Optional, Protocol, Sequence, Tuple, Union, overload, runtime_checkable)

from storm_kafka_compat.config import Broker

log = logging.getLogger(__name__)

#: ``timestamp_type`` values of Kafka record batches
TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1
#: ``timestamp``/``timestamp_type`` of a record without one (message format v0, the
#: only one Kafka 0.9 writes), as Kafka's own clients report it
NO_TIMESTAMP = -1
NO_TIMESTAMP_TYPE = -1


# --- tuning shared by the fetch backends (kafka_python.py, confluent.py) ----------------

#: the transactions a fetch reads unless the CONFIG's ``kafka.isolation_level`` says
#: ``read_committed``: every record, as storm-kafka and the Java consumer's default
DEFAULT_ISOLATION_LEVEL = "read_uncommitted"
#: client id used when SpoutConfig.clientId is empty
DEFAULT_CLIENT_ID = "storm-kafka-compat"
#: the shortest deadline of one executor-side fetch (ms): a partition whose leader
#: moved or does not answer fails its fetch after this (the spout refreshes its
#: leaders and the next batch reads it again) instead of holding the whole batch
#: for socketTimeoutMs (a controller kill on Kafka 0.9 held every partition's batch
#: for 10 s, recovery took 17-38 s)
MIN_FETCH_DEADLINE_MS = 3000


def fetch_deadline_ms(socket_timeout_ms: int, budget_s: float, fetch_max_wait_ms: int) -> int:
    """How long one executor-side fetch may wait for records: the task's budget, at
    least :data:`MIN_FETCH_DEADLINE_MS` and one ``fetchMaxWait`` and a second more
    (a healthy broker answers within its wait), never above ``socketTimeoutMs``."""
    wanted = max(MIN_FETCH_DEADLINE_MS, int(budget_s * 1000), fetch_max_wait_ms + 1000)
    return min(socket_timeout_ms, wanted)


#: partitions fetched with a consumer of their own per access object (so a partition
#: keeps its position and prefetched records between fetches); beyond, the least
#: recently used consumer serves the next partition (each adapter says how: the
#: cheaper of re-assigning it and replacing it)
MAX_FETCH_CONSUMERS = 8
#: extra time given to one poll round beyond the fetch wait (ms); when a round brings
#: nothing the log end is asked, so a short round only costs a ListOffsets
POLL_SLICE_MARGIN_MS = 50
#: how long to keep polling once the offset is known to be beyond the log end, beyond
#: the fetch wait (ms): Kafka answers OFFSET_OUT_OF_RANGE there, some Kafka-protocol
#: brokers answer nothing
BEYOND_END_GRACE_MS = 500


class KafkaMessage(NamedTuple):
    """One Kafka record as returned by :meth:`KafkaAccess.fetch`.

    ``offset`` is the record's own offset (the next offset to read after it is
    ``offset + 1``). ``timestamp`` is in epoch milliseconds; a record of a
    broker older than 0.10 has none: ``timestamp`` and ``timestamp_type`` are
    then :data:`NO_TIMESTAMP` and :data:`NO_TIMESTAMP_TYPE` (-1).
    """

    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    timestamp: int
    timestamp_type: int
    headers: Tuple[Tuple[str, bytes], ...]
    topic: str
    partition: int


@runtime_checkable
class KafkaAccess(Protocol):
    """What the spout needs from Kafka, one partition at a time."""

    def offset_for(self, topic: str, partition: int, time: int) -> int:
        """Resolve a Storm ``startOffsetTime`` to an offset.

        Parameters
        ----------
        topic, partition : str, int
            The partition.
        time : int
            ``-2`` (``EARLIEST_TIME``): the log start offset; ``-1``
            (``LATEST_TIME``): the log end offset (the high watermark); any
            other value: epoch milliseconds, resolved by *message timestamps*
            (ListOffsets v1+; CONTRACT deviation 5): the offset of the first
            message whose timestamp is at or after ``time``.

        Returns
        -------
        int
            The next offset to read, or ``config.NO_OFFSET`` (-5) when the
            broker has no answer (a timestamp later than every message), as
            storm-kafka's ``getOffset`` returns.

        Raises
        ------
        FailedFetchError
            The broker could not be asked (socket error, timeout, unknown topic).
        """
        ...

    def fetch(self, topic: str, partition: int, offset: int, *,
              max_messages: Optional[int] = None,
              max_offset: Optional[int] = None) -> List[KafkaMessage]:
        """Fetch messages starting at ``offset`` (the next offset to read).

        Messages below ``offset`` (a compressed set may hold some) are skipped.
        Reading stops after ``max_messages`` messages or before ``max_offset``
        (exclusive), and after one broker fetch's worth (``fetchSizeBytes``).
        A fetch at the log end returns ``[]``.

        Raises
        ------
        OffsetOutOfRangeError
            The broker answered ``OFFSET_OUT_OF_RANGE``.
        FailedFetchError
            A retriable failure (socket error, timeout, not leader, unknown
            topic or partition).
        """
        ...

    def fetch_batch(self, topic: str, partition: int, offset: int, *,
                    max_messages: Optional[int] = None,
                    max_offset: Optional[int] = None) -> "RecordBatch":
        """:meth:`fetch` as a :class:`RecordBatch`: the offsets and values as columns
        and the client's own records, converted to messages only when a scheme reads
        more than the value. The engine's tasks read this way (no object is built
        per message). Raises as :meth:`fetch`."""
        ...

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """The log end (high watermark) the latest fetch of this partition reported,
        without asking the broker; None before any fetch or when the client keeps
        none. A task reads it once, after its first fetch, and stops there: a batch
        takes what was in the log when it started, as a Spark micro-batch does,
        instead of chasing messages that arrive meanwhile (they wait one batch
        less when the batches stay short)."""
        ...

    def fetched_position(self, topic: str, partition: int) -> Optional[int]:
        """The next offset the latest fetch of this partition would read, without
        asking the broker: one past its last record, or further when the fetch
        returned nothing because the log held only entries no consumer receives
        (transaction markers; aborted records under ``read_committed``). None
        before any fetch. A task reads it after an empty fetch, so that the
        partition's position (and its commit) passes such a tail of the log."""
        ...

    def leaders(self, topic: str) -> Dict[int, Broker]:
        """The current leader of every partition of ``topic`` (partition -> broker).

        Partitions without a leader are left out. An unknown topic gives ``{}``.
        Raises FailedFetchError when the brokers cannot be asked.
        """
        ...

    def topics(self) -> List[str]:
        """Every topic name the cluster knows, sorted (FailedFetchError when the
        brokers cannot be asked)."""
        ...

    def close(self) -> None:
        """Release connections. The object must not be used afterwards."""
        ...


@runtime_checkable
class DriverKafka(KafkaAccess, Protocol):
    """The driver's Kafka access (:class:`~storm_kafka_compat.kafka.lazy.LazyKafka`):
    metadata and log offsets, and the brokers learned on the way, which the
    executors bootstrap from."""

    @property
    def bootstrap(self) -> Tuple[str, ...]:
        """Every broker known so far, sorted (``host:port``)."""
        ...

    def learn(self, broker: Broker) -> None:
        """Remember ``broker`` (a partition leader a discovery found)."""
        ...

    def log_ends(self, keys: Sequence[Tuple[str, int]]) -> Dict[Tuple[str, int], int]:
        """The log end (high watermark) of every one of ``keys``: one request per leader
        where the client asks many partitions at once, else one a partition (and each
        partition the one request left out).

        Raises
        ------
        StormKafkaCompatError
            A partition's log end could not be asked.
        """
        ...

    def log_ranges(self, keys: Sequence[Tuple[str, int]]) -> Dict[Tuple[str, int], Tuple[int, int]]:
        """Log start and end of each of ``keys``: two requests per leader where the
        client asks many partitions at once, else two a partition. A partition
        without an answer is left out.

        Raises
        ------
        StormKafkaCompatError
            The brokers could not be asked (the first failure ends the lookup).
        """
        ...


class RecordBatch(Sequence[Any]):
    """One partition's fetched records as columns: ``offsets`` (ascending) and
    ``values``, beside the client's own record objects.

    :meth:`messages` gives objects with the attributes schemes read (the
    :class:`~storm_kafka_compat.topology.schemes.MessageLike` protocol: ``key``,
    ``value``, ``topic``, ``partition``, ``offset``, and ``timestamp`` and ``headers``),
    built on first use by ``convert`` (None: the records already are such objects,
    as kafka-python's are). Indexing, iterating and ``len`` treat the batch as that
    list of messages; a slice is a batch.
    """

    __slots__ = ("topic", "partition", "offsets", "values", "_records", "_convert",
                 "_messages")

    def __init__(self, topic: str, partition: int, offsets: List[int],
                 values: List[Optional[bytes]], records: Sequence[Any],
                 convert: Optional[Callable[[Sequence[Any]], List[Any]]] = None) -> None:
        self.topic = topic
        self.partition = partition
        self.offsets = offsets
        self.values = values
        self._records = records
        self._convert = convert
        self._messages: Optional[List[Any]] = None

    @classmethod
    def of(cls, messages: Sequence[Any], topic: str = "", partition: int = -1
           ) -> "RecordBatch":
        """The batch of message objects (``KafkaMessage``, kafka-python records)."""
        if messages:
            topic, partition = messages[0].topic, messages[0].partition
        return cls(topic, partition, [m.offset for m in messages],
                   [m.value for m in messages], messages)

    @classmethod
    def joined(cls, first: "RecordBatch", *more: "RecordBatch") -> "RecordBatch":
        """``first``'s records then those of each of ``more`` (of the same partition,
        ascending)."""
        if not more:
            return first
        offsets, values, records = list(first.offsets), list(first.values), list(first._records)
        for batch in more:
            offsets.extend(batch.offsets)
            values.extend(batch.values)
            records.extend(batch._records)
        return cls(first.topic, first.partition, offsets, values, records, first._convert)

    def messages(self) -> List[Any]:
        """The records as message objects (converted once)."""
        if self._messages is None:
            self._messages = (list(self._records) if self._convert is None
                              else self._convert(self._records))
        return self._messages

    def __len__(self) -> int:
        return len(self.offsets)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.messages())

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> "RecordBatch": ...

    def __getitem__(self, index: Union[int, slice]) -> Any:
        if isinstance(index, slice):
            return self.slice(*index.indices(len(self))[:2])
        return self.messages()[index]

    def slice(self, lo: int, hi: int) -> "RecordBatch":
        """Records ``lo`` to ``hi`` (exclusive), as a batch."""
        part = RecordBatch(self.topic, self.partition, self.offsets[lo:hi],
                           self.values[lo:hi], self._records[lo:hi], self._convert)
        if self._messages is not None:
            part._messages = self._messages[lo:hi]
        return part

    def bounded(self, offset: int, *, max_messages: Optional[int] = None,
                max_offset: Optional[int] = None) -> "RecordBatch":
        """:func:`slice_messages`'s bounds, found by bisection on the offsets."""
        offsets = self.offsets
        lo = bisect.bisect_left(offsets, offset)
        hi = len(offsets) if max_offset is None else bisect.bisect_left(offsets, max_offset)
        if max_messages is not None:
            hi = min(hi, lo + max_messages)
        return self if (lo, hi) == (0, len(offsets)) else self.slice(lo, max(lo, hi))


def slice_messages(messages: List[Any], offset: int, *,
                   max_messages: Optional[int] = None,
                   max_offset: Optional[int] = None) -> List[KafkaMessage]:
    """Apply :meth:`KafkaAccess.fetch`'s bounds to fetched ``messages``.

    Keeps messages with ``offset <= m.offset < max_offset``, at most
    ``max_messages`` of them, in order.
    """
    out: List[KafkaMessage] = []
    for m in messages:
        if m.offset < offset:
            continue
        if max_offset is not None and m.offset >= max_offset:
            break
        out.append(m)
        if max_messages is not None and len(out) >= max_messages:
            break
    return out


def warn_oversized(warned: MutableSet[Tuple[str, int]], batch: "RecordBatch",
                   fetch_size_bytes: int) -> None:
    """Log once per partition (``warned`` remembers) that ``batch`` holds a record
    whose value is larger than ``fetchSizeBytes``. Kafka 0.10.1+ returns the first
    record of a fetch whole whatever the byte budget (KIP-74), so the partition goes on
    where storm-kafka stalled (CONTRACT deviation 4), but one such record per fetch.
    Any record of the batch is looked at: a client may have joined several fetches."""
    key = (batch.topic, batch.partition)
    if key in warned or max(map(len, filter(None, batch.values)), default=0) <= fetch_size_bytes:
        return
    warned.add(key)
    offset, size = next((o, len(v)) for o, v in zip(batch.offsets, batch.values)
                        if v is not None and len(v) > fetch_size_bytes)
    log.warning("%s/%d: the record at offset %d is %d bytes, more than fetchSizeBytes %d; it "
                "was read (Kafka returns an oversized first record whole), but every fetch "
                "brings one such record at most: raise spout.fetchSizeBytes above the largest "
                "record (the topic's max.message.bytes)", batch.topic, batch.partition,
                offset, size, fetch_size_bytes)


