"""A Java ``.properties`` file into CONFIG: hosts, spout fields, Kafka client settings
and Spark keys by prefix, with every key not understood reported.
"""

from __future__ import annotations

import difflib
from typing import Any, Dict, List, Optional, Sequence, Tuple

from storm_kafka_compat.config import (AUTH_KEYS, SCHEME_NAMES, STORM_SCHEME_CLASSES, SPOUT_FIELDS,
                                       TOPOLOGY_FIELDS, is_callable_ref)
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.kafka_settings import add_java_client_setting
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


def _scheme_from_text(value: str, key: str, unmapped: List[str], ported: List[str]) -> str:
    text = value.strip()
    simple = text.rsplit(".", 1)[-1] if "." in text and ":" not in text else text
    if ":" not in text and simple in SCHEME_CLASSES and (simple_name(text) or text == simple):
        return SCHEME_CLASSES[simple]
    if is_callable_ref(text) or text in SCHEME_NAMES:
        return text
    placeholder = python_placeholder(text)
    ported.append(text)
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
    sections = _PropertiesSections()
    not_understood: List[str] = []
    for key, value in props.items():
        if not any(put(key, value) for put in (sections.topology_key, sections.hosts_key,
                                               sections.kafka_key, sections.spark_key,
                                               sections.spout_key)):
            if key.startswith(STORM_CONFIG_PREFIXES):
                sections.unmapped.append(f"{key} not mapped (a Storm setting with no "
                                         f"equivalent here).")
            else:
                not_understood.append(key)
    sections.unmapped.extend(_not_understood(not_understood, len(props), source))
    return Conversion(sections.config(), sections.unmapped,
                      ported_schemes=sections.ported_schemes)


class _PropertiesSections:
    """The CONFIG sections a ``.properties`` file fills, one kind of key per method; each
    method takes a key and its text and returns whether the key was its kind."""

    def __init__(self) -> None:
        self.unmapped: List[str] = []
        self.ported_schemes: List[str] = []
        self.spout: Dict[str, Any] = {}
        self.hosts: Dict[str, Any] = {}
        self.static: Dict[int, str] = {}
        self.topology: Dict[str, Any] = {}
        self.spark: Dict[str, Any] = {}
        self.spark_conf: Dict[str, str] = {}
        self.kafka: Dict[str, Any] = {}
        self.bolt: Optional[str] = None
        self.spout_specs = {s.storm_name: s for s in SPOUT_FIELDS}
        self.spout_specs["forceFromStart"] = self.spout_specs["ignoreZkOffsets"]
        self.topo_specs = {s.storm_name: s for s in TOPOLOGY_FIELDS}

    def topology_key(self, key: str, value: str) -> bool:
        if key not in self.topo_specs and key not in AUTH_KEYS:
            return False
        spec = self.topo_specs.get(key)
        if key == "acl":
            self.topology[key] = _to_type(value, "boolean", key)
        elif spec is None:
            self.topology[key] = value
        else:
            name = {"topology.name": "name", "topology.id": "id"}.get(key, key)
            self.topology[name] = _to_type(value, spec.java_type, key)
        return True

    def hosts_key(self, key: str, value: str) -> bool:
        if key.startswith(PROPERTIES_STATIC_PREFIX):
            num = key[len(PROPERTIES_STATIC_PREFIX):]
            if not num.isdigit():
                raise ConfigError(f"{key}: the part after {PROPERTIES_STATIC_PREFIX} must be a "
                                  f"partition number.", key=key, value=value)
            self.static[int(num)] = value.strip()
            return True
        if key not in PROPERTIES_HOSTS:
            return False
        target = PROPERTIES_HOSTS[key]
        java_type = {"refreshFreqSecs": "int", "useTopicNameForPartitionPathId": "boolean",
                     "bootstrap": "List<String>"}.get(target)
        self.hosts[target] = _to_type(value, java_type, key) if java_type else value.strip()
        return True

    def kafka_key(self, key: str, value: str) -> bool:
        if key.startswith(PROPERTIES_KAFKA_PREFIX):
            add_java_client_setting(self.kafka, key[len(PROPERTIES_KAFKA_PREFIX):], value)
            return True
        if key == PROPERTIES_KAFKA_BARE[0] or key.startswith(PROPERTIES_KAFKA_BARE[1:]):
            add_java_client_setting(self.kafka, key, value)
            return True
        return False

    def spark_key(self, key: str, value: str) -> bool:
        if key in PROPERTIES_SPARK:
            target = PROPERTIES_SPARK[key]
            self.spark[target] = _to_type(value, "int", key) if target == "tasks" else value
        elif key.startswith("spark."):
            self.spark_conf[key] = value
        elif key == "bolt":
            self.bolt = value.strip()
        else:
            return False
        return True

    def spout_key(self, key: str, value: str) -> bool:
        field_name = next((key[len(prefix):] for prefix in PROPERTIES_SPOUT_PREFIXES
                           if key.startswith(prefix) and key[len(prefix):] in self.spout_specs),
                          None)
        if field_name is None:
            return False
        spec = self.spout_specs[field_name]
        if field_name == "forceFromStart":
            self.unmapped.append(f"{key}: forceFromStart (0.9.x) written as ignoreZkOffsets; "
                                 f"since 0.10.0 a first start honours startOffsetTime.")
            field_name = "ignoreZkOffsets"
        if field_name == "scheme":
            self.spout["scheme"] = _scheme_from_text(value, key, self.unmapped,
                                                     self.ported_schemes)
        elif spec.java_type == "String":
            self.spout[field_name] = value
        else:
            self.spout[field_name] = _to_type(value, spec.java_type, key)
        return True

    def config(self) -> Dict[str, Any]:
        """The sections that were given, in CONFIG order."""
        if self.static:
            self.hosts["static"] = dict(sorted(self.static.items()))
        if self.spark_conf:
            self.spark["conf"] = self.spark_conf
        config: Dict[str, Any] = {}
        if self.bolt is not None:
            config["bolt"] = self.bolt
        for name, section in (("spout", self.spout), ("hosts", self.hosts),
                              ("topology", self.topology), ("spark", self.spark),
                              ("kafka", self.kafka)):
            if section:
                config[name] = section
        return config


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
