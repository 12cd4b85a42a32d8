"""Storm's tuple: values, their field names and where the values came from.

A :class:`StormTuple` is what bolts receive. It exposes ``values``, ``fields``,
item access by field name or by index, ``get(name, default)``, the Kafka origin
(``topic``, ``partition``, ``offset``; inherited by tuples anchored to it), the
spout message id, the stream and the source component.

The acker bookkeeping lives on the tuple, as in Storm: ``anchors`` maps each
root id of the tuple tree to this tuple's edge id (XOR of edge ids when several
anchors share a root), and ``ack_val`` accumulates the edge ids of the tuples
anchored to it. Both are internal; see :mod:`storm_kafka_compat.topology.acker`.
"""

from __future__ import annotations

import io
import pickle
from functools import lru_cache
from bisect import bisect_right
from itertools import chain, islice
from types import MappingProxyType
from typing import (Any, Callable, Collection, Dict, Iterable, Iterator, List, Mapping,
                    NamedTuple, Optional, Sequence, Tuple, Union)

__all__ = ["StormTuple", "KafkaMessageId", "DEFAULT_STREAM", "fields_index", "spout_tuple",
           "make_tuple",
           "spout_tuple_class"]

#: Storm's ``Utils.DEFAULT_STREAM_ID``
DEFAULT_STREAM = "default"

_MISSING: Any = object()


class KafkaMessageId(NamedTuple):
    """storm-kafka's ``KafkaMessageId``: the spout message id shared by every
    tuple of one Kafka message."""

    partition: int
    offset: int


@lru_cache(maxsize=1024)
def fields_index(fields: Tuple[str, ...]) -> Mapping[str, int]:
    """Field name -> position, computed once per distinct field tuple."""
    return {name: i for i, name in enumerate(fields)}


class StormTuple:
    """One tuple flowing through the topology.

    Parameters
    ----------
    values : list
        The values, one per field.
    fields : tuple of str
        The field names of the stream the tuple was emitted on.
    stream : str
        Stream id (``"default"`` unless declared otherwise).
    source_component : str
        Name of the spout or bolt that emitted the tuple.
    source_task : int
        Index of the emitting task within its component.
    topic, partition, offset : optional
        The Kafka message the tuple derives from. ``offset`` is the message's
        own offset (not the next one to read).
    anchors : dict, optional
        Root id -> edge id, for the acker; empty for untracked tuples.
    """

    __slots__ = ("values", "fields", "stream", "source_component", "source_task",
                 "topic", "partition", "offset", "anchors", "ack_val")

    #: a leaf of its trees as it was sent: its anchors carry no edge id (each root maps to
    #: 0; see :meth:`~storm_kafka_compat.topology.bolts.OutputCollector.emit_one`), so its
    #: ack changes no XOR unless a tuple was anchored to it since (its ``ack_val``)
    leaf = False

    def __init__(self, values: Sequence[Any], fields: Tuple[str, ...], *,
                 stream: str = DEFAULT_STREAM, source_component: str = "",
                 source_task: int = 0, topic: Optional[str] = None,
                 partition: Optional[int] = None, offset: Optional[int] = None,
                 anchors: Optional[Dict[int, int]] = None) -> None:
        self.values = values
        self.fields = fields
        self.stream = stream
        self.source_component = source_component
        self.source_task = source_task
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.anchors: Dict[int, int] = anchors if anchors is not None else {}
        #: XOR of the edge ids of tuples anchored to this one (Storm's ackVal)
        self.ack_val = 0

    # --- Storm's ITuple ------------------------------------------------------
    def __getitem__(self, key: Union[str, int]) -> Any:
        if isinstance(key, str):
            try:
                return self.values[fields_index(self.fields)[key]]
            except KeyError:
                raise KeyError(f"field {key!r} is not one of {list(self.fields)} "
                               f"(stream {self.stream!r} of {self.source_component!r})"
                               ) from None
        return self.values[key]

    def get(self, key: Union[str, int], default: Any = None) -> Any:
        """The value of field ``key`` (name or index), or ``default``."""
        try:
            return self[key]
        except (KeyError, IndexError):
            return default

    def __contains__(self, name: object) -> bool:
        return name in fields_index(self.fields)

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values)

    def as_dict(self) -> Dict[str, Any]:
        """Field name -> value."""
        return dict(zip(self.fields, self.values))

    @property
    def message_id(self) -> Optional[KafkaMessageId]:
        """The spout message id (partition, offset) of the Kafka message the
        tuple comes from, or None for tuples not derived from one."""
        if self.partition is None or self.offset is None:
            return None
        return KafkaMessageId(self.partition, self.offset)

    @property
    def tracked(self) -> bool:
        """True when the tuple belongs to at least one tuple tree."""
        return bool(self.anchors)

    # --- pickling (Spark moves tuples between stages) --------------------------
    def __reduce__(self) -> Any:
        return (_rebuild, (self.values, self.fields, self.stream, self.source_component,
                           self.source_task, self.topic, self.partition, self.offset,
                           self.anchors, self.ack_val))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StormTuple):
            return NotImplemented
        return (list(self.values) == list(other.values) and self.fields == other.fields
                and self.stream == other.stream and self.topic == other.topic
                and self.partition == other.partition and self.offset == other.offset)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        origin = (f" from {self.topic}/{self.partition}@{self.offset}"
                  if self.offset is not None else "")
        return (f"StormTuple({self.as_dict()!r}, stream={self.stream!r}, "
                f"source={self.source_component!r}{origin})")


