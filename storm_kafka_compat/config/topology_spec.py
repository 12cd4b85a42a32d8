"""A CONFIG's bolt topology (``topology.bolts``), typed: each entry's bolt, its
parallelism and its inputs, read from the mapping and checked key by key when the
CONFIG loads. Nothing is imported here; :func:`~storm_kafka_compat.topology.spec.from_spec`
builds the topology from it (on the driver at the start, once per Python worker, and in
``config check``), where the bolts, the groupings and the fields are checked against
each other.

Form::

    bolts:
      - name: split
        bolt: my.module:SplitBolt
        kind: basic            # simple | basic | rich (default: detected)
        parallelism: 2
        output_fields: [word]  # optional; default what the bolt declares
        inputs:
          - {from: spout, grouping: shuffle}
      - name: count
        bolt: my.module:count
        inputs:
          - {from: split, grouping: fields, fields: [word]}

A bolt without ``inputs`` subscribes to the spout with a shuffle grouping; ``shell``
(a multilang command) stands instead of ``bolt``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Dict, Literal, Mapping, Optional, Sequence, Tuple, Union, get_args

from storm_kafka_compat.config.fields import (BOLT_ENTRY_KEYS, BOLT_TOPOLOGY_KEYS,
                                              STORM_KAFKA_BOLT_CLASSES, check_bolt_ref,
                                              check_int, check_str)
from storm_kafka_compat.errors import TopologyError

__all__ = ["BOLT_KINDS", "BoltEntry", "BoltKind", "DEFAULT_SPOUT", "INPUT_KEYS", "InputEntry",
           "OutputFieldsEntry", "TopologySpec", "check_tick_freq", "topology_spec_from_dict"]

#: how a bolt is called: a function of one tuple, Storm's BaseBasicBolt (acked for it)
#: or BaseRichBolt (acks itself)
BoltKind = Literal["simple", "basic", "rich"]
BOLT_KINDS: Tuple[BoltKind, ...] = get_args(BoltKind)
#: the keys of one ``inputs`` entry
INPUT_KEYS: Tuple[str, ...] = ("from", "grouping", "fields", "stream", "custom")
#: the name the inputs use for the Kafka spout
DEFAULT_SPOUT = "spout"
#: the fields a bolt declares: of the default stream, or per stream
OutputFieldsEntry = Union[Tuple[str, ...], Mapping[str, Tuple[str, ...]]]
#: Storm's key for a tick period (``Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS``)
TICK_FREQ_KEY = "topology.tick.tuple.freq.secs"


@dataclass(frozen=True)
class InputEntry:
    """One subscription: the component (``from``) and stream a bolt reads, and how
    the tuples are spread over its tasks."""

    source: str
    grouping: str = "shuffle"
    fields: Tuple[str, ...] = ()
    stream: str = "default"
    #: ``module:callable`` of a custom grouping (``grouping: custom``)
    custom: Optional[str] = None

    def as_dict(self) -> Dict[str, Any]:
        return _given({"from": self.source, "grouping": self.grouping,
                       "fields": list(self.fields) or None, "stream": self.stream,
                       "custom": self.custom})


@dataclass(frozen=True)
class BoltEntry:
    """One ``bolts`` entry. Exactly one of ``bolt`` (``module:callable``, or a Storm
    bolt class the pipeline provides, such as KafkaBolt) and ``shell``."""

    name: str
    bolt: Optional[str] = None
    shell: Optional[Tuple[str, ...]] = None
    kind: Optional[BoltKind] = None
    parallelism: int = 1
    #: none given: a shuffle grouping from the spout
    inputs: Tuple[InputEntry, ...] = ()
    output_fields: Optional[OutputFieldsEntry] = None
    #: a Storm bolt class's properties (KafkaBolt's producer settings)
    properties: Optional[Mapping[str, Any]] = None
    #: the directory a shell bolt runs in
    resources: Optional[str] = None
    tick_freq_secs: Optional[float] = None

    @property
    def storm_class(self) -> bool:
        """The bolt is a Storm class the pipeline provides (KafkaBolt)."""
        return self.bolt in STORM_KAFKA_BOLT_CLASSES

    def subscriptions(self, spout: str = DEFAULT_SPOUT) -> Tuple[InputEntry, ...]:
        """The inputs, or the spout's shuffle grouping when none are given."""
        return self.inputs or (InputEntry(spout),)

    def as_dict(self) -> Dict[str, Any]:
        """The entry in CONFIG form, its defaults filled in."""
        of = self.output_fields
        return _given({
            "name": self.name, "bolt": self.bolt,
            "shell": None if self.shell is None else list(self.shell), "kind": self.kind,
            "parallelism": self.parallelism,
            "inputs": [i.as_dict() for i in self.subscriptions()],
            "output_fields": of if of is None else list(of) if isinstance(of, tuple)
            else {s: list(f) for s, f in of.items()},
            "properties": None if self.properties is None else dict(self.properties),
            "resources": self.resources, "tick_freq_secs": self.tick_freq_secs})


