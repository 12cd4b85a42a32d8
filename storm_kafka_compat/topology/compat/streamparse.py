"""streamparse and pystorm bolts, run as they are inside a bolt task.

A streamparse ``Bolt`` is a pystorm ``Bolt``; under Storm it is a process of its own that
speaks Storm's multilang protocol on stdin/stdout. Everything it says goes through one
seam: ``self.serializer.send_message(dict)`` (emit, ack, fail, log, error, sync, metrics),
and the task ids an ``emit(..., need_task_ids=True)`` waits for come back through
``serializer.read_message()``. :class:`StreamparseBolt` gives the bolt a
:class:`CollectorChannel` as its serializer, which turns those dicts into calls on the
task's :class:`~storm_kafka_compat.topology.bolts.OutputCollector`; the bolt's own
``process``, ``emit``, ``ack``, ``fail``, ``auto_ack``/``auto_anchor``/``auto_fail``,
``BatchingBolt.process_batches`` run unchanged, in the process of the bolt task, with no
JSON and no pipe (docs/performance.md has the measured difference).

What differs from Storm (docs/python-storm.md):

* tuple ids are this task's counters (strings), ``task`` is the emitting task's index
  within its component, and ``need_task_ids`` returns task indexes;
* ``direct_task`` (direct groupings) is refused with a ValueError naming the bolt;
* a ``BatchingBolt`` or ``TicklessBatchingBolt`` processes its batches at the end of every
  engine batch (and, for ``BatchingBolt``, on tick tuples when the topology sends them),
  so no tuple is left un-acked when the Spark batch that carries it ends; a
  ``TicklessBatchingBolt``'s timer thread is not started;
* an exception in ``process`` fails the input (``auto_fail`` or not) and is counted on the
  driver; Storm would restart the bolt's process, which replays the same tuples later;
* logging: ``self.logger`` is the ``pystorm.component.<component>`` logger and ``log()``
  writes to it; no handler is installed (``pystorm.log.*`` settings are ignored).

Pure Python; imports pystorm only through the classes it is given.
"""

from __future__ import annotations

import inspect
import io
import logging
import pickle
import sys
import threading
from collections import deque, namedtuple
from functools import lru_cache
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Tuple

from storm_kafka_compat.errors import BatchEndError
from storm_kafka_compat.topology.bolts import OutputCollector, RichBolt, TopologyContext
from storm_kafka_compat.topology.ticks import SYSTEM_COMPONENT, TICK_STREAM
from storm_kafka_compat.topology.tuples import DEFAULT_STREAM, StormTuple

log = logging.getLogger(__name__)

__all__ = ["is_pystorm_bolt", "StreamparseBolt", "CollectorChannel", "stream_fields"]

#: Storm's tick tuples: component ``__system``, stream ``__tick``

#: Storm's multilang log levels (trace .. error) as Python logging levels
_LEVELS = {0: 5, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}


def _pystorm_bolt_module() -> Any:
    """``pystorm.bolt`` when something imported it (a user's bolt module did), else None."""
    return sys.modules.get("pystorm.bolt")


def is_pystorm_bolt(obj: Any) -> bool:
    """True for a pystorm (so streamparse) ``Bolt`` subclass."""
    module = _pystorm_bolt_module()
    return (module is not None and inspect.isclass(obj) and issubclass(obj, module.Bolt))


def stream_fields(outputs: Any) -> Dict[str, Tuple[str, ...]]:
    """A streamparse ``outputs`` (field names, or ``Stream`` objects) -> stream -> fields."""
    if not outputs:
        return {}
    names = [o for o in outputs if isinstance(o, str)]
    out: Dict[str, Tuple[str, ...]] = {DEFAULT_STREAM: tuple(names)} if names else {}
    for o in outputs:
        if not isinstance(o, str):  # streamparse.Stream: fields, name
            out[str(getattr(o, "name", DEFAULT_STREAM) or DEFAULT_STREAM)] = tuple(
                getattr(o, "fields", None) or ())
    return out


@lru_cache(maxsize=256)
def _values_type(source: str, stream: str, fields: Tuple[str, ...]) -> Callable[..., Any]:
    """The namedtuple pystorm gives ``tup.values`` from Storm 0.10 on (``tup.values.word``)."""
    try:
        values_type: Any = namedtuple("Values", fields)  # type: ignore[misc]
        return values_type._make
    except ValueError:  # a field name that is not an identifier: a plain tuple
        return tuple