def _rebuild(values: Sequence[Any], fields: Tuple[str, ...], stream: str, source: str,
             task: int, topic: Optional[str], partition: Optional[int],
             offset: Optional[int], anchors: Dict[int, int], ack_val: int) -> StormTuple:
    t = StormTuple(values, fields, stream=stream, source_component=source, source_task=task,
                   topic=topic, partition=partition, offset=offset, anchors=anchors)
    t.ack_val = ack_val
    return t


_new = object.__new__

#: the anchors of a tuple that belongs to no tuple tree (shared, read-only)
_NO_ANCHORS: Mapping[int, int] = MappingProxyType({})


@lru_cache(maxsize=256)
def spout_tuple_class(fields: Tuple[str, ...], component: str, topic: str,
                      partition: int, *, stream: str = DEFAULT_STREAM,
                      tracked: bool = False, leaf: bool = False) -> type:
    """A :class:`StormTuple` subclass for the spout tuples of one partition's batch:
    what every such tuple shares (fields, stream, component, topic, partition; for
    untracked tuples no anchors) is a class attribute, so an instance is built with two
    writes, ``values`` and ``offset`` (``tracked``: four, with ``anchors`` and
    ``ack_val``), where :func:`spout_tuple` makes ten. Its instances read like any
    StormTuple; only those slots can be set. ``leaf``: tracked tuples sent without edge
    ids (:attr:`StormTuple.leaf`)."""
    shared: Dict[str, Any] = {"topic": topic, "partition": partition, "leaf": leaf}
    if not tracked:
        shared.update(anchors=_NO_ANCHORS, ack_val=0, leaf=True)
    return _shared_tuple_class("SpoutTuple", fields, stream, component, 0, shared)


@lru_cache(maxsize=1024)
def routed_tuple_class(head: "Head", leaf: bool = False) -> type:
    """A :class:`StormTuple` subclass for the tuples of a :class:`TupleBatch` of one head
    (fields, stream, source component and task), which are its class attributes: each
    is made with six writes. ``leaf``: tuples that carry no edge ids."""
    fields, stream, component, task, _bare = head
    return _shared_tuple_class("RoutedTuple", fields, stream, component, task, {"leaf": leaf})


