"""KafkaAccess over confluent-kafka (librdkafka), the fast fetch backend.

Chosen in CONFIG with ``kafka: {backend: confluent}``; needs the ``confluent``
extra (``pip install storm-kafka-compat[confluent]``). Each partition fetched
gets a ``Consumer`` of its own (up to MAX_FETCH_CONSUMERS per access object, the
least recently used replaced by a new one beyond), with that one partition assigned, no
group membership and no Kafka-side commits. librdkafka prefetches in its own
threads (at most ``PREFETCH_FETCHES`` x fetchSizeBytes per partition), so when the
next call continues where the previous one stopped the records are already in
memory and no request waits. (One consumer re-assigned from partition to
partition throws its prefetch away at every switch: measured 2k msgs/s.) A task
holding several partitions reads them all with one more consumer instead
(:meth:`ConfluentAccess.fetch_group`, :class:`ConfluentGroup`): assigned
incrementally, its interleaved records split by partition.

The librdkafka settings a SpoutConfig becomes, and those this adapter owns, are
:mod:`storm_kafka_compat.kafka.confluent_settings`'s. librdkafka's own log lines go to
this module's logger.

librdkafka's messages and errors become this project's in
:mod:`storm_kafka_compat.kafka.confluent_records`.

A broker that answers nothing beyond the log end instead of
``OFFSET_OUT_OF_RANGE`` (some Kafka-protocol brokers do; see
:mod:`storm_kafka_compat.kafka.kafka_python`) gets ``[]`` there after a grace period.
"""

from __future__ import annotations

import logging
import threading
from itertools import compress, repeat
from operator import is_
import time
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Mapping, NoReturn, Optional, Sequence, Set, Tuple

from storm_kafka_compat.config.kafka_settings import BootstrapServers
from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, NO_OFFSET, Broker, SpoutConfig
from storm_kafka_compat.errors import ConfigError, FailedFetchError, KafkaAccessError
from storm_kafka_compat.kafka.client import (BEYOND_END_GRACE_MS, MAX_FETCH_CONSUMERS,
                                             POLL_SLICE_MARGIN_MS, KafkaMessage, RecordBatch,
                                             warn_oversized)
from storm_kafka_compat.kafka.confluent_records import map_error, record_batch
from storm_kafka_compat.kafka.confluent_settings import (answers_list_offsets_v1, consumer_config,
                                                       group_config)
from storm_kafka_compat.kafka.fetch_group import (GroupAnswer, GroupFetchBase, HeldRecords,
                                                  PartitionKey, split_by_partition)

log = logging.getLogger(__name__)


class _ExpectedOnOldBrokers(logging.Filter):
    """Demote to DEBUG librdkafka's warnings about settings this adapter makes on
    purpose for brokers before 0.10/0.11 (``kafka.api_version``): the deprecation of
    ``api.version.request``/``broker.version.fallback`` and the unsupported
    ``allow.auto.create.topics``. Every consumer printed three of them."""

    EXPECTED = ("api.version.request is deprecated", "broker.version.fallback is deprecated",
                "allow.auto.create.topics=false not supported by broker")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING and any(
                text in record.getMessage() for text in self.EXPECTED):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


#: librdkafka's own log lines
_LIBRDKAFKA_LOG = logging.getLogger(__name__ + ".librdkafka")
_LIBRDKAFKA_LOG.addFilter(_ExpectedOnOldBrokers())

