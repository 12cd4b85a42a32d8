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


#: what tuples of one kind share: fields, stream, source component, source task, and
#: whether their values are kept bare (a list of one value as that value: a keyed
#: stream's words, which then pickle and unpickle without a list each)
Head = Tuple[Tuple[str, ...], str, str, int, bool]
#: where a tuple of a :class:`TupleBatch` comes from: its head, topic, partition, offset
#: and roots (a map root -> edge id, or one root id alone for ``{root: 0}``: a keyed
#: emit's tuple, whose tree ends in execute; or None for none); one object for the
#: tuples one input gives one route, in every batch they go to
Origin = Tuple[Head, Optional[str], Optional[int], Optional[int],
               Union[None, int, Dict[int, int]]]


class TupleBatch:
    """StormTuples on their way to one bolt task in another process (a bolt host, a later
    stage), kept as two columns: the values of each tuple, and its origin (head, topic,
    partition, offset, roots), one shared object for the tuples of one input. A bolt's emit
    routed by a fields grouping appends its values and its input's origin here without
    making a StormTuple (:meth:`~storm_kafka_compat.topology.bolts.KeyedRoute.add`); the
    batch pickles as its columns, in C (an origin once for every batch of one pickle, as
    pickle shares what is shared): in a word count, making and pickling each tuple cost
    more than the bolts' work. The receiving side makes the StormTuples
    (:meth:`iter_tuples`)."""

    __slots__ = ("values", "origins", "ack_vals", "all_bare", "_heads", "_tuples")

    def __init__(self, tuples: Iterable[StormTuple] = ()) -> None:
        #: each tuple's values, in order (its one value alone under a bare head); only
        #: ever appended to
        self.values: List[Any] = []
        #: each tuple's origin, beside its values
        self.origins: List[Origin] = []
        #: tuple -> its ack value, where not 0 (a tuple on its way has no children)
        self.ack_vals: Dict[int, int] = {}
        #: every tuple's head is bare: the values pickle as one run of plain values
        self.all_bare = True
        self._heads: Dict[Head, Head] = {}
        self._tuples: List[StormTuple] = []
        for t in tuples:
            self.add(t)

    def head(self, fields: Tuple[str, ...], stream: str, source: str, task: int,
             bare: bool = False) -> Head:
        """The head of a kind of tuple, one object per kind in this batch; ``bare``: its
        values, a list of one value, are kept as that value."""
        key = (fields, stream, source, task, bare)
        return self._heads.setdefault(key, key)

    @property
    def heads(self) -> List[Head]:
        """The heads of the tuples, each once, in the order they first came."""
        return list(dict.fromkeys(o[0] for o in self.origins))

    def add(self, t: StormTuple) -> None:
        """Append ``t`` (as it stands now; :attr:`tuples` gives ``t`` itself back)."""
        at = len(self.values)
        if len(self._tuples) == at:
            self._tuples.append(t)
        if t.ack_val:
            self.ack_vals[at] = t.ack_val
        self.all_bare = False
        self.origins.append((self.head(t.fields, t.stream, t.source_component, t.source_task),
                             t.topic, t.partition, t.offset, t.anchors or None))
        self.values.append(t.values)

    def extend(self, other: "TupleBatch") -> None:
        """Append ``other``'s tuples, in their order."""
        at = len(self.values)
        self.ack_vals.update({at + i: v for i, v in other.ack_vals.items()})
        self.all_bare = self.all_bare and other.all_bare
        self.origins.extend(other.origins)
        self.values.extend(other.values)

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
        """The tuples from the ``start``-th on, made in one pass over the columns: what a
        tuple shares with the one before it (its origin, its head) is looked at once."""
        ack_vals = self.ack_vals
        new: Callable[[type], Any] = _new
        last: Any = None
        head: Any = None
        i = start - 1
        for v, origin in zip(islice(self.values, start, None), islice(self.origins, start, None)):
            i += 1
            if origin is not last:
                last = origin
                if origin[0] is not head:
                    head = origin[0]
                    bare = head[4]
                    edged, leaf = routed_tuple_class(head), routed_tuple_class(head, True)
                _h, topic, partition, offset, roots = origin
                anchors: Dict[int, int]
                if roots is None:
                    anchors, cls = {}, leaf
                elif isinstance(roots, int):         # one root, no edge id
                    anchors, cls = {roots: 0}, leaf
                else:
                    anchors = roots
                    cls = edged if any(anchors.values()) else leaf
            t = new(cls)
            t.values = [v] if bare else v
            t.topic = topic
            t.partition = partition
            t.offset = offset
            t.anchors = anchors
            t.ack_val = ack_vals.get(i, 0) if ack_vals else 0
            yield t

    def root_origins(self) -> Iterator[Tuple[Optional[str], Optional[int], Optional[int], int]]:
        """``(topic, partition, offset, root)`` of the tuples of one root (where a bolt
        host finds the offset of a root it failed), without making the tuples."""
        last: Any = None
        for origin in self.origins:
            if origin is last:
                continue
            last = origin
            roots = origin[4]
            if isinstance(roots, int):
                yield origin[1], origin[2], origin[3], roots
            elif roots is not None and len(roots) == 1:
                yield origin[1], origin[2], origin[3], next(iter(roots))

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[StormTuple]:
        return iter(self.tuples)

    def __reduce__(self) -> Any:
        """Pickled by columns; values that are lists of plain values (bytes, str,
        numbers, None) go as one pickle without a memo (:func:`_pack_values`): the
        memo of a word count's word lists cost more than their bytes. The origins go
        as they are, each pickled once however many tuples and batches share it."""
        return (_columns_batch, (_pack_values(self.values, self.all_bare), self.origins,
                                 self.ack_vals, self.all_bare))


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
        return chain(self.first, *(batch.iter_tuples() for batch in self.batches))

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


def _columns_batch(values: Any, origins: List[Origin], ack_vals: Dict[int, int],
                   all_bare: bool) -> TupleBatch:
    batch = TupleBatch()
    if isinstance(values, PackedValues):
        values = values.unpack()
    elif isinstance(values, BareValues):
        values = pickle.loads(values.flat)
    batch.values = values
    batch.origins = origins
    batch.ack_vals = ack_vals
    batch.all_bare = all_bare
    return batch
