"""KafkaAccess over kafka-python 3.x (``KafkaConsumer`` without a group).

One consumer per access object, reused across partitions: ``assign`` +
``seek`` + ``poll``; no group, no Kafka-side commits. When the next call asks
for the offset the consumer is already at, the seek is skipped and records
already buffered are served. A task holding several partitions reads them all with
one more consumer (:meth:`KafkaPythonAccess.fetch_group`, :class:`KafkaPythonGroup`).

The KafkaConsumer settings a SpoutConfig becomes, and those this adapter owns, are
:mod:`storm_kafka_compat.kafka.kafka_python_settings`'s. Offsets no consumer receives
(transaction markers, aborted records under ``read_committed``) leave gaps; a fetch that
meets only such entries before the log end returns ``[]`` at once and its position
(:meth:`KafkaPythonAccess.fetched_position`) is past them.

Against Kafka-protocol brokers that are not Apache Kafka be aware that (the
test broker's defects are listed in docs/testing.md):

* a broker that never answers ``OFFSET_OUT_OF_RANGE`` returns nothing for a
  fetch beyond the log end, so this adapter returns ``[]`` there;
* a broker may report a high watermark that lags what it holds when record
  batches hold several records;
* ListOffsets by timestamp may answer the log start for every timestamp, so
  timestamp starts are tested against ScriptedKafka and real Kafka only.
"""

from __future__ import annotations

import logging
from operator import attrgetter
import threading
import time
from collections import OrderedDict
from typing import (Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence,
                    Set, Tuple)

from storm_kafka_compat.config.kafka_settings import BootstrapServers
from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, NO_OFFSET, Broker, SpoutConfig
from storm_kafka_compat.errors import FailedFetchError, KafkaAccessError, OffsetOutOfRangeError
from storm_kafka_compat.kafka.client import (BEYOND_END_GRACE_MS, MAX_FETCH_CONSUMERS,
                                             NO_TIMESTAMP, NO_TIMESTAMP_TYPE,
                                             POLL_SLICE_MARGIN_MS, KafkaMessage, RecordBatch,
                                             warn_oversized)
from storm_kafka_compat.kafka.fetch_group import (GroupAnswer, GroupFetchBase, HeldRecords,
                                                  PartitionKey)
from storm_kafka_compat.kafka.kafka_python_records import install as install_reader
from storm_kafka_compat.kafka.kafka_python_settings import (DEFAULT_MAX_POLL_RECORDS,
                                                         consumer_config, group_config)

log = logging.getLogger(__name__)

#: a fetched record's offset and value, read in C over a whole fetch
_OFFSET = attrgetter("offset")
_VALUE = attrgetter("value")

