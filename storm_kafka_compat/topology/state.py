"""A bolt task's state: what is saved of it with the offsets, and Storm's stateful API.

Storm keeps a plain bolt's memory in its task's instance and loses it when the worker
dies; its ``IStatefulBolt`` keeps a ``KeyValueState`` checkpointed through the topology
(Redis, HBase). Here every bolt task of a crossing stage lives in one bolt host for the
life of the job (:mod:`storm_kafka_compat.executor.hosts`), and its state is saved with the
offsets it reflects at each commit. What is saved of a task:

* a bolt with ``init_state(state)`` (:class:`StatefulBolt`, Storm's
  ``BaseStatefulBolt``): its :class:`KeyValueState`; ``pre_commit(txid)`` is called
  before each save;
* a bolt with ``get_state()`` and ``set_state(state)``: what ``get_state`` returns;
* any other bolt: its instance attributes, each pickled on its own, except what the
  runtime gives it (collector, context, configuration); an attribute that cannot be
  pickled (a socket, a client) is left out, named once in the log, and is whatever
  ``prepare`` makes of it after a restore. So is an attribute holding tuples of open
  tuple trees (a sink's buffer of unacked input): their offsets are not committed, so a
  restart replays them, and the bolt must not get them twice.

Pure: no I/O beyond pickling.
"""

from __future__ import annotations

import io
import logging
import pickle
from typing import Any, Dict, Iterator, Mapping, MutableMapping, Optional, Set, Tuple

from storm_kafka_compat.topology.bolts import (BasicOutputCollector, OutputCollector,
                                               TopologyContext)
from storm_kafka_compat.topology.tuples import StormTuple

log = logging.getLogger(__name__)

#: the attribute values the runtime gives a bolt: never part of its saved state
RUNTIME_GIVEN = (OutputCollector, BasicOutputCollector, TopologyContext)


