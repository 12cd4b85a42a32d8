"""Executor-side processing of one fetched batch of one partition (pure; no Spark).

The executor calls :func:`process_batch` inside ``mapPartitions``: it filters the
fetched messages by the partition manager's plan, runs the scheme, then the
simple bolt or the whole bolt DAG in this task (:mod:`.dag`), tracks every
tuple tree with the XOR acker, and returns a :class:`BatchOutcome` holding
offset ranges, not per-message objects. Groupings then hold within one
partition's batch; a topology whose groupings cross partitions runs as several
Spark stages instead (:mod:`.stage_tasks`, :mod:`.stages`).

"Replay" here: a failed tree fails its Kafka offset; the partition manager
re-fetches it per the retry settings. A tree still open when the batch ends (a
rich bolt that kept a tuple without acking it) is reported separately in
:attr:`BatchOutcome.incomplete`: its offset stays pending (it blocks the
commit) and the driver fails it once ``topology.message.timeout.secs`` has
passed, as Storm's spout times out a tuple tree.
"""

from __future__ import annotations

import bisect
import logging
import random
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, Union, cast)

from storm_kafka_compat.topology.acker import Acker, new_id
from storm_kafka_compat.topology.bolts import FailedException, KeyedRoute, SimpleBolt
from storm_kafka_compat.kafka.client import RecordBatch
from storm_kafka_compat.topology.schemes import MessageLike, Scheme, ValueScheme, value_tuple_of
from storm_kafka_compat.topology.builder import Topology
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.offsets.ranges import Range, coalesce, subtract
from storm_kafka_compat.structs import BoltError, ErrorTally
from storm_kafka_compat.topology.tuples import StormTuple, spout_tuple, spout_tuple_class
from storm_kafka_compat.executor.dag import LocalRuntime, TaskDispatcher, diff_counts, local_runtime

logger = logging.getLogger(__name__)

SPOUT_COMPONENT = "spout"
#: the component name of a simple bolt (``bolt: module:callable``)
SIMPLE_BOLT = "bolt"


# --- plan and outcome -------------------------------------------------------------

def as_fetch_plan(plan: Union[FetchPlan, int]) -> FetchPlan:
    """The plan of a batch: a :class:`~storm_kafka_compat.spout.manager.FetchPlan`
    as the managers make it, or an int (new data from that offset)."""
    if isinstance(plan, FetchPlan):
        return plan
    return FetchPlan.at(int(plan))


@dataclass
class BatchOutcome:
    """What one batch did to one partition.

    Attributes
    ----------
    topic, partition : str, int
        The partition (None when the batch held no message).
    taken : list of (start, end_exclusive)
        Offsets taken from the fetch, coalesced ranges.
    acked : list of (start, end_exclusive)
        Taken offsets whose trees completed, tombstones and messages giving no tuple included.
    failed : list of int
        Taken offsets that failed (explicit fail, bolt or scheme error), ascending.
    incomplete : list of int
        Taken offsets whose tuple tree was still open at the end of the batch
        (neither acked nor failed), ascending. They are not in ``acked`` nor in
        ``failed``: the driver keeps them pending until the message timeout.
    skipped_null : int
        Messages that gave no tuple (tombstones), acked without running a bolt.
    next_offset : int, optional
        The offset after the last taken message (next to read), None when nothing
        was taken; the manager keeps ``max(emitted_to, next_offset)``.
    scanned_to : int, optional
        One past the last offset the fetch returned, taken or not (for
        ``PartitionManager.fetched(scanned_to=...)``); None for an empty fetch.
    stage_counts : dict
        Component -> counters (``executed``, ``emitted``, ``acked``, ``failed``;
        the spout: ``messages``, ``emitted``).
    errors : list of BoltError
        The bolts' and the scheme's exceptions, by component and type.
    """

    topic: Optional[str] = None
    partition: Optional[int] = None
    taken: List[Range] = field(default_factory=list)
    acked: List[Range] = field(default_factory=list)
    failed: List[int] = field(default_factory=list)
    skipped_null: int = 0
    next_offset: Optional[int] = None
    scanned_to: Optional[int] = None
    stage_counts: Dict[str, Dict[str, int]] = field(default_factory=dict)
    incomplete: List[int] = field(default_factory=list)
    errors: List[BoltError] = field(default_factory=list)


