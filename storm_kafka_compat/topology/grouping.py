"""Storm's stream groupings: a bolt's subscription to a stream (:class:`Grouping`)
and which tasks of the subscribing component receive a tuple (:func:`route`).

Fields grouping hashes the grouped values with :func:`stable_hash`, which is the
same in every process, so a Spark worker routes a tuple as any other would.
"""

from __future__ import annotations

import copy
import random
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, get_args

from storm_kafka_compat.config.stages import SHUFFLES
from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.topology.tuples import DEFAULT_STREAM, StormTuple, fields_index

__all__ = ["GROUPINGS", "GroupingKind", "Grouping", "CustomStreamGrouping", "route", "stable_hash",
           "PartialKeyBalance", "ROUTED_BY_EMITTER"]

#: a grouping's name as this project spells it
GroupingKind = Literal["shuffle", "fields", "global", "all", "local_or_shuffle", "partial_key",
                       "direct", "custom", "none"]
GROUPINGS: Tuple[GroupingKind, ...] = get_args(GroupingKind)
#: Storm's spellings of the grouping names (Flux's ``type`` and the Java methods)
GROUPING_ALIASES: Dict[str, GroupingKind] = {
    "localOrShuffle": "local_or_shuffle", "LOCAL_OR_SHUFFLE": "local_or_shuffle",
    "partialKey": "partial_key", "PARTIAL_KEY": "partial_key", "SHUFFLE": "shuffle",
    "FIELDS": "fields", "GLOBAL": "global", "ALL": "all", "DIRECT": "direct", "NONE": "none",
    "CUSTOM": "custom", "customGrouping": "custom", "noneGrouping": "none"}
#: every spelling of a grouping name -> the project's
_BY_NAME: Dict[str, GroupingKind] = {**{g: g for g in GROUPINGS}, **GROUPING_ALIASES}
#: groupings whose task the emitter picks (``emit_direct``), not the tuple
ROUTED_BY_EMITTER: Tuple[GroupingKind, ...] = ("direct",)


class CustomStreamGrouping:
    """Storm's ``CustomStreamGrouping``: ``prepare`` once per emitting task, then
    ``choose_tasks(task_id, values)`` gives the target task indexes (0-based within the
    subscribing component) of each tuple."""

    def prepare(self, context: Any, stream: Tuple[str, str], target_tasks: List[int]) -> None:
        """``stream`` is (source component, stream id); ``target_tasks`` the indexes."""

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> List[int]:
        raise NotImplementedError


class PartialKeyBalance:
    """Storm's partial-key grouping (the "power of two choices"): a key may go to two
    tasks, picked by two independent hashes of its values; each tuple goes to the one
    of the two that this emitter has sent fewer tuples to so far. Load balances, and a
    key's tuples meet in at most two tasks (a downstream step joins the two halves)."""

    def __init__(self, n_tasks: int) -> None:
        self.sent = [0] * n_tasks

    def choose(self, values: Sequence[Any]) -> int:
        n = len(self.sent)
        first = stable_hash(values) % n
        second = zlib.crc32(b"second" + b"".join(_frame(v) for v in values)) % n
        pick = first if self.sent[first] <= self.sent[second] else second
        self.sent[pick] += 1
        return pick


@dataclass(frozen=True)
class Grouping:
    """One subscription of a bolt to a stream of another component."""

    kind: GroupingKind
    source: str
    stream: str = DEFAULT_STREAM
    fields: Tuple[str, ...] = ()
    #: ``module:Class`` of a custom grouping (a :class:`CustomStreamGrouping`)
    custom: Optional[str] = None


def _encode(value: Any) -> bytes:
    if value is None:
        return b"n"
    if isinstance(value, bytes):
        return b"b" + value
    if isinstance(value, str):
        return b"s" + value.encode("utf-8", "surrogatepass")
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, int):
        return b"i" + str(value).encode()
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**63:
            return b"i" + str(int(value)).encode()  # 1.0 groups with 1, as == says
        return b"d" + struct.pack(">d", value)
    if isinstance(value, (list, tuple)):
        return b"l" + b"".join(_frame(v) for v in value)
    if isinstance(value, dict):
        return b"m" + b"".join(_frame(k) + _frame(v) for k, v in
                               sorted(value.items(), key=lambda kv: repr(kv[0])))
    return b"r" + repr(value).encode("utf-8", "surrogatepass")


def _frame(value: Any) -> bytes:
    data = _encode(value)
    return struct.pack(">I", len(data)) + data


