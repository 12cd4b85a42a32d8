"""Storm's bolt model for migrated topologies: basic, rich and simple bolts.

* :class:`BasicBolt` (Storm's ``BaseBasicBolt``): ``execute(tuple, collector)``;
  every emit is anchored to the input, the input is acked when ``execute``
  returns and failed when it raises :class:`FailedException`.
* :class:`RichBolt` (``BaseRichBolt``): ``prepare(conf, context, collector)``
  then ``execute(tuple)``; the bolt anchors, acks and fails explicitly through
  ``collector.emit(values, anchors=[...], stream=...)``, ``collector.ack(t)``,
  ``collector.fail(t)``.
* :func:`simple_bolt` adapts the CONTRACT's simple bolt, a callable taking a
  tuple: returning acks it, raising fails it; a returned list of value lists is
  emitted downstream (anchored) when the bolt has declared output fields.

Deviation from Storm: an exception other than ``FailedException`` escaping a
bolt kills the Storm worker (its in-flight tuples then time out and replay).
Here it fails the input tuple at once and is recorded
(:meth:`BoltRunner.record_error`): the driver shows the first of each kind with its
traceback, then counts (:mod:`storm_kafka_compat.engine.errors`); the task keeps
running. The replay outcome is the same, sooner.

The collectors do the acker bookkeeping (edge ids XOR-ed per root, see
:mod:`storm_kafka_compat.topology.acker`); where the tuples go is the job of a
:class:`Dispatcher` supplied by the runtime (:mod:`storm_kafka_compat.executor.process`).
"""

from __future__ import annotations

import inspect
import logging
import random
from dataclasses import dataclass, field
from typing import (AbstractSet, Any, Callable, Collection, Dict, List, Mapping, Optional,
                    Protocol, Sequence, Set, Tuple, Union)

from storm_kafka_compat.config.topology_spec import BOLT_KINDS
from storm_kafka_compat.errors import (BatchEndError, FailedException,
                                       ReportedFailedException)
from storm_kafka_compat.structs import BoltError, ErrorTally
from storm_kafka_compat.topology.acker import new_id
from storm_kafka_compat.topology.grouping import KEY_HASHES_KEPT, key_hash
from storm_kafka_compat.topology.tuples import (DEFAULT_STREAM, Head, Origin, StormTuple,
                                               TupleBatch, make_tuple)

logger = logging.getLogger(__name__)

__all__ = [
    "FailedException", "ReportedFailedException", "TopologyContext", "Dispatcher",
    "OutputCollector", "BasicOutputCollector", "BasicBolt", "RichBolt", "SimpleBolt",
    "simple_bolt", "normalize_output_fields", "BoltRunner", "BOLT_KINDS", "bolt_kind",
]


OutputFields = Union[Sequence[str], Mapping[str, Sequence[str]]]

