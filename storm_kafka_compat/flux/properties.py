"""A Java ``.properties`` file into CONFIG: hosts, spout fields, Kafka client settings
and Spark keys by prefix, with every key not understood reported.
"""

from __future__ import annotations

import difflib
from typing import Any, Dict, List, Sequence, Tuple

from storm_kafka_compat.config import (AUTH_KEYS, SCHEME_NAMES, STORM_SCHEME_CLASSES, SPOUT_FIELDS,
                                       TOPOLOGY_FIELDS, is_callable_ref)
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.kafka.settings import add_java_client_setting
from storm_kafka_compat.flux.common import Conversion, load_properties
from storm_kafka_compat.flux.components import simple_name, python_placeholder


# --- .properties to CONFIG -----------------------------------------------------------------

#: ``.properties`` keys that set a hosts entry: key -> CONFIG hosts key
PROPERTIES_HOSTS: Dict[str, str] = {
    "kafka.zkHosts": "zk",
    "kafka.zookeeper.connect": "zk",
    "kafka.brokerZkPath": "brokerZkPath",
    "kafka.refreshFreqSecs": "refreshFreqSecs",
    "kafka.bootstrap.servers": "bootstrap",
    "kafka.useTopicNameForPartitionPathId": "useTopicNameForPartitionPathId",
}
#: prefix of static partition entries: ``kafka.staticHosts.<N>=host:port``
PROPERTIES_STATIC_PREFIX = "kafka.staticHosts."
#: prefix of spout fields: ``kafka.<StormName>`` (``kafka.spout.<StormName>`` also works)
PROPERTIES_SPOUT_PREFIXES: Tuple[str, ...] = ("kafka.spout.", "kafka.")
#: prefix of Kafka client settings passed through: ``kafka.client.<setting>``
PROPERTIES_KAFKA_PREFIX = "kafka.client."
#: Kafka client settings recognised without a prefix (security)
PROPERTIES_KAFKA_BARE: Tuple[str, ...] = ("security.protocol", "sasl.", "ssl.")
#: Spark keys: ``spark.master``, ``spark.app.name``, ``spark.tasks``; other ``spark.*`` -> conf
PROPERTIES_SPARK: Dict[str, str] = {"spark.master": "master", "spark.app.name": "appName",
                                    "spark.tasks": "tasks"}

#: prefixes of Storm's own settings: known, but without an equivalent unless listed
STORM_CONFIG_PREFIXES: Tuple[str, ...] = ("topology.", "storm.", "worker.", "supervisor.",
                                          "nimbus.", "drpc.", "ui.", "logviewer.")
#: names real topologies use for what our keys mean (suggested when a key is not understood)
PROPERTIES_SYNONYMS: Dict[str, str] = {
    "kafka.zookeeper.hosts": "kafka.zkHosts",
    "kafka.zk.hosts": "kafka.zkHosts",
    "kafka.zookeeper": "kafka.zkHosts",
    "zookeeper.connect": "kafka.zookeeper.connect",
    "kafka.broker.hosts": "kafka.bootstrap.servers",
    "kafka.brokers": "kafka.bootstrap.servers",
    "bootstrap.servers": "kafka.bootstrap.servers",
    "metadata.broker.list": "kafka.bootstrap.servers",
    "topic": "kafka.topic",
    "kafka.zkroot": "kafka.zkRoot",
    "kafka.zk.root": "kafka.zkRoot",
    "kafka.consumer.id": "kafka.id",
    "kafka.spout.id": "kafka.id",
}

#: short Java class names accepted as ``kafka.scheme`` values and their scheme names
SCHEME_CLASSES: Dict[str, str] = {name.rsplit(".", 1)[1]: scheme
                                  for name, scheme in STORM_SCHEME_CLASSES.items()}