def stable_hash(values: Sequence[Any]) -> int:
    """A hash of ``values`` that is the same in every process and run.

    Python's ``hash()`` of str/bytes is salted per process, so it cannot route
    tuples consistently across Spark workers; this is CRC-32 of a typed,
    length-framed encoding (values equal under ``==`` for the common scalar
    types hash alike).
    """
    if len(values) == 1:
        return zlib.crc32(_encode(values[0]))
    return zlib.crc32(b"".join(_frame(v) for v in values))


#: stable_hash of recent single str/bytes keys (a word count routes the same words over
#: and over: the CRC of the typed encoding cost more than the rest of the routing)
_KEY_HASHES: Dict[Any, int] = {}
#: keys remembered before the memo starts over
KEY_HASHES_KEPT = 100_000


def key_hash(value: Any) -> int:
    """``stable_hash([value])``, remembered for str and bytes keys."""
    if type(value) is str or type(value) is bytes:
        h = _KEY_HASHES.get(value)
        if h is None:
            if len(_KEY_HASHES) >= KEY_HASHES_KEPT:
                _KEY_HASHES.clear()
            h = _KEY_HASHES[value] = zlib.crc32(_encode(value))
        return h
    return zlib.crc32(_encode(value))


def route(grouping: Grouping, tup: StormTuple, n_tasks: int, *,
          rng: Optional[random.Random] = None, seq: int = 0,
          chooser: Any = None) -> List[int]:
    """The task indexes of a component that receive ``tup``.

    Parameters
    ----------
    grouping : Grouping
        The subscription.
    tup : StormTuple
        The tuple (fields grouping reads its values).
    n_tasks : int
        Parallelism of the receiving component.
    rng : random.Random, optional
        Shuffle grouping draws from it when given.
    seq : int
        Shuffle grouping without ``rng``: deterministic round-robin, task ``seq % n``.
    chooser : object, optional
        The emitter's :class:`PartialKeyBalance` (partial key) or prepared
        :class:`CustomStreamGrouping` (custom) of this subscription.

    ``local_or_shuffle`` and ``none`` route as ``shuffle``: every task of a stage runs
    where the Spark task runs, so every task is local. ``direct`` is routed by the
    emitter (:meth:`~storm_kafka_compat.topology.bolts.OutputCollector.emit_direct`).
    """
    kind = grouping.kind
    if kind == "custom":
        return _custom_tasks(grouping, chooser, tup, n_tasks)
    if n_tasks == 1:
        return [0]
    if kind in SHUFFLES:
        return [rng.randrange(n_tasks) if rng is not None else seq % n_tasks]
    if kind == "partial_key":
        index = fields_index(tup.fields)
        values = tup.values
        key = [values[index[f]] for f in grouping.fields] if grouping.fields else list(values)
        return [chooser.choose(key)]
    if kind == "fields":
        index = fields_index(tup.fields)
        values = tup.values
        if len(grouping.fields) == 1:
            return [key_hash(values[index[grouping.fields[0]]]) % n_tasks]
        return [stable_hash([values[index[f]] for f in grouping.fields]) % n_tasks]
    if kind == "global":
        return [0]
    if kind == "all":
        return list(range(n_tasks))
    raise TopologyError(f"grouping {kind!r} is not one of {', '.join(GROUPINGS)}",
                        value=kind, allowed=GROUPINGS)


def _custom_tasks(grouping: Grouping, chooser: Any, tup: StormTuple, n_tasks: int
                  ) -> List[int]:
    tasks = [int(t) for t in chooser.choose_tasks(tup.source_task, list(tup.values))]
    bad = [t for t in tasks if not 0 <= t < n_tasks]
    if bad:
        raise TopologyError(f"custom grouping {grouping.custom} chose task(s) {bad} of a "
                            f"component with {n_tasks} tasks; choose indexes 0..{n_tasks - 1}",
                            value=bad)
    return tasks


def canonical_grouping(kind: str) -> Optional[GroupingKind]:
    """A grouping name as this project spells it (Storm's spellings accepted); None
    for a name that is no grouping."""
    return _BY_NAME.get(kind)


def new_custom_grouping(grouping: Grouping, source_task: int, n_tasks: int) -> Any:
    """The custom grouping object of ``grouping`` for one emitting task, prepared."""
    from storm_kafka_compat.config.objects import load_object
    factory = load_object(str(grouping.custom), key=f"grouping {grouping.custom}")
    obj = factory() if isinstance(factory, type) else copy.deepcopy(factory)
    prepare = getattr(obj, "prepare", None)
    if callable(prepare):
        prepare(None, (grouping.source, grouping.stream), list(range(n_tasks)))
    if not callable(getattr(obj, "choose_tasks", None)):
        raise TopologyError(f"custom grouping {grouping.custom} gave {obj!r}, which has no "
                            f"choose_tasks(task_id, values); subclass CustomStreamGrouping",
                            value=grouping.custom)
    return obj