class RangeBuilder:
    """Collects ascending offsets as ranges without a per-offset list."""

    __slots__ = ("ranges", "unordered", "_start", "_end", "count")

    def __init__(self) -> None:
        self.ranges: List[Range] = []
        self.unordered: List[int] = []
        self._start = -1
        self._end = -1
        self.count = 0

    def add(self, offset: int) -> None:
        self.count += 1
        if offset == self._end:
            self._end += 1
        elif offset > self._end:
            if self._end >= 0:
                self.ranges.append((self._start, self._end))
            self._start, self._end = offset, offset + 1
        else:
            self.unordered.append(offset)

    def add_all(self, offsets: Sequence[int]) -> None:
        """:meth:`add` each of ``offsets`` (ascending); a consecutive run at once."""
        if offsets and offsets[-1] - offsets[0] + 1 == len(offsets) and \
                offsets[0] >= self._end:
            if offsets[0] > self._end:
                if self._end >= 0:
                    self.ranges.append((self._start, self._end))
                self._start = offsets[0]
            self._end = offsets[-1] + 1
            self.count += len(offsets)
            return
        for off in offsets:
            self.add(off)

    def result(self) -> List[Range]:
        ranges = self.ranges + ([(self._start, self._end)] if self._end >= 0 else [])
        if self.unordered:
            offsets = [o for s, e in ranges for o in range(s, e)] + self.unordered
            return coalesce(offsets)
        return ranges


class _Filter:
    """Iterates the taken messages of a fetch; remembers how far the fetch reached."""

    __slots__ = ("messages", "plan", "scanned_to")

    def __init__(self, messages: Iterable[Any], plan: FetchPlan) -> None:
        self.messages = messages
        self.plan = plan
        self.scanned_to: Optional[int] = None

    def __iter__(self) -> Iterator[Any]:
        plan = self.plan
        start = plan.offset
        reemit = plan.reemit_set
        limit = plan.max_messages
        bound = plan.bound
        n = 0
        top = -1
        try:
            for msg in self.messages:
                off = msg.offset
                if off > top:
                    top = off
                if off < start:
                    continue
                if reemit is not None and off not in reemit:
                    continue
                if bound is not None and off >= bound:
                    continue
                yield msg
                n += 1
                if limit is not None and n >= limit:
                    return
        finally:
            self.scanned_to = top + 1 if top >= 0 else None


def _offset_of(msg: MessageLike) -> int:
    return msg.offset


def take(messages: Iterable[Any], plan: FetchPlan) -> Tuple[Sequence[Any], Optional[int]]:
    """The messages ``plan`` takes from a fetch, in order, and ``scanned_to`` (one
    past the last offset the fetch returned that the plan looked at; None when
    nothing was returned).

    A new-data plan over a fetch in offset order (what every fetch returns) is a
    slice found by bisection, with no work per message; a retry plan, or messages
    out of order, go through :class:`_Filter`.
    """
    if isinstance(messages, RecordBatch) and not plan.retry:
        return _take_batch(messages, plan)
    msgs = messages if isinstance(messages, list) else list(messages)
    if not msgs:
        return [], None
    if plan.retry or msgs[0].offset > msgs[-1].offset:   # the general filter
        filt = _Filter(msgs, plan)
        return list(filt), filt.scanned_to
    lo = bisect.bisect_left(msgs, plan.offset, key=_offset_of)
    hi = len(msgs) if plan.bound is None else bisect.bisect_left(msgs, plan.bound,
                                                                  key=_offset_of)
    hi = max(lo, hi)
    limit = plan.max_messages
    if limit is not None and hi - lo >= max(1, limit):   # as _Filter: at least one
        hi = lo + max(1, limit)
        return msgs[lo:hi], msgs[hi - 1].offset + 1
    return msgs[lo:hi], msgs[-1].offset + 1