def _to_type(value: str, java_type: str, key: str) -> Any:
    """Turn a .properties string into the field's type (as Storm's parsers would)."""
    text = value.strip()
    if java_type == "boolean":
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ConfigError(f"{key}={value!r} must be true or false.", key=key, value=value,
                          allowed=("true", "false"))
    if java_type in ("int", "long", "Integer"):
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{key}={value!r} must be a whole number.", key=key,
                              value=value) from None
    if java_type == "double":
        try:
            return float(text)
        except ValueError:
            raise ConfigError(f"{key}={value!r} must be a number.", key=key, value=value) \
                from None
    if java_type == "List<String>":
        return [v.strip() for v in text.split(",") if v.strip()]
    return value


def _scheme_from_text(value: str, key: str, unmapped: List[str]) -> str:
    text = value.strip()
    simple = text.rsplit(".", 1)[-1] if "." in text and ":" not in text else text
    if ":" not in text and simple in SCHEME_CLASSES and (simple_name(text) or text == simple):
        return SCHEME_CLASSES[simple]
    if is_callable_ref(text) or text in SCHEME_NAMES:
        return text
    placeholder = python_placeholder(text)
    unmapped.append(f"{key}: scheme {text} not mapped: port it to Python and set spout.scheme "
                    f"(placeholder {placeholder!r}).")
    return placeholder


def convert_properties(text: str, *, source: str = "<properties>") -> Conversion:
    """Convert a Java ``.properties`` file into CONFIG (mapping in docs/configuration.md).

    Keys: ``kafka.<SpoutConfig field>`` (or ``kafka.spout.<field>``) for the spout,
    ``kafka.zkHosts``/``kafka.brokerZkPath``/``kafka.refreshFreqSecs``,
    ``kafka.staticHosts.<N>``, ``kafka.bootstrap.servers`` for the hosts,
    Storm topology keys (``topology.*``, ``storm.zookeeper.*``,
    ``kafka.topic.wildcard.match``), ``spark.*``, ``bolt``, and Kafka client
    settings (``kafka.client.<setting>``, ``security.protocol``, ``sasl.*``,
    ``ssl.*``). Values are converted to each field's type.

    Raises
    ------
    ConfigError
        A value that cannot be converted to its field's type.
    """
    props = load_properties(text, source=source)
    unmapped: List[str] = []
    spout: Dict[str, Any] = {}
    hosts: Dict[str, Any] = {}
    static: Dict[int, str] = {}
    topology: Dict[str, Any] = {}
    spark: Dict[str, Any] = {}
    spark_conf: Dict[str, str] = {}
    kafka: Dict[str, Any] = {}
    config: Dict[str, Any] = {}
    spout_specs = {s.storm_name: s for s in SPOUT_FIELDS}
    spout_specs["forceFromStart"] = spout_specs["ignoreZkOffsets"]
    topo_specs = {s.storm_name: s for s in TOPOLOGY_FIELDS}
    not_understood: List[str] = []

    for key, value in props.items():
        if key in topo_specs or key in AUTH_KEYS:
            spec = topo_specs.get(key)
            if key == "acl":
                topology[key] = _to_type(value, "boolean", key)
            elif spec is None:
                topology[key] = value
            else:
                name = "name" if key == "topology.name" else "id" if key == "topology.id" \
                    else key
                jt = spec.java_type if spec.java_type != "String" else "String"
                topology[name] = _to_type(value, jt, key)
            continue
        if key in PROPERTIES_HOSTS:
            target = PROPERTIES_HOSTS[key]
            if target in ("refreshFreqSecs",):
                hosts[target] = _to_type(value, "int", key)
            elif target == "useTopicNameForPartitionPathId":
                hosts[target] = _to_type(value, "boolean", key)
            elif target == "bootstrap":
                hosts[target] = _to_type(value, "List<String>", key)
            else:
                hosts[target] = value.strip()
            continue
        if key.startswith(PROPERTIES_STATIC_PREFIX):
            num = key[len(PROPERTIES_STATIC_PREFIX):]
            if not num.isdigit():
                raise ConfigError(f"{key}: the part after {PROPERTIES_STATIC_PREFIX} must be a "
                                  f"partition number.", key=key, value=value)
            static[int(num)] = value.strip()
            continue
        if key.startswith(PROPERTIES_KAFKA_PREFIX):
            add_java_client_setting(kafka, key[len(PROPERTIES_KAFKA_PREFIX):], value)
            continue
        if key == PROPERTIES_KAFKA_BARE[0] or key.startswith(PROPERTIES_KAFKA_BARE[1:]):
            add_java_client_setting(kafka, key, value)
            continue
        if key in PROPERTIES_SPARK:
            target = PROPERTIES_SPARK[key]
            spark[target] = _to_type(value, "int", key) if target == "tasks" else value
            continue
        if key.startswith("spark."):
            spark_conf[key] = value
            continue
        if key == "bolt":
            config["bolt"] = value.strip()
            continue
        field_name = None
        for prefix in PROPERTIES_SPOUT_PREFIXES:
            if key.startswith(prefix) and key[len(prefix):] in spout_specs:
                field_name = key[len(prefix):]
                break
        if field_name is not None:
            spec = spout_specs[field_name]
            if field_name == "forceFromStart":
                unmapped.append(f"{key}: forceFromStart (0.9.x) written as ignoreZkOffsets; "
                                f"since 0.10.0 a first start honours startOffsetTime.")
                field_name = "ignoreZkOffsets"
            if field_name == "scheme":
                spout["scheme"] = _scheme_from_text(value, key, unmapped)
            elif spec.java_type == "MultiScheme":  # pragma: no cover - scheme handled above
                spout[field_name] = value
            else:
                jt = spec.java_type
                spout[field_name] = _to_type(value, jt, key) if jt != "String" else value
            continue
        if key.startswith(STORM_CONFIG_PREFIXES):
            unmapped.append(f"{key} not mapped (a Storm setting with no equivalent here).")
        else:
            not_understood.append(key)

    unmapped.extend(_not_understood(not_understood, len(props), source))
    if static:
        hosts["static"] = dict(sorted(static.items()))
    if spark_conf:
        spark["conf"] = spark_conf
    for name, section in (("spout", spout), ("hosts", hosts), ("topology", topology),
                          ("spark", spark), ("kafka", kafka)):
        if section:
            config[name] = section
    return Conversion(config, unmapped)


