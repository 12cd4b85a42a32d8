"""A Pyleus topology YAML (``pyleus_topology.yaml``) into CONFIG.

Pyleus lists components under ``topology``: a ``spout`` of ``type: kafka`` (storm-kafka's
KafkaSpout with ``topic``, ``zk_hosts``, ``zk_root``, ``consumer_id``, ``from_start``,
``start_offset_time``) and ``bolt`` entries with a ``module``, ``parallelism_hint`` and
``groupings`` (``shuffle_grouping: name``, ``fields_grouping: {component, fields}``,
``global_grouping``, ``all_grouping``, ``local_or_shuffle_grouping``, ``none_grouping``).
A bolt module that defines a pystorm/streamparse Bolt runs in process; any other module
runs as Pyleus ran it, ``python -m module``, over multilang JSON.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional

from storm_kafka_compat.config import parse_yaml
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.flux.common import SPOUT_NAME, Conversion, substitute
from storm_kafka_compat.flux.python_topology import (finish, grouping_input,
                                                     legacy_spout_sections,
                                                     python_module_bolt)

__all__ = ["convert_pyleus", "is_pyleus"]

#: Pyleus's top-level settings with a Storm counterpart
_STORM_KEYS = {"max_spout_pending": "topology.max.spout.pending",
               "message_timeout": "topology.message.timeout.secs"}


def is_pyleus(doc: Any) -> bool:
    """A mapping whose ``topology`` is a list of ``spout``/``bolt`` items."""
    items = doc.get("topology") if isinstance(doc, Mapping) else None
    return isinstance(items, list) and bool(items) and all(
        isinstance(i, Mapping) and set(i) <= {"spout", "bolt"} for i in items)


def convert_pyleus(text: str, *, source: str = "<pyleus>",
                   properties: Optional[Mapping[str, str]] = None,
                   env: Optional[Mapping[str, str]] = None) -> Conversion:
    """Convert Pyleus topology YAML text; module bolts are looked for beside ``source``.

    Raises
    ------
    ConfigError
        Not a Pyleus topology, or no ``type: kafka`` spout.
    """
    doc = parse_yaml(substitute(text, properties, env), source=source)
    if not is_pyleus(doc):
        raise ConfigError(f"{source} is not a Pyleus topology: its 'topology' must be a list "
                          f"of spout and bolt entries", value=source)
    unmapped: List[str] = []
    topology: Dict[str, Any] = {}
    if doc.get("name"):
        topology["name"] = doc["name"]
    for key, value in doc.items():
        if key in _STORM_KEYS:
            topology[_STORM_KEYS[key]] = value
        elif key not in ("name", "topology"):
            unmapped.append(f"{key}: {value!r} not mapped (no counterpart here).")
    config: Dict[str, Any] = {"topology": topology}
    items = doc["topology"]
    spout = _spout([i["spout"] for i in items if "spout" in i], config, unmapped, source)
    base = os.path.dirname(os.path.abspath(source))
    bolts = [_bolt(i["bolt"], spout, base, unmapped) for i in items if "bolt" in i]
    conv = finish(config, bolts, unmapped, properties, env)
    conv.file_stem = str(topology.get("name") or "topology")  # type: ignore[attr-defined]
    return conv


def _spout(spouts: List[Any], config: Dict[str, Any], unmapped: List[str],
           source: str) -> str:
    kafka = [s for s in spouts if isinstance(s, Mapping) and s.get("type") == "kafka"]
    if not kafka:
        names = ", ".join(str(s.get("name")) for s in spouts if isinstance(s, Mapping))
        raise ConfigError(f"{source} has no spout of type: kafka (found: {names or 'none'}); "
                          f"the Kafka spout stands for Pyleus's kafka spout", key="spout",
                          value=source)
    spout = kafka[0]
    opts = dict(spout.get("options") or {})
    legacy_spout_sections(config, topic=opts.pop("topic", None),
                          zk=opts.pop("zk_hosts", None), zk_root=opts.pop("zk_root", None),
                          spout_id=opts.pop("consumer_id", None), scheme="string")
    if opts.pop("from_start", False):
        config["spout"]["ignoreZkOffsets"] = True
        config["spout"]["startOffsetTime"] = -2
    if "start_offset_time" in opts:
        config["spout"]["startOffsetTime"] = opts.pop("start_offset_time")
    for key in opts:
        unmapped.append(f"spout {spout.get('name')}: option {key} not mapped.")
    unmapped.append(f"spout {spout.get('name')}: written with scheme 'string' (one field "
                    f"'str', the message as text); set spout.scheme if the bolts read "
                    f"other fields.")
    for other in spouts:
        if other is not spout:
            unmapped.append(f"spout {other.get('name')} not mapped: one CONFIG holds one "
                            f"Kafka spout.")
    return str(spout.get("name"))


def _bolt(bolt: Mapping[str, Any], spout: str, base: str,
          unmapped: List[str]) -> Dict[str, Any]:
    name = str(bolt.get("name"))
    where = f"bolts[{name}]"
    entry: Dict[str, Any] = {"name": name}
    module = bolt.get("module")
    if not module:
        raise ConfigError(f"{where} has no module (Pyleus bolts are Python modules)",
                          key=f"{where}.module")
    python_module_bolt(str(module), base, entry, unmapped, where)
    if bolt.get("parallelism_hint", 1) != 1:
        entry["parallelism"] = bolt["parallelism_hint"]
    if bolt.get("options"):
        unmapped.append(f"{where}: options {dict(bolt['options'])} not mapped: give them "
                        f"in the topology config.")
    entry["inputs"] = [_grouping(g, spout, unmapped, where) for g in bolt.get("groupings") or []]
    if not entry["inputs"]:
        del entry["inputs"]
    return entry


def _grouping(g: Any, spout: str, unmapped: List[str], where: str) -> Dict[str, Any]:
    if not isinstance(g, Mapping) or len(g) != 1:
        raise ConfigError(f"{where}: grouping {g!r} is not one 'kind_grouping: component' "
                          f"entry", key=f"{where}.groupings")
    ((key, value),) = g.items()
    kind = str(key).removesuffix("_grouping")
    if isinstance(value, Mapping):
        component = str(value.get("component"))
        fields = list(value.get("fields") or [])
        stream = str(value.get("stream") or "default")
    else:
        component, fields, stream = str(value), [], "default"
    source = SPOUT_NAME if component == spout else component
    return grouping_input(source, kind, fields, stream, unmapped, where)