class KafkaPythonAccess:
    """:class:`~storm_kafka_compat.kafka.client.KafkaAccess` over kafka-python.

    Parameters
    ----------
    bootstrap_servers : str or list of str
        ``host:port`` of one or more brokers.
    spout : SpoutConfig
        Fetch settings (see the module table).
    client_config : mapping
        Extra ``KafkaConsumer`` settings (security etc.).
    clock : callable
        Monotonic seconds, for fetch deadlines.

    Notes
    -----
    The consumer is created on first use. Not thread-safe across threads
    beyond a lock serialising calls: give each thread its own object.
    """

    def __init__(self, bootstrap_servers: BootstrapServers, spout: SpoutConfig,
                 client_config: Mapping[str, Any] = {}, *,
                 clock: Callable[[], float] = time.monotonic,
                 fetch_timeout_ms: Optional[int] = None) -> None:
        self.config = consumer_config(bootstrap_servers, spout, client_config)
        self.spout = spout
        self._clock = clock
        #: how long one fetch() polls for records (socketTimeoutMs unless bounded)
        self.fetch_timeout_ms = min(spout.socket_timeout_ms,
                                    fetch_timeout_ms or spout.socket_timeout_ms)
        self._consumer: Any = None            # metadata and offsets
        #: one consumer per fetched partition, least recently used first: a
        #: partition keeps its assignment, position and prefetched records between
        #: fetches (re-assigning one shared consumer dropped its buffer each time,
        #: the adapter read 0.35x raw kafka-python in the benchmark)
        self._fetchers: "OrderedDict[Any, Any]" = OrderedDict()
        self._positions: Dict[Any, int] = {}   # partition -> next offset of its fetcher
        self._lock = threading.RLock()
        self._slice_ms = self.config["fetch_max_wait_ms"] + POLL_SLICE_MARGIN_MS
        self._oversized: Set[Tuple[str, int]] = set()   # partitions already warned about
        #: the consumer of fetch groups (all of a task's partitions), and what it handed out
        self._group: Any = None
        self._group_tps: Dict[PartitionKey, Any] = {}
        self._held = HeldRecords()

    # --- KafkaAccess --------------------------------------------------------

    def offset_for(self, topic: str, partition: int, time: int) -> int:
        """See :meth:`KafkaAccess.offset_for`. A timestamp resolves through
        ListOffsets v1 (``offsets_for_times``): the first message at or after
        it, or ``NO_OFFSET`` when there is none."""
        from kafka import TopicPartition
        tp = TopicPartition(topic, partition)
        timeout_ms = self.spout.socket_timeout_ms
        with self._lock, self._errors(topic, partition, None, "offset lookup"):
            c = self._get_consumer()
            if time == EARLIEST_TIME:
                return int(c.beginning_offsets([tp], timeout_ms=timeout_ms)[tp])
            if time == LATEST_TIME:
                return int(c.end_offsets([tp], timeout_ms=timeout_ms)[tp])
            import kafka.errors as Errors
            try:
                found = c.offsets_for_times({tp: time}, timeout_ms=timeout_ms).get(tp)
            except (Errors.IncompatibleBrokerVersion, Errors.UnsupportedVersionError) as exc:
                raise KafkaAccessError(
                    f"{topic}/{partition}: the offset for the time {time} (epoch ms) cannot be "
                    "found: resolving a time needs message timestamps (ListOffsets v1, "
                    "brokers from Kafka 0.10.1 on; deviation 5) and this broker is older; use "
                    "startOffsetTime -2 (earliest) or -1 (latest), or `offsets reset "
                    "--to-offset N`", topic=topic, partition=partition) from exc
            return NO_OFFSET if found is None else int(found.offset)

    def fetch(self, topic: str, partition: int, offset: int, *,
              max_messages: Optional[int] = None,
              max_offset: Optional[int] = None) -> List[KafkaMessage]:
        """See :meth:`KafkaAccess.fetch`."""
        batch = self.fetch_batch(topic, partition, offset, max_messages=max_messages,
                                 max_offset=max_offset)
        return _messages(batch.messages())

    def fetch_batch(self, topic: str, partition: int, offset: int, *,
                    max_messages: Optional[int] = None,
                    max_offset: Optional[int] = None) -> RecordBatch:
        """See :meth:`KafkaAccess.fetch_batch`; the records are :class:`KafkaMessage`
        tuples (:mod:`~storm_kafka_compat.kafka.kafka_python_records`).

        Polls until records arrive. With none, the log end is asked once:
        at the end ``[]`` is returned; beyond it Kafka answers
        ``OFFSET_OUT_OF_RANGE`` (raised as OffsetOutOfRangeError) while a broker
        that answers nothing gets ``[]`` after one more poll round, logged at WARN;
        below it polling goes on until ``socketTimeoutMs``, then
        FailedFetchError.
        """
        from kafka import TopicPartition
        if (max_messages is not None and max_messages <= 0) or (
                max_offset is not None and max_offset <= offset):
            return RecordBatch(topic, partition, [], [], [])
        tp = TopicPartition(topic, partition)
        limit = DEFAULT_MAX_POLL_RECORDS
        if max_messages is not None:
            limit = min(limit, max_messages)
        if max_offset is not None:
            limit = min(limit, max_offset - offset)
        deadline = self._clock() + self.fetch_timeout_ms / 1000.0
        with self._lock, self._errors(topic, partition, offset, "fetch"):
            c = self._fetcher(tp)
            self._prepare(c, tp, offset)
            end: Optional[int] = None
            grace_until = 0.0
            while True:
                remaining_ms = int((deadline - self._clock()) * 1000)
                records = c.poll(timeout_ms=max(0, min(remaining_ms, self._slice_ms)),
                                 max_records=limit).get(tp, [])
                if records:
                    self._positions[tp] = records[-1].offset + 1
                    batch = RecordBatch(topic, partition, list(map(_OFFSET, records)),
                                        list(map(_VALUE, records)), records)
                    self._check_size(batch)
                    return batch.bounded(offset, max_messages=max_messages,
                                         max_offset=max_offset)
                # nothing returned, yet the consumer may have moved: past transaction
                # markers, or aborted records under read_committed (entries no consumer
                # receives); at the log end there is nothing more to wait for
                position = int(c.position(tp))
                if position > offset:
                    self._positions[tp] = position
                if end is None:
                    remaining_ms = int((deadline - self._clock()) * 1000)
                    if remaining_ms <= 0:
                        raise _timeout(topic, partition, offset, self.fetch_timeout_ms)
                    end = int(c.end_offsets([tp], timeout_ms=remaining_ms)[tp])
                    if offset == end:
                        return RecordBatch(topic, partition, [], [], [])
                    grace_until = self._clock() + (self.config["fetch_max_wait_ms"]
                                                   + BEYOND_END_GRACE_MS) / 1000.0
                if offset < position >= end:      # passed invisible entries to the end
                    return RecordBatch(topic, partition, [], [], [])
                if offset > end and self._clock() >= grace_until:
                    log.warning("offset %d of %s/%d is beyond the log end %d and the "
                                "broker answered no OFFSET_OUT_OF_RANGE; returning "
                                "nothing", offset, topic, partition, end)
                    return RecordBatch(topic, partition, [], [], [])
                if self._clock() >= deadline:
                    raise _timeout(topic, partition, offset, self.fetch_timeout_ms)

    def fetch_group(self, positions: Mapping[PartitionKey, int]) -> "KafkaPythonGroup":
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.fetch_group`: one
        ``KafkaConsumer`` (kept for the next task) assigned every partition of
        ``positions``; a partition it already holds at that offset keeps its buffered
        records, the others are sought. Partitions of earlier tasks stay assigned,
        paused (they come back to the worker a few batches later)."""
        from kafka import TopicPartition
        tps = {key: TopicPartition(*key) for key in positions}
        with self._lock, self._errors(None, None, None, "fetch"):
            if self._group is None:
                self._group = self._new_consumer(group_config(self.config))
            c = self._group
            self._group_tps.update(tps)
            c.assign(list(self._group_tps.values()))
            other = [tp for key, tp in self._group_tps.items() if key not in tps]
            if other:
                c.pause(*other)
            c.resume(*tps.values())
            for key, offset in positions.items():
                if not self._held.start(key, offset):
                    c.seek(tps[key], offset)
        return KafkaPythonGroup(self, c, self._held, tps)

    def reads_groups(self) -> bool:
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.reads_groups`
        (every broker version)."""
        return True

    def log_ends(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.log_ends` (one
        ListOffsets request per leader)."""
        return self._log_offsets(keys, LATEST_TIME)

    def log_starts(self, keys: Sequence[PartitionKey]) -> Dict[PartitionKey, int]:
        """See :meth:`~storm_kafka_compat.kafka.client.GroupKafka.log_starts` (one
        ListOffsets request per leader)."""
        return self._log_offsets(keys, EARLIEST_TIME)

    def _log_offsets(self, keys: Sequence[PartitionKey], time: int) -> Dict[PartitionKey, int]:
        from kafka import TopicPartition
        if not keys:
            return {}
        tps = [TopicPartition(*key) for key in keys]
        timeout_ms = self.spout.socket_timeout_ms
        with self._lock, self._errors(keys[0][0], None, None, "offset lookup"):
            c = self._get_consumer()
            found = (c.end_offsets(tps, timeout_ms=timeout_ms) if time == LATEST_TIME
                     else c.beginning_offsets(tps, timeout_ms=timeout_ms))
        return {(tp.topic, tp.partition): int(offset) for tp, offset in found.items()}

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`KafkaAccess.fetched_log_end` (``KafkaConsumer.highwater``)."""
        from kafka import TopicPartition
        tp = TopicPartition(topic, partition)
        with self._lock:
            c = self._fetchers.get(tp)
            if c is None:
                return None
            try:
                end = c.highwater(tp)
            except Exception:  # noqa: BLE001 - unknown is an answer here
                log.debug("no high watermark for %s/%d", topic, partition, exc_info=True)
                return None
            return None if end is None else int(end)

    def fetched_position(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`KafkaAccess.fetched_position` (where this partition's consumer
        stands, past invisible entries after an empty fetch)."""
        from kafka import TopicPartition
        with self._lock:
            return self._positions.get(TopicPartition(topic, partition))

    def _check_size(self, batch: RecordBatch) -> None:
        """Say once per partition that a record exceeded ``fetchSizeBytes``: Kafka
        0.10.1+ returns such a first record anyway (KIP-74), one per fetch."""
        warn_oversized(self._oversized, batch, self.spout.fetch_size_bytes)

    def leaders(self, topic: str) -> Dict[int, Broker]:
        """See :meth:`KafkaAccess.leaders` (fresh metadata from the brokers)."""
        from kafka import TopicPartition
        with self._lock, self._errors(topic, None, None, "metadata lookup"):
            c = self._get_consumer()
            self._refresh_metadata(c)
            cluster = c._cluster  # kafka-python keeps leaders only there
            out: Dict[int, Broker] = {}
            for p in sorted(cluster.partitions_for_topic(topic) or ()):
                leader = cluster.leader_for_partition(TopicPartition(topic, p))
                if leader is None or leader < 0:
                    continue
                meta = cluster.broker_metadata(leader)
                if meta is not None:
                    out[p] = Broker(meta.host, int(meta.port))
            return out

    def topics(self) -> List[str]:
        """See :meth:`KafkaAccess.topics`."""
        with self._lock, self._errors(None, None, None, "metadata lookup"):
            c = self._get_consumer()
            self._refresh_metadata(c)
            return sorted(c._cluster.topics())

    def close(self) -> None:
        """Close every consumer."""
        with self._lock:
            consumers = list(self._fetchers.values())
            if self._consumer is not None:
                consumers.append(self._consumer)
            if self._group is not None:
                consumers.append(self._group)
                self._group = None
                self._group_tps = {}
                self._held = HeldRecords()
            self._fetchers.clear()
            self._positions.clear()
            self._consumer = None
            for c in consumers:
                try:
                    c.close()
                except Exception:  # closing is best effort
                    log.debug("closing a consumer failed", exc_info=True)

    def __enter__(self) -> "KafkaPythonAccess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- internals ------------------------------------------------------------

    def _get_consumer(self) -> Any:
        if self._consumer is None:
            self._consumer = self._new_consumer()
        return self._consumer

    def _new_consumer(self, config: Optional[Mapping[str, Any]] = None) -> Any:
        """A ``KafkaConsumer`` of this access object's settings (or ``config``), reading
        its fetches with :func:`~storm_kafka_compat.kafka.kafka_python_records.install`'s
        reader."""
        from kafka import KafkaConsumer
        c = KafkaConsumer(**(self.config if config is None else config))
        install_reader(c)
        return c

    def _refresh_metadata(self, c: Any) -> None:
        """Fresh metadata of every topic, within ``socketTimeoutMs``.

        ``KafkaConsumer.topics()`` waits for it without a deadline: with
        ``api_version`` set (which 0.9 brokers need) nothing is bootstrapped
        before the first call, and brokers that do not answer made ``run``,
        ``offsets show`` and ``offsets explain`` hang for ever. Raises
        kafka-python's KafkaTimeoutError (a FailedFetchError here) instead."""
        net, manager = getattr(c, "_net", None), getattr(c, "_manager", None)
        cluster = c._cluster
        if net is None or manager is None:     # another kafka-python 3 layout
            c.topics()
            return
        stash = cluster.need_all_topic_metadata
        cluster.need_all_topic_metadata = True
        try:
            net.run(manager.wait_for, cluster.request_update(), self.spout.socket_timeout_ms)
        finally:
            cluster.need_all_topic_metadata = stash

    def _fetcher(self, tp: Any) -> Any:
        """The consumer assigned to ``tp`` alone: its own, else a new one, or beyond
        MAX_FETCH_CONSUMERS the least recently used one assigned to ``tp`` instead
        (about 6 ms a switch, measured, where closing it and making a new consumer,
        which connects and asks for metadata again, took 174 ms)."""
        c = self._fetchers.get(tp)
        if c is not None:
            self._fetchers.move_to_end(tp)
            return c
        while len(self._fetchers) > max(1, MAX_FETCH_CONSUMERS):
            old_tp, old = self._fetchers.popitem(last=False)
            self._positions.pop(old_tp, None)
            old.close()
        if self._fetchers and len(self._fetchers) >= MAX_FETCH_CONSUMERS:
            old_tp, c = self._fetchers.popitem(last=False)
            self._positions.pop(old_tp, None)
        else:
            c = self._new_consumer()
        c.assign([tp])
        self._fetchers[tp] = c
        return c

    def _prepare(self, c: Any, tp: Any, offset: int) -> None:
        if self._positions.get(tp) != offset:
            self._positions.pop(tp, None)
            c.seek(tp, offset)
            self._positions[tp] = offset

    def _forget_positions(self, topic: Optional[str] = None,
                          partition: Optional[int] = None) -> None:
        """After an error nothing is known of the consumers' positions: seek again.
        The failed partition's consumer is closed too, so the retry starts from a
        fresh one (a consumer once seen to return nothing for 10 s at an offset below
        the log end kept doing so; a new one read on)."""
        self._positions.clear()
        if topic is None or partition is None:
            return
        from kafka import TopicPartition
        c = self._fetchers.pop(TopicPartition(topic, partition), None)
        if c is not None:
            try:
                c.close()
            except Exception:  # best effort
                log.debug("closing the consumer of %s/%d failed", topic, partition,
                          exc_info=True)

    def _forget_metadata_consumer(self) -> None:
        """Close the consumer of offset and metadata lookups after a retriable
        failure: the next lookup starts from a fresh one. After a broker was killed
        and restarted (real Kafka 0.9, kafka-python 3.0), the old one timed out on
        every lookup, for partitions led by the broker that never went away too,
        and never recovered; the driver loop then spent socketTimeoutMs per lookup."""
        c, self._consumer = self._consumer, None
        if c is not None:
            try:
                c.close()
            except Exception:  # best effort
                log.debug("closing the metadata consumer failed", exc_info=True)

    def _errors(self, topic: Optional[str], partition: Optional[int], offset: Optional[int],
                what: str) -> "_ErrorMap":
        return _ErrorMap(self, topic, partition, offset, what)