def _take_batch(batch: RecordBatch, plan: FetchPlan) -> Tuple[RecordBatch, Optional[int]]:
    """:func:`take` for a new-data plan over a batch: a slice of its columns."""
    offsets = batch.offsets
    if not offsets:
        return batch, None
    lo = bisect.bisect_left(offsets, plan.offset)
    hi = len(offsets) if plan.bound is None else bisect.bisect_left(offsets, plan.bound)
    hi = max(lo, hi)
    limit = plan.max_messages
    if limit is not None and hi - lo >= max(1, limit):
        hi = lo + max(1, limit)
        return batch.slice(lo, hi), offsets[hi - 1] + 1
    return batch.slice(lo, hi), offsets[-1] + 1


def _offset_ranges(offsets: List[int]) -> RangeBuilder:
    """Ascending offsets as ranges: one range when consecutive (the usual fetch)."""
    ranges = RangeBuilder()
    if offsets and offsets[-1] - offsets[0] + 1 == len(offsets):
        ranges.ranges.append((offsets[0], offsets[-1] + 1))
        ranges.count = len(offsets)
        return ranges
    for off in offsets:
        ranges.add(off)
    return ranges


def _taken_ranges(taken: Sequence[Any]) -> RangeBuilder:
    """The offsets of ``taken`` as ranges: one range when they are consecutive
    (the usual fetch), else offset by offset (gaps of a compacted topic)."""
    ranges = RangeBuilder()
    if taken and taken[-1].offset - taken[0].offset + 1 == len(taken):
        ranges.ranges.append((taken[0].offset, taken[-1].offset + 1))
        ranges.count = len(taken)
        return ranges
    for msg in taken:
        ranges.add(msg.offset)
    return ranges


# --- the spout side ----------------------------------------------------------------------

#: the component name a scheme's errors are shown under
SCHEME_COMPONENT = "scheme"


def _scheme_rows(scheme: Scheme, msg: MessageLike, fields_len: int, errors: ErrorTally
                 ) -> Optional[List[List[Any]]]:
    """Tuples of ``msg``, or None when the scheme raised or broke the field count
    (recorded in ``errors``; Storm lets either kill the executor, we fail the offset)."""
    try:
        rows = scheme.to_tuples(msg)
    except Exception as exc:
        errors.record(SCHEME_COMPONENT, exc, msg.topic, msg.partition, msg.offset)
        return None
    for values in rows:
        if len(values) != fields_len:
            errors.record(SCHEME_COMPONENT, ValueError(
                f"scheme {type(scheme).__name__} gave {len(values)} values for "
                f"{fields_len} fields"), msg.topic, msg.partition, msg.offset)
            return None
    return rows