class KeyedRoute:
    """A stream routed by one fields grouping on one field to another process, its
    tuples needing no edge id (:meth:`Dispatcher.keyed_route`), under one dispatcher.

    Parameters
    ----------
    index : int
        The grouped field's index.
    n : int
        The subscribing component's tasks.
    head : Head
        What the stream's tuples share (fields, stream, source, its task, and whether
        their values go bare: a stream of one field).
    batches : list of TupleBatch
        Per task, the batch its tuples go to.
    sent_roots : set of int
        Where the roots of the tuples sent on are gathered.
    """

    __slots__ = ("index", "n", "width", "bare", "head", "batches", "sent_roots", "anchor",
                 "origin", "tasks")

    def __init__(self, index: int, n: int, head: Head, batches: List[TupleBatch],
                 sent_roots: Set[int]) -> None:
        self.index = index
        self.n = n
        self.head = head
        self.width = len(head[0])
        #: a stream of one field: its lists go to the batches as their value, under a
        #: bare head (:class:`~storm_kafka_compat.topology.tuples.TupleBatch`)
        self.bare = head[4]
        self.batches = batches
        self.sent_roots = sent_roots
        #: the input of the last emit (None: unanchored), and the origin of its tuples
        #: (one object for all of them, in every batch)
        self.anchor: Optional[StormTuple] = None
        self.origin: Origin = (head, None, None, None, None)
        #: the task of each str or bytes key met under this dispatcher (a dict lookup here
        #: in place of a call to key_hash's own memo: 0.4 us a word count's sentence)
        self.tasks: Dict[Any, int] = {}

    def add(self, values: Sequence[Any], anchor: Optional[StormTuple]) -> Optional[List[int]]:
        """Append an emit of ``values`` anchored to ``anchor`` alone (None: unanchored) to
        its task's batch with its input's origin, without making a StormTuple
        (:class:`~storm_kafka_compat.topology.tuples.TupleBatch`); the task, as emit
        answers. None: values this route does not take (a width other than the stream's,
        or under a bare head values that are not a list), which the general path sends."""
        if len(values) != self.width:
            return None
        key = values[self.index]
        if self.bare:                   # a list of one value goes as that value
            if type(values) is not list:
                return None
            values = key
        task = self.tasks.get(key) if type(key) is bytes or type(key) is str else None
        if task is None:
            task = self.task_of(key)
        if anchor is not self.anchor:
            self.input_changed(anchor)
        batch = self.batches[task]
        batch.values.append(values)
        batch.origins.append(self.origin)
        return [task]

    def task_of(self, key: Any) -> int:
        """The task of ``key`` (:func:`~storm_kafka_compat.topology.grouping.key_hash`),
        remembered for str and bytes keys."""
        task = key_hash(key) % self.n
        if type(key) is bytes or type(key) is str:
            if len(self.tasks) >= KEY_HASHES_KEPT:
                self.tasks.clear()
            self.tasks[key] = task
        return task

    def input_changed(self, anchor: Optional[StormTuple]) -> None:
        """The emits from here on are anchored to ``anchor`` (None: unanchored): their
        origin, and their roots among those sent on."""
        self.anchor = anchor
        if anchor is None:
            self.origin = (self.head, None, None, None, None)
            return
        ids = anchor.anchors
        self.origin = (self.head, anchor.topic, anchor.partition, anchor.offset,
                       next(iter(ids)) if len(ids) == 1 else dict.fromkeys(ids, 0) or None)
        self.sent_roots.update(ids)


_UNSET: Any = object()


def normalize_output_fields(declared: Any) -> Dict[str, Tuple[str, ...]]:
    """``declare_output_fields()`` result -> stream -> fields.

    A sequence of names declares the default stream; a mapping declares streams.
    """
    if declared is None:
        return {}
    if isinstance(declared, Mapping):
        return {str(s): tuple(f) for s, f in declared.items()}
    if isinstance(declared, str):
        return {DEFAULT_STREAM: (declared,)}
    names = tuple(declared)
    return {DEFAULT_STREAM: names} if names else {}


@dataclass
class TopologyContext:
    """What a bolt task learns about itself in ``prepare`` (Storm's ``TopologyContext``).

    Attributes
    ----------
    component_id : str
        The bolt's name in the topology.
    task_index : int
        Index of this task within the component, 0-based.
    component_tasks : int
        Parallelism of the component.
    output_fields : dict
        Stream -> fields declared by the bolt.
    """

    component_id: str
    task_index: int = 0
    component_tasks: int = 1
    output_fields: Dict[str, Tuple[str, ...]] = field(default_factory=dict)

    def get_this_component_id(self) -> str:
        return self.component_id

    def get_this_task_index(self) -> int:
        return self.task_index


class Dispatcher(Protocol):
    """Where collectors send tuples and acker messages (supplied by the runtime)."""

    #: components whose tuples need no edge id of their own (see
    #: :attr:`~storm_kafka_compat.executor.dag.TaskDispatcher.edge_free`)
    edge_free: AbstractSet[str]

    def targets(self, tup: StormTuple, direct: Optional[int] = None) -> List[Tuple[str, int]]:
        """The (component, task) copies an emitted tuple goes to (``direct``: the task
        index an ``emit_direct`` names)."""
        ...

    def deliver(self, component: str, task: int, tup: StormTuple) -> None:
        """Queue one copy for a task."""
        ...

    def keyed_route(self, source: str, source_task: int, stream: str,
                    fields: Tuple[str, ...]) -> Optional[KeyedRoute]:
        """Where ``stream`` of task ``source_task`` of ``source`` goes when its only
        subscription is a fields grouping on one field, to a bolt of another process
        whose tuples need no edge id (:attr:`edge_free`); None: route each tuple."""
        ...

    def ack_root(self, root_id: int, value: int) -> None:
        """XOR ``value`` into ``root_id``'s ack value."""
        ...

    def fail_root(self, root_id: int) -> None:
        """Fail the tree of ``root_id``."""
        ...

    def reset_root(self, root_id: int) -> None:
        """Postpone the timeout of ``root_id``."""
        ...


