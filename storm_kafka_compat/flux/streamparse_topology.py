"""A streamparse ``Topology`` class (``topologies/<name>.py`` of a ``sparse`` project) into
CONFIG.

The file is imported as ``sparse`` imports it, with the project's ``src/`` on the path, and
its class's ``specs`` are read: the Kafka spout (``JavaSpout.spec`` of storm-kafka's or
storm-kafka-client's ``KafkaSpout``; a Python spout is replaced by the Kafka spout, whose
settings are then ``${CONFIG key}`` placeholders for ``--filter``), the Python bolts as
``bolt: module:Class`` (run as they are), ``ShellBolt.spec(command, script)`` as ``shell``,
each bolt's ``inputs`` groupings and ``par``, and the class's ``config``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Tuple

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.flux.common import SPOUT_NAME, Conversion, storm_config_into
from storm_kafka_compat.flux.components import python_placeholder
from storm_kafka_compat.flux.python_topology import (CLIENT_SPOUTS, LEGACY_SPOUTS,
                                                     client_spout_sections, finish,
                                                     grouping_input, legacy_spout_sections)

__all__ = ["convert_streamparse", "is_streamparse_topology"]


def is_streamparse_topology(text: str) -> bool:
    """A Python file that imports streamparse's Topology."""
    return "streamparse" in text and "Topology" in text


def _project_paths(path: str) -> List[str]:
    """``src/`` of the sparse project (beside ``topologies/``), the project, the file's
    directory: where its imports are found."""
    here = os.path.dirname(os.path.abspath(path))
    root = os.path.dirname(here) if os.path.basename(here) == "topologies" else here
    return [p for p in (os.path.join(root, "src"), root, here) if os.path.isdir(p)]


def _load_topologies(path: str) -> Tuple[List[Any], List[str]]:
    """The Topology subclasses the file defines, and the paths its imports need."""
    try:
        from streamparse import Topology
    except ImportError as exc:
        raise ConfigError(f"{path} is a streamparse topology; reading it needs streamparse: "
                          f"pip install 'storm-kafka-compat[streamparse]'", value=path
                          ) from exc
    paths = _project_paths(path)
    added = [p for p in paths if p not in sys.path]
    sys.path[:0] = added
    name = "skc_streamparse_topology_" + os.path.splitext(os.path.basename(path))[0]
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"{path} cannot be imported as Python", value=path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - the user's file: report any failure
            raise ConfigError(f"{path} could not be imported ({type(exc).__name__}: {exc}); "
                              f"it is imported with {', '.join(paths)} on the path, as "
                              f"'sparse' does", value=path) from exc
    finally:
        for p in added:
            sys.path.remove(p)
    found = [v for v in vars(module).values() if isinstance(v, type)
             and issubclass(v, Topology) and v is not Topology and v.__module__ == name]
    return found, paths


def convert_streamparse(path: str, *, properties: Optional[Mapping[str, str]] = None,
                        env: Optional[Mapping[str, str]] = None) -> Conversion:
    """Convert the streamparse Topology class of ``path`` into CONFIG.

    Raises
    ------
    ConfigError
        streamparse is missing, the file does not import, defines no Topology, or has no
        spout the Kafka spout can stand for.
    """
    topologies, paths = _load_topologies(path)
    if not topologies:
        raise ConfigError(f"{path} defines no streamparse Topology subclass", value=path)
    unmapped: List[str] = []
    topo = topologies[0]
    if len(topologies) > 1:
        unmapped.append(f"{path} defines {len(topologies)} topologies; converted "
                        f"{topo.__name__}: convert the others with their own file.")
    config: Dict[str, Any] = {}
    topology: Dict[str, Any] = {"name": _snake(topo.__name__)}
    storm_config_into(dict(getattr(topo, "config", None) or {}), topology, unmapped)
    config["topology"] = topology
    spout = _spout(topo.specs, config, unmapped)
    bolts = [_bolt(s, spout, unmapped) for s in topo.specs if _is_bolt(s)]
    if any("bolt" in b and ":" in b["bolt"] and "${" not in b["bolt"] for b in bolts):
        unmapped.append(f"the bolts are imported from {paths[0]}: put it on PYTHONPATH where "
                        f"the job runs (spark.pyFiles, or 'storm-kafka-compat ship').")
    conv = finish(config, bolts, unmapped, properties, env)
    conv.file_stem = topology["name"]  # type: ignore[attr-defined]
    return conv