def _shared_tuple_class(name: str, fields: Tuple[str, ...], stream: str, component: str,
                        task: int, more: Dict[str, Any]) -> type:
    """A :class:`StormTuple` subclass whose instances share these slots' values as class
    attributes (only the other slots can be set on them)."""
    return type(name, (StormTuple,), {
        "__slots__": (), "fields": fields, "stream": stream, "source_component": component,
        "source_task": task, **more})


def spout_tuple(values: Sequence[Any], fields: Tuple[str, ...], component: str, topic: str,
                partition: int, offset: int) -> StormTuple:
    """``StormTuple(values, fields, source_component=component, topic=topic,
    partition=partition, offset=offset)``, built without the keyword call: the
    engine makes one per message (0.33 -> 0.14 us here)."""
    return make_tuple(values, fields, DEFAULT_STREAM, component, 0, topic, partition, offset,
                      {})


def make_tuple(values: Sequence[Any], fields: Tuple[str, ...], stream: str, component: str,
               task: int, topic: Optional[str], partition: Optional[int],
               offset: Optional[int], anchors: Dict[int, int]) -> StormTuple:
    """A :class:`StormTuple` from every slot given in order, without the keyword call
    (a bolt's emit makes one per copy: 1.1 -> 0.34 us here). Sets every slot of
    :class:`StormTuple`; a test keeps the two in step."""
    t = _new(StormTuple)
    t.values = values
    t.fields = fields
    t.stream = stream
    t.source_component = component
    t.source_task = task
    t.topic = topic
    t.partition = partition
    t.offset = offset
    t.anchors = anchors
    t.ack_val = 0
    return t


#: what the tuples of a run of a :class:`TupleBatch` share beside their head: topic,
#: partition, offset and roots: a map root -> edge id, or one root id alone for
#: ``{root: 0}`` (a keyed emit's tuple, whose tree ends in execute), or None for none;
#: one object for every run of one input
Origin = Tuple[Optional[str], Optional[int], Optional[int], Union[None, int, Dict[int, int]]]
#: a run of a :class:`TupleBatch`: the index of its first tuple, its head's index and its
#: origin; it lasts to the next run's first tuple
Run = Tuple[int, int, Origin]
#: what tuples of one kind share: fields, stream, source component, source task, and
#: whether their values are kept bare (a list of one value as that value: a keyed
#: stream's words, which then pickle and unpickle without a list each)
Head = Tuple[Tuple[str, ...], str, str, int, bool]


def _run_start(run: "Run") -> int:
    return run[0]


