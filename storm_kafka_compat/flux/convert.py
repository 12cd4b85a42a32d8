"""Convert Storm Flux topologies and Java ``.properties`` files into CONFIG.

Operators arrive with what their Storm topology was built from: a Flux YAML
file (``components``, ``spouts``, ``bolts``, ``streams``, ``config``) or a plain
``.properties`` file (:mod:`.properties`). :func:`convert_flux` and
:func:`convert_file` turn them into this project's CONFIG mapping and list, item
by item, what could not be carried over (Java bolts above all).

This package is pure: text in, mappings out. It uses PyYAML and javaproperties.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Literal, Mapping, Optional, Set, Tuple, get_args

import yaml

from storm_kafka_compat.config import (parse_yaml)
from storm_kafka_compat.config.stages import SHUFFLES
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.topology.ticks import TICK_FREQ_KEY
from storm_kafka_compat.flux.common import (Conversion, GROUPINGS, SPOUT_NAME,
                                            load_properties, place_bolts, placeholders_left,
                                            storm_config_into, substitute)
from storm_kafka_compat.flux.components import ComponentResolver, Resolved, python_placeholder
from storm_kafka_compat.flux.properties import (PROPERTIES_HOSTS, PROPERTIES_KAFKA_PREFIX,
                                                PROPERTIES_SPARK, PROPERTIES_SPOUT_PREFIXES,
                                                PROPERTIES_STATIC_PREFIX,
                                                SCHEME_CLASSES, convert_properties)


# --- Flux to CONFIG ---------------------------------------------------------------------




def convert_flux(text: str, *, properties: Optional[Mapping[str, str]] = None,
                 env: Optional[Mapping[str, str]] = None,
                 source: str = "<flux>") -> Conversion:
    """Convert a Flux topology (YAML text) into CONFIG.

    Parameters
    ----------
    text : str
        The Flux file's content.
    properties : Mapping, optional
        The ``--filter`` properties: ``${key}`` placeholders are replaced first.
    env : Mapping, optional
        Environment for ``${ENV-NAME}`` placeholders (Flux's ``--env-filter``);
        None leaves them alone.
    source : str
        Name used in messages.

    Returns
    -------
    Conversion
        The CONFIG mapping and the list of what was not mapped.

    Raises
    ------
    ConfigError
        Invalid YAML, no KafkaSpout, or a recognised component built with
        arguments Storm would reject.
    """
    doc = parse_yaml(substitute(text, properties, env), source=source)
    _check_is_flux(doc, source)
    unmapped: List[str] = _top_level_unmapped(doc)
    components: Dict[str, Mapping[str, Any]] = {}
    for comp in doc.get("components") or []:
        if isinstance(comp, Mapping) and "id" in comp:
            components[str(comp["id"])] = comp
    resolver = ComponentResolver(components, unmapped)

    config: Dict[str, Any] = {}
    topology: Dict[str, Any] = {}
    if doc.get("name") is not None:
        topology["name"] = doc["name"]
    storm_config_into(doc.get("config") or {}, topology, unmapped)
    spout_id = _flux_spout(doc, resolver, config, unmapped, source)
    config["topology"] = topology
    place_bolts(config, flux_bolts(doc, spout_id, unmapped, resolver.used))
    for cid in components:
        if cid not in resolver.used:
            unmapped.append(f"components[{cid}] ({components[cid].get('className')}) not "
                            f"mapped: not used by the KafkaSpout.")
    unmapped.extend(placeholders_left(config))
    return Conversion(config, unmapped, ported_schemes=resolver.ported_schemes)


def _top_level_unmapped(doc: Mapping[str, Any]) -> List[str]:
    """One line per top-level Flux key that has no place in CONFIG."""
    out = []
    for key in doc:
        if key not in ("name", "config", "components", "spouts", "bolts", "streams"):
            what = "includes are not followed; convert the included file too" \
                if key == "includes" else "not mapped (no equivalent)"
            out.append(f"{key}: {what}.")
    return out


def _flux_spout(doc: Mapping[str, Any], resolver: ComponentResolver, config: Dict[str, Any],
                unmapped: List[str], source: str) -> str:
    """Build the one KafkaSpout of ``spouts`` into ``config``; its Flux id.

    Raises
    ------
    ConfigError
        No KafkaSpout among the spouts.
    """
    spout_id: Optional[str] = None
    for sp in doc.get("spouts") or []:
        sid = str(sp.get("id"))
        where = f"spouts[{sid}]"
        built = resolver.build(sp, where)
        if built.kind not in ("kafka_spout", "client_spout"):
            unmapped.append(f"{where}: spout {sp.get('className')} not mapped: only "
                            f"storm-kafka's and storm-kafka-client's KafkaSpout are.")
            continue
        if spout_id is not None:
            unmapped.append(f"{where}: a second KafkaSpout is not mapped: one CONFIG holds one "
                            f"spout; convert it into its own CONFIG.")
            continue
        spout_id = sid
        spout_sections(built, where, sp.get("numTasks", sp.get("parallelism")), config,
                       unmapped)
    if spout_id is None:
        listed = ", ".join(str(sp.get("className")) for sp in doc.get("spouts") or []) or "none"
        raise ConfigError(f"{source} has no KafkaSpout under spouts (found: {listed}); the "
                          f"converter reads storm-kafka's org.apache.storm.kafka.KafkaSpout "
                          f"(storm.kafka.KafkaSpout) and storm-kafka-client's "
                          f"org.apache.storm.kafka.spout.KafkaSpout.", key="spouts",
                          value=source)
    return spout_id


def spout_sections(built: Resolved, where: str, tasks: Any, config: Dict[str, Any],
                   unmapped: List[str]) -> None:
    """The CONFIG sections of a built KafkaSpout (``spout``, ``hosts`` or ``kafkaSpout``,
    ``spark.tasks`` from its parallelism), for Flux and Java sources alike."""
    config["spout"] = built.data["spout"]
    if tasks is not None:
        config["spark"] = {"tasks": tasks}
    if built.kind == "client_spout":
        config["kafkaSpout"] = built.data["kafkaSpout"]
        if not config["kafkaSpout"].get("groupId"):
            unmapped.append(f"{where}: no group id (setGroupId or setProp group.id): Storm "
                            f"builds the spout without one, but no commit can succeed "
                            f"without a consumer group; set kafkaSpout.groupId (the group "
                            f"the Storm topology committed to, to resume from it).")
        return
    if built.data.get("kafka"):
        config.setdefault("kafka", {}).update(built.data["kafka"])
    hosts = built.data["hosts"]
    if isinstance(hosts, Resolved) and hosts.kind == "hosts":
        config["hosts"] = hosts.data
    elif isinstance(hosts, str) and "${" in hosts:    # the source does not give it
        config["hosts"] = {"zk": hosts}
    else:
        unmapped.append(f"{where}: broker hosts {getattr(hosts, 'class_name', hosts)!r} "
                        f"not mapped: write hosts (zk, static or bootstrap) by hand.")


#: top-level keys of a Flux topology file
FLUX_KEYS: Tuple[str, ...] = ("name", "config", "components", "spouts", "bolts", "streams",
                              "includes", "topologySource")


def _check_is_flux(doc: Any, source: str) -> None:
    """Refuse, with the reason, YAML that is not a convertible Flux topology."""
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{source} is not a Flux topology: a Flux file is a YAML mapping "
                          f"with name, components, spouts, bolts and streams; this one is "
                          f"{type(doc).__name__}.", value=source)
    if not any(k in doc for k in FLUX_KEYS):
        ours = {"spout", "hosts", "kafkaSpout"} & set(map(str, doc))
        kafka_keys = [str(k) for k in doc if str(k) in ("bootstrap.servers", "kafka.topic",
                                                         "group.id", "topic")]
        hint = (" It looks like a storm-kafka-compat CONFIG already: run "
                "'storm-kafka-compat config check' on it.") if ours else (
            f" It holds Kafka settings ({', '.join(kafka_keys)}) of a topology written in "
            f"Java: write a CONFIG with a kafkaSpout section from them "
            f"(docs/configuration.md).") if kafka_keys else ""
        raise ConfigError(f"{source} is not a Flux topology: none of the Flux keys "
                          f"({', '.join(FLUX_KEYS[:6])}) is at the top level (found: "
                          f"{', '.join(map(str, list(doc)[:8]))}).{hint}", value=source)
    if "topologySource" in doc:
        raise ConfigError(f"{source} names a topologySource ({doc['topologySource']}): the "
                          f"topology is built by Java code, which cannot be read; write the "
                          f"CONFIG by hand (docs/configuration.md).", value=source)
    if not doc.get("spouts"):
        what = "only components" if doc.get("components") else "no spouts"
        raise ConfigError(f"{source} is a Flux fragment with {what} and no spouts section "
                          f"(an include of another file?); convert the topology file that "
                          f"defines the KafkaSpout under spouts.", key="spouts", value=source)


#: Flux's wrapper of Storm's ShellBolt: constructorArgs [command list, output fields]
FLUX_SHELL_BOLTS = ("org.apache.storm.flux.wrappers.bolts.FluxShellBolt",)


def shell_bolt_entry(bolt: Mapping[str, Any], unmapped: List[str]
                     ) -> Optional[Dict[str, Any]]:
    """The ``topology.bolts`` entry of a FluxShellBolt (a ``shell`` bolt), None for
    another class."""
    if str(bolt.get("className", "")) not in FLUX_SHELL_BOLTS:
        return None
    bid = str(bolt.get("id"))
    args = list(bolt.get("constructorArgs") or [])
    command = [str(a) for a in args[0]] if args and isinstance(args[0], list) else []
    fields = [str(f) for f in args[1]] if len(args) > 1 and isinstance(args[1], list) else []
    entry: Dict[str, Any] = {"name": bid, "shell": command, "output_fields": fields}
    if bolt.get("parallelism") is not None:
        entry["parallelism"] = bolt["parallelism"]
    entry["inputs"] = []
    script = " ".join(command) or "?"
    unmapped.append(f"bolts[{bid}]: the multilang bolt '{script}' runs as a subprocess; set "
                    f"resources to the directory holding its script (the jar's resources/, "
                    f"with storm.py).")
    if not command:
        unmapped.append(f"bolts[{bid}]: no command in constructorArgs: set shell by hand.")
    return entry


def bolt_config_into(conf: Any, entry: Dict[str, Any], where: str, unmapped: List[str]
                     ) -> None:
    """A bolt's own configuration (Java's ``addConfiguration(key, value)`` on its
    declarer): the tick period becomes the entry's ``tick_freq_secs``; the rest is named."""
    if not conf:
        return
    for key, value in dict(conf).items():
        if key == TICK_FREQ_KEY:
            entry["tick_freq_secs"] = value
        else:
            unmapped.append(f"{where}: configuration {key} = {value!r} not mapped (no "
                            f"per-bolt equivalent here).")