def emit_spout(runtime: LocalRuntime, dispatcher: TaskDispatcher, spout: str,
                messages: Iterable[Any], scheme: Scheme, plan: FetchPlan,
                taken: RangeBuilder, failed: List[int], init: Callable[[int, int, int], None],
                errors: ErrorTally) -> Tuple[int, int, Optional[str], Optional[int], int,
                                             Optional[int]]:
    """Scheme + spout emit for every taken message. Returns (skipped, emitted
    tuples, topic, partition, last taken offset, scanned_to)."""
    fields = runtime.spout_fields
    stream = runtime.spout_stream
    nfields = len(fields)
    rng = runtime.rng
    bits = rng.getrandbits
    skipped = 0
    emitted = 0
    topic: Optional[str] = None
    partition: Optional[int] = None
    last = -1
    targets = dispatcher.targets
    deliver = dispatcher.deliver
    value_scheme = value_tuple_of(scheme)
    if value_scheme is not None and isinstance(messages, RecordBatch) and not plan.retry:
        return _emit_values(runtime, dispatcher, spout, messages, value_scheme, plan, taken,
                            failed, init, errors)
    taken_msgs, scanned = take(messages, plan)
    leaf = leaf_spout(runtime, dispatcher)
    keyed = spout_route(runtime, dispatcher, leaf)
    for msg in taken_msgs:
        off = msg.offset
        taken.add(off)
        last = off
        topic, partition = msg.topic, msg.partition
        rows = _scheme_rows(scheme, msg, nfields, errors)
        if rows is None:
            failed.append(off)
            continue
        if not rows:
            skipped += 1
            continue
        root = bits(64) or new_id(rng)
        xor = 0
        for values in rows:
            emitted += 1
            proto = StormTuple(values, fields, stream=stream, source_component=spout,
                               topic=topic, partition=partition, offset=off)
            if keyed is not None:
                proto.anchors = {root: 0}
                if keyed.add(values, proto) is not None:
                    continue
            for i, (component, task) in enumerate(targets(proto)):
                copy_ = proto if i == 0 else StormTuple(
                    values, fields, stream=stream, source_component=spout, topic=topic,
                    partition=partition, offset=off)
                edge = 0 if leaf else bits(64) or new_id(rng)
                copy_.anchors = {root: edge}
                xor ^= edge
                deliver(component, task, copy_)
        init(root, xor, off)
    return skipped, emitted, topic, partition, last, scanned


def leaf_spout(runtime: LocalRuntime, dispatcher: TaskDispatcher) -> bool:
    """The spout's tuples need no edge ids: every bolt subscribed to its stream acks or
    fails each input in the call that executes it, in a batch whose roots are judged
    once every stage ran (the dispatcher's ``edge_free``), so an edge id would be opened
    and closed within that call (the bolts' own emits are anchored so:
    :meth:`~storm_kafka_compat.topology.bolts.OutputCollector.emit_one`)."""
    subs = runtime.subs.get((runtime.topology.spout, runtime.spout_stream)) or []
    edge_free = dispatcher.edge_free
    return bool(subs) and all(target in edge_free for target, _g, _n in subs)


def spout_route(runtime: LocalRuntime, dispatcher: TaskDispatcher, leaf: bool
                ) -> Optional[KeyedRoute]:
    """Where the spout's tuples go when its stream's only subscription is a fields
    grouping on one field into a bolt of a later stage that acks in execute (a topology
    that counts per key): its keyed route, which keeps their values and origin without
    the tuple (:meth:`~storm_kafka_compat.topology.bolts.KeyedRoute.add`); else None."""
    if not leaf:
        return None
    return dispatcher.keyed_route(runtime.topology.spout, 0, runtime.spout_stream,
                                  runtime.spout_fields)


def _read_value(value_tuple: Callable[[Optional[bytes]], Any], value: Optional[bytes],
                errors: ErrorTally, where: Tuple[str, int, int], failed: List[int]) -> Any:
    """One value the batch's scheme could not read at once (``where``: topic, partition,
    offset): its row, or :data:`_UNREAD` when the scheme fails on it (Storm lets that kill
    the executor; it is failed here)."""
    try:
        return value_tuple(value)
    except Exception as exc:
        errors.record(SCHEME_COMPONENT, exc, *where)
        failed.append(where[2])
        return _UNREAD


def _value_rows(values: List[Optional[bytes]], value_scheme: ValueScheme) -> List[Any]:
    """The scheme's rows of a batch's values at once; where one cannot be read, every row
    is left to be read again one by one (:data:`_UNREAD`)."""
    try:
        return value_scheme[1](values)
    except Exception:   # a value the scheme cannot read: found again, one by one
        return [_UNREAD] * len(values)