#: records one fetch() may return when the caller sets no bound
DEFAULT_MAX_MESSAGES = 10_000
#: how far ahead of its consumer's position a fetch may start and still read on through
#: what librdkafka already holds (dropping the records below), instead of seeking
SKIP_AHEAD_MAX = 50_000
def _skip_queued(c: Any, position: int, offset: int) -> Optional[List[Any]]:
    """Read ``c`` (assigned to one partition, standing at ``position``) on to
    ``offset`` through what librdkafka already holds, dropping the records below it,
    without waiting: the records from ``offset`` on that came with the last chunk
    (``[]`` when none did), or None when what it holds ends before ``offset`` or an
    event comes first (the caller seeks). A Python worker that did not read this
    partition in the last batch has its next records queued: reading on through them
    cost less than a seek, which drops them and waits for a fetch in flight (about
    ``fetch.wait.max.ms``)."""
    while position < offset:
        got: List[Any] = c.consume(min(DEFAULT_MAX_MESSAGES, offset - position), 0)
        if not got:
            return None
        for i, record in enumerate(got):
            if record.error() is not None:
                return None
            if record.offset() >= offset:
                return got[i:]
        position = got[-1].offset() + 1
    return []


class ConfluentAccess:
    """:class:`~storm_kafka_compat.kafka.client.KafkaAccess` over confluent-kafka.

    Parameters
    ----------
    bootstrap_servers : str or list of str
        ``host:port`` of one or more brokers.
    spout : SpoutConfig
        Fetch settings (see the module table).
    client_config : mapping
        Extra librdkafka settings (security etc.).
    clock : callable
        Monotonic seconds, for fetch deadlines.
    consumer_factory : callable, optional
        ``factory(config) -> Consumer``; defaults to ``confluent_kafka.Consumer``
        (tests inject a double).

    Notes
    -----
    The consumer is created on first use. Calls are serialised by a lock; give
    each thread its own object for parallel fetches.
    """

    def __init__(self, bootstrap_servers: BootstrapServers, spout: SpoutConfig,
                 client_config: Mapping[str, Any] = {}, *,
                 clock: Callable[[], float] = time.monotonic,
                 consumer_factory: Optional[Callable[[Dict[str, Any]], Any]] = None,
                 fetch_timeout_ms: Optional[int] = None) -> None:
        self.config = consumer_config(bootstrap_servers, spout, client_config)
        self.spout = spout
        self._clock = clock
        self._factory = consumer_factory
        self._consumer: Any = None      # metadata and offset lookups
        # fetching: one consumer per partition, least recently used first;
        # value: [consumer, next offset it holds or None]
        self._fetchers: "OrderedDict[Tuple[str, int], List[Any]]" = OrderedDict()
        self._lock = threading.RLock()
        self._slice_s = (self.config["fetch.wait.max.ms"] + POLL_SLICE_MARGIN_MS) / 1000.0
        self._timeout_s = spout.socket_timeout_ms / 1000.0
        #: how long one fetch() polls for records (socketTimeoutMs unless bounded)
        self.fetch_timeout_ms = min(spout.socket_timeout_ms,
                                    fetch_timeout_ms or spout.socket_timeout_ms)
        self.last_client_error: Optional[str] = None
        self._oversized: Set[Tuple[str, int]] = set()   # partitions already warned about
        #: the consumer of fetch groups (all of a task's partitions), the partitions it
        #: holds, and what it handed out
        self._group: Any = None
        self._group_assigned: Set[PartitionKey] = set()
        #: of those, the ones paused (only they are resumed: before librdkafka 2.4.0,
        #: resuming a partition that was not paused fetched it again from a stale
        #: position, librdkafka #4636)
        self._group_paused: Set[PartitionKey] = set()
        self._held = HeldRecords()
        #: the brokers answer ListOffsets v1 (0.10.1+; :meth:`log_ends`)
        self._offsets_by_time = answers_list_offsets_v1(self.config)

    # --- KafkaAccess --------------------------------------------------------

    def offset_for(self, topic: str, partition: int, time: int) -> int:
        """See :meth:`KafkaAccess.offset_for` (a timestamp resolves through
        ``offsets_for_times``, ListOffsets v1+)."""
        from confluent_kafka import TopicPartition
        with self._lock:
            c = self._get_consumer()
            try:
                if time in (EARLIEST_TIME, LATEST_TIME):
                    low, high = c.get_watermark_offsets(TopicPartition(topic, partition),
                                                        timeout=self._timeout_s, cached=False)
                    return int(low if time == EARLIEST_TIME else high)
                found = c.offsets_for_times([TopicPartition(topic, partition, time)],
                                            timeout=self._timeout_s)
            except Exception as exc:
                self._mapped(exc, topic, partition, None, "offset lookup")
            if not found or found[0].offset < 0:
                return NO_OFFSET
            if found[0].error is not None:
                raise map_error(found[0].error, topic=topic, partition=partition, offset=None,
                                what="offset lookup")
            return int(found[0].offset)

    def fetch(self, topic: str, partition: int, offset: int, *,
              max_messages: Optional[int] = None,
              max_offset: Optional[int] = None) -> List[KafkaMessage]:
        """See :meth:`KafkaAccess.fetch`."""
        return self.fetch_batch(topic, partition, offset, max_messages=max_messages,
                                max_offset=max_offset).messages()

    def fetch_batch(self, topic: str, partition: int, offset: int, *,
                    max_messages: Optional[int] = None,
                    max_offset: Optional[int] = None) -> RecordBatch:
        """See :meth:`KafkaAccess.fetch_batch`.

        Waits for the first record (at most one poll slice), then takes what
        librdkafka already holds without waiting. With none, the log end is
        asked once: at the end ``[]`` is returned, beyond it ``[]`` after a grace
        period (a broker answering nothing; Kafka answers OFFSET_OUT_OF_RANGE), below
        it polling goes
        on until ``socketTimeoutMs``, then FailedFetchError.
        """
        empty = RecordBatch(topic, partition, [], [], [])
        if (max_messages is not None and max_messages <= 0) or (
                max_offset is not None and max_offset <= offset):
            return empty
        limit = DEFAULT_MAX_MESSAGES
        if max_messages is not None:
            limit = min(limit, max_messages)
        if max_offset is not None:
            limit = min(limit, max_offset - offset)
        key = (topic, partition)
        deadline = self._clock() + self.fetch_timeout_ms / 1000.0
        with self._lock:
            entry = self._fetcher(key)
            c = entry[0]
            try:
                held: Optional[List[Any]] = None
                if entry[1] != offset:
                    if entry[1] is not None and 0 < offset - entry[1] <= SKIP_AHEAD_MAX:
                        held = _skip_queued(c, entry[1], offset)
                    if held is None:
                        from confluent_kafka import TopicPartition
                        entry[1] = None
                        c.assign([TopicPartition(topic, partition, offset)])
                    entry[1] = offset
                if held:
                    records, eof = held, None
                else:
                    records, eof = self._first(c, topic, partition, offset, deadline)
                if not records:
                    if eof is not None and eof > offset:
                        entry[1] = eof        # past markers or aborted records
                    return empty
                while len(records) < limit:       # what is already fetched, no waiting
                    more = c.consume(limit - len(records), 0)
                    if not more:
                        break
                    records.extend(more)
                batch = record_batch(records, topic, partition, offset)
                self._check_size(batch)
            except KafkaAccessError:
                entry[1] = None
                raise
            except Exception as exc:
                entry[1] = None
                self._mapped(exc, topic, partition, offset, "fetch")
            if not batch:
                return empty
            entry[1] = batch.offsets[-1] + 1
            return batch.bounded(offset, max_messages=max_messages, max_offset=max_offset)

    def fetch_group(self, positions: Mapping[PartitionKey, int]) -> "ConfluentGroup":
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.fetch_group`: one
        ``Consumer`` (kept for the next task) with every partition of ``positions``
        assigned incrementally: a partition it already holds at that offset keeps
        librdkafka's prefetched records, one at another offset is sought there, one of
        an earlier task that this one does not read stays assigned, paused (Spark deals
        a batch's partitions over its tasks anew each batch: a partition comes back to a
        worker a few batches later, where it continues)."""
        from confluent_kafka import TopicPartition
        with self._lock:
            try:
                if self._group is None:
                    self._group = self._new_consumer(group_config(self.config))
                c = self._group
                other = [k for k in self._group_assigned if k not in positions]
                moved = [k for k, o in positions.items()
                         if k in self._group_assigned and not self._held.start(k, o)]
                new = [k for k in positions if k not in self._group_assigned]
                for k in new:
                    self._held.forget(k)
                    self._held.start(k, positions[k])
                if other:        # kept, paused: a partition comes back to a worker often
                    c.pause([TopicPartition(*k) for k in other])
                    self._group_paused.update(other)
                if new:
                    c.incremental_assign([TopicPartition(k[0], k[1], positions[k])
                                          for k in new])
                paused = [k for k in positions if k in self._group_paused]
                if paused:
                    c.resume([TopicPartition(*k) for k in paused])
                    self._group_paused.difference_update(paused)
                for k in moved:      # re-assigning in one call is ignored; a seek is not
                    c.seek(TopicPartition(k[0], k[1], positions[k]))
                self._group_assigned.update(positions)
            except Exception as exc:
                self._group_assigned = set()
                self._group_paused = set()
                self._held = HeldRecords()
                self._mapped(exc, None, None, None, "fetch")
        return ConfluentGroup(self, c, self._held, positions)

    def reads_groups(self) -> bool:
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.reads_groups`: on
        brokers of 0.10.1 on. On a Kafka 0.9 broker pinned as such, a partition whose
        leader was killed stayed unanswered by the group consumer and its lookups timed
        out batch after batch (tests/faults/test_kafka09_leaders.py); there each
        partition keeps a consumer of its own."""
        return self._offsets_by_time

    def log_ends(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.log_ends`
        (``offsets_for_times`` at the latest time, -1: one ListOffsets v1 per leader).
        Brokers pinned below 0.10.1 (``api.version.request`` false) have no ListOffsets
        v1: each partition's high watermark is asked instead, and a partition whose
        lookup fails (its leader gone) is left out unless every lookup failed."""
        return self._log_offsets(keys, LATEST_TIME)

    def log_starts(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.log_starts`: as
        :meth:`log_ends`, at the earliest time (-2), or each low watermark."""
        return self._log_offsets(keys, EARLIEST_TIME)

    def _log_offsets(self, keys: Sequence[PartitionKey], time: int) -> Dict[PartitionKey, int]:
        from confluent_kafka import TopicPartition
        if not keys:
            return {}
        if not self._offsets_by_time:
            return self._watermarks(keys, time)
        with self._lock:
            try:
                found = self._get_consumer().offsets_for_times(
                    [TopicPartition(t, p, time) for t, p in keys], timeout=self._timeout_s)
            except Exception as exc:
                self._mapped(exc, keys[0][0], None, None, "offset lookup")
        out: Dict[PartitionKey, int] = {}
        for tp in found:
            if tp.error is None and tp.offset >= 0:
                out[(tp.topic, tp.partition)] = int(tp.offset)
        return out

    def _watermarks(self, keys: Sequence[PartitionKey], time: int) -> Dict[PartitionKey, int]:
        """:meth:`_log_offsets` a partition at a time (ListOffsets v0, every broker)."""
        from confluent_kafka import TopicPartition
        out: Dict[PartitionKey, int] = {}
        failed: Optional[Exception] = None
        with self._lock:
            c = self._get_consumer()
            for topic, partition in keys:
                try:
                    low, high = c.get_watermark_offsets(TopicPartition(topic, partition),
                                                        timeout=self._timeout_s, cached=False)
                except Exception as exc:  # noqa: BLE001 - this partition left out
                    failed = failed or exc
                    continue
                offset = low if time == EARLIEST_TIME else high
                if offset is not None and offset >= 0:
                    out[(topic, partition)] = int(offset)
            if not out and failed is not None:
                self._mapped(failed, keys[0][0], None, None, "offset lookup")
        return out

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`KafkaAccess.fetched_log_end` (librdkafka's cached watermark,
        updated by every fetch response)."""
        from confluent_kafka import TopicPartition
        with self._lock:
            entry = self._fetchers.get((topic, partition))
            if entry is None:
                return None
            try:
                _low, high = entry[0].get_watermark_offsets(TopicPartition(topic, partition),
                                                            cached=True)
            except Exception:  # noqa: BLE001 - unknown is an answer here
                log.debug("no cached watermark for %s/%d", topic, partition, exc_info=True)
                return None
            return int(high) if high is not None and high >= 0 else None

    def fetched_position(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`KafkaAccess.fetched_position` (past invisible entries after an
        empty fetch: the offset librdkafka met the end of the partition at)."""
        with self._lock:
            entry = self._fetchers.get((topic, partition))
            return None if entry is None else entry[1]

    def _check_size(self, batch: RecordBatch) -> None:
        """Say once per partition that a record exceeded ``fetchSizeBytes`` (librdkafka
        grows its buffer for it, up to ``receive.message.max.bytes``)."""
        warn_oversized(self._oversized, batch, self.spout.fetch_size_bytes)

    def leaders(self, topic: str) -> Dict[int, Broker]:
        """See :meth:`KafkaAccess.leaders` (fresh metadata from the brokers)."""
        with self._lock:
            try:
                md = self._get_consumer().list_topics(topic, timeout=self._timeout_s)
            except Exception as exc:
                self._mapped(exc, topic, None, None, "metadata lookup")
            meta = md.topics.get(topic)
            if meta is None or meta.error is not None:
                return {}
            out: Dict[int, Broker] = {}
            for p, pm in sorted(meta.partitions.items()):
                broker = md.brokers.get(pm.leader) if pm.leader is not None else None
                if pm.leader is None or pm.leader < 0 or broker is None:
                    continue
                out[int(p)] = Broker(broker.host, int(broker.port))
            return out

    def topics(self) -> List[str]:
        """See :meth:`KafkaAccess.topics`."""
        with self._lock:
            try:
                md = self._get_consumer().list_topics(timeout=self._timeout_s)
            except Exception as exc:
                self._mapped(exc, None, None, None, "metadata lookup")
            return sorted(md.topics)

    def close(self) -> None:
        """Close every consumer."""
        with self._lock:
            consumers = [e[0] for e in self._fetchers.values()]
            if self._consumer is not None:
                consumers.append(self._consumer)
            if self._group is not None:
                consumers.append(self._group)
                self._group = None
                self._group_assigned = set()
                self._group_paused = set()
                self._held = HeldRecords()
            self._fetchers.clear()
            self._consumer = None
            for c in consumers:
                c.close()

    def __enter__(self) -> "ConfluentAccess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- internals ------------------------------------------------------------

    def _get_consumer(self) -> Any:
        if self._consumer is None:
            self._consumer = self._new_consumer()
        return self._consumer

    def _fetcher(self, key: Tuple[str, int]) -> List[Any]:
        """The consumer of ``key`` (LRU, at most MAX_FETCH_CONSUMERS): each keeps
        its partition assigned, so librdkafka prefetches it between calls.

        Beyond the limit the least recently used consumer is closed and a new one
        made: re-assigning a consumer to another partition waits for its fetch in
        flight, about ``fetch.wait.max.ms`` (102 ms a switch at 100 ms, measured),
        where a new consumer reads its first records in about 10 ms."""
        entry = self._fetchers.get(key)
        if entry is None:
            if len(self._fetchers) >= MAX_FETCH_CONSUMERS:
                _old, (old, _position) = self._fetchers.popitem(last=False)
                old.close()
            entry = [self._new_consumer(), None]
            self._fetchers[key] = entry
        else:
            self._fetchers.move_to_end(key)
        return entry

    def _new_consumer(self, settings: Optional[Mapping[str, Any]] = None) -> Any:
        config = dict(self.config if settings is None else settings, logger=_LIBRDKAFKA_LOG,
                      error_cb=self._on_client_error)
        try:
            if self._factory is not None:
                return self._factory(config)
            from confluent_kafka import Consumer
            return Consumer(config)
        except Exception as exc:
            if type(exc).__name__ == "KafkaException" and exc.args:
                raise ConfigError(
                    f"librdkafka refused the kafka settings: {exc.args[0].str()}; fix or "
                    "remove that key of the CONFIG kafka mapping (librdkafka names, see "
                    "its CONFIGURATION.md)", key="kafka") from exc
            raise

    def _on_client_error(self, error: Any) -> None:
        # client-wide conditions (all brokers down, ...); librdkafka reconnects by itself
        self.last_client_error = f"{error.name()}: {error.str()}"
        log.debug("librdkafka: %s", self.last_client_error)

    def _first(self, c: Any, topic: str, partition: int, offset: int,
               deadline: float) -> Tuple[List[Any], Optional[int]]:
        """The first record(s) at ``offset``, and where the partition's end was met
        when there are none (``[]`` at or beyond the log end)."""
        end: Optional[int] = None
        grace_until = 0.0
        reassigned = False
        while True:
            remaining = deadline - self._clock()
            got: List[Any] = c.consume(1, max(0.0, min(remaining, self._slice_s)))
            if got:
                err = got[0].error()
                if err is None:
                    return got, None
                from confluent_kafka import KafkaError
                if err.code() == KafkaError._PARTITION_EOF:
                    return [], got[0].offset()
                raise map_error(err, topic=topic, partition=partition, offset=offset,
                                what="fetch")
            if end is None:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    raise self._timeout(topic, partition, offset)
                from confluent_kafka import TopicPartition
                _low, end = c.get_watermark_offsets(TopicPartition(topic, partition),
                                                    timeout=remaining, cached=False)
                if offset == end:
                    return [], None
            if offset < end and not reassigned:
                # below the end and nothing comes: librdkafka may have passed markers
                # or aborted records to the end and told so (end of partition) with the
                # previous fetch; assigned afresh it reaches the end, and says so, again
                from confluent_kafka import TopicPartition
                c.assign([TopicPartition(topic, partition, offset)])
                reassigned = True
                continue
                grace_until = self._clock() + (self.config["fetch.wait.max.ms"]
                                               + BEYOND_END_GRACE_MS) / 1000.0
            elif offset > end and self._clock() >= grace_until:
                log.warning("offset %d of %s/%d is beyond the log end %d and the broker "
                            "answered no OFFSET_OUT_OF_RANGE; returning nothing", offset,
                            topic, partition, end)
                return [], None
            if self._clock() >= deadline:
                raise self._timeout(topic, partition, offset)

    def _mapped(self, exc: BaseException, topic: Optional[str], partition: Optional[int],
                offset: Optional[int], what: str) -> NoReturn:
        """Raise this project's error for ``exc`` (chained), or ``exc`` itself."""
        error = exc.args[0] if exc.args else None
        if not isinstance(exc, KafkaAccessError):
            if type(exc).__name__ == "KafkaException" and hasattr(error, "code"):
                raise map_error(error, topic=topic, partition=partition, offset=offset,
                                what=what) from exc
            if isinstance(exc, (OSError, TimeoutError)):
                raise FailedFetchError(
                    f"{what} for {topic}/{partition} failed ({type(exc).__name__}: {exc}); "
                    "the coordinator refreshes and the fetch is retried",
                    topic=topic, partition=partition, offset=offset) from exc
        raise exc

    def _timeout(self, topic: str, partition: int, offset: int) -> FailedFetchError:
        extra = f" (last client error: {self.last_client_error})" if self.last_client_error else ""
        return FailedFetchError(
            f"fetch of {topic}/{partition} at offset {offset} returned nothing within "
            f"{self.fetch_timeout_ms} ms although the log end is beyond it{extra}; the "
            "leader may have moved or be unreachable (the coordinator refreshes)",
            topic=topic, partition=partition, offset=offset)


class ConfluentGroup(GroupFetchBase):
    """A task's partitions on the access object's group consumer
    (:meth:`ConfluentAccess.fetch_group`): ``consume`` hands back the partitions'
    records interleaved, split here by ``Message.partition()`` (in C, ``map`` over the
    records); librdkafka's end-of-partition event ends a partition."""

    def __init__(self, owner: ConfluentAccess, consumer: Any, held: HeldRecords,
                 keys: Mapping[PartitionKey, int]) -> None:
        super().__init__(held, keys, settle_s=owner._slice_s, clock=owner._clock,
                         check=owner._check_size)
        self.owner = owner
        self.consumer = consumer
        topics = {t for t, _p in keys}
        #: the one topic of the group, when it has one (records keyed by partition alone)
        self.topic = next(iter(topics)) if len(topics) == 1 else None

    def receive(self, timeout_s: float, answer: GroupAnswer) -> None:
        from confluent_kafka import Message
        owner = self.owner
        with owner._lock:
            try:
                records = self._consume(timeout_s)
                if not records:
                    return
                errors = list(map(Message.error, records))
                if any(errors):
                    records = self._events(records, errors, answer)
                partitions: List[Any] = list(map(Message.partition, records))
                if self.topic is None:
                    partitions = list(zip(map(Message.topic, records), partitions))
                for part, recs in split_by_partition(partitions, records):
                    key = (self.topic, part) if self.topic is not None else part
                    self.hand(answer, key, record_batch(list(recs), key[0], key[1]))
            except KafkaAccessError as exc:
                for key in self.live:
                    answer.errors[key] = exc
            except Exception as exc:  # noqa: BLE001 - mapped, then answered per partition
                try:
                    owner._mapped(exc, self.topic, None, None, "fetch")
                except Exception as mapped:  # noqa: BLE001
                    for key in self.live:
                        answer.errors[key] = mapped

    def _consume(self, timeout_s: float) -> List[Any]:
        """What librdkafka holds, at most DEFAULT_MAX_MESSAGES: the first record waited
        for (at most ``timeout_s``), the rest taken without waiting (``consume(n, t)``
        waits out ``t`` whenever fewer than ``n`` are queued)."""
        c = self.consumer
        records: List[Any] = c.consume(1, max(0.0, timeout_s))
        while records and len(records) < DEFAULT_MAX_MESSAGES:
            more = c.consume(DEFAULT_MAX_MESSAGES - len(records), 0)
            if not more:
                break
            records.extend(more)
        return records

    def _events(self, records: List[Any], errors: List[Any], answer: GroupAnswer
                ) -> List[Any]:
        """The records without librdkafka's events (``errors``: each record's): an end
        of partition ends its partition (and says where the client stands), an error is
        that partition's."""
        from confluent_kafka import KafkaError
        for m in compress(records, errors):
            err = m.error()
            key = (m.topic(), m.partition())
            if err.code() == KafkaError._PARTITION_EOF:
                if m.offset() is not None and m.offset() >= 0:
                    self.held.passed(key, m.offset())
                answer.ended[key] = self.held.handed.get(key)
            elif m.partition() is not None and m.partition() >= 0:
                answer.errors[key] = map_error(err, topic=key[0], partition=key[1],
                                               offset=self.held.handed.get(key), what="fetch")
            else:
                log.debug("librdkafka: %s", err)
        return list(compress(records, map(is_, errors, repeat(None))))

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`~storm_kafka_compat.kafka.client.FetchGroup.fetched_log_end`
        (librdkafka's cached watermark)."""
        from confluent_kafka import TopicPartition
        try:
            _low, high = self.consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                             cached=True)
        except Exception:  # noqa: BLE001 - unknown is an answer here
            return None
        return int(high) if high is not None and high >= 0 else None

    def pause(self, key: PartitionKey) -> None:
        from confluent_kafka import TopicPartition
        try:
            self.consumer.pause([TopicPartition(*key)])
            self.owner._group_paused.add(key)
        except Exception:  # noqa: BLE001 - an unassigned partition: nothing to pause
            log.debug("pausing %s/%d failed", key[0], key[1], exc_info=True)