def flux_bolts(doc: Mapping[str, Any], spout_id: str,
                unmapped: List[str], used: Optional[Set[str]] = None) -> List[Dict[str, Any]]:
    """Flux bolts and streams as ``topology.bolts`` entries (pipeline form)."""
    from storm_kafka_compat.flux.kafka_bolt import kafka_bolt_entry
    bolts: List[Dict[str, Any]] = []
    by_id: Dict[str, Dict[str, Any]] = {}
    for b in doc.get("bolts") or []:
        bid = str(b.get("id"))
        cls = str(b.get("className", ""))
        kafka_bolt = kafka_bolt_entry(b, doc, used if used is not None else set(), unmapped)
        if kafka_bolt is not None:  # storm-kafka's KafkaBolt runs as ours
            bolts.append(kafka_bolt)
            by_id[bid] = kafka_bolt
            continue
        shell = shell_bolt_entry(b, unmapped)
        if shell is not None:  # a multilang script: runs as it is
            bolts.append(shell)
            by_id[bid] = shell
            continue
        placeholder = python_placeholder(cls)
        unmapped.append(f"bolts[{bid}] {cls} not mapped: port the bolt to Python "
                        f"(placeholder {placeholder!r}).")
        entry: Dict[str, Any] = {"name": bid, "bolt": placeholder}
        if b.get("parallelism") is not None:
            entry["parallelism"] = b["parallelism"]
        bolt_config_into(b.get("config"), entry, f"bolts[{bid}]", unmapped)
        entry["inputs"] = []
        bolts.append(entry)
        by_id[bid] = entry
    known_spouts = {str(s.get("id")) for s in doc.get("spouts") or []}
    for st in doc.get("streams") or []:
        src, dst = str(st.get("from")), str(st.get("to"))
        name = st.get("name") or f"{src} --> {dst}"
        if dst not in by_id:
            unmapped.append(f"streams[{name}]: target {dst!r} is not a bolt; not mapped.")
            continue
        if src != spout_id and src not in by_id:
            what = "another spout" if src in known_spouts else "unknown"
            unmapped.append(f"streams[{name}]: source {src!r} ({what}) not mapped.")
            continue
        grouping = st.get("grouping") or {}
        gtype = str(grouping.get("type", "SHUFFLE")).upper()
        inp: Dict[str, Any] = {"from": SPOUT_NAME if src == spout_id else src,
                               "grouping": GROUPINGS.get(gtype, "shuffle")}
        if gtype not in GROUPINGS:
            unmapped.append(f"streams[{name}]: grouping {gtype} not mapped: written as "
                            f"shuffle; port it if order matters.")
        elif gtype == "CUSTOM":
            cls = str((grouping.get("customClass") or {}).get("className", ""))
            inp["custom"] = python_placeholder(cls) if cls else "ported:Grouping"
            unmapped.append(f"streams[{name}]: grouping CUSTOM {cls} not mapped: port it to "
                            f"Python as a CustomStreamGrouping (placeholder "
                            f"{inp['custom']!r}).")
        if grouping.get("args"):
            inp["fields"] = list(grouping["args"])
        if grouping.get("streamId"):
            inp["stream"] = grouping["streamId"]
        by_id[dst]["inputs"].append(inp)
    for entry in bolts:
        if not entry["inputs"]:
            unmapped.append(f"bolts[{entry['name']}]: no stream feeds it; it will read the "
                            f"spout with a shuffle grouping.")
            del entry["inputs"]
        elif (len(entry["inputs"]) == 1 and set(entry["inputs"][0]) == {"from", "grouping"}
              and entry["inputs"][0]["from"] == SPOUT_NAME
              and entry["inputs"][0]["grouping"] in SHUFFLES):
            del entry["inputs"]  # the pipeline's default input (every task is local here)
    return bolts