class KeyValueState(MutableMapping[Any, Any]):
    """Storm's ``KeyValueState``: ``put``, ``get``, ``delete``, iteration; a mapping too."""

    def __init__(self, items: Optional[Dict[Any, Any]] = None) -> None:
        self._items: Dict[Any, Any] = dict(items or {})

    def put(self, key: Any, value: Any) -> None:
        self._items[key] = value

    def get(self, key: Any, default: Any = None) -> Any:
        return self._items.get(key, default)

    def delete(self, key: Any) -> Any:
        return self._items.pop(key, None)

    def __getitem__(self, key: Any) -> Any:
        return self._items[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._items[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._items[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def items_copy(self) -> Dict[Any, Any]:
        return dict(self._items)

    def __repr__(self) -> str:
        return f"KeyValueState({len(self._items)} keys)"


class StatefulBolt:
    """Base class of Storm's stateful bolts (``BaseStatefulBolt``): ``init_state`` gets
    the task's :class:`KeyValueState` after ``prepare`` (restored after a restart);
    ``execute`` acks and fails explicitly, as a rich bolt does."""

    def prepare(self, conf: Any, context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def pre_commit(self, txid: int) -> None:
        """Called before the task's state is saved with batch ``txid``'s offsets."""

    def execute(self, tup: Any) -> None:
        raise NotImplementedError

    def declare_output_fields(self) -> Any:
        return ()


def is_stateful(bolt: Any) -> bool:
    """The bolt uses Storm's stateful API (``init_state``)."""
    return callable(getattr(bolt, "init_state", None))


class TaskState:
    """What is saved and restored of one bolt task (see the module's rules).

    Parameters
    ----------
    name : str
        ``component[task]``, for the log.
    bolt : object
        The prepared bolt instance.
    skip : tuple of str
        Attributes that are configuration, never saved.
    """

    def __init__(self, name: str, bolt: Any, skip: Tuple[str, ...] = ()) -> None:
        self.name = name
        self.bolt = bolt
        #: attributes that are configuration, not state (a windowed bolt's window)
        self.skip = frozenset(skip)
        self.kv: Optional[KeyValueState] = None
        self._unsaved: Set[str] = set()
        if is_stateful(bolt):
            self.kv = KeyValueState()
            bolt.init_state(self.kv)

    def save(self, txid: int) -> bytes:
        """The task's state as bytes (``pre_commit(txid)`` first for a stateful bolt)."""
        bolt = self.bolt
        if self.kv is not None:
            pre_commit = getattr(bolt, "pre_commit", None)
            if pre_commit is not None:
                pre_commit(txid)
            return pickle.dumps(("kv", self.kv.items_copy()), protocol=pickle.HIGHEST_PROTOCOL)
        if callable(getattr(bolt, "get_state", None)):
            pre_commit = getattr(bolt, "pre_commit", None)
            if callable(pre_commit):
                pre_commit(txid)
            return pickle.dumps(("custom", bolt.get_state()), protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.dumps(("attrs", self._attributes()), protocol=pickle.HIGHEST_PROTOCOL)

    def _attributes(self) -> Dict[str, bytes]:
        saved: Dict[str, bytes] = {}
        for key, value in vars(self.bolt).items():
            if (isinstance(value, RUNTIME_GIVEN) or getattr(type(value), "runtime_given", False)
                    or key in ("conf", "storm_conf") or key in self.skip):
                continue
            try:
                saved[key] = dumps_untracked(value)
            except HeldTupleError:
                if key not in self._unsaved:
                    self._unsaved.add(key)
                    log.info("bolt task %s: attribute %r holds tuples of open tuple trees; "
                             "it is not saved (after a restart those tuples come back by "
                             "replay, their offsets were not committed)", self.name, key)
            except Exception as exc:  # noqa: BLE001 - any pickling error leaves it out
                if key not in self._unsaved:
                    self._unsaved.add(key)
                    log.warning("bolt task %s: attribute %r cannot be saved with the offsets "
                                "(%s: %s); after a restart it is what prepare() makes of it",
                                self.name, key, type(exc).__name__, exc)
        return saved

    def restore(self, data: bytes) -> None:
        """Put back what :meth:`save` returned (after ``prepare``)."""
        kind, value = pickle.loads(data)
        bolt = self.bolt
        if kind == "kv":
            self.kv = KeyValueState(value)
            bolt.init_state(self.kv)
        elif kind == "custom":
            bolt.set_state(value)
        else:
            for key, raw in value.items():
                setattr(bolt, key, pickle.loads(raw))


def picklable_attributes(values: Mapping[str, Any], name: str,
                         unsaved: Optional[Set[str]] = None) -> Dict[str, bytes]:
    """Each value pickled on its own; one that cannot be (a socket, a client, a lock) is
    left out and named once in the log (``unsaved`` holds the names already named)."""
    named = _UNSAVED.setdefault(name, set()) if unsaved is None else unsaved
    saved: Dict[str, bytes] = {}
    for key, value in values.items():
        try:
            saved[key] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - any pickling error leaves it out
            if key not in named:
                named.add(key)
                log.warning("bolt task %s: attribute %r cannot be saved with the offsets "
                            "(%s: %s); after a restart it is what prepare() makes of it",
                            name, key, type(exc).__name__, exc)
    return saved


#: attribute names already named in the log, per task, for callers without their own set
_UNSAVED: Dict[str, Set[str]] = {}


class HeldTupleError(Exception):
    """An attribute holds a tuple of a tuple tree (a buffer of unacked input)."""


class _UntrackedPickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> None:
        if isinstance(obj, StormTuple) and obj.anchors:
            raise HeldTupleError()
        return None


def dumps_untracked(value: Any) -> bytes:
    """``pickle.dumps(value)``, raising :class:`HeldTupleError` when it holds a tuple
    that belongs to a tuple tree: such a tuple's offset is not committed, so a restart
    replays it; saving it too would give the bolt its copy twice."""
    buf = io.BytesIO()
    _UntrackedPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buf.getvalue()


def slot_name(slot: Tuple[str, int]) -> str:
    return f"{slot[0]}[{slot[1]}]"