def _emit_values(runtime: LocalRuntime, dispatcher: TaskDispatcher, spout: str,
                 batch: RecordBatch, value_scheme: ValueScheme, plan: FetchPlan,
                 taken: RangeBuilder, failed: List[int], init: Callable[[int, int, int], None],
                 errors: ErrorTally) -> Tuple[int, int, Optional[str], Optional[int], int,
                                              Optional[int]]:
    """:func:`emit_spout` for a scheme that reads only the value over a fetched batch of
    new data: it walks the batch's offset and value columns (no message object), and a
    spout tuple is built with four writes (:func:`spout_tuple_class`). Where every bolt
    the spout feeds acks in the call that executes in a batch judged once every stage ran
    (:func:`leaf_spout`), the spout tuples carry no edge ids."""
    part, scanned = _take_batch(batch, plan)
    offsets = part.offsets
    if not offsets:
        return 0, 0, None, None, -1, scanned
    topic, partition = batch.topic, batch.partition
    leaf = leaf_spout(runtime, dispatcher)
    cls = spout_tuple_class(runtime.spout_fields, spout, topic, partition,
                            stream=runtime.spout_stream, tracked=True, leaf=leaf)
    new: Callable[[type], Any] = object.__new__
    rng = runtime.rng
    bits = rng.getrandbits
    targets = dispatcher.targets
    deliver = dispatcher.deliver
    value_tuple = value_scheme[0]
    rows = _value_rows(part.values, value_scheme)
    skipped = emitted = 0
    taken.add_all(offsets)
    keyed = spout_route(runtime, dispatcher, leaf)
    # one shuffle into a bolt of this task: its queues in turn, from the runtime's position
    into = dispatcher.local_queues(spout, runtime.spout_stream)
    queues: List[List[StormTuple]] = into[1] if into is not None else []
    turn = runtime.seq.get((spout, into[0]), 0) if into is not None else 0
    for off, values, value in zip(offsets, rows, part.values):
        if values is _UNREAD:
            values = _read_value(value_tuple, value, errors, (topic, partition, off), failed)
            if values is _UNREAD:
                continue
        if values is None:
            skipped += 1
            continue
        emitted += 1
        root = bits(64) or new_id(rng)
        xor = 0
        proto: StormTuple = new(cls)
        proto.values = values
        proto.offset = off
        proto.ack_val = 0
        roots = {root: 0} if leaf else None
        if roots is not None:
            proto.anchors = roots
        if keyed is not None and keyed.add(values, proto) is not None:
            pass                                 # a leaf: its values and origin kept
        elif queues:
            if roots is None:
                xor = bits(64) or new_id(rng)
                proto.anchors = {root: xor}
            queues[turn % len(queues)].append(proto)
            turn += 1
        else:
            for i, (component, task) in enumerate(targets(proto)):
                copy_: StormTuple
                if i == 0:
                    copy_ = proto
                else:
                    copy_ = new(cls)
                    copy_.values = values
                    copy_.offset = off
                    copy_.ack_val = 0
                if roots is not None:
                    copy_.anchors = roots
                else:
                    edge = bits(64) or new_id(rng)
                    copy_.anchors = {root: edge}
                    xor ^= edge
                deliver(component, task, copy_)
        init(root, xor, off)
    if into is not None:
        runtime.seq[(spout, into[0])] = turn
    return skipped, emitted, topic, partition, offsets[-1], scanned


# --- single stage ---------------------------------------------------------------------------

