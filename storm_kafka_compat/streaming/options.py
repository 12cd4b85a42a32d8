"""The source's options: SpoutConfig field names (case-insensitive, as Spark passes
them), hosts, topology keys, ``kafka.*`` client settings and the source's own
(``maxMessagesPerPartition``, ``maxOffsetsPerTrigger``, ``failOnDataLoss``, ``config``),
turned into a :class:`~storm_kafka_compat.config.JobConfig`. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from storm_kafka_compat.config import (AUTH_KEYS, SPOUT_FIELDS, TOPOLOGY_FIELDS, JobConfig,
                                       job_config_from_dict, parse_yaml)
from storm_kafka_compat.errors import ConfigError

#: the ``format()`` name (a Python source may not be called ``kafka``: Spark's own wins)
SOURCE_NAME = "storm-kafka"


# --- options --------------------------------------------------------------------------

@dataclass(frozen=True)
class SourceOptions:
    """Options of the source that are not SpoutConfig or topology fields."""

    #: most new offsets per partition per batch (None: no cap)
    max_messages_per_partition: Optional[int] = None
    #: most new offsets per batch over all partitions (Spark's name; ``ReadMaxRows``)
    max_offsets_per_trigger: Optional[int] = None
    #: raise when planned offsets were deleted (Spark's default), else skip them
    fail_on_data_loss: bool = True


_HOSTS_OPTIONS = {"zk": "zk", "brokerzkpath": "brokerZkPath", "refreshfreqsecs": "refreshFreqSecs",
                  "static": "static", "usetopicnameforpartitionpathid":
                  "useTopicNameForPartitionPathId", "bootstrap": "bootstrap",
                  "kafka.bootstrap.servers": "bootstrap"}
_SOURCE_OPTIONS = ("maxMessagesPerPartition", "maxOffsetsPerTrigger", "failOnDataLoss", "config")


def _option_names() -> Dict[str, Tuple[str, Any]]:
    """lower-cased option name -> (section, spec or canonical name)."""
    out: Dict[str, Tuple[str, Any]] = {}
    for spec in SPOUT_FIELDS:
        for n in spec.names:
            out[n.lower()] = ("spout", spec)
    for spec in TOPOLOGY_FIELDS:
        for n in spec.names:
            if n not in ("name", "id"):       # "id" is the spout id; use topology.name/id
                out[n.lower()] = ("topology", spec)
    for n in AUTH_KEYS:
        out[n.lower()] = ("auth", n)
    for low, canonical in _HOSTS_OPTIONS.items():
        out[low] = ("hosts", canonical)
    for n in _SOURCE_OPTIONS:
        out[n.lower()] = ("source", n)
    return out


def _typed(text: Any, java_type: str, key: str) -> Any:
    """Turn an option string into the value the config loader checks."""
    if not isinstance(text, str):
        return text
    value = text.strip()
    try:
        if java_type in ("int", "long", "Integer"):
            return int(value)
        if java_type == "double":
            return float(value)
    except ValueError:
        raise ConfigError(f"option {key}={text!r} must be a number", key=key, value=text) from None
    if java_type == "boolean":
        if value.lower() not in ("true", "false"):
            raise ConfigError(f"option {key}={text!r} must be true or false", key=key,
                              value=text, allowed=("true", "false"))
        return value.lower() == "true"
    return text


def _client_value(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        return text


def _static_table(text: str) -> Dict[str, str]:
    """``{"0": "h:p"}`` JSON or ``0=h:p,1=h:p``."""
    text = text.strip()
    if text.startswith("{"):
        table = json.loads(text)
        return {str(k): v for k, v in table.items()}
    out = {}
    for item in text.split(","):
        p, sep, addr = item.partition("=")
        if not sep:
            raise ConfigError(f"option static={text!r}: write partition=host:port pairs "
                              f"separated by commas, or JSON {{\"0\": \"host:port\"}}",
                              key="static", value=text)
        out[p.strip()] = addr.strip()
    return out


def job_from_options(options: Mapping[str, Any]) -> Tuple[JobConfig, SourceOptions]:
    """Build the job and source settings from data source options.

    Options (case-insensitive, all strings as Spark passes them):

    * every SpoutConfig field by its Storm name: ``topic``, ``zkRoot``, ``id``,
      ``zkServers`` (comma-separated), ``zkPort``, ``startOffsetTime``,
      ``ignoreZkOffsets``, ``maxOffsetBehind``, ``fetchSizeBytes``, ...;
    * hosts: ``zk`` (the broker registry's connect string, with ``brokerZkPath``
      and ``refreshFreqSecs``), ``static`` (``0=host:port,1=host:port`` or JSON),
      or ``bootstrap`` / ``kafka.bootstrap.servers``;
    * topology keys: ``topology.name`` (required), ``topology.id``,
      ``kafka.topic.wildcard.match``, ``storm.zookeeper.*``;
    * ``kafka.<setting>``: kafka-python client settings (security etc.);
    * ``maxMessagesPerPartition``, ``maxOffsetsPerTrigger``, ``failOnDataLoss``;
    * ``config``: a CONFIG YAML file; the other options override its fields.

    Raises
    ------
    ConfigError
        Unknown option (the message lists the valid ones) or a bad value.
    """
    base = _config_file(options)
    sections = _Sections(spout=dict(base.get("spout") or {}),
                         topology=dict(base.get("topology") or {}),
                         kafka=dict(base.get("kafka") or {}))
    names = _option_names()
    for raw_key, text in options.items():
        if raw_key.lower() != "config":
            sections.take(raw_key, text, names)
    hosts = sections.hosts
    if hosts:
        kinds = [k for k in ("zk", "static", "bootstrap") if k in hosts]
        merged = dict(base.get("hosts") or {}) if not kinds else {}
        merged.update(hosts)
        hosts = merged
    else:
        hosts = dict(base.get("hosts") or {})
    d: Dict[str, Any] = {"spout": sections.spout, "hosts": hosts or None,
                         "topology": sections.topology or None}
    if sections.kafka:
        d["kafka"] = sections.kafka
    if base.get("spark") is not None:
        d["spark"] = base["spark"]
    return job_config_from_dict(d), _source_options(sections.source)


def _config_file(options: Mapping[str, Any]) -> Dict[str, Any]:
    """The CONFIG file named by the ``config`` option (the other options override its
    fields), or nothing."""
    config_path = next((v for k, v in options.items() if k.lower() == "config"), None)
    if not config_path:
        return {}
    with open(config_path, encoding="utf-8") as fh:
        loaded = parse_yaml(fh.read(), source=str(config_path))
    if not isinstance(loaded, Mapping):
        raise ConfigError(f"option config={config_path!r}: the file is not a CONFIG mapping",
                          key="config", value=config_path)
    return {k: dict(v) if isinstance(v, Mapping) else v for k, v in loaded.items()}


@dataclass
class _Sections:
    """The options sorted into the CONFIG's sections."""

    spout: Dict[str, Any]
    topology: Dict[str, Any]
    kafka: Dict[str, Any]
    hosts: Dict[str, Any] = field(default_factory=dict)
    source: Dict[str, str] = field(default_factory=dict)

    def take(self, raw_key: str, text: Any, names: Mapping[str, Tuple[str, Any]]) -> None:
        """Put one option where it belongs, typed as the config loader checks it."""
        low = raw_key.lower()
        if low.startswith("kafka.") and low not in names:
            self.kafka[raw_key[len("kafka."):]] = _client_value(text)
            return
        entry = names.get(low)
        if entry is None:
            valid = sorted({s.storm_name for s in SPOUT_FIELDS} | set(_HOSTS_OPTIONS.values())
                           | {"topology.name", "topology.id", "kafka.<client setting>"}
                           | set(_SOURCE_OPTIONS))
            raise ConfigError(f"unknown option {raw_key!r} for format({SOURCE_NAME!r}); valid "
                              f"options: {', '.join(valid)}", key=raw_key, value=text,
                              allowed=valid)
        section, what = entry
        if section in ("spout", "topology"):
            target = self.spout if section == "spout" else self.topology
            for name in what.names:          # an option overrides the file's field
                target.pop(name, None)
            target[what.storm_name] = _typed(text, what.java_type, raw_key)
        elif section == "auth":
            self.topology[what] = _typed(text, "boolean", raw_key) if what == "acl" else text
        elif section == "hosts":
            self.hosts[what] = _host_value(what, text, raw_key)
        else:
            self.source[what] = text


def _host_value(what: str, text: Any, raw_key: str) -> Any:
    if what == "static":
        return _static_table(text)
    if what == "refreshFreqSecs":
        return _typed(text, "int", raw_key)
    if what == "useTopicNameForPartitionPathId":
        return _typed(text, "boolean", raw_key)
    return text


def _source_options(source: Mapping[str, str]) -> SourceOptions:
    """``maxMessagesPerPartition``, ``maxOffsetsPerTrigger`` (>= 1) and ``failOnDataLoss``."""
    def count(name: str) -> Optional[int]:
        if name not in source:
            return None
        value = int(_typed(source[name], "long", name))
        if value < 1:
            raise ConfigError(f"option {name}={value} must be >= 1", key=name, value=value)
        return value

    fail = bool(_typed(source.get("failOnDataLoss", "true"), "boolean", "failOnDataLoss"))
    return SourceOptions(count("maxMessagesPerPartition"), count("maxOffsetsPerTrigger"), fail)
