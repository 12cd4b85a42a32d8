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
from typing import (Any, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple, Union)

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
                      tracked: bool = False) -> type:
    """A :class:`StormTuple` subclass for the spout tuples of one partition's batch:
    what every such tuple shares (fields, stream, component, topic, partition; for
    untracked tuples no anchors) is a class attribute, so an instance is built with two
    writes, ``values`` and ``offset`` (``tracked``: four, with ``anchors`` and
    ``ack_val``), where :func:`spout_tuple` makes ten. Its instances read like any
    StormTuple; only those slots can be set."""
    shared: Dict[str, Any] = {
        "__slots__": (), "fields": fields, "stream": stream, "source_component": component,
        "source_task": 0, "topic": topic, "partition": partition}
    if not tracked:
        shared.update(anchors=_NO_ANCHORS, ack_val=0)
    return type("SpoutTuple", (StormTuple,), shared)


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


#: one tuple of a :class:`TupleBatch`: its head's index, values, topic, partition,
#: offset and roots map (None: none)
Row = Tuple[int, Sequence[Any], Optional[str], Optional[int], Optional[int],
            Optional[Dict[int, int]]]
#: what tuples of one kind share: fields, stream, source component, source task
Head = Tuple[Tuple[str, ...], str, str, int]


class TupleBatch:
    """StormTuples on their way to one bolt task in another process (a bolt host, a later
    stage), kept as rows: what tuples share (fields, stream, source component and task)
    once per kind (:meth:`head`), then one plain tuple per StormTuple. A bolt's emit
    routed by a fields grouping appends its row here without making a StormTuple
    (:meth:`~storm_kafka_compat.topology.bolts.OutputCollector.emit_to`), and the batch
    pickles as its rows, in C: in a word count, making and pickling each tuple cost more
    than the bolts' work. The receiving side makes the StormTuples (:attr:`tuples`)."""

    __slots__ = ("heads", "rows", "ack_vals", "_index", "_tuples")

    def __init__(self, tuples: Iterable[StormTuple] = ()) -> None:
        self.heads: List[Head] = []
        #: only ever appended to (a row stays as it was added)
        self.rows: List[Row] = []
        #: row -> its tuple's ack value, where not 0 (a tuple on its way has no children)
        self.ack_vals: Dict[int, int] = {}
        self._index: Dict[Head, int] = {}
        self._tuples: List[StormTuple] = []
        for t in tuples:
            self.add(t)

    def head(self, fields: Tuple[str, ...], stream: str, source: str, task: int) -> int:
        """The index of a kind of tuple (added on first use)."""
        key = (fields, stream, source, task)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.heads)
            self.heads.append(key)
        return i

    def add(self, t: StormTuple) -> None:
        """Append ``t`` (as it stands now; :attr:`tuples` gives ``t`` itself back)."""
        if len(self._tuples) == len(self.rows):
            self._tuples.append(t)
        if t.ack_val:
            self.ack_vals[len(self.rows)] = t.ack_val
        self.rows.append((self.head(t.fields, t.stream, t.source_component, t.source_task),
                          t.values, t.topic, t.partition, t.offset, t.anchors or None))

    def extend(self, other: "TupleBatch") -> None:
        """Append ``other``'s tuples, in their order."""
        at = len(self.rows)
        self.ack_vals.update({at + i: v for i, v in other.ack_vals.items()})
        if other.heads == self.heads[:len(other.heads)]:
            self.rows.extend(other.rows)
            return
        moved = [self.head(*h) for h in other.heads]
        self.rows.extend((moved[r[0]], *r[1:]) for r in other.rows)

    @property
    def tuples(self) -> List[StormTuple]:
        """The StormTuples, each made on first use."""
        out = self._tuples
        start = len(out)
        if start < len(self.rows):
            heads = self.heads
            append = out.append
            for head, values, topic, partition, offset, anchors in self.rows[start:]:
                fields, stream, source, task = heads[head]
                t = _new(StormTuple)
                t.values = values
                t.fields = fields
                t.stream = stream
                t.source_component = source
                t.source_task = task
                t.topic = topic
                t.partition = partition
                t.offset = offset
                t.anchors = {} if anchors is None else anchors
                t.ack_val = 0
                append(t)
            for i, ack_val in self.ack_vals.items():
                if i >= start:
                    out[i].ack_val = ack_val
        return out

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[StormTuple]:
        return iter(self.tuples)

    def __reduce__(self) -> Any:
        """Pickled by columns; values that are lists of plain values (bytes, str,
        numbers, None) go as one pickle without a memo (:func:`_pack_values`): the
        memo of a word count's word lists cost more than their bytes."""
        if not self.rows:
            return (_rows_batch, (self.heads, (), self.ack_vals))
        head_of, values, topics, partitions, offsets, roots = zip(*self.rows)
        return (_rows_batch, (self.heads, (head_of, _pack_values(values), topics, partitions,
                                           offsets, roots), self.ack_vals))


#: the value types a batch's values may be pickled as plain values (no memo)
_PLAIN = frozenset({bytes, str, int, float, bool, type(None)})


def _pack_values(values: Sequence[Sequence[Any]]) -> Any:
    """The values column to pickle: lists of plain values as one memo-less pickle of
    the values end to end, with the lists' lengths unless every list holds one; any
    other values as they are (pickled with the batch, shared objects kept shared)."""
    if set(map(type, values)) != {list}:
        return values
    flat = list(chain.from_iterable(values))
    if not set(map(type, flat)) <= _PLAIN:
        return values
    lens = list(map(len, values))
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.fast = True      # plain values hold no references: nothing to remember
    pickler.dump(flat)
    return PackedValues(out.getvalue(), None if set(lens) == {1} else lens)


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


def _rows_batch(heads: List[Head], columns: Sequence[Sequence[Any]],
                ack_vals: Dict[int, int]) -> TupleBatch:
    batch = TupleBatch()
    batch.heads = heads
    if columns:
        head_of, values, topics, partitions, offsets, roots = columns
        if isinstance(values, PackedValues):
            values = values.unpack()
        batch.rows = list(zip(head_of, values, topics, partitions, offsets, roots))
    batch.ack_vals = ack_vals
    batch._index = {h: i for i, h in enumerate(heads)}
    return batch
