"""What streamparse ``Topology`` classes and Pyleus topology YAML have in common when they
become CONFIG: the Kafka spout (storm-kafka's KafkaSpout, given by the topology or standing
in for a Python spout), bolt entries in the CONFIG's ``topology.bolts`` form, and the
``${CONFIG key}`` placeholders a ``--filter`` fills. Pure: mappings in, mappings out.
"""

from __future__ import annotations

import ast
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence

import yaml

from storm_kafka_compat.flux.common import (SPOUT_NAME, Conversion, place_bolts, placeholders_left,
                                            substitute)

__all__ = ["LEGACY_SPOUTS", "CLIENT_SPOUTS", "legacy_spout_sections", "client_spout_sections",
           "filled", "module_output_fields", "python_module_bolt", "finish"]

#: storm-kafka's KafkaSpout under its two package names
LEGACY_SPOUTS = ("org.apache.storm.kafka.KafkaSpout", "storm.kafka.KafkaSpout")
#: storm-kafka-client's
CLIENT_SPOUTS = ("org.apache.storm.kafka.spout.KafkaSpout",)


def legacy_spout_sections(config: Dict[str, Any], *, topic: Any = None, zk: Any = None,
                          zk_root: Any = None, spout_id: Any = None,
                          scheme: Any = None) -> None:
    """``spout`` and ``hosts`` of a storm-kafka KafkaSpout; what is not given is the
    placeholder of its CONFIG key."""
    config["spout"] = {"topic": topic if topic is not None else "${spout.topic}",
                       "zkRoot": zk_root if zk_root is not None else "${spout.zkRoot}",
                       "id": spout_id if spout_id is not None else "${spout.id}",
                       "scheme": scheme if scheme is not None else "${spout.scheme}"}
    config["hosts"] = {"zk": zk if zk is not None else "${hosts.zk}"}


def client_spout_sections(config: Dict[str, Any]) -> None:
    """``kafkaSpout`` of a storm-kafka-client KafkaSpout, as placeholders."""
    config["kafkaSpout"] = {"bootstrapServers": "${kafkaSpout.bootstrapServers}",
                            "topics": "${kafkaSpout.topics}",
                            "groupId": "${kafkaSpout.groupId}"}


def filled(config: Dict[str, Any], properties: Optional[Mapping[str, str]],
           env: Optional[Mapping[str, str]]) -> Dict[str, Any]:
    """The CONFIG with ``${key}`` filled from ``--filter`` (and ``${ENV-NAME}``)."""
    if not properties and env is None:
        return config
    text = yaml.safe_dump(config, sort_keys=False)
    out = yaml.safe_load(substitute(text, properties, env))
    return out if isinstance(out, dict) else config


def module_output_fields(path: str) -> Optional[List[str]]:
    """The fields a bolt module declares (``OUTPUT_FIELDS`` of Pyleus, ``outputs`` of
    pystorm/streamparse), read from its source without importing it; None if not found."""
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in ("OUTPUT_FIELDS", "outputs")
                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                return list(value)
    return None


def python_module_bolt(module: str, base_dir: str, entry: Dict[str, Any],
                       unmapped: List[str], where: str) -> None:
    """A bolt given by its module (Pyleus's ``module:``, streamparse's run target): in
    process when the module defines a pystorm/streamparse Bolt, else the module run as a
    multilang script (``python -m module``) in ``base_dir``."""
    path = os.path.join(base_dir, *module.split(".")) + ".py"
    cls = _pystorm_class_in(path)
    if cls is not None:
        entry["bolt"] = f"{module}:{cls}"
        unmapped.append(f"{where}: {module} runs in the bolt task's process, imported from "
                        f"{base_dir}: put it on PYTHONPATH where the job runs.")
        return
    entry["shell"] = ["python", "-m", module]
    entry["resources"] = base_dir
    fields = module_output_fields(path)
    if fields is None:
        unmapped.append(f"{where}: the fields of {module} were not found ({path}: no "
                        f"OUTPUT_FIELDS list); output_fields written as [] : set them.")
    entry["output_fields"] = fields or []


def _pystorm_class_in(path: str) -> Optional[str]:
    """The one class of ``path`` whose bases name a pystorm/streamparse bolt (``Bolt``,
    ``BatchingBolt``, ``TicklessBatchingBolt``) imported from streamparse or pystorm."""
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    imported = {alias.asname or alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0]
                in ("streamparse", "pystorm") for alias in node.names}
    bolts = {"Bolt", "BatchingBolt", "TicklessBatchingBolt"} & imported
    found = [node.name for node in tree.body if isinstance(node, ast.ClassDef) and any(
        isinstance(b, ast.Name) and b.id in bolts for b in node.bases)]
    return found[0] if len(found) == 1 else None


def finish(config: Dict[str, Any], bolts: List[Dict[str, Any]], unmapped: List[str],
           properties: Optional[Mapping[str, str]], env: Optional[Mapping[str, str]]
           ) -> Conversion:
    """Place the bolts, fill the placeholders, list those left."""
    for entry in bolts:
        if entry.get("inputs") == [{"from": SPOUT_NAME, "grouping": "shuffle"}]:
            del entry["inputs"]  # the pipeline's default input
    place_bolts(config, bolts)
    if "bolt" in config and "topology" in config and not config["topology"]:
        del config["topology"]
    config = filled(config, properties, env)
    unmapped.extend(placeholders_left(config))
    return Conversion(config, unmapped)


def grouping_input(source: str, kind: str, fields: Sequence[str], stream: str,
                   unmapped: List[str], where: str) -> Dict[str, Any]:
    """One ``inputs`` entry; Storm's groupings without a counterpart become shuffle."""
    known = {"shuffle": "shuffle", "fields": "fields", "global": "global", "all": "all",
             "none": "shuffle", "local_or_shuffle": "shuffle"}
    grouping = known.get(kind)
    if grouping is None:
        unmapped.append(f"{where}: {kind} grouping from {source!r} not mapped: written as "
                        f"shuffle; port it if the bolt depends on which task gets a tuple.")
        grouping = "shuffle"
    elif kind in ("none", "local_or_shuffle"):
        unmapped.append(f"{where}: {kind} grouping from {source!r} is a shuffle here.")
    out: Dict[str, Any] = {"from": source, "grouping": grouping}
    if grouping == "fields":
        out["fields"] = list(fields)
    if stream != "default":
        out["stream"] = stream
    return out
