"""The whole CONFIG: placeholders left by Flux, ``job_config_from_dict`` (with the
storm-kafka-client section), YAML with duplicate-key checks, ``load_job_config``.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Mapping, Tuple, Union

import yaml

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.model import (BootstrapHosts, JobConfig, SparkConfig, SpoutConfig,
                                             StaticHosts, TopologyConfig)
from storm_kafka_compat.config.fields import (SPOUT_FIELDS, TOP_LEVEL_KEYS, check_bolt_ref,
                                              type_name, unknown_key)
from storm_kafka_compat.config.sections import (hosts_from_dict, kafka_bolts_inherit,
                                                kafka_settings_section,
                                                spark_config_from_dict, spout_config_from_dict,
                                                topology_config_from_dict, topology_spec_section)


# --- placeholders left by Flux ------------------------------------------------------------

#: a Flux ``${key}`` / ``${ENV-NAME}`` placeholder
PLACEHOLDER_RE = re.compile(r"\$\{([^}]+)\}")


def find_placeholders(obj: Any, where: str = "") -> List[Tuple[str, str]]:
    """``(dotted key, placeholder)`` for every ``${...}`` left in a string value of
    ``obj`` (a CONFIG mapping), in document order."""
    out: List[Tuple[str, str]] = []
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            out.extend(find_placeholders(v, f"{where}.{k}" if where else str(k)))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.extend(find_placeholders(v, f"{where}[{i}]"))
    elif isinstance(obj, str):
        out.extend((where, m.group(0)) for m in PLACEHOLDER_RE.finditer(obj))
    return out


def placeholder_fix(placeholder: str) -> str:
    """How Flux substitutes ``placeholder`` and the ``config convert`` flag that does it."""
    name = PLACEHOLDER_RE.fullmatch(placeholder)
    key = name.group(1) if name else placeholder
    if key.startswith("ENV-"):
        return (f"environment variable {key[4:]}: set it and run 'config convert "
                f"--env-filter' on the topology (Flux file or Java sources)")
    return (f"key {key!r} of a properties file: run 'config convert --filter FILE' on the "
            f"topology (Flux file or Java sources)")


def _reject_placeholders(d: Mapping[str, Any]) -> None:
    found = find_placeholders(d)
    if not found:
        return
    listed = "; ".join(f"{where} holds {ph} ({placeholder_fix(ph)})" for where, ph in found)
    raise ConfigError(f"{len(found)} Flux placeholder(s) were never substituted: {listed}. "
                      f"Substitute them, or write the values into the CONFIG.",
                      key=found[0][0], value=found[0][1])


# --- the whole job --------------------------------------------------------------------


def job_config_from_dict(d: Mapping[str, Any]) -> JobConfig:
    """Build and validate the whole CONFIG (see docs/configuration.md).

    Top-level keys: ``spout`` (required), ``hosts`` (required), ``topology``
    (required: at least ``name``), ``spark``, ``bolt`` and ``kafka``. A topology
    of bolts is given as ``topology.bolts`` and read into
    :attr:`JobConfig.topology_spec`
    (:class:`~storm_kafka_compat.config.topology_spec.TopologySpec`, what
    ``topology.spec.from_spec`` builds the topology from).

    Raises
    ------
    ConfigError
        On the first problem found, with ``key`` dotted from the top.
    """
    if not isinstance(d, Mapping):
        raise ConfigError(f"the config must be a mapping with sections "
                          f"{', '.join(TOP_LEVEL_KEYS)}, got {type_name(d)}.", key="",
                          value=d, allowed=TOP_LEVEL_KEYS)
    for k in d:
        if k not in TOP_LEVEL_KEYS:
            raise unknown_key("", k, TOP_LEVEL_KEYS)
    _reject_placeholders(d)
    client_section = d.get("kafkaSpout")
    if client_section is not None:
        d = _client_mode_defaults(d, client_section)
    for k in ("spout", "hosts", "topology"):
        if d.get(k) is None:
            raise ConfigError(f"section {k!r} is missing; the config needs spout, hosts and "
                              f"topology (see docs/configuration.md).", key=k, value=None,
                              allowed=TOP_LEVEL_KEYS)
    hosts = hosts_from_dict(d["hosts"])
    kafka_store = isinstance(client_section, Mapping) and str(
        client_section.get("offsetStore", "kafka")) == "kafka"
    spout = spout_config_from_dict(d["spout"], hosts=hosts, documents=not kafka_store)
    topology = topology_config_from_dict(d["topology"])
    spec = topology_spec_section(d["topology"], "topology")
    spark = spark_config_from_dict(d["spark"]) if d.get("spark") is not None else SparkConfig()
    bolt = check_bolt_ref(d["bolt"]) if d.get("bolt") is not None else None
    if bolt is not None and spec is not None:
        raise ConfigError("both 'bolt' and 'topology.bolts' are given; use 'bolt' for a single "
                          "bolt or 'topology.bolts' for a topology, not both.", key="bolt",
                          value=bolt)
    kafka = kafka_settings_section(d["kafka"]) if d.get("kafka") is not None else {}
    spec = kafka_bolts_inherit(spec, kafka)
    dataframe = check_bolt_ref(d["dataframe"], "dataframe") if d.get("dataframe") is not None \
        else None
    if dataframe is not None and (bolt is not None or spec is not None):
        raise ConfigError("both 'dataframe' and bolts are given; a DataFrame-mode job has no "
                          "bolts: keep 'dataframe' or the bolts, not both.", key="dataframe",
                          value=dataframe)
    if isinstance(hosts, StaticHosts) and topology.wildcard_match:
        raise ConfigError("topology.kafka.topic.wildcard.match needs zk or bootstrap hosts; "
                          "static hosts name one topic (use "
                          "hosts.useTopicNameForPartitionPathId for the topic path segment).",
                          key="topology.kafka.topic.wildcard.match", value=True)
    if topology.wildcard_match:
        try:
            re.compile(spout.topic)
        except re.error as exc:
            raise ConfigError(f"spout.topic {spout.topic!r} is not a valid regex ({exc}), and "
                              f"kafka.topic.wildcard.match is true; fix the pattern or turn "
                              f"wildcard matching off.", key="spout.topic",
                              value=spout.topic) from None
    kafka_spout = None
    if client_section is not None:
        kafka_spout, spout = _kafka_spout_config(client_section, spout, topology, kafka)
    return JobConfig(spout=spout, topology=topology, spark=spark, bolt=bolt,
                     topology_spec=spec, kafka=kafka, kafka_spout=kafka_spout,
                     dataframe=dataframe)


def _client_mode_defaults(d: Mapping[str, Any], section: Any) -> Dict[str, Any]:
    """A ``kafkaSpout`` section with the Kafka store may stand without ``spout``
    and ``hosts``: the topic comes from its subscription, the brokers from its
    servers."""
    out = dict(d)
    if not isinstance(section, Mapping) or str(section.get("offsetStore", "kafka")) != "kafka":
        return out
    servers = section.get("bootstrapServers") or section.get("bootstrap_servers")
    if out.get("hosts") is None and servers:
        out["hosts"] = {"bootstrap": servers}
    topics = section.get("topics")
    topic = section.get("topicPattern") or section.get("topic_pattern") or (
        topics if isinstance(topics, str) else (topics[0] if topics else None))
    consumer = section.get("consumer")
    group = section.get("groupId") or section.get("group_id") or (
        consumer.get("group.id") if isinstance(consumer, Mapping) else None)
    if not group:
        # the section's own validation names the problem (an unknown key such as
        # 'groupid', or the missing group) before a derived section could hide it
        from storm_kafka_compat.config.kafka_spout import (kafka_spout_config_from_dict,
                                                            missing_group_error)
        kafka_spout_config_from_dict(section, default_servers=("unused:0",))
        raise missing_group_error()
    # the spout section carries what both spouts share (topic, scheme, fetch sizes);
    # a Kafka-store job names no ZooKeeper documents unless it gives zkRoot and id
    derived = {"topic": topic}
    spout = out.get("spout")
    if spout is None and topic:
        out["spout"] = derived
    elif isinstance(spout, Mapping) and topic:
        # a spout section giving only the scheme or fetch sizes: the rest is derived
        given = {spec.storm_name for spec in SPOUT_FIELDS for n in spec.names if n in spout}
        out["spout"] = {**{k: v for k, v in derived.items() if k not in given}, **spout}
    return out


def _kafka_spout_config(section: Any, spout: SpoutConfig, topology: TopologyConfig,
                        kafka: Mapping[str, Any]) -> Tuple[Any, SpoutConfig]:
    """The ``kafkaSpout`` section (its ``offsetCommitPeriodMs`` is the client spout's
    commit interval; the ``spout`` section's ``stateUpdateIntervalMs`` is left as given)."""
    from storm_kafka_compat.config.kafka_spout import kafka_spout_config_from_dict
    hosts = spout.hosts
    servers: Tuple[str, ...] = ()
    if isinstance(hosts, BootstrapHosts):
        servers = tuple(hosts.servers)
    else:
        configured = kafka.get("bootstrap_servers") or kafka.get("bootstrap.servers")
        if configured:
            servers = tuple(configured.split(",") if isinstance(configured, str) else configured)
    cfg = kafka_spout_config_from_dict(section, default_topic=spout.topic,
                                       default_pattern=topology.wildcard_match,
                                       default_servers=servers)
    return cfg, spout


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode,
                       deep: bool = False) -> Dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: Dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: let the base constructor complain
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"found duplicate key {key!r}", key_node.start_mark)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_mapping)


def parse_yaml(text: str, *, source: str = "<string>") -> Any:
    """Parse YAML safely, rejecting duplicate keys; errors name ``source`` and the line.

    Raises
    ------
    ConfigError
    """
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}:{where} is not valid YAML: {problem}; fix the file.",
                          key=None, value=source) from None


def load_job_config(path: Union[str, "os.PathLike[str]"]) -> JobConfig:
    """Read a CONFIG YAML file and build the :class:`JobConfig`.

    Raises
    ------
    ConfigError
        The file cannot be read, is not valid YAML, or does not validate; the
        message names the file.
    """
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"cannot read config file {source}: {reason}; check the path.",
                          key=None, value=source) from None
    data = parse_yaml(text, source=source)
    if data is None:
        raise ConfigError(f"config file {source} is empty; it needs spout, hosts and topology "
                          f"sections.", key=None, value=source)
    try:
        return job_config_from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}", key=exc.key, value=exc.value,
                          allowed=exc.allowed) from None
