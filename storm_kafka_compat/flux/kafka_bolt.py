"""Flux conversion of Storm's ``KafkaBolt`` into a ``topology.bolts`` entry.

A Flux file declares the bolt (``org.apache.storm.kafka.bolt.KafkaBolt``, or
``storm.kafka.bolt.KafkaBolt`` in 0.9/0.10) with ``configMethods``
``withProducerProperties`` (a ``java.util.Properties`` component filled by ``put``
config methods, or a map), ``withTopicSelector`` (a ``DefaultTopicSelector``,
``FieldIndexTopicSelector`` or ``FieldNameTopicSelector`` component, or a topic
string), ``withTupleToKafkaMapper`` (a ``FieldNameBasedTupleToKafkaMapper``
component, constructor args key field and message field), ``setFireAndForget``
and ``setAsync``, as in Storm's own Flux examples. The entry carries them as the
bolt's ``properties`` (:func:`storm_kafka_compat.topology.kafka_bolt.kafka_bolt_from_properties`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Set

from storm_kafka_compat.config.fields import STORM_KAFKA_BOLT_CLASSES

__all__ = ["kafka_bolt_entry"]


def _components(doc: Mapping[str, Any]) -> Dict[str, Mapping[str, Any]]:
    return {str(c.get("id")): c for c in doc.get("components") or [] if isinstance(c, Mapping)}


def _ref(arg: Any, components: Mapping[str, Mapping[str, Any]], used: Set[str]
         ) -> Optional[Mapping[str, Any]]:
    if isinstance(arg, Mapping) and "ref" in arg and str(arg["ref"]) in components:
        used.add(str(arg["ref"]))
        return components[str(arg["ref"])]
    return None


def _properties(comp: Mapping[str, Any]) -> Dict[str, Any]:
    props: Dict[str, Any] = {}
    for m in comp.get("configMethods") or []:
        args = m.get("args") or []
        if m.get("name") in ("put", "setProperty") and len(args) == 2:
            props[str(args[0])] = args[1]
    for p in comp.get("properties") or []:
        if isinstance(p, Mapping) and "value" in p:
            props[str(p.get("name"))] = p["value"]
    return props


def kafka_bolt_entry(bolt: Mapping[str, Any], doc: Mapping[str, Any], used: Set[str],
                     unmapped: List[str]) -> Optional[Dict[str, Any]]:
    """The ``topology.bolts`` entry of a Flux KafkaBolt, None for another class.

    Component ids it reads are added to ``used``; what it cannot carry over is
    appended to ``unmapped``.
    """
    cls = str(bolt.get("className", ""))
    if cls not in STORM_KAFKA_BOLT_CLASSES:
        return None
    bid = str(bolt.get("id"))
    components = _components(doc)
    props: Dict[str, Any] = {}
    for m in bolt.get("configMethods") or []:
        name, args = str(m.get("name")), list(m.get("args") or [])
        arg = args[0] if args else None
        comp = _ref(arg, components, used)
        if name == "withProducerProperties":
            props["producerProperties"] = _properties(comp) if comp is not None else dict(arg or {})
        elif name == "withTopicSelector":
            if isinstance(arg, str):
                props["topic"] = arg
            elif comp is not None:
                sel = str(comp.get("className", "")).rsplit(".", 1)[-1]
                cargs = list(comp.get("constructorArgs") or [])
                props["topicSelector"] = sel
                if sel == "DefaultTopicSelector" and cargs:
                    props["topic"] = cargs[0]
                elif sel == "FieldIndexTopicSelector" and cargs:
                    props["fieldIndex"] = int(cargs[0])
                    if len(cargs) > 1:
                        props["defaultTopicName"] = cargs[1]
                elif sel == "FieldNameTopicSelector" and cargs:
                    props["fieldName"] = cargs[0]
                    if len(cargs) > 1:
                        props["defaultTopicName"] = cargs[1]
        elif name == "withTupleToKafkaMapper" and comp is not None:
            cargs = list(comp.get("constructorArgs") or [])
            if len(cargs) >= 2:
                props["boltKeyField"], props["boltMessageField"] = cargs[0], cargs[1]
        elif name == "setFireAndForget":
            props["fireAndForget"] = arg
        elif name == "setAsync":
            props["async"] = arg
        else:
            unmapped.append(f"bolts[{bid}] {cls}: configMethod {name} not mapped.")
    entry: Dict[str, Any] = {"name": bid, "bolt": cls, "properties": props, "inputs": []}
    if bolt.get("parallelism") is not None:
        entry["parallelism"] = bolt["parallelism"]
    return entry
