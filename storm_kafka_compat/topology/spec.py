"""The CONFIG form of a topology (``topology.bolts``) built with
:class:`~storm_kafka_compat.topology.builder.TopologyBuilder`: each entry's bolt (a
``module:callable``, a multilang ``shell`` command or a Storm class the pipeline
provides) and its inputs, checked with the key that is wrong."""

from __future__ import annotations

import functools
import shlex
from typing import Any, Mapping, Optional, Sequence

from storm_kafka_compat.config.fields import BOLT_ENTRY_KEYS, STORM_KAFKA_BOLT_CLASSES
from storm_kafka_compat.config.objects import load_object
from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.topology.bolts import OutputFields
from storm_kafka_compat.topology.builder import BoltDeclarer, Topology, TopologyBuilder
from storm_kafka_compat.topology.tuples import DEFAULT_STREAM

__all__ = ["from_spec"]


_BOLT_KEYS = BOLT_ENTRY_KEYS
_INPUT_KEYS = ("from", "grouping", "fields", "stream", "custom")


def from_spec(spec: Mapping[str, Any], *, spout_name: str = "spout",
              spout_fields: Optional[OutputFields] = None) -> Topology:
    """Build a topology from the CONFIG mapping.

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

    A bolt without ``inputs`` subscribes to the spout with a shuffle grouping.
    Without ``kind``, a BasicBolt/RichBolt class or a zero-argument factory gives
    that bolt, and a one-argument function is a simple bolt.

    Parameters
    ----------
    spec : mapping
        The ``topology`` bolts mapping of the CONFIG.
    spout_name : str
        Name the inputs use for the Kafka spout.
    spout_fields : sequence of str or mapping, optional
        The scheme's fields (mapping stream -> fields with ``outputStreamId``).
        None: bound later from the scheme by the pipeline (``process_batch``),
        which then checks the groupings on the spout.

    Raises
    ------
    TopologyError
        Unknown keys, kinds or groupings, and everything :meth:`TopologyBuilder.build` checks.
    """
    if not isinstance(spec, Mapping):
        raise TopologyError(f"the bolt topology must be a mapping with a 'bolts' list, "
                            f"got {type(spec).__name__}", key="bolts")
    unknown = [k for k in spec if k != "bolts"]
    if unknown:
        raise TopologyError(f"unknown key(s) {unknown} in the bolt topology; valid: bolts",
                            key=str(unknown[0]), allowed=("bolts",))
    bolts = spec.get("bolts")
    if not isinstance(bolts, Sequence) or isinstance(bolts, str) or not bolts:
        raise TopologyError("'bolts' must be a non-empty list of bolt mappings", key="bolts",
                            value=bolts)
    builder = TopologyBuilder().set_spout(spout_name, spout_fields)
    for i, b in enumerate(bolts):
        _add_bolt(builder, b, i, spout_name)
    return builder.build()


def _add_bolt(builder: TopologyBuilder, b: Any, i: int, spout_name: str) -> None:
    """One ``bolts`` entry: the bolt, then its inputs (a shuffle from the spout when
    none are given)."""
    if not isinstance(b, Mapping):
        raise TopologyError(f"bolts[{i}] must be a mapping, got {b!r}", key=f"bolts[{i}]")
    bad = [k for k in b if k not in _BOLT_KEYS]
    name = b.get("name")
    key = f"bolts.{name if name else i}"
    if bad:
        raise TopologyError(f"{key}: unknown key(s) {bad}; valid: {', '.join(_BOLT_KEYS)}",
                            key=f"{key}.{bad[0]}", allowed=_BOLT_KEYS)
    if not name or ("bolt" in b) == ("shell" in b):
        raise TopologyError(f"{key}: 'name' and 'bolt' (module:callable) are required, or "
                            f"'shell' (a multilang command) instead of 'bolt'", key=key)
    factory = (_shell_bolt(b, key) if "shell" in b else _storm_bolt(b, str(name), key)
               or load_object(str(b["bolt"]), key=f"{key}.bolt"))
    declarer = builder.set_bolt(str(name), factory, b.get("parallelism", 1), kind=b.get("kind"),
                                output_fields=b.get("output_fields"))
    if b.get("tick_freq_secs") is not None:
        declarer.tick_freq_secs(b["tick_freq_secs"])
    inputs = b.get("inputs") or [{"from": spout_name, "grouping": "shuffle"}]
    for j, inp in enumerate(inputs):
        _add_input(declarer, inp, f"{key}.inputs", j, spout_name)