@dataclass(frozen=True)
class TopologySpec:
    """The bolts of a CONFIG's topology, in the order written."""

    bolts: Tuple[BoltEntry, ...] = field(default_factory=tuple)

    def as_dict(self) -> Dict[str, Any]:
        """``{"bolts": [...]}`` in CONFIG form (``config check`` prints it)."""
        return {"bolts": [b.as_dict() for b in self.bolts]}

    def entry(self, name: str) -> BoltEntry:
        return next(b for b in self.bolts if b.name == name)


def _given(entry: Dict[str, Any]) -> Dict[str, Any]:
    """``entry`` without the keys left unset (None)."""
    return {k: v for k, v in entry.items() if v is not None}


def check_tick_freq(value: Any, key: str) -> Optional[float]:
    """A tick period in seconds (> 0), or None for none; raise TopologyError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TopologyError(f"{key} {value!r} must be a number of seconds > 0 (Storm's "
                            f"{TICK_FREQ_KEY})", key=key, value=value)
    return float(value)


def topology_spec_from_dict(spec: Any, section: str = "") -> TopologySpec:
    """``{"bolts": [...]}`` as a :class:`TopologySpec`; ``section`` prefixes the keys
    the errors name (``topology`` in a CONFIG).

    Raises
    ------
    TopologyError
        An unknown key, an entry without a name or a bolt, a value of the wrong type.
    """
    at = f"{section}." if section else ""
    if not isinstance(spec, Mapping):
        raise TopologyError(f"the bolt topology must be a mapping with a 'bolts' list, "
                            f"got {type(spec).__name__}", key=f"{at}bolts")
    unknown = [k for k in spec if k not in BOLT_TOPOLOGY_KEYS]
    if unknown:
        raise TopologyError(f"unknown key(s) {unknown} in the bolt topology; valid: bolts",
                            key=f"{at}{unknown[0]}", allowed=BOLT_TOPOLOGY_KEYS)
    bolts = spec.get("bolts")
    if not isinstance(bolts, list) or not bolts:
        raise TopologyError(f"{at}bolts must be a non-empty list of bolts, got {bolts!r}; or "
                            f"use a top-level 'bolt: module:callable' for a single bolt.",
                            key=f"{at}bolts", value=bolts)
    return TopologySpec(tuple(_entry(b, f"{at}bolts[{i}]") for i, b in enumerate(bolts)))


def _entry(b: Any, key: str) -> BoltEntry:
    if not isinstance(b, Mapping):
        raise TopologyError(f"{key} must be a mapping with name, bolt (module:callable) and "
                            f"optional inputs, got {b!r}.", key=key, value=b)
    unknown = [k for k in b if k not in BOLT_ENTRY_KEYS]
    if unknown:
        raise TopologyError(f"{key}: unknown key(s) {unknown}; a bolt entry takes "
                            f"{', '.join(BOLT_ENTRY_KEYS)} (the callable goes in "
                            f"'bolt: module:callable').", key=f"{key}.{unknown[0]}", value=b,
                            allowed=BOLT_ENTRY_KEYS)
    name = b.get("name")
    if not name or ("bolt" in b) == ("shell" in b) or not (b.get("bolt") or b.get("shell")):
        raise TopologyError(f"{key} needs 'name' and 'bolt' (module:callable), or 'shell' (a "
                            f"multilang command such as [python, split.py]) instead of "
                            f"'bolt'; got {dict(b)!r}.", key=key, value=b)
    name = check_str(name, f"{key}.name", empty_ok=False)
    bolt = b.get("bolt")
    if bolt is not None:
        bolt = check_str(bolt, f"{key}.bolt", empty_ok=False).strip()
        if bolt not in STORM_KAFKA_BOLT_CLASSES:
            bolt = check_bolt_ref(bolt, f"{key}.bolt", error=TopologyError)
    kind = b.get("kind")
    if kind is not None and kind not in BOLT_KINDS:
        raise TopologyError(f"bolt {name!r}: kind {kind!r} is not one of "
                            f"{', '.join(BOLT_KINDS)}", key=f"{key}.kind", value=kind,
                            allowed=BOLT_KINDS)
    properties = b.get("properties")
    if properties is not None:
        if bolt not in STORM_KAFKA_BOLT_CLASSES:
            raise TopologyError(f"{key}.properties is only read for "
                                f"{', '.join(STORM_KAFKA_BOLT_CLASSES)}; a Python bolt takes "
                                f"its settings from the topology config",
                                key=f"{key}.properties")
        if not isinstance(properties, Mapping):
            raise TopologyError(f"{key}.properties must be a mapping", key=f"{key}.properties")
    output_fields = _output_fields(b.get("output_fields"), f"{key}.output_fields")
    shell = _shell(b, key, output_fields) if "shell" in b else None
    resources = b.get("resources")
    inputs = b.get("inputs") or []
    if not isinstance(inputs, list):
        raise TopologyError(f"{key}.inputs must be a list of inputs like "
                            f"{{from: {DEFAULT_SPOUT}, grouping: shuffle}}", key=f"{key}.inputs",
                            value=inputs)
    return BoltEntry(
        name=name, bolt=bolt, shell=shell, kind=kind,
        parallelism=check_int(b.get("parallelism", 1), f"{key}.parallelism", lo=1,
                              what="an integer >= 1"),
        inputs=tuple(_input(inp, f"{key}.inputs[{j}]") for j, inp in enumerate(inputs)),
        output_fields=output_fields,
        properties=None if properties is None else dict(properties),
        resources=None if resources is None else str(resources),
        tick_freq_secs=check_tick_freq(b.get("tick_freq_secs"), f"{key}.tick_freq_secs"))


def _input(inp: Any, key: str) -> InputEntry:
    """One ``inputs`` entry: ``from``, ``grouping`` (shuffle), ``fields``, ``stream``."""
    if not isinstance(inp, Mapping):
        raise TopologyError(f"{key} must be a mapping like "
                            f"{{from: {DEFAULT_SPOUT}, grouping: shuffle}}", key=key, value=inp)
    bad = [k for k in inp if k not in INPUT_KEYS]
    if bad:
        raise TopologyError(f"{key}: unknown key(s) {bad}; valid: {', '.join(INPUT_KEYS)}",
                            key=f"{key}.{bad[0]}", allowed=INPUT_KEYS)
    if "from" not in inp:
        raise TopologyError(f"{key} needs 'from' (a component name)", key=f"{key}.from")
    fields = inp.get("fields") or ()
    if isinstance(fields, str):
        fields = (fields,)
    custom = inp.get("custom")
    return InputEntry(str(inp["from"]), str(inp.get("grouping", "shuffle")),
                      _names(fields, f"{key}.fields"), str(inp.get("stream", "default")),
                      None if custom is None else str(custom))


def _names(value: Any, key: str) -> Tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str) or \
            not all(isinstance(v, str) for v in value):
        raise TopologyError(f"{key} must be a list of field names, got {value!r}", key=key,
                            value=value)
    return tuple(value)


def _output_fields(value: Any, key: str) -> Optional[OutputFieldsEntry]:
    """A list of names (the default stream) or a mapping stream -> names."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {str(s): _names(f, f"{key}.{s}") for s, f in value.items()}
    return _names(value, key)


def _shell(b: Mapping[str, Any], key: str, output_fields: Optional[OutputFieldsEntry]
           ) -> Tuple[str, ...]:
    """A multilang bolt's command (Storm's ``ShellBolt``); its fields must be given, as
    its Java class declared them."""
    command = b["shell"]
    if isinstance(command, str):
        command = shlex.split(command)
    if (not isinstance(command, Sequence) or not command
            or not all(isinstance(c, str) for c in command)):
        raise TopologyError(f"{key}.shell must be the command and its arguments, like "
                            f"[python, splitsentence.py]", key=f"{key}.shell", value=command)
    if output_fields is None and "output_fields" not in b:
        raise TopologyError(f"{key}: a shell bolt declares its fields in its Java class; give "
                            f"them as output_fields (e.g. [word]), or [] when it emits "
                            f"nothing", key=f"{key}.output_fields")
    return tuple(command)