class OutputCollector:
    """Storm's ``OutputCollector`` (rich bolts): emit with explicit anchors, ack, fail.

    Parameters
    ----------
    context : TopologyContext
        The owning task.
    dispatcher : Dispatcher
        Where copies and acker messages go; replaced by the runtime per batch.
    rng : random.Random
        Source of edge ids.
    """

    def __init__(self, context: TopologyContext, dispatcher: Optional[Dispatcher] = None,
                 rng: Optional[random.Random] = None) -> None:
        self.context = context
        self.dispatcher = dispatcher
        self.rng = rng if rng is not None else random.Random()
        self.emitted = 0
        self.acked = 0
        self.failed = 0
        #: the last input an edge-free emit was anchored to, and its roots (each to 0)
        self._roots_of: Optional[StormTuple] = None
        self._roots: Dict[int, int] = {}
        #: stream -> its keyed route under the current dispatcher (None: none)
        self._keyed: Dict[str, Optional[KeyedRoute]] = {}

    def bind(self, dispatcher: Optional[Dispatcher]) -> None:
        """Send to ``dispatcher`` from now on (the runtime's, per batch)."""
        self.dispatcher = dispatcher
        self._keyed = {}

    def emit(self, values: Sequence[Any], anchors: Optional[Sequence[StormTuple]] = None,
             stream: str = DEFAULT_STREAM) -> List[int]:
        """Emit ``values`` on ``stream``, anchored to every tuple in ``anchors``.

        Returns the indexes of the tasks that received a copy. Without anchors
        the tuple is not tracked: its failure does not replay anything.

        Raises
        ------
        ValueError
            The stream is not declared or the value count differs from its fields.
        """
        return self.emit_to(None, values, anchors, stream)

    def emit_direct(self, task: int, values: Sequence[Any],
                    anchors: Optional[Sequence[StormTuple]] = None,
                    stream: str = DEFAULT_STREAM) -> None:
        """Storm's ``emitDirect``: send ``values`` to task ``task`` (its index within the
        subscribing component) of every bolt that subscribes to ``stream`` with a direct
        grouping."""
        self.emit_to(int(task), values, anchors, stream)

    def emit_to(self, direct: Optional[int], values: Sequence[Any],
                anchors: Optional[Sequence[StormTuple]], stream: str) -> List[int]:
        """:meth:`emit` (``direct`` None) or :meth:`emit_direct`."""
        if direct is None and (anchors is None or len(anchors) == 1):
            return self.emit_one(values, anchors[0] if anchors else None, stream)
        return self._emit_routed(direct, values, anchors, stream)

    def emit_one(self, values: Sequence[Any], anchor: Optional[StormTuple],
                 stream: str) -> List[int]:
        """:meth:`emit` anchored to ``anchor`` alone (None: unanchored), as a basic bolt's
        emits are.

        A stream with a keyed route (:meth:`Dispatcher.keyed_route`: a word count's words
        to its counters) appends the values and their origin to its task's batch, without
        making a StormTuple (:meth:`KeyedRoute.add`). The same checks, counts, roots and
        answer as the general path below."""
        route: Optional[KeyedRoute] = self._keyed.get(stream, _UNSET)
        if route is _UNSET:
            route = self._keyed_route(stream)
        if route is not None:
            tasks = route.add(values, anchor)
            if tasks is not None:
                self.emitted += 1
                return tasks
        return self._emit_routed(None, values, None if anchor is None else [anchor], stream)

    def _keyed_route(self, stream: str) -> Optional[KeyedRoute]:
        ctx = self.context
        fields = ctx.output_fields.get(stream)
        route = None
        if self.dispatcher is not None and fields is not None:
            route = self.dispatcher.keyed_route(ctx.component_id, ctx.task_index, stream,
                                                fields)
        self._keyed[stream] = route
        return route

    def _emit_routed(self, direct: Optional[int], values: Sequence[Any],
                     anchors: Optional[Sequence[StormTuple]], stream: str) -> List[int]:
        """:meth:`emit_to` for a tuple routed by the dispatcher."""
        ctx = self.context
        fields = ctx.output_fields.get(stream)
        if fields is None:
            raise ValueError(
                f"bolt {ctx.component_id!r} emitted on undeclared stream {stream!r}; "
                f"declare it in declare_output_fields() (declared: {sorted(ctx.output_fields)})")
        if len(values) != len(fields):
            raise ValueError(
                f"bolt {ctx.component_id!r} emitted {len(values)} values on stream {stream!r} "
                f"whose fields are {list(fields)}; emit one value per field")
        self.emitted += 1
        dispatcher = self.dispatcher
        assert dispatcher is not None, "collector used outside a batch"
        first = anchors[0] if anchors else None
        if first is not None:
            topic, partition, offset = first.topic, first.partition, first.offset
        else:
            topic = partition = offset = None
        component_id, task_index = ctx.component_id, ctx.task_index
        proto = make_tuple(values, fields, stream, component_id, task_index, topic, partition,
                           offset, {})
        targets = dispatcher.targets(proto, direct) if direct is not None \
            else dispatcher.targets(proto)
        tasks: List[int] = []
        deliver = dispatcher.deliver
        edge_free = dispatcher.edge_free
        for i, (component, task) in enumerate(targets):
            copy_ = proto if i == 0 else make_tuple(values, fields, stream, component_id,
                                                    task_index, topic, partition, offset, {})
            if anchors:
                if component in edge_free:
                    self._roots_only(copy_, anchors)
                else:
                    self._new_edges(copy_, anchors)
            deliver(component, task, copy_)
            tasks.append(task)
        return tasks

    def _new_edges(self, tup: StormTuple, anchors: Sequence[StormTuple]) -> None:
        """Anchor ``tup`` as Storm does: a new edge id per anchor, XOR-ed into the
        anchor's pending value and recorded per root in ``tup``."""
        ids = tup.anchors
        rng = self.rng
        for a in anchors:
            if a.anchors:
                edge = rng.getrandbits(64) or new_id(rng)
                a.ack_val ^= edge
                for root in a.anchors:
                    ids[root] = ids.get(root, 0) ^ edge

    def _roots_only(self, tup: StormTuple, anchors: Sequence[StormTuple]) -> None:
        """Anchor ``tup``, bound for a bolt that acks or fails it in the call that
        executes it, in a batch whose roots are judged once every stage ran: its roots
        without an edge id (the XOR would open and close the same id). It keeps them for
        a fail and for what it is the anchor of. The emits of one input share one roots
        map, read only, so it is pickled once for all of them."""
        if len(anchors) == 1:
            a = anchors[0]
            if a is not self._roots_of:
                self._roots_of = a
                self._roots = dict.fromkeys(a.anchors, 0)
            tup.anchors = self._roots
            return
        ids = tup.anchors
        for a in anchors:
            for root in a.anchors:
                ids[root] = 0

    def ack(self, tup: StormTuple) -> None:
        """Ack ``tup``: for each of its roots, its edge id XOR its children's ids."""
        self.acked += 1
        if tup.anchors:
            dispatcher = self.dispatcher
            assert dispatcher is not None, "collector used outside a batch"
            ack_val = tup.ack_val
            for root, edge in tup.anchors.items():
                if edge ^ ack_val:   # a zero changes no XOR (an edge-free leaf's ack)
                    dispatcher.ack_root(root, edge ^ ack_val)

    def fail(self, tup: StormTuple) -> None:
        """Fail ``tup``: every root it belongs to fails (and is replayed)."""
        self.failed += 1
        if tup.anchors:
            dispatcher = self.dispatcher
            assert dispatcher is not None, "collector used outside a batch"
            for root in tup.anchors:
                dispatcher.fail_root(root)

    def reset_timeout(self, tup: StormTuple) -> None:
        """Postpone the timeout of every root of ``tup`` (``resetTimeout``)."""
        if tup.anchors and self.dispatcher is not None:
            for root in tup.anchors:
                self.dispatcher.reset_root(root)

    def report_error(self, error: BaseException) -> None:
        """Storm's ``reportError``: logged at WARNING with the component name."""
        logger.warning("bolt %r task %d reported: %r", self.context.component_id,
                       self.context.task_index, error, exc_info=error)