class KafkaPythonGroup(GroupFetchBase):
    """A task's partitions on the access object's group consumer
    (:meth:`KafkaPythonAccess.fetch_group`): kafka-python's ``poll`` hands back records
    already split by partition; a partition has ended when its position reached the
    high watermark its latest fetch reported."""

    def __init__(self, owner: KafkaPythonAccess, consumer: Any, held: HeldRecords,
                 tps: Mapping[PartitionKey, Any]) -> None:
        super().__init__(held, tps, settle_s=owner._slice_ms / 1000.0, clock=owner._clock,
                         check=owner._check_size)
        self.owner = owner
        self.consumer = consumer
        self.tps = dict(tps)

    def receive(self, timeout_s: float, answer: GroupAnswer) -> None:
        import kafka.errors as Errors
        c = self.consumer
        with self.owner._lock:
            try:
                with self.owner._errors(None, None, None, "fetch"):
                    try:
                        got = c.poll(timeout_ms=max(0, int(timeout_s * 1000)),
                                     max_records=DEFAULT_MAX_POLL_RECORDS)
                    except Errors.OffsetOutOfRangeError as exc:
                        self._out_of_range(exc, answer)
                        return
            except KafkaAccessError as exc:
                for key in self.live:
                    answer.errors[key] = exc
                return
            for tp, records in got.items():
                if records:
                    self.hand(answer, (tp.topic, tp.partition), RecordBatch(
                        tp.topic, tp.partition, list(map(_OFFSET, records)),
                        list(map(_VALUE, records)), records))

    def _out_of_range(self, exc: Exception, answer: GroupAnswer) -> None:
        """kafka-python raised OFFSET_OUT_OF_RANGE for the partitions its argument maps
        to their offsets (all the live ones when it does not say)."""
        where = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {
            tp: self.held.handed.get(key) for key, tp in self.tps.items() if key in self.live}
        for tp, offset in where.items():
            key = (tp.topic, tp.partition)
            answer.errors[key] = OffsetOutOfRangeError(
                f"offset {offset} for {tp.topic}/{tp.partition} is out of range "
                "(OFFSET_OUT_OF_RANGE); restart from startOffsetTime or a valid offset",
                topic=tp.topic, partition=tp.partition, offset=offset)

    def at_log_end(self, answer: GroupAnswer) -> None:
        """As the base says, and also the partitions whose position passed entries no
        consumer receives up to the high watermark (transaction markers, aborted records
        under read_committed): kafka-python hands out nothing for them."""
        super().at_log_end(answer)
        c = self.consumer
        for key in self.live:
            if key in answer.ended or key in answer.errors:
                continue
            tp = self.tps[key]
            end = c.highwater(tp)
            if end is None:
                continue
            position = int(c.position(tp))
            if position >= end:
                self.held.passed(key, position)
                answer.ended[key] = position

    def fetched_log_end(self, topic: str, partition: int) -> Optional[int]:
        """See :meth:`~storm_kafka_compat.kafka.client.FetchGroup.fetched_log_end`."""
        tp = self.tps.get((topic, partition))
        end = None if tp is None else self.consumer.highwater(tp)
        return None if end is None else int(end)

    def pause(self, key: PartitionKey) -> None:
        self.consumer.pause(self.tps[key])


