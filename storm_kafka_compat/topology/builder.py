"""A topology of bolts behind the Kafka spout, with Storm's stream groupings.

:class:`TopologyBuilder` mirrors Storm's builder::

    builder = TopologyBuilder()
    builder.set_spout("kafka", ("str",))
    builder.set_bolt("split", SplitBolt, 2).shuffle_grouping("kafka")
    builder.set_bolt("count", CountBolt, 2).fields_grouping("split", ["word"])
    topology = builder.build()          # validated; topology.order is topological

or from the CONFIG form with :func:`~storm_kafka_compat.topology.spec.from_spec`. The
groupings, and which tasks of a component receive a tuple, are in
:mod:`storm_kafka_compat.topology.grouping`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.config.topology_spec import BOLT_KINDS, check_tick_freq
from storm_kafka_compat.topology.bolts import OutputFields, normalize_output_fields
from storm_kafka_compat.topology.grouping import GROUPINGS, Grouping, canonical_grouping
from storm_kafka_compat.topology.instances import instantiate_bolt
from storm_kafka_compat.topology.tuples import DEFAULT_STREAM
from storm_kafka_compat.topology.windowed_executor import WindowedBoltExecutor
from storm_kafka_compat.topology.windowing import instantiate_windowed, is_windowed_factory

__all__ = ["BoltSpec", "Topology", "TopologyBuilder", "BoltDeclarer", "TopologyError"]


@dataclass
class BoltSpec:
    """A bolt component: its factory, kind, parallelism, inputs and outputs."""

    name: str
    factory: Any
    parallelism: int = 1
    kind: Optional[str] = None
    inputs: List[Grouping] = field(default_factory=list)
    output_fields: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    #: the tick period its CONFIG entry or declarer sets (s); None: the bolt's own
    #: configuration, else the topology's
    tick_freq_secs: Optional[float] = None

    def new_instance(self) -> Any:
        """A fresh bolt instance for one task (a windowed bolt inside its executor)."""
        if is_windowed_factory(self.factory):
            return WindowedBoltExecutor(instantiate_windowed(self.factory, self.name))
        return instantiate_bolt(self.factory, self.kind, name=self.name,
                                fields=self.output_fields or None)


class BoltDeclarer:
    """Returned by :meth:`TopologyBuilder.set_bolt`; declares the bolt's inputs."""

    def __init__(self, spec: BoltSpec) -> None:
        self._spec = spec

    def _add(self, grouping: Grouping) -> "BoltDeclarer":
        self._spec.inputs.append(grouping)
        return self

    def shuffle_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> "BoltDeclarer":
        """Tuples spread evenly over the tasks."""
        return self._add(Grouping("shuffle", source, stream))

    def fields_grouping(self, source: str, fields: Sequence[str],
                        stream: str = DEFAULT_STREAM) -> "BoltDeclarer":
        """Tuples with equal values of ``fields`` go to the same task."""
        if isinstance(fields, str):
            fields = (fields,)
        return self._add(Grouping("fields", source, stream, tuple(fields)))

    def global_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> "BoltDeclarer":
        """Every tuple goes to task 0."""
        return self._add(Grouping("global", source, stream))

    def all_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> "BoltDeclarer":
        """Every task receives a copy."""
        return self._add(Grouping("all", source, stream))

    def local_or_shuffle_grouping(self, source: str, stream: str = DEFAULT_STREAM
                                  ) -> "BoltDeclarer":
        """Storm's local-or-shuffle: a shuffle here (every task is local to its stage)."""
        return self._add(Grouping("local_or_shuffle", source, stream))

    def none_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> "BoltDeclarer":
        """Storm's none grouping: a shuffle."""
        return self._add(Grouping("none", source, stream))

    def partial_key_grouping(self, source: str, fields: Sequence[str],
                             stream: str = DEFAULT_STREAM) -> "BoltDeclarer":
        """A key goes to one of two tasks, the less loaded (Storm's two choices)."""
        if isinstance(fields, str):
            fields = (fields,)
        return self._add(Grouping("partial_key", source, stream, tuple(fields)))

    def direct_grouping(self, source: str, stream: str = DEFAULT_STREAM) -> "BoltDeclarer":
        """The emitter picks the task (``collector.emit_direct(task, values)``)."""
        return self._add(Grouping("direct", source, stream))

    def custom_grouping(self, source: str, grouping: str, stream: str = DEFAULT_STREAM
                        ) -> "BoltDeclarer":
        """``grouping`` (``module:Class``, a CustomStreamGrouping) picks the tasks."""
        return self._add(Grouping("custom", source, stream, custom=str(grouping)))

    def tick_freq_secs(self, secs: Optional[float]) -> "BoltDeclarer":
        """This bolt's tick period (Storm: ``addConfiguration(TOPOLOGY_TICK_TUPLE_FREQ_SECS,
        secs)`` on the declarer)."""
        self._spec.tick_freq_secs = check_tick_freq(secs, f"bolts.{self._spec.name}.tick_freq_secs")
        return self

    def grouping(self, kind: str, source: str, fields: Sequence[str] = (),
                 stream: str = DEFAULT_STREAM, custom: Optional[str] = None) -> "BoltDeclarer":
        """Any grouping by name (one of :data:`~.grouping.GROUPINGS`; Storm's spellings
        such as ``localOrShuffle`` are accepted)."""
        known = canonical_grouping(kind)
        if known is None:
            raise TopologyError(
                f"bolt {self._spec.name!r}: grouping {kind!r} is not one of "
                f"{', '.join(GROUPINGS)}", key=f"bolts.{self._spec.name}.inputs.grouping",
                value=kind, allowed=GROUPINGS)
        if known == "custom" and not custom:
            raise TopologyError(
                f"bolt {self._spec.name!r}: a custom grouping on {source!r} needs "
                f"'custom: module:Class' (a CustomStreamGrouping)",
                key=f"bolts.{self._spec.name}.inputs.custom")
        return self._add(Grouping(known, source, stream, tuple(fields), custom=custom))