def _properties_keys() -> List[str]:
    """Every key :func:`convert_properties` understands (prefix forms written with one field)."""
    keys = list(PROPERTIES_HOSTS) + [f"kafka.{s.storm_name}" for s in SPOUT_FIELDS]
    keys += [s.storm_name for s in TOPOLOGY_FIELDS] + list(AUTH_KEYS) + ["acl", "bolt"]
    keys += list(PROPERTIES_SPARK) + [f"{PROPERTIES_STATIC_PREFIX}0"]
    return keys


def _not_understood(keys: Sequence[str], total: int, source: str) -> List[str]:
    """One line per key not understood (with the key it probably means) and a summary."""
    if not keys:
        return []
    known = _properties_keys()
    lines = []
    for key in keys:
        guess = PROPERTIES_SYNONYMS.get(key) or PROPERTIES_SYNONYMS.get(key.lower())
        if guess is None:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
            guess = close[0] if close else None
        hint = f"; if it means {guess}, rename it to {guess}" if guess else ""
        lines.append(f"{key} not understood (no key of this name{hint}).")
    lines.append(f"{len(keys)} of {total} keys of {source} were not understood: "
                 f"{', '.join(keys)}. This converter reads its own key names "
                 f"(docs/configuration.md, 'From .properties'), not a topology's: rename them "
                 f"(kafka.zkHosts, kafka.topic, kafka.zkRoot, kafka.id, topology.name, ...). "
                 f"If this file is a Flux --filter file, convert the Flux topology instead: "
                 f"'config convert TOPOLOGY.yaml --filter {source}'.")
    return lines
