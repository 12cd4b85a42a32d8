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
import time
from itertools import groupby
import logging
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, MutableSet, NamedTuple,
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


#: a partition as the fetch groups key it
PartitionKey = Tuple[str, int]


class GroupAnswer:
    """What one poll of a :class:`FetchGroup` brought, split by partition.

    Attributes
    ----------
    batches : dict
        Partition -> its records of this poll (a :class:`RecordBatch`, ascending).
    ended : dict
        Partition -> where the client stands at that partition's log end (None when it
        does not say): the partition has nothing more until the log grows.
    errors : dict
        Partition -> this project's error for it (an out-of-range position, a failed
        fetch); the group fetches that partition no more.
    """

    __slots__ = ("batches", "ended", "errors")

    def __init__(self) -> None:
        self.batches: Dict[PartitionKey, RecordBatch] = {}
        self.ended: Dict[PartitionKey, Optional[int]] = {}
        self.errors: Dict[PartitionKey, Exception] = {}

    def __bool__(self) -> bool:
        return bool(self.batches or self.ended or self.errors)


@runtime_checkable
class FetchGroup(Protocol):
    """One consumer holding all of a task's partitions, each from its own offset: one
    broker fetch serves every partition, and the records come back split by partition
    (:class:`GroupAnswer`). A task settles each partition's plan from its share."""

    def poll(self, timeout_s: float) -> GroupAnswer:
        """What the client holds or receives within ``timeout_s``; an empty answer when
        nothing came."""
        ...

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """The log end the latest fetch of this partition reported (None: unknown)."""
        ...

    def drop(self, key: PartitionKey) -> None:
        """Fetch this partition no more in this group (its reading is settled)."""
        ...

    def close(self, unprocessed: Mapping[PartitionKey, "RecordBatch"]) -> None:
        """End the group. ``unprocessed``: records :meth:`poll` handed out that the task
        did not process; the next group starting at their first offset gets them first
        (the consumer stays with its access object, positioned after them)."""
        ...