# --- files -------------------------------------------------------------------------------


#: the formats of a file ``config convert`` reads (Java sources are read by
#: :mod:`storm_kafka_compat.java`)
FileFormat = Literal["flux", "properties", "streamparse", "pyleus"]
FILE_FORMATS: Tuple[FileFormat, ...] = get_args(FileFormat)


def detect_format(path: str, text: str) -> FileFormat:
    """``"properties"``, ``"flux"``, ``"pyleus"`` or ``"streamparse"``: by extension, else by
    content."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".properties":
        return "properties"
    if ext == ".py":
        return "streamparse"
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return "flux" if ext in (".yaml", ".yml") else "properties"
    from storm_kafka_compat.flux.pyleus import is_pyleus
    if is_pyleus(doc):
        return "pyleus"
    if ext in (".yaml", ".yml"):
        return "flux"
    return "flux" if isinstance(doc, Mapping) and ("spouts" in doc or "components" in doc) \
        else "properties"


def _read(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"cannot read {what} {path}: {reason}; check the path.",
                          value=path) from None


def convert_file(path: str, *, filter_path: Optional[str] = None,
                 env: Optional[Mapping[str, str]] = None,
                 fmt: Optional[FileFormat] = None) -> Conversion:
    """Read and convert a Flux YAML, ``.properties`` file, streamparse topology (``.py``) or
    Pyleus topology YAML.

    Parameters
    ----------
    path : str
        The file to convert.
    filter_path : str, optional
        A ``.properties`` file for Flux ``${key}`` substitution (Flux ``--filter``).
    env : Mapping, optional
        Environment for ``${ENV-NAME}`` (Flux ``--env-filter``); None disables it.
    fmt : {"flux", "properties", "streamparse", "pyleus"}, optional
        Force the input format instead of detecting it.
    """
    text = _read(path, "file")
    kind = fmt or detect_format(path, text)
    if kind in ("streamparse", "pyleus"):
        return _convert_python_topology(kind, path, text, filter_path, env)
    if kind == "properties":
        if filter_path is not None:
            raise ConfigError("--filter applies to Flux YAML files only; drop it for a "
                              ".properties file.", key="--filter", value=filter_path)
        return convert_properties(text, source=path)
    properties = None
    if filter_path is not None:
        properties = load_properties(_read(filter_path, "filter file"), source=filter_path)
    return convert_flux(text, properties=properties, env=env, source=path)


def _convert_python_topology(kind: FileFormat, path: str, text: str, filter_path: Optional[str],
                             env: Optional[Mapping[str, str]]) -> Conversion:
    """A streamparse Topology class or a Pyleus topology YAML (docs/python-storm.md)."""
    properties = None
    if filter_path is not None:
        properties = load_properties(_read(filter_path, "filter file"), source=filter_path)
    if kind == "pyleus":
        from storm_kafka_compat.flux.pyleus import convert_pyleus
        return convert_pyleus(text, source=path, properties=properties, env=env)
    from storm_kafka_compat.flux.streamparse_topology import convert_streamparse
    return convert_streamparse(path, properties=properties, env=env)


__all__ = [
    "Conversion", "substitute", "load_properties", "convert_flux", "convert_properties",
    "convert_file", "detect_format", "python_placeholder", "GROUPINGS", "SPOUT_NAME",
    "SCHEME_CLASSES",
    "PROPERTIES_HOSTS", "PROPERTIES_STATIC_PREFIX", "PROPERTIES_SPOUT_PREFIXES",
    "PROPERTIES_KAFKA_PREFIX", "PROPERTIES_SPARK",
]