class CollectorChannel:
    """What a pystorm component takes for its serializer: the multilang messages it would
    write to Storm go to :meth:`StreamparseBolt.command` as dicts; the task ids Storm
    would answer an emit with are queued here for ``read_message``."""

    def __init__(self, command: Callable[[Dict[str, Any]], None]) -> None:
        self.send_message = command
        self.task_ids: Deque[List[int]] = deque()
        self.output_stream = None
        self.input_stream = None

    def read_message(self) -> List[int]:
        if not self.task_ids:
            raise RuntimeError("the bolt read from Storm outside an emit that asked for "
                               "task ids; only emit(need_task_ids=True) reads here")
        return self.task_ids.popleft()


class StreamparseBolt(RichBolt):
    """A streamparse/pystorm ``Bolt`` class as one bolt task (a rich bolt).

    Parameters
    ----------
    bolt_class : type
        A subclass of ``streamparse.Bolt`` (``pystorm.bolt.Bolt``), ``BatchingBolt`` or
        ``TicklessBatchingBolt``.
    """

    def __init__(self, bolt_class: type) -> None:
        self.bolt_class: Any = bolt_class
        self.bolt: Any = None
        self.pending: Dict[str, StormTuple] = {}
        self.next_id = 0
        self.batching = False
        self.auto_ack_each = True
        self.given: frozenset[str] = frozenset()
        self.channel: Optional[CollectorChannel] = None
        self.make_tuple: Callable[..., Any] = tuple

    def declare_output_fields(self) -> Dict[str, Tuple[str, ...]]:
        return stream_fields(getattr(self.bolt_class, "outputs", None))

    def __repr__(self) -> str:
        return f"StreamparseBolt({self.bolt_class.__module__}.{self.bolt_class.__qualname__})"

    # --- set-up ---------------------------------------------------------------------------
    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: OutputCollector) -> None:
        """Build the bolt as pystorm would after Storm's handshake, then ``initialize``."""
        self.collector = collector
        module = _pystorm_bolt_module()
        self.make_tuple = sys.modules["pystorm.component"].Tuple  # id component stream task values
        self.batching = issubclass(self.bolt_class, module.BatchingBolt)
        # Bolt._run acks after process(); BatchingBolt acks in process_batches()
        self.auto_ack_each = not self.batching
        bolt = self._construct(module)
        self.channel = CollectorChannel(self.command)
        bolt.serializer = self.channel
        storm_context = multilang_context(context)
        bolt.topology_name = conf.get("topology.name", "")
        bolt.task_id = context.task_index
        bolt.component_name = context.component_id
        bolt.debug = conf.get("topology.debug", False)
        bolt.storm_conf = dict(conf)
        bolt.context = storm_context
        bolt.logger = logging.getLogger(f"pystorm.component.{context.component_id}")
        bolt._current_tups = []
        self.bolt = bolt
        #: what pystorm gave the instance: not the bolt's own state (see get_state)
        self.given = frozenset(vars(bolt))
        bolt.initialize(bolt.storm_conf, storm_context)

    def _construct(self, module: Any) -> Any:
        """An instance without a signal handler (worker threads cannot install one) and,
        for a TicklessBatchingBolt, without its timer thread: batches end with the engine's."""
        streams = {"input_stream": io.BytesIO(), "output_stream": io.BytesIO(),
                   "rdb_signal": None}
        tickless = getattr(module, "TicklessBatchingBolt", None)
        if tickless is None or not issubclass(self.bolt_class, tickless):
            return self.bolt_class(**streams)
        bolt = self.bolt_class.__new__(self.bolt_class)
        module.BatchingBolt.__init__(bolt, **streams)
        bolt.exc_info = None
        bolt._batch_lock = threading.RLock()
        return bolt

    # --- the bolt's messages to Storm -----------------------------------------------------
    def command(self, msg: Dict[str, Any]) -> None:
        """One multilang message from the bolt, as Storm's ShellBolt would read it."""
        kind = msg.get("command")
        if kind == "emit":
            self.emit(msg)
        elif kind == "ack":
            t = self.pending.pop(msg["id"], None)
            if t is not None:
                self.collector.ack(t)
        elif kind == "fail":
            t = self.pending.pop(msg["id"], None)
            if t is not None:
                self.collector.fail(t)
        elif kind == "log":
            logging.getLogger(f"pystorm.component.{self.collector.context.component_id}").log(
                _LEVELS.get(msg.get("level", 2), logging.INFO), "%s", msg.get("msg"))
        elif kind == "error":
            self.collector.report_error(RuntimeError(str(msg.get("msg"))))
        # sync and metrics have no counterpart here

    def emit(self, msg: Dict[str, Any]) -> None:
        if msg.get("task") is not None:
            raise ValueError(
                f"bolt {self.collector.context.component_id!r} emitted with direct_task="
                f"{msg['task']}: direct groupings are not supported; emit without it")
        pending = self.pending
        anchors = [pending[a] for a in msg.get("anchors") or () if a in pending]
        tasks = self.collector.emit(msg["tuple"], anchors=anchors or None,
                                    stream=msg.get("stream") or DEFAULT_STREAM)
        if msg.get("need_task_ids", True):
            assert self.channel is not None
            self.channel.task_ids.append(tasks)

    # --- Storm's tuples to the bolt --------------------------------------------------------
    def execute(self, tup: StormTuple) -> None:
        """pystorm's ``Bolt._run`` for one tuple (read, process or process_tick, auto-ack)."""
        bolt = self.bolt
        self.next_id += 1
        tid = str(self.next_id)
        self.pending[tid] = tup
        values = _values_type(tup.source_component, tup.stream, tuple(tup.fields))(tup.values)
        ptup = self.make_tuple(tid, tup.source_component, tup.stream, tup.source_task, values)
        bolt._current_tups = [ptup]
        try:
            if tup.stream == TICK_STREAM and tup.source_component == SYSTEM_COMPONENT:
                bolt.process_tick(ptup)
                if self.auto_ack_each and bolt.auto_ack:
                    bolt.ack(ptup)
            else:
                bolt.process(ptup)
                if self.auto_ack_each and bolt.auto_ack:
                    bolt.ack(ptup)
        except Exception:
            self.pending.pop(tid, None)  # the runner fails it and counts the error
            raise
        finally:
            bolt._current_tups = []

    def finish_batch(self) -> None:
        """End of the engine's batch: a batching bolt processes what it holds (its
        ``process_batches``, auto-acking as pystorm does); on an exception the tuples
        still held fail (pystorm's ``auto_fail``) and :class:`BatchEndError` is raised."""
        if not self.batching or not self.bolt._batches:
            return
        bolt = self.bolt
        lock = getattr(bolt, "_batch_lock", None)
        try:
            if lock is not None:
                with lock:
                    bolt.process_batches()
            else:
                bolt.process_batches()
        except Exception as exc:
            for batch in list(bolt._batches.values()):
                for ptup in batch:
                    t = self.pending.pop(ptup.id, None)
                    if t is not None:
                        self.collector.fail(t)
            bolt._batches.clear()
            raise BatchEndError(f"{type(exc).__name__} in process_batch: {exc}") from exc
        finally:
            bolt._current_tups = []
            bolt._tick_counter = 0

    def cleanup(self) -> None:
        self.pending.clear()

    # --- state saved with the offsets (topology/state.py) ----------------------------------
    def get_state(self) -> Dict[str, bytes]:
        """The bolt's own instance attributes (what ``initialize`` and ``process`` set),
        each pickled; what pystorm set up and what cannot be pickled is left out."""
        from storm_kafka_compat.topology.state import picklable_attributes
        own = {k: v for k, v in vars(self.bolt).items() if k not in self.given}
        ctx = self.collector.context
        return picklable_attributes(own, f"{ctx.component_id}[{ctx.task_index}]")

    def set_state(self, state: Mapping[str, bytes]) -> None:
        for key, raw in state.items():
            setattr(self.bolt, key, pickle.loads(raw))


def multilang_context(context: TopologyContext) -> Dict[str, Any]:
    """The ``context`` of Storm's multilang handshake for one task."""
    return {"taskid": context.task_index, "componentid": context.component_id,
            "task->component": {str(context.task_index): context.component_id},
            "stream->outputfields": {s: list(f) for s, f in context.output_fields.items()}}