class _ErrorMap:
    """Maps kafka-python and socket errors onto this project's errors."""

    def __init__(self, owner: KafkaPythonAccess, topic: Optional[str],
                 partition: Optional[int], offset: Optional[int], what: str) -> None:
        self.owner, self.topic, self.partition, self.offset, self.what = (
            owner, topic, partition, offset, what)

    def __enter__(self) -> None:
        return None

    def __exit__(self, etype: Any, exc: Optional[BaseException], tb: Any) -> Literal[False]:
        if exc is None or isinstance(exc, KafkaAccessError):
            if exc is not None:
                self.owner._forget_positions(self.topic, self.partition)
            return False
        import kafka.errors as Errors
        where = f"{self.topic}/{self.partition}" if self.partition is not None else f"{self.topic}"
        kw: Dict[str, Any] = dict(topic=self.topic, partition=self.partition, offset=self.offset)
        self.owner._forget_positions(self.topic, self.partition)
        if isinstance(exc, Errors.OffsetOutOfRangeError):
            raise OffsetOutOfRangeError(
                f"offset {self.offset} for {where} is out of range (OFFSET_OUT_OF_RANGE); "
                "restart from startOffsetTime or a valid offset", **kw) from exc
        if isinstance(exc, getattr(Errors, "LogTruncationError", ())):
            # KIP-320 validation found the log truncated below our position: the
            # same situation as OFFSET_OUT_OF_RANGE beyond the log end
            raise OffsetOutOfRangeError(
                f"offset {self.offset} for {where} is beyond the log after a truncation "
                f"({exc}); restart from startOffsetTime or a valid offset", **kw) from exc
        if type(exc).__name__ == "RecordTooLargeError":
            # a broker before 0.10.1 cannot return a message larger than the fetch
            # (storm-kafka stalled there silently, STORM-869)
            raise KafkaAccessError(
                f"a message at offset {self.offset} of {where} is larger than fetchSizeBytes "
                f"{self.owner.spout.fetch_size_bytes} and this broker (before Kafka 0.10.1) "
                "cannot return part of it: raise spout.fetchSizeBytes above the largest "
                "message (the broker's message.max.bytes)", **kw) from exc
        if isinstance(exc, (OSError, TimeoutError)) or (
                isinstance(exc, Errors.KafkaError) and exc.retriable):
            log.warning("%s for %s failed: %s: %s", self.what, where, type(exc).__name__, exc)
            if self.what != "fetch":
                self.owner._forget_metadata_consumer()
            hint = ""
            if "bootstrap" in str(exc).lower():
                from storm_kafka_compat.kafka.probe import version_hint
                refused = _refused_credentials(self.owner.config)
                if refused is not None:
                    raise KafkaAccessError(
                        f"{self.what} for {where} failed: SASL authentication failed, the "
                        f"broker refused the credentials of user "
                        f"{self.owner.config.get('sasl_plain_username')!r} "
                        f"({self.owner.config.get('sasl_mechanism', 'PLAIN')}: {refused}); "
                        "check kafka.sasl_plain_username and kafka.sasl_plain_password (and "
                        "kafka.sasl_mechanism) in the CONFIG", **kw) from exc
                hint = version_hint(self.owner.config["bootstrap_servers"], self.owner.config)
            name = type(exc).__name__
            detail = str(exc).removeprefix(f"{name}: ")
            if isinstance(exc, Errors.KafkaTimeoutError):
                servers = self.owner.config["bootstrap_servers"]
                shown = ",".join(servers) if isinstance(servers, (list, tuple)) else servers
                bound = (f"{self.owner.fetch_timeout_ms} ms (a fetch's deadline)"
                         if self.what == "fetch" else
                         f"socketTimeoutMs {self.owner.spout.socket_timeout_ms} ms")
                detail = f"{detail}: no answer from {shown} within {bound}"
            raise FailedFetchError(
                f"{self.what} for {where} failed ({name}: {detail}); check that the broker "
                "is up and reachable (a running job refreshes its partitions and "
                f"retries){hint}", **kw) from exc
        if isinstance(exc, Errors.KafkaError):
            raise KafkaAccessError(
                f"{self.what} for {where} failed ({type(exc).__name__}: {exc}); check the "
                "topic, the ACLs and the kafka client settings", **kw) from exc
        return False