def _snake(name: str) -> str:
    return "".join(("_" + c.lower()) if c.isupper() and i else c.lower()
                   for i, c in enumerate(name))


def _is_bolt(spec: Any) -> bool:
    return bool(spec.inputs)


def _spout(specs: List[Any], config: Dict[str, Any], unmapped: List[str]) -> str:
    """The Kafka spout's sections; the name of the spout it stands for."""
    spouts = [s for s in specs if not s.inputs]
    kafka = [s for s in spouts if _java_class(s) in LEGACY_SPOUTS + CLIENT_SPOUTS]
    chosen = kafka[0] if kafka else (spouts[0] if spouts else None)
    if chosen is None:
        raise ConfigError("the topology has no spout", key="spouts")
    java = _java_class(chosen)
    if java in CLIENT_SPOUTS:
        client_spout_sections(config)
    else:
        fields = _fields(chosen)
        scheme = "string" if fields == ["str"] else None
        legacy_spout_sections(config, scheme=scheme)
        if java is None:
            unmapped.append(
                f"spout {chosen.name} ({chosen.component_cls.__name__}) is a Python spout: "
                f"the Kafka spout stands for it; give its settings (spout.topic, hosts.zk, "
                f"spout.zkRoot, spout.id) with --filter, and a scheme whose fields are "
                f"{fields} (module:callable with fields = {tuple(fields)!r}).")
        elif scheme is None:
            unmapped.append(f"spout {chosen.name}: the KafkaSpout's SpoutConfig is Java "
                            f"(args_list is not read); give its settings with --filter, and "
                            f"a scheme whose fields are {fields}.")
    for other in spouts:
        if other is not chosen:
            unmapped.append(f"spout {other.name} not mapped: one CONFIG holds one Kafka "
                            f"spout; convert its bolts into their own CONFIG.")
    return str(chosen.name)


def _java_class(spec: Any) -> Optional[str]:
    java = getattr(getattr(spec, "component_object", None), "java_object", None)
    return getattr(java, "full_class_name", None) if java is not None else None


def _fields(spec: Any, stream: str = "default") -> List[str]:
    info = (spec.outputs or {}).get(stream)
    return list(getattr(info, "output_fields", None) or [])


def _bolt(spec: Any, spout: str, unmapped: List[str]) -> Dict[str, Any]:
    where = f"bolts[{spec.name}]"
    entry: Dict[str, Any] = {"name": spec.name}
    shell = getattr(spec.component_object, "shell", None)
    cls = spec.component_cls
    if shell is not None and shell.execution_command == "streamparse_run":
        entry["bolt"] = f"{cls.__module__}:{cls.__qualname__}"
    elif shell is not None:
        entry["shell"] = [shell.execution_command, *str(shell.script).split()]
        entry["output_fields"] = _fields(spec)
        unmapped.append(f"{where}: a multilang bolt ({shell.execution_command} "
                        f"{shell.script}); set resources to the directory holding the script.")
    else:
        java = _java_class(spec) or "?"
        entry["bolt"] = python_placeholder(java)
        unmapped.append(f"{where} {java} not mapped: port the Java bolt to Python "
                        f"(placeholder {entry['bolt']!r}).")
    par = spec.par
    if isinstance(par, dict):
        unmapped.append(f"{where}: par per environment {par}; written as the largest.")
        par = max(par.values())
    if par != 1:
        entry["parallelism"] = par
    conf = json.loads(spec.config) if isinstance(spec.config, str) else spec.config
    if conf:
        unmapped.append(f"{where}: its component config {conf} is not mapped (one "
                        f"topology config here).")
    entry["inputs"] = [_input(stream_id, grouping, spout, unmapped, where)
                       for stream_id, grouping in spec.inputs.items()]
    return entry


def _input(stream_id: Any, grouping: Any, spout: str, unmapped: List[str],
           where: str) -> Dict[str, Any]:
    source = SPOUT_NAME if stream_id.componentId == spout else str(stream_id.componentId)
    kind = next((k for k in ("fields", "shuffle", "all", "none", "direct", "local_or_shuffle",
                             "custom_object", "custom_serialized")
                 if getattr(grouping, k, None) is not None), "shuffle")
    fields = list(grouping.fields or []) if kind == "fields" else []
    if kind == "fields" and not fields:
        kind = "global"  # streamparse's Grouping.GLOBAL is fields=[]
    return grouping_input(source, kind, fields, str(stream_id.streamId), unmapped, where)