class BasicOutputCollector:
    """Storm's ``BasicOutputCollector``: every emit is anchored to the current input."""

    __slots__ = ("collector", "input")

    def __init__(self, collector: OutputCollector) -> None:
        self.collector = collector
        self.input: Optional[StormTuple] = None

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> List[int]:
        """Emit ``values`` anchored to the input being executed: a keyed route takes it
        here, without :meth:`OutputCollector.emit_one`'s frame (0.3 us a word count's
        sentence), with emit_one's counts and answer; everything else goes there."""
        collector = self.collector
        route = collector._keyed.get(stream)
        if route is not None:
            tasks = route.add(values, self.input)
            if tasks is not None:
                collector.emitted += 1
                return tasks
        return collector.emit_one(values, self.input, stream)

    def emit_direct(self, task: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit ``values`` to task ``task``, anchored to the input being executed."""
        anchors = [self.input] if self.input is not None else None
        self.collector.emit_direct(task, values, anchors=anchors, stream=stream)

    def reset_timeout(self, tup: StormTuple) -> None:
        self.collector.reset_timeout(tup)

    def report_error(self, error: BaseException) -> None:
        self.collector.report_error(error)


class BasicBolt:
    """Base class for auto-anchoring, auto-acking bolts (``BaseBasicBolt``)."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Called once per task before the first tuple."""

    def execute(self, tup: StormTuple, collector: BasicOutputCollector) -> None:
        """Process one tuple; return to ack it, raise :class:`FailedException` to fail it."""
        raise NotImplementedError

    def declare_output_fields(self) -> OutputFields:
        """Output fields: a sequence (default stream) or a mapping stream -> fields."""
        return ()

    def cleanup(self) -> None:
        """Called when the runtime is torn down (best effort, as in Storm)."""


class RichBolt:
    """Base class for bolts that anchor, ack and fail explicitly (``BaseRichBolt``)."""

    collector: OutputCollector

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: OutputCollector) -> None:
        """Called once per task; keep the collector."""
        self.collector = collector

    def execute(self, tup: StormTuple) -> None:
        """Process one tuple; every input must eventually be acked or failed."""
        raise NotImplementedError

    def declare_output_fields(self) -> OutputFields:
        return ()

    def cleanup(self) -> None:
        """Called when the runtime is torn down."""