def _refused_credentials(config: Mapping[str, Any]) -> Optional[str]:
    """The broker's reason for refusing the configured SASL credentials (asked of
    the first bootstrap server), or None."""
    from storm_kafka_compat.kafka.probe import sasl_refusal
    servers = config.get("bootstrap_servers") or ()
    first = (servers.split(",") if isinstance(servers, str) else list(servers))[:1]
    return sasl_refusal(first[0], config) if first else None


def _timeout(topic: str, partition: int, offset: int, timeout_ms: int) -> FailedFetchError:
    return FailedFetchError(
        f"fetch of {topic}/{partition} at offset {offset} returned nothing within "
        f"{timeout_ms} ms although the log end is beyond it; the leader may have moved or "
        "be unreachable (the coordinator refreshes)",
        topic=topic, partition=partition, offset=offset)


def _messages(records: List[Any]) -> List[KafkaMessage]:
    """Fetched records as :class:`KafkaMessage` objects: as they are when this
    project's reader made them, else from kafka-python's ``ConsumerRecord`` objects.

    The hot path of every fetch: the tuples are built directly (no NamedTuple
    keyword handling) and an empty header list is not copied, 0.94 -> 0.64 us a
    record here. Message format v0 (Kafka 0.9) has no timestamp: kafka-python
    gives None, the contract -1.
    """
    km = KafkaMessage
    if records and type(records[0]) is km:
        return list(records)
    new = tuple.__new__
    none_ts, none_type = NO_TIMESTAMP, NO_TIMESTAMP_TYPE
    return [new(km, (r.offset, r.key, r.value, none_ts if r.timestamp is None else r.timestamp,
                     none_type if r.timestamp_type is None else r.timestamp_type,
                     tuple(r.headers) if r.headers else (), r.topic, r.partition))
            for r in records]