@runtime_checkable
class GroupKafka(KafkaAccess, Protocol):
    """A :class:`KafkaAccess` that also fetches many partitions with one consumer."""

    def reads_groups(self) -> bool:
        """Whether a task's partitions are read by one consumer on these brokers (else
        partition by partition, as a single-plan task always is)."""
        ...

    def fetch_group(self, positions: Mapping[PartitionKey, int]) -> FetchGroup:
        """The group of ``positions``' partitions, each to be read from its offset (the
        next offset to read)."""
        ...

    def log_ends(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """The log end of each of ``keys``, asked of the brokers in one go.

        Raises
        ------
        FailedFetchError
            The brokers could not be asked.
        """
        ...


def split_by_partition(partitions: Sequence[Any], records: Sequence[Any]
                       ) -> List[Tuple[Any, Sequence[Any]]]:
    """Interleaved records split by partition, each partition's in their order:
    ``partitions[i]`` is the partition (any hashable key) of ``records[i]``. Returns
    (partition, records) pairs, one per partition, in the order each partition first
    appears. A client hands a fetch's records of one partition together, so runs are
    found and sliced, not records appended one by one."""
    out: Dict[Any, Any] = {}
    start = 0
    for p, run in groupby(partitions):
        end = start + len(list(run))
        part = records[start:end]
        got = out.get(p)
        if got is None:
            out[p] = part
        elif isinstance(got, list):
            got.extend(part)
        else:
            out[p] = [*got, *part]
        start = end
    return list(out.items())


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
    def joined(cls, first: "RecordBatch", second: "RecordBatch") -> "RecordBatch":
        """``first``'s records then ``second``'s (of the same partition, ascending)."""
        return cls(first.topic, first.partition, first.offsets + second.offsets,
                   first.values + second.values, [*first._records, *second._records],
                   first._convert)

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


def warn_oversized(warned: MutableSet[Tuple[str, int]], topic: str, partition: int,
                   offset: int, size: int, fetch_size_bytes: int) -> None:
    """Log once per partition (``warned`` remembers) that a record larger than
    ``fetchSizeBytes`` was read. Kafka 0.10.1+ returns the first record of a fetch
    whole whatever the byte budget (KIP-74), so the partition goes on where
    storm-kafka stalled (CONTRACT deviation 4), but one such record per fetch."""
    if (topic, partition) in warned:
        return
    warned.add((topic, partition))
    log.warning("%s/%d: the record at offset %d is %d bytes, more than fetchSizeBytes %d; it "
                "was read (Kafka returns an oversized first record whole), but every fetch "
                "brings one such record at most: raise spout.fetchSizeBytes above the largest "
                "record (the topic's max.message.bytes)", topic, partition, offset, size,
                fetch_size_bytes)


class HeldRecords:
    """A group consumer's bookkeeping across tasks, per partition: the next offset the
    client will hand out (:attr:`handed`) and records it handed out that no task
    processed (:attr:`kept`). A task stops at its deadline or a plan's cap with records
    in hand; the next task of that partition starts at the first of them, so they are
    served again instead of seeking the consumer back and fetching them anew."""

    def __init__(self) -> None:
        #: partition -> the next offset the client hands out
        self.handed: Dict[PartitionKey, int] = {}
        #: partition -> records handed out and not processed, ascending
        self.kept: Dict[PartitionKey, RecordBatch] = {}

    def start(self, key: PartitionKey, offset: int) -> bool:
        """A group reads ``key`` from ``offset`` (the next offset to read): True when the
        client continues there (kept records from ``offset`` on are served first); False
        when it must be positioned at ``offset`` (nothing kept is of use)."""
        kept = self.kept.pop(key, None)
        handed = self.handed.get(key)
        if kept is not None and len(kept) and handed is not None and \
                kept.offsets[0] <= offset < handed:
            rest = kept.bounded(offset)
            if len(rest):
                self.kept[key] = rest
            return True
        if handed == offset:
            return True
        self.handed[key] = offset
        return False

    def received(self, key: PartitionKey, batch: RecordBatch) -> None:
        """The client handed out ``batch`` (not empty)."""
        self.handed[key] = batch.offsets[-1] + 1

    def passed(self, key: PartitionKey, offset: int) -> None:
        """The client stands at ``offset`` without handing out records (it passed
        entries no consumer receives)."""
        self.handed[key] = max(offset, self.handed.get(key, offset))

    def keep(self, key: PartitionKey, batch: RecordBatch) -> None:
        """Hold ``batch`` (records handed out, not processed) for the next task; it goes
        before what is held already (records the client handed out later)."""
        if not len(batch):
            return
        held = self.kept.get(key)
        self.kept[key] = batch if held is None else RecordBatch.joined(batch, held)

    def add(self, key: PartitionKey, batch: RecordBatch) -> None:
        """Hold ``batch`` after what is held already (records of a partition its task
        no longer reads, handed out by the client all the same)."""
        if not len(batch):
            return
        held = self.kept.get(key)
        self.kept[key] = batch if held is None else RecordBatch.joined(held, batch)

    def take(self, keys: Iterable[PartitionKey]) -> Dict[PartitionKey, RecordBatch]:
        """The kept records of ``keys`` (removed from here)."""
        return {k: self.kept.pop(k) for k in keys if k in self.kept}

    def forget(self, key: PartitionKey) -> None:
        """Nothing is known of ``key``'s position (an error, or unassigned)."""
        self.handed.pop(key, None)
        self.kept.pop(key, None)


class GroupFetchBase:
    """What both adapters' fetch groups share (each subclasses it): held records are
    served before the client is asked, records of partitions the task no longer reads
    are held for the next task, an error ends its partition's reading in the group.

    A variant implements :meth:`receive` (ask the client, hand each partition's records
    to :meth:`hand`), :meth:`pause` and ``fetched_log_end``.

    A partition has ended when the client stands at the log end its latest fetch
    reported. That is asked only when a poll brought nothing and ``settle_s`` has passed
    since the group opened: a partition resumed after a pause still shows the log end
    of its fetch before the pause until the next fetch answers.
    """

    def __init__(self, held: HeldRecords, keys: Iterable[PartitionKey], *,
                 settle_s: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.held = held
        #: the partitions the task still reads
        self.live = set(keys)
        self.clock = clock
        self.settled_at = clock() + settle_s

    def poll(self, timeout_s: float) -> GroupAnswer:
        """See :meth:`FetchGroup.poll`."""
        answer = GroupAnswer()
        kept = self.held.take(self.live)
        if kept:
            answer.batches.update(kept)
            return answer
        self.receive(timeout_s, answer)
        if not answer.batches and self.clock() >= self.settled_at:
            self.at_log_end(answer)
        for key in answer.errors:
            self.drop(key)
            self.held.forget(key)
        return answer

    def at_log_end(self, answer: GroupAnswer) -> None:
        """The live partitions standing at the log end their latest fetch reported, as
        ended in ``answer``."""
        for key in self.live:
            if key in answer.ended or key in answer.errors:
                continue
            end = self.fetched_log_end(*key)
            handed = self.held.handed.get(key)
            if end is not None and handed is not None and handed >= end:
                answer.ended[key] = handed

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`FetchGroup.fetched_log_end`."""
        raise NotImplementedError

    def hand(self, answer: GroupAnswer, key: PartitionKey, batch: RecordBatch) -> None:
        """The client handed out ``batch`` of ``key`` (not empty)."""
        self.held.received(key, batch)
        if key not in self.live:
            self.held.add(key, batch)
            return
        got = answer.batches.get(key)
        answer.batches[key] = batch if got is None else RecordBatch.joined(got, batch)

    def drop(self, key: PartitionKey) -> None:
        """See :meth:`FetchGroup.drop`."""
        if key in self.live:
            self.live.discard(key)
            self.pause(key)

    def close(self, unprocessed: Mapping[PartitionKey, RecordBatch]) -> None:
        """See :meth:`FetchGroup.close`."""
        for key, batch in unprocessed.items():
            self.held.keep(key, batch)
        for key in list(self.live):
            self.drop(key)

    def receive(self, timeout_s: float, answer: GroupAnswer) -> None:
        """Ask the client (at most ``timeout_s``), filling ``answer``."""
        raise NotImplementedError

    def pause(self, key: PartitionKey) -> None:
        """Stop the client fetching ``key``."""
        raise NotImplementedError