class SimpleBolt(BasicBolt):
    """The CONTRACT simple bolt: ``function(tuple)``; return acks, raise fails.

    A returned iterable of value lists is emitted (anchored) when output fields
    are declared; otherwise the return value is ignored.
    """

    def __init__(self, function: Callable[[StormTuple], Any],
                 fields: Optional[OutputFields] = None) -> None:
        self.function = function
        declared = fields if fields is not None else getattr(function, "fields", ())
        self._fields = normalize_output_fields(declared)
        self._emits = DEFAULT_STREAM in self._fields

    def declare_output_fields(self) -> OutputFields:
        return self._fields

    def execute(self, tup: StormTuple, collector: BasicOutputCollector) -> None:
        result = self.function(tup)
        if result is None or not self._emits:
            return
        if isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
            raise TypeError(
                f"simple bolt {getattr(self.function, '__name__', self.function)!r} returned "
                f"{result!r}; return None or a list of value lists")
        for values in result:
            collector.emit(values)

    def __repr__(self) -> str:
        return f"SimpleBolt({getattr(self.function, '__qualname__', self.function)!r})"


def simple_bolt(function: Callable[[StormTuple], Any],
                fields: Optional[OutputFields] = None) -> SimpleBolt:
    """Adapt a CONTRACT simple bolt (a callable taking a tuple) to a :class:`BasicBolt`.

    Parameters
    ----------
    function : callable
        ``function(tuple)``; returning acks the tuple, raising fails it.
    fields : sequence of str, optional
        Output fields when the returned value lists are to be emitted downstream
        (default: the function's ``fields`` attribute, else none).
    """
    return SimpleBolt(function, fields)