def process_batch(messages: Iterable[Any], *, scheme: Scheme,
                  topology: Union[Topology, LocalRuntime, None] = None,
                  bolt: Optional[Callable[[StormTuple], Any]] = None,
                  plan_filter: Union[FetchPlan, int], rng: Optional[random.Random] = None,
                  now_ms: int = 0,
                  conf: Optional[Mapping[str, Any]] = None) -> BatchOutcome:
    """Process one fetched batch of one partition in this task.

    Parameters
    ----------
    messages : iterable
        Fetched messages in offset order (objects with key, value, topic,
        partition, offset).
    scheme : Scheme
        Turns each message into tuples.
    topology : Topology or LocalRuntime, optional
        The bolt DAG, run entirely in this task.
    bolt : callable, optional
        A simple bolt (instead of ``topology``): ``bolt(tuple)``; return acks,
        raise fails. Its return value is ignored here.
    plan_filter : FetchPlan or int
        The partition manager's plan (an int: new data from that offset).
    rng : random.Random, optional
        Source of root and edge ids.
    now_ms : int
        The batch's time, for the acker.
    conf : mapping, optional
        Topology configuration for ``prepare``.

    Returns
    -------
    BatchOutcome
    """
    plan = as_fetch_plan(plan_filter)
    if (topology is None) == (bolt is None):
        raise ValueError("process_batch needs exactly one of topology= or bolt=")
    if bolt is not None:
        return _process_simple(messages, scheme, bolt, plan)
    assert topology is not None
    runtime = local_runtime(topology, conf, scheme.fields)
    if rng is not None:
        runtime.set_rng(rng)
    acker = Acker(runtime.rng)
    dispatcher = TaskDispatcher(runtime, acker, now_ms, None)
    runtime.bind(dispatcher)
    before = runtime.counts()
    taken = RangeBuilder()
    failed: List[int] = []
    spout = runtime.topology.spout
    errors = ErrorTally()
    skipped, emitted, topic, partition, last, scanned = emit_spout(
        runtime, dispatcher, spout, messages, scheme, plan, taken, failed,
        lambda root, xor, off: acker.init(root, xor, off, now_ms), errors)
    for name in runtime.topology.order:
        queues = dispatcher.queues[name]
        for task, runner in enumerate(runtime.runners[name]):
            if queues[task]:
                batch, queues[task] = queues[task], []
                runner.run(batch)
    failed.extend(msg_id for msg_id, _reason in acker.failed())
    incomplete = acker.drop_pending()
    if incomplete:
        logger.info("%d tuple trees of %s/%s were still open at the end of the batch; "
                    "they time out on the driver unless acked", len(incomplete), topic,
                    partition)
    acker.completed()
    counts = diff_counts(runtime.counts(), before)
    counts[spout] = {"messages": taken.count, "emitted": emitted}
    return batch_outcome(topic, partition, taken, failed, skipped, last, scanned, counts,
                         incomplete, errors.take() + runtime.take_errors())


def batch_outcome(topic: Optional[str], partition: Optional[int], taken: RangeBuilder,
             failed: List[int], skipped: int, last: int, scanned: Optional[int],
             counts: Dict[str, Dict[str, int]], incomplete: Iterable[int] = (),
             errors: Sequence[BoltError] = ()) -> BatchOutcome:
    taken_ranges = taken.result()
    failed_sorted = sorted(set(failed))
    open_sorted = sorted(set(incomplete) - set(failed_sorted))
    return BatchOutcome(topic=topic, partition=partition, taken=taken_ranges,
                        acked=subtract(taken_ranges, failed_sorted + open_sorted),
                        failed=failed_sorted, skipped_null=skipped,
                        next_offset=(last + 1) if last >= 0 else None, scanned_to=scanned,
                        stage_counts=counts, incomplete=open_sorted, errors=list(errors))