class TupleBatch:
    """StormTuples on their way to one bolt task in another process (a bolt host, a later
    stage), kept as columns: what tuples share (fields, stream, source component and task)
    once per kind (:meth:`head`); the values of each tuple; and runs of tuples that share
    their kind and origin (topic, partition, offset, roots), as the emits of one input
    do. A bolt's emit routed by a fields grouping appends its values here without making
    a StormTuple, and a run only when its input changes
    (:meth:`~storm_kafka_compat.topology.bolts.OutputCollector.emit_to`); the batch pickles
    as its columns, in C: in a word count, making and pickling each tuple cost more than
    the bolts' work. The receiving side makes the StormTuples (:attr:`tuples`)."""

    __slots__ = ("heads", "values", "runs", "ack_vals", "last", "_index", "_tuples")

    def __init__(self, tuples: Iterable[StormTuple] = ()) -> None:
        self.heads: List[Head] = []
        #: each tuple's values, in order (its one value alone under a bare head); only
        #: ever appended to
        self.values: List[Any] = []
        #: the runs, by their first tuple; only ever appended to
        self.runs: List[Run] = []
        #: tuple -> its ack value, where not 0 (a tuple on its way has no children)
        self.ack_vals: Dict[int, int] = {}
        #: the origin of the last run while a keyed emit may add to it (None: none may)
        self.last: Optional[Origin] = None
        self._index: Dict[Head, int] = {}
        self._tuples: List[StormTuple] = []
        for t in tuples:
            self.add(t)

    def head(self, fields: Tuple[str, ...], stream: str, source: str, task: int,
             bare: bool = False) -> int:
        """The index of a kind of tuple (added on first use); ``bare``: its values, a
        list of one value, are appended as that value."""
        key = (fields, stream, source, task, bare)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.heads)
            self.heads.append(key)
        return i

    def add(self, t: StormTuple) -> None:
        """Append ``t`` (as it stands now; :attr:`tuples` gives ``t`` itself back), a run
        of its own."""
        at = len(self.values)
        if len(self._tuples) == at:
            self._tuples.append(t)
        if t.ack_val:
            self.ack_vals[at] = t.ack_val
        self.runs.append((at, self.head(t.fields, t.stream, t.source_component, t.source_task),
                          (t.topic, t.partition, t.offset, t.anchors or None)))
        self.values.append(t.values)
        self.last = None

    def extend(self, other: "TupleBatch") -> None:
        """Append ``other``'s tuples, in their order."""
        at = len(self.values)
        self.ack_vals.update({at + i: v for i, v in other.ack_vals.items()})
        if other.heads == self.heads[:len(other.heads)]:
            self.runs.extend((start + at, head, origin) for start, head, origin in other.runs)
        else:
            moved = [self.head(*h) for h in other.heads]
            self.runs.extend((start + at, moved[head], origin)
                             for start, head, origin in other.runs)
        self.values.extend(other.values)
        self.last = None

    @property
    def tuples(self) -> List[StormTuple]:
        """The StormTuples, each made on first use and kept (:meth:`iter_tuples` makes
        them without keeping them)."""
        out = self._tuples
        if len(out) < len(self.values):
            out.extend(self._made(len(out)))
        return out

    def iter_tuples(self) -> Iterator[StormTuple]:
        """The StormTuples one by one, each made as it is reached and not kept: a bolt
        host runs a batch's tuples as they are made, so each is freed once its
        ``execute`` returned (those made or added before are given as they are)."""
        made = self._tuples
        if made:
            yield from made
        if len(made) < len(self.values):
            yield from self._made(len(made))

    def _made(self, start: int) -> Iterator[StormTuple]:
        """The tuples from the ``start``-th on, made in one pass over the values: a run
        changes what is written at its first tuple (most runs of a word count's batch
        hold one or two words, so nothing is set up per run but its origin)."""
        values = self.values
        runs = self.runs
        if start >= len(values) or not runs:
            return
        heads = self.heads
        classes = [routed_tuple_class(h) for h in heads]
        leaves = [routed_tuple_class(h, True) for h in heads]
        ack_vals = self.ack_vals
        new: Callable[[type], Any] = _new
        r = bisect_right(runs, start, key=_run_start) - 1
        nruns = len(runs)
        i = start
        while r < nruns:
            _first, head, (topic, partition, offset, roots) = runs[r]
            r += 1
            end = runs[r][0] if r < nruns else len(values)
            bare = heads[head][4]
            anchors: Dict[int, int]
            if roots is None:
                anchors, cls = {}, leaves[head]
            elif isinstance(roots, int):             # one root, no edge id
                anchors, cls = {roots: 0}, leaves[head]
            else:
                anchors = roots
                cls = classes[head] if any(anchors.values()) else leaves[head]
            while i < end:
                v = values[i]
                t = new(cls)
                t.values = [v] if bare else v
                t.topic = topic
                t.partition = partition
                t.offset = offset
                t.anchors = anchors
                t.ack_val = ack_vals.get(i, 0) if ack_vals else 0
                i += 1
                yield t

    def origins(self) -> Iterator[Tuple[Optional[str], Optional[int], Optional[int], int]]:
        """``(topic, partition, offset, root)`` of each run whose tuples belong to one
        root (where a bolt host finds the offset of a root it failed), without making
        the tuples."""
        for _first, _head, (topic, partition, offset, roots) in self.runs:
            if type(roots) is int:
                yield topic, partition, offset, roots
            elif isinstance(roots, dict) and len(roots) == 1:
                yield topic, partition, offset, next(iter(roots))

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[StormTuple]:
        return iter(self.tuples)

    def __reduce__(self) -> Any:
        """Pickled by columns; values that are lists of plain values (bytes, str,
        numbers, None) go as one pickle without a memo (:func:`_pack_values`): the
        memo of a word count's word lists cost more than their bytes."""
        if not self.values:
            return (_columns_batch, (self.heads, (), self.ack_vals))
        runs = self.runs
        origins = [r[2] for r in runs]
        return (_columns_batch, (self.heads, (
            [r[0] for r in runs], [r[1] for r in runs], [o[0] for o in origins],
            [o[1] for o in origins], [o[2] for o in origins], [o[3] for o in origins],
            _pack_values(self.values, all(h[4] for h in self.heads))), self.ack_vals))