def _add_input(declarer: BoltDeclarer, inp: Any, key: str, j: int, spout_name: str) -> None:
    """One ``inputs`` entry: ``from``, ``grouping`` (shuffle), ``fields``, ``stream``."""
    if not isinstance(inp, Mapping):
        raise TopologyError(f"{key}[{j}] must be a mapping like "
                            f"{{from: {spout_name}, grouping: shuffle}}", key=key)
    bad = [k for k in inp if k not in _INPUT_KEYS]
    if bad:
        raise TopologyError(f"{key}[{j}]: unknown key(s) {bad}; valid: "
                            f"{', '.join(_INPUT_KEYS)}", key=key, allowed=_INPUT_KEYS)
    if "from" not in inp:
        raise TopologyError(f"{key}[{j}] needs 'from' (a component name)", key=f"{key}.from")
    fields = inp.get("fields") or ()
    if isinstance(fields, str):
        fields = (fields,)
    custom = inp.get("custom")
    declarer.grouping(str(inp.get("grouping", "shuffle")), str(inp["from"]),
                      fields=tuple(fields), stream=str(inp.get("stream", DEFAULT_STREAM)),
                      custom=None if custom is None else str(custom))


def _shell_bolt(entry: Mapping[str, Any], key: str) -> Any:
    """A factory for a multilang bolt (Storm's ``ShellBolt``): ``shell`` is its command,
    ``resources`` the directory it runs in, ``output_fields`` what its Java class declared."""
    from storm_kafka_compat.topology.compat.shell import shell_bolt_factory
    command = entry["shell"]
    if isinstance(command, str):
        command = shlex.split(command)
    if (not isinstance(command, Sequence) or not command
            or not all(isinstance(c, str) for c in command)):
        raise TopologyError(f"{key}.shell must be the command and its arguments, like "
                            f"[python, splitsentence.py]", key=f"{key}.shell", value=command)
    if "output_fields" not in entry:
        raise TopologyError(f"{key}: a shell bolt declares its fields in its Java class; give "
                            f"them as output_fields (e.g. [word]), or [] when it emits "
                            f"nothing", key=f"{key}.output_fields")
    resources = entry.get("resources")
    return shell_bolt_factory(list(command), entry["output_fields"] or (),
                              str(resources) if resources is not None else None)


def _storm_bolt(entry: Mapping[str, Any], name: str, key: str) -> Any:
    """A factory for a bolt named by its Storm class (``KafkaBolt``), else None."""
    from storm_kafka_compat.topology.kafka_bolt import kafka_bolt_from_properties
    props = entry.get("properties")
    if str(entry["bolt"]) not in STORM_KAFKA_BOLT_CLASSES:
        if props is not None:
            raise TopologyError(f"{key}.properties is only read for "
                                f"{', '.join(STORM_KAFKA_BOLT_CLASSES)}; a Python bolt takes "
                                f"its settings from the topology config", key=f"{key}.properties")
        return None
    if props is not None and not isinstance(props, Mapping):
        raise TopologyError(f"{key}.properties must be a mapping", key=f"{key}.properties")
    kafka_bolt_from_properties(props or {}, name=name)  # check now, fail at config time
    return functools.partial(kafka_bolt_from_properties, dict(props or {}), name=name)