@dataclass
class Topology:
    """A validated topology.

    Attributes
    ----------
    spout : str
        The spout's component name.
    spout_streams : dict
        Stream -> fields of the spout; empty when the spout's fields are not
        known yet (see :meth:`with_spout_fields`).
    bolts : dict
        Name -> :class:`BoltSpec`.
    order : list of str
        Bolt names in topological order (sources first; ties in declaration order).
    subscribers : dict
        (component, stream) -> list of (bolt name, grouping).
    """

    spout: str
    spout_streams: Dict[str, Tuple[str, ...]]
    bolts: Dict[str, BoltSpec]
    order: List[str]
    subscribers: Dict[Tuple[str, str], List[Tuple[str, Grouping]]]

    @property
    def spout_fields_declared(self) -> bool:
        """False when built without the spout's fields (they come from the scheme)."""
        return bool(self.spout_streams)

    def with_spout_fields(self, fields: OutputFields) -> "Topology":
        """The same topology with the spout's fields set (and checked again).

        Raises
        ------
        TopologyError
            A grouping names a field or stream the spout does not have.
        """
        builder = TopologyBuilder().set_spout(self.spout, fields)
        for spec in self.bolts.values():
            builder._bolts[spec.name] = spec
        return builder.build()

    def parallelism(self, component: str) -> int:
        return 1 if component == self.spout else self.bolts[component].parallelism

    def stream_fields(self, component: str, stream: str) -> Tuple[str, ...]:
        if component == self.spout:
            return self.spout_streams[stream]
        return self.bolts[component].output_fields[stream]

    def stages(self) -> List[List[str]]:
        """Bolts grouped in levels: every bolt's inputs are in earlier levels."""
        level: Dict[str, int] = {}
        for name in self.order:
            sources = [g.source for g in self.bolts[name].inputs if g.source != self.spout]
            level[name] = 1 + max((level[s] for s in sources), default=-1)
        out: List[List[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
        for name in self.order:
            out[level[name]].append(name)
        return out


class TopologyBuilder:
    """Storm's ``TopologyBuilder`` for the bolts behind one Kafka spout."""

    def __init__(self) -> None:
        self._spout: Optional[str] = None
        self._spout_streams: Dict[str, Tuple[str, ...]] = {}
        self._bolts: Dict[str, BoltSpec] = {}

    def set_spout(self, name: str, fields: Optional[OutputFields], stream: str = DEFAULT_STREAM
                  ) -> "TopologyBuilder":
        """Declare the spout: its name and output fields (the scheme's fields).

        ``fields=None`` leaves them to be bound later from the scheme
        (:meth:`Topology.with_spout_fields`; the pipeline does it); checks on
        the spout's fields wait until then.

        ``fields`` may also be a mapping stream -> fields; the spout emits on
        the first stream of the mapping (storm-kafka's ``outputStreamId``).
        """
        if self._spout is not None:
            raise TopologyError(f"the spout is already set to {self._spout!r}; a topology "
                                f"here has exactly one Kafka spout", key="spout", value=name)
        if name in self._bolts:
            raise TopologyError(f"component name {name!r} is used twice; names must be unique",
                                key="spout", value=name)
        self._spout = name
        if fields is None:
            self._spout_streams = {}
        elif isinstance(fields, Mapping):
            self._spout_streams = normalize_output_fields(fields)
        else:
            self._spout_streams = {stream: tuple(fields)}
        return self

    def set_bolt(self, name: str, bolt_factory: Any, parallelism: int = 1, *,
                 kind: Optional[str] = None, output_fields: Optional[OutputFields] = None
                 ) -> BoltDeclarer:
        """Add a bolt component.

        Parameters
        ----------
        name : str
            Unique component name.
        bolt_factory : object
            A bolt class, a zero-argument factory, a bolt instance (copied per
            task) or a simple-bolt callable.
        parallelism : int
            Number of tasks (bolt instances).
        kind : {"simple", "basic", "rich"}, optional
            Forces how ``bolt_factory`` is read.
        output_fields : optional
            Output fields; default what the bolt declares.
        """
        key = f"bolts.{name}"
        if not isinstance(name, str) or not name:
            raise TopologyError(f"bolt name {name!r} must be a non-empty string", key=key,
                                value=name)
        if name in self._bolts or name == self._spout:
            raise TopologyError(f"component name {name!r} is used twice; names must be unique",
                                key=key, value=name)
        if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
            raise TopologyError(f"bolt {name!r}: parallelism {parallelism!r} must be an "
                                f"integer >= 1", key=f"{key}.parallelism", value=parallelism)
        if kind is not None and kind not in BOLT_KINDS:
            raise TopologyError(f"bolt {name!r}: kind {kind!r} is not one of "
                                f"{', '.join(BOLT_KINDS)}", key=f"{key}.kind", value=kind,
                                allowed=BOLT_KINDS)
        spec = BoltSpec(name, bolt_factory, parallelism, kind,
                        output_fields=normalize_output_fields(output_fields))
        self._bolts[name] = spec
        return BoltDeclarer(spec)

    def build(self) -> Topology:
        """Validate and freeze the topology.

        Raises
        ------
        TopologyError
            No spout, a bolt without inputs, an unknown source or stream, an
            unknown grouping field, or a cycle.
        """
        if self._spout is None:
            raise TopologyError("no spout set; call set_spout(name, fields) first", key="spout")
        spout = self._spout
        # output fields: declared by the builder, else asked from one instance
        for spec in self._bolts.values():
            if not spec.output_fields:
                probe = spec.new_instance()
                declare = getattr(probe, "declare_output_fields", None)
                spec.output_fields = normalize_output_fields(declare() if declare else ())
        subscribers: Dict[Tuple[str, str], List[Tuple[str, Grouping]]] = {}
        for spec in self._bolts.values():
            if not spec.inputs:
                raise TopologyError(
                    f"bolt {spec.name!r} has no input; add a grouping such as "
                    f"shuffle_grouping({spout!r})", key=f"bolts.{spec.name}.inputs")
            for g in spec.inputs:
                if g.kind not in GROUPINGS:
                    raise TopologyError(
                        f"bolt {spec.name!r}: grouping {g.kind!r} is not one of "
                        f"{', '.join(GROUPINGS)}", key=f"bolts.{spec.name}.inputs.grouping",
                        value=g.kind, allowed=GROUPINGS)
                if g.source == spout:
                    streams = self._spout_streams
                    if not streams:  # spout fields bound later from the scheme
                        subscribers.setdefault((g.source, g.stream), []).append((spec.name, g))
                        continue
                elif g.source in self._bolts:
                    streams = self._bolts[g.source].output_fields
                else:
                    known = [spout, *self._bolts]
                    close = difflib.get_close_matches(str(g.source), known, n=1)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    raise TopologyError(
                        f"bolt {spec.name!r} subscribes to unknown component {g.source!r}"
                        f"{hint}; use one of {', '.join(known)}",
                        key=f"bolts.{spec.name}.inputs.from", value=g.source, allowed=known)
                if g.stream not in streams:
                    raise TopologyError(
                        f"bolt {spec.name!r} subscribes to stream {g.stream!r} of {g.source!r}, "
                        f"which declares {sorted(streams) or 'no output stream'}; declare the "
                        f"stream's fields or subscribe to a declared one",
                        key=f"bolts.{spec.name}.inputs.stream", value=g.stream,
                        allowed=sorted(streams))
                if g.kind == "partial_key" and not g.fields:
                    raise TopologyError(
                        f"bolt {spec.name!r}: partial-key grouping on {g.source!r} needs fields",
                        key=f"bolts.{spec.name}.inputs.fields")
                if g.kind in ("fields", "partial_key"):
                    if not g.fields:
                        raise TopologyError(
                            f"bolt {spec.name!r}: fields grouping on {g.source!r} needs fields",
                            key=f"bolts.{spec.name}.inputs.fields")
                    unknown = [f for f in g.fields if f not in streams[g.stream]]
                    if unknown:
                        raise TopologyError(
                            f"bolt {spec.name!r}: fields grouping on {unknown} but "
                            f"{g.source!r} stream {g.stream!r} has fields "
                            f"{list(streams[g.stream])}", key=f"bolts.{spec.name}.inputs.fields",
                            value=unknown, allowed=streams[g.stream])
                subscribers.setdefault((g.source, g.stream), []).append((spec.name, g))
        _check_direct_streams(subscribers)
        order = self._topological_order()
        return Topology(spout, dict(self._spout_streams), dict(self._bolts), order, subscribers)

    def _topological_order(self) -> List[str]:
        names = list(self._bolts)
        deps = {n: {g.source for g in self._bolts[n].inputs if g.source != self._spout}
                for n in names}
        order: List[str] = []
        done: Set[str] = set()
        remaining = names[:]
        while remaining:
            ready = [n for n in remaining if deps[n] <= done]
            if not ready:
                cycle = _find_cycle({n: deps[n] for n in remaining})
                raise TopologyError(
                    f"the bolts form a cycle: {' -> '.join(cycle)}; a Storm topology fed by "
                    f"Kafka here must be acyclic", key="bolts", value=cycle)
            for n in ready:
                order.append(n)
                done.add(n)
            remaining = [n for n in remaining if n not in done]
        return order


def _check_direct_streams(subscribers: Mapping[Tuple[str, str], List[Tuple[str, Grouping]]]
                          ) -> None:
    """A stream that one bolt takes with a direct grouping is a direct stream: every
    subscriber must take it so (Storm declares a stream direct or not)."""
    for (source, stream), subs in subscribers.items():
        kinds = {g.kind == "direct" for _name, g in subs}
        if len(kinds) > 1:
            direct = [n for n, g in subs if g.kind == "direct"]
            other = [n for n, g in subs if g.kind != "direct"]
            raise TopologyError(
                f"stream {stream!r} of {source!r} is taken with a direct grouping by "
                f"{direct} and with another grouping by {other}; a direct stream takes only "
                f"direct groupings (emit it to a second stream for the others)",
                key=f"bolts.{other[0]}.inputs.grouping", value=stream)


def _find_cycle(deps: Mapping[str, Set[str]]) -> List[str]:
    start = next(iter(deps))
    path: List[str] = []
    seen: Dict[str, int] = {}
    node = start
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(d for d in sorted(deps[node]) if d in deps)
    return path[seen[node]:] + [node]