def bolt_kind(bolt: Any) -> Optional[str]:
    """"basic", "rich" or None for an instance."""
    if isinstance(bolt, RichBolt):
        return "rich"
    if isinstance(bolt, BasicBolt):
        return "basic"
    execute = getattr(bolt, "execute", None)
    if execute is None:
        return None
    try:
        n = len([p for p in inspect.signature(execute).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):
        return None
    return "basic" if n >= 2 else "rich"


class BoltRunner:
    """One prepared bolt task: calls the bolt for each input with Storm's ack rules.

    Parameters
    ----------
    bolt : object
        A basic or rich bolt instance.
    context : TopologyContext
        The task's context (its ``output_fields`` are filled from the bolt).
    conf : mapping
        Topology configuration passed to ``prepare``.
    rng : random.Random
        Source of edge ids.
    """

    def __init__(self, bolt: Any, context: TopologyContext, conf: Mapping[str, Any],
                 rng: random.Random) -> None:
        self.bolt = bolt
        self.kind = bolt_kind(bolt)
        if not context.output_fields:
            declared = (bolt.declare_output_fields() if hasattr(bolt, "declare_output_fields")
                        else ())
            context.output_fields = normalize_output_fields(declared)
        self.context = context
        #: acks or fails each input in the call that executes it (a basic bolt without
        #: a batch end, whose ``finish_batch`` could ack what it held)
        self.acks_in_execute = self.kind == "basic" and not hasattr(bolt, "finish_batch")
        self.collector = OutputCollector(context, None, rng)
        self.executed = 0
        #: exceptions raised since :meth:`take_errors`, by type
        self.errors = ErrorTally()
        if self.kind == "rich":
            bolt.prepare(conf, context, self.collector)
            self._basic: Optional[BasicOutputCollector] = None
        else:
            if hasattr(bolt, "prepare"):
                bolt.prepare(conf, context)
            self._basic = BasicOutputCollector(self.collector)

    def run(self, tuples: Collection[StormTuple]) -> None:
        """Execute every tuple in order."""
        self.executed += len(tuples)
        bolt = self.bolt
        collector = self.collector
        basic = self._basic
        t: Optional[StormTuple] = None
        if basic is not None:
            execute = bolt.execute
            leaves = 0
            for t in tuples:
                basic.input = t
                try:
                    execute(t, basic)
                except FailedException as exc:
                    if isinstance(exc, ReportedFailedException):
                        collector.report_error(exc)
                    collector.fail(t)
                except Exception as exc:  # deviation: Storm kills the worker here
                    self.record_error(exc, t)
                    collector.fail(t)
                else:
                    if t.leaf and not t.ack_val:    # its ack would change no XOR
                        leaves += 1
                    else:
                        collector.ack(t)
            collector.acked += leaves
            basic.input = None
        else:
            execute = bolt.execute
            for t in tuples:
                try:
                    execute(t)
                except Exception as exc:  # deviation: Storm kills the worker here
                    self.record_error(exc, t)
                    collector.fail(t)
        finish = getattr(bolt, "finish_batch", None)
        if finish is not None:  # e.g. KafkaBolt: acks once the broker acknowledged
            try:
                finish()
            except BatchEndError as exc:  # the bolt failed what it held; counted
                cause = exc.__cause__ if exc.__cause__ is not None else exc
                self.errors.record(self.context.component_id, cause,
                                   *((t.topic, t.partition, t.offset) if t else ()))

    def record_error(self, exc: BaseException, t: StormTuple) -> None:
        """Count ``exc`` (the caller fails the input ``t``); the first of its type keeps
        its message, traceback and input, to be shown on the driver."""
        self.errors.record(self.context.component_id, exc, t.topic, t.partition, t.offset)

    def take_errors(self) -> List[BoltError]:
        """The errors recorded since the last call."""
        return self.errors.take()

    def cleanup(self) -> None:
        if hasattr(self.bolt, "cleanup"):
            self.bolt.cleanup()