class BatchedTuples(Collection[StormTuple]):
    """The tuples of :class:`TupleBatch` es (and loose tuples before them, such as a
    tick), each made as a bolt task reaches it (:meth:`TupleBatch.iter_tuples`): what a
    bolt host runs, never all made at once."""

    __slots__ = ("first", "batches")

    def __init__(self, batches: Sequence[TupleBatch], first: Sequence[StormTuple] = ()) -> None:
        self.first = first
        self.batches = batches

    def __len__(self) -> int:
        return len(self.first) + sum(map(len, self.batches))

    def __iter__(self) -> Iterator[StormTuple]:
        yield from self.first
        for batch in self.batches:
            yield from batch.iter_tuples()

    def __contains__(self, item: object) -> bool:
        return any(t is item for t in self)


#: the value types a batch's values may be pickled as plain values (no memo)
_PLAIN = frozenset({bytes, str, int, float, bool, type(None)})


def _pack_values(values: Sequence[Any], bare: bool = False) -> Any:
    """The values column to pickle: lists of plain values as one memo-less pickle of
    the values end to end, with the lists' lengths unless every list holds one; bare
    values (every head bare) that are plain as one such pickle too; any other values
    as they are (pickled with the batch, shared objects kept shared)."""
    if bare:
        if set(map(type, values)) <= _PLAIN:
            return BareValues(_fast_pickle(values))  # type: ignore[arg-type]
        return values
    if set(map(type, values)) != {list}:
        return values
    lens: Optional[List[int]] = None
    try:
        flat = [v for (v,) in values]     # one value each, as a keyed stream's words
    except ValueError:
        flat = list(chain.from_iterable(values))
        lens = list(map(len, values))
    if not set(map(type, flat)) <= _PLAIN:
        return values
    return PackedValues(_fast_pickle(flat), lens)


def _fast_pickle(flat: List[Any]) -> bytes:
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.fast = True      # plain values hold no references: nothing to remember
    pickler.dump(flat)
    return out.getvalue()


class BareValues(NamedTuple):
    """A batch's bare values column (every head bare) packed by :func:`_pack_values`."""

    flat: bytes


class PackedValues(NamedTuple):
    """A batch's values column packed by :func:`_pack_values`."""

    flat: bytes
    lens: Optional[List[int]]

    def unpack(self) -> List[List[Any]]:
        flat = pickle.loads(self.flat)
        if self.lens is None:
            return [[v] for v in flat]
        it = iter(flat)
        return [list(islice(it, n)) for n in self.lens]


def _columns_batch(heads: List[Head], columns: Sequence[Any],
                   ack_vals: Dict[int, int]) -> TupleBatch:
    batch = TupleBatch()
    batch.heads = heads
    if columns:
        starts, head_of, topics, partitions, offsets, roots, values = columns
        if isinstance(values, PackedValues):
            values = values.unpack()
        elif isinstance(values, BareValues):
            values = pickle.loads(values.flat)
        batch.runs = list(zip(starts, head_of, zip(topics, partitions, offsets, roots)))
        batch.values = values
    batch.ack_vals = ack_vals
    batch._index = {h: i for i, h in enumerate(heads)}
    return batch