def _process_simple(messages: Iterable[Any], scheme: Scheme, bolt: Callable[[StormTuple], Any],
                    plan: FetchPlan) -> BatchOutcome:
    """The common case: one simple bolt, no acker needed (one tuple tree per message
    of depth one: the message is acked iff every one of its tuples returned).

    The hot loop of the engine: the plan's messages are a slice (:func:`take`),
    their offsets a range unless the fetch had gaps, and each message costs the
    scheme, one tuple and the bolt call.
    """
    if isinstance(bolt, SimpleBolt):
        bolt = bolt.function
    value_tuple = value_tuple_of(scheme)
    if value_tuple is not None and isinstance(messages, RecordBatch) and not plan.retry:
        return _process_values(messages, scheme.fields, value_tuple, bolt, plan)
    fields = scheme.fields
    nfields = len(fields)
    taken_msgs, scanned = take(messages, plan)
    failed: List[int] = []
    skipped = executed = 0
    topic: Optional[str] = None
    partition: Optional[int] = None
    if taken_msgs:
        topic, partition = taken_msgs[0].topic, taken_msgs[0].partition
    errors = ErrorTally()
    t_topic, t_partition = cast(str, topic), cast(int, partition)   # set when there is a msg
    for msg in taken_msgs:
        off = msg.offset
        rows = _scheme_rows(scheme, msg, nfields, errors)
        if rows is None:
            failed.append(off)
            continue
        if not rows:
            skipped += 1
            continue
        for values in rows:
            executed += 1
            try:
                bolt(spout_tuple(values, fields, SPOUT_COMPONENT, t_topic, t_partition, off))
            except FailedException:
                failed.append(off)
                break
            except Exception as exc:
                errors.record(SIMPLE_BOLT, exc, topic, partition, off)
                failed.append(off)
                break
    taken = _taken_ranges(taken_msgs)
    last = taken_msgs[-1].offset if taken_msgs else -1
    nfailed = len(set(failed))
    counts = {SPOUT_COMPONENT: {"messages": taken.count, "emitted": executed},
              SIMPLE_BOLT: {"executed": executed, "emitted": 0,
                            "acked": taken.count - skipped - nfailed, "failed": nfailed}}
    return batch_outcome(topic, partition, taken, failed, skipped, last, scanned, counts,
                         (), errors.take())


#: a row whose tuple is still to be read one value at a time
_UNREAD: Any = object()


def _process_values(batch: RecordBatch, fields: Tuple[str, ...], value_scheme: ValueScheme,
                    bolt: Callable[[StormTuple], Any], plan: FetchPlan) -> BatchOutcome:
    """:func:`_process_simple` for a scheme that reads only the value (``raw``,
    ``string``) over a fetched batch: it walks the batch's offset and value columns,
    so the only object made per message is the bolt's tuple (two writes: see
    :func:`~storm_kafka_compat.topology.tuples.spout_tuple_class`)."""
    taken, scanned = _take_batch(batch, plan)
    offsets = taken.offsets
    topic, partition = batch.topic, batch.partition
    new = object.__new__
    cls = spout_tuple_class(tuple(fields), SPOUT_COMPONENT, topic, partition)
    errors = ErrorTally()
    failed: List[int] = []
    skipped = unreadable = 0
    value_tuple, value_tuples = value_scheme
    try:
        rows: List[Any] = value_tuples(taken.values)
    except Exception:   # a value the scheme cannot read: found again, one by one
        rows = [_UNREAD] * len(offsets)
    for off, values, value in zip(offsets, rows, taken.values):
        if values is _UNREAD:
            try:
                values = value_tuple(value)
            except Exception as exc:  # Storm lets this kill the executor; we fail it
                errors.record(SCHEME_COMPONENT, exc, topic, partition, off)
                failed.append(off)
                unreadable += 1
                continue
        if values is None:
            skipped += 1
            continue
        t: StormTuple = new(cls)
        t.values = values
        t.offset = off
        try:
            bolt(t)
        except FailedException:
            failed.append(off)
        except Exception as exc:
            errors.record(SIMPLE_BOLT, exc, topic, partition, off)
            failed.append(off)
    ranges = _offset_ranges(offsets)
    nfailed = len(failed)
    executed = len(offsets) - skipped - unreadable
    counts = {SPOUT_COMPONENT: {"messages": ranges.count, "emitted": executed},
              SIMPLE_BOLT: {"executed": executed, "emitted": 0,
                            "acked": ranges.count - skipped - nfailed, "failed": nfailed}}
    if not offsets:
        return batch_outcome(None, None, ranges, failed, skipped, -1, scanned, counts, (),
                             errors.take())
    return batch_outcome(topic, partition, ranges, failed, skipped, offsets[-1], scanned,
                         counts, (), errors.take())
