"""Convert Storm Flux topologies and Java ``.properties`` files into CONFIG.

Operators arrive with what their Storm topology was built from: a Flux YAML
file (``components`` with ``className``/``constructorArgs``/``properties``/
``configMethods``, ``spouts``, ``bolts``, ``streams``, ``config``) or a plain
``.properties`` file. :func:`convert_flux` and :func:`convert_properties` turn
them into this project's CONFIG mapping and list, item by item, what could not
be carried over (Java bolts above all).

This module is pure: text in, mappings out. It uses PyYAML and javaproperties.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import javaproperties
import yaml

from storm_kafka_compat.config import (
    AUTH_KEYS,
    SCHEME_NAMES,
    STORM_SCHEME_CLASSES,
    SPOUT_FIELDS,
    TOPOLOGY_FIELDS,
    PLACEHOLDER_RE,
    find_placeholders,
    is_callable_ref,
    placeholder_fix,
    parse_yaml,
)
from storm_kafka_compat.flux.client import ClientComponents, client_builder_name
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.kafka.settings import add_java_client_setting

logger = logging.getLogger(__name__)

#: Java packages whose classes the converter understands (1.x, then 0.9/0.10)
KAFKA_PACKAGES: Tuple[str, ...] = ("org.apache.storm.kafka.", "storm.kafka.")
#: packages of GlobalPartitionInformation
TRIDENT_PACKAGES: Tuple[str, ...] = ("org.apache.storm.kafka.trident.", "storm.kafka.trident.")
#: storm-core packages of the generic schemes (RawMultiScheme, SchemeAsMultiScheme, RawScheme)
CORE_SPOUT_PACKAGES: Tuple[str, ...] = ("org.apache.storm.spout.", "backtype.storm.spout.")

#: Flux grouping types (``grouping.type``) and the pipeline's grouping names; the
#: ones without an equal are reported. LOCAL_OR_SHUFFLE and NONE behave as shuffle
#: in Storm when there is no local task to prefer.
GROUPINGS: Dict[str, str] = {
    "SHUFFLE": "shuffle", "LOCAL_OR_SHUFFLE": "shuffle", "NONE": "shuffle",
    "FIELDS": "fields", "ALL": "all", "GLOBAL": "global",
}
#: the name inputs use for the Kafka spout in ``topology.bolts`` (pipeline default)
SPOUT_NAME = "spout"


@dataclass
class Conversion:
    """The result of a conversion.

    Attributes
    ----------
    config : dict
        The CONFIG mapping (sections ``kafkaSpout``, ``spout``, ``hosts``,
        ``topology``, ``spark``, ``bolt``, ``kafka`` as found).
    unmapped : list of str
        One sentence per item that could not be carried over, for stderr.
    """

    config: Dict[str, Any]
    unmapped: List[str] = field(default_factory=list)

    def to_yaml(self) -> str:
        """The CONFIG as YAML text, sections in CONFIG order."""
        order = ("kafkaSpout", "spout", "hosts", "topology", "spark", "bolt", "kafka")
        ordered = {k: self.config[k] for k in order if k in self.config}
        ordered.update({k: v for k, v in self.config.items() if k not in ordered})
        return yaml.safe_dump(ordered, sort_keys=False, default_flow_style=False,
                              allow_unicode=True)


# --- Flux's text substitution ------------------------------------------------------


def substitute(text: str, properties: Optional[Mapping[str, str]] = None,
               env: Optional[Mapping[str, str]] = None) -> str:
    """Apply Flux's ``--filter``/``--env-filter`` substitution to raw YAML text.

    As Flux does, this is plain text replacement before YAML parsing: first every
    ``${key}`` whose key is in ``properties``, then every ``${ENV-NAME}`` whose
    ``NAME`` is in ``env``. Unknown placeholders are left as they are.
    """
    def repl_prop(m: "re.Match[str]") -> str:
        key = m.group(1)
        if properties is not None and key in properties:
            return str(properties[key])
        return m.group(0)

    def repl_env(m: "re.Match[str]") -> str:
        key = m.group(1)
        if env is not None and key.startswith("ENV-") and key[4:] in env:
            return str(env[key[4:]])
        return m.group(0)

    return PLACEHOLDER_RE.sub(repl_env, PLACEHOLDER_RE.sub(repl_prop, text))


def load_properties(text: str, *, source: str = "<properties>") -> Dict[str, str]:
    """Parse Java ``.properties`` text (escapes, continuations, ``\\uXXXX``)."""
    try:
        return dict(javaproperties.loads(text))
    except Exception as exc:  # javaproperties raises ValueError and friends
        raise ConfigError(f"{source} is not a valid .properties file: {exc}.",
                          value=source) from None


# --- Flux components -----------------------------------------------------------------


def _simple_name(class_name: str) -> Optional[str]:
    """``org.apache.storm.kafka.ZkHosts`` -> ``ZkHosts`` for the classes we know."""
    for pkg in TRIDENT_PACKAGES + KAFKA_PACKAGES + CORE_SPOUT_PACKAGES:
        if class_name.startswith(pkg) and "." not in class_name[len(pkg):]:
            return class_name[len(pkg):]
    return None


def python_placeholder(class_name: str) -> str:
    """``com.example.bolts.SplitBolt`` -> ``com.example.bolts:SplitBolt``: where the
    ported Python callable is expected (a valid ``module:callable``)."""
    pkg, _, simple = class_name.rpartition(".")
    simple = re.sub(r"\W", "_", simple) or "Bolt"
    module = ".".join(re.sub(r"\W", "_", part) for part in pkg.split(".") if part) or "ported"
    return f"{module}:{simple}"


@dataclass
class _Value:
    """A resolved component: what it stands for in our CONFIG."""

    kind: str                      # hosts, gpi, broker, scheme, spout_config, kafka_spout, java,
    data: Any = None               # and the storm-kafka-client kinds of flux.client
    class_name: str = ""
    cid: str = ""                  # the component id, when built from ``components``


class _FluxResolver(ClientComponents):
    """Builds components on demand, following ``ref``/``reflist``."""

    def __init__(self, components: Mapping[str, Mapping[str, Any]],
                 unmapped: List[str]) -> None:
        self.components = components
        self.cache: Dict[str, _Value] = {}
        self.unmapped = unmapped
        self.used: set = set()
        self._stack: List[str] = []

    # values -----------------------------------------------------------------
    def value(self, raw: Any, where: str) -> Any:
        if isinstance(raw, Mapping) and "ref" in raw:
            return self.component(str(raw["ref"]), where)
        if isinstance(raw, Mapping) and "reflist" in raw:
            return [self.component(str(r), where) for r in raw["reflist"]]
        if isinstance(raw, list):
            return [self.value(v, where) for v in raw]
        return raw

    def component(self, cid: str, where: str) -> _Value:
        if cid in self.cache:
            return self.cache[cid]
        if cid not in self.components:
            raise ConfigError(f"{where} refers to component {cid!r}, which is not defined "
                              f"under components; define it or fix the ref.", key=where,
                              value=cid)
        if cid in self._stack:
            raise ConfigError(f"components refer to each other in a cycle: "
                              f"{' -> '.join(self._stack + [cid])}.", key=where, value=cid)
        self._stack.append(cid)
        try:
            built = self.build(self.components[cid], f"components[{cid}]")
        finally:
            self._stack.pop()
        self.used.add(cid)
        built.cid = cid
        self.cache[cid] = built
        return built

    # construction -----------------------------------------------------------
    def build(self, comp: Mapping[str, Any], where: str) -> _Value:
        class_name = str(comp.get("className", ""))
        simple = _simple_name(class_name) or client_builder_name(class_name)
        args = [self.value(a, where) for a in (comp.get("constructorArgs") or [])]
        props: Dict[str, Any] = {}
        for prop in comp.get("properties") or []:
            if isinstance(prop, Mapping):
                raw = {"ref": prop["ref"]} if "ref" in prop else prop.get("value")
                props[str(prop.get("name"))] = self.value(raw, where)
        methods = [(str(m.get("name")), [self.value(a, where) for a in (m.get("args") or [])])
                   for m in (comp.get("configMethods") or []) if isinstance(m, Mapping)]
        factory = comp.get("factory")
        builder = getattr(self, f"_build_{simple}", None) if simple else None
        if builder is None:
            return _Value("java", class_name=class_name)
        built: _Value = builder(args, props, methods, factory, where)
        built.class_name = class_name
        return built

    def _new_value(self, kind: str, data: Any) -> _Value:
        return _Value(kind, data)

    def _placeholder(self, class_name: str) -> str:
        return python_placeholder(class_name)

    def _describe(self, args: Sequence[Any]) -> str:
        """Constructor arguments as a reader names them (never an internal repr)."""
        if not args:
            return "no constructorArgs"
        parts = []
        for a in args:
            if isinstance(a, _Value):
                where = f"components[{a.cid}]" if a.cid else "a component"
                parts.append(f"{where} of class {a.class_name or '?'}")
            else:
                parts.append(repr(a))
        return ", ".join(parts)

    def _extra(self, where: str, props: Mapping[str, Any], methods: Sequence[Any],
               known_props: Sequence[str] = ()) -> None:
        for name in props:
            if name not in known_props:
                self.unmapped.append(f"{where}: property {name!r} not mapped (no equivalent).")
        for name, _ in methods:
            self.unmapped.append(f"{where}: configMethod {name!r} not mapped (no equivalent).")

    def _build_ZkHosts(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                       factory: Any, where: str) -> _Value:
        if not 1 <= len(args) <= 2:
            raise ConfigError(f"{where}: ZkHosts takes (brokerZkStr[, brokerZkPath]), got "
                              f"{len(args)} constructorArgs.", key=where, value=args)
        hosts: Dict[str, Any] = {"zk": args[0]}
        if len(args) == 2:
            hosts["brokerZkPath"] = args[1]
        if "refreshFreqSecs" in props:
            hosts["refreshFreqSecs"] = props["refreshFreqSecs"]
        self._extra(where, props, methods, ("refreshFreqSecs",))
        return _Value("hosts", hosts)

    def _build_StaticHosts(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                           factory: Any, where: str) -> _Value:
        if len(args) != 1 or not isinstance(args[0], _Value) or args[0].kind != "gpi":
            raise ConfigError(f"{where}: StaticHosts takes one GlobalPartitionInformation "
                              f"(a ref), got {self._describe(args)}.", key=where,
                              value=len(args))
        gpi = args[0].data
        hosts: Dict[str, Any] = {"static": dict(sorted(gpi["partitions"].items()))}
        if gpi["use_topic"]:
            hosts["useTopicNameForPartitionPathId"] = True
        self._extra(where, props, methods)
        return _Value("hosts", hosts)

    def _build_GlobalPartitionInformation(self, args: List[Any], props: Dict[str, Any],
                                          methods: List[Any], factory: Any,
                                          where: str) -> _Value:
        use_topic = bool(args[1]) if len(args) >= 2 else False
        partitions: Dict[int, str] = {}
        rest = []
        for name, margs in methods:
            if name == "addPartition" and len(margs) == 2:
                broker = margs[1]
                addr = broker.data if isinstance(broker, _Value) and broker.kind == "broker" \
                    else broker
                partitions[int(margs[0])] = str(addr)
            else:
                rest.append((name, margs))
        self._extra(where, props, rest)
        return _Value("gpi", {"topic": args[0] if args else None, "use_topic": use_topic,
                              "partitions": partitions})

    def _build_Broker(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                      factory: Any, where: str) -> _Value:
        if factory == "fromString" and len(args) == 1:
            text = str(args[0])
            return _Value("broker", text if ":" in text else f"{text}:9092")
        if factory is None and len(args) in (1, 2):
            port = int(args[1]) if len(args) == 2 else 9092
            return _Value("broker", f"{args[0]}:{port}")
        raise ConfigError(f"{where}: Broker takes (host[, port]) or factory fromString(text), "
                          f"got {self._describe(args)}.", key=where, value=len(args))

    # schemes
    def _scheme(self, name: str) -> _Value:
        return _Value("scheme", name)

    def _build_RawMultiScheme(self, *a: Any) -> _Value:
        return self._scheme("raw")

    def _build_RawScheme(self, *a: Any) -> _Value:
        return _Value("scheme_single", "raw")

    def _build_StringScheme(self, *a: Any) -> _Value:
        return _Value("scheme_single", "string")

    # both extend StringScheme: wrapped in SchemeAsMultiScheme they give one "str" field
    _build_StringKeyValueScheme = _build_StringScheme
    _build_StringMessageAndMetadataScheme = _build_StringScheme

    def _build_StringMultiSchemeWithTopic(self, *a: Any) -> _Value:
        return self._scheme("string_with_topic")

    def _wrapped(self, args: List[Any], wrapper: str, where: str) -> Any:
        if len(args) != 1 or not isinstance(args[0], _Value):
            raise ConfigError(f"{where}: {wrapper} takes one scheme (a ref), got "
                              f"{self._describe(args)}.", key=where, value=len(args))
        return args[0]

    def _build_SchemeAsMultiScheme(self, args: List[Any], props: Dict[str, Any],
                                   methods: List[Any], factory: Any, where: str) -> _Value:
        inner = self._wrapped(args, "SchemeAsMultiScheme", where)
        if inner.kind == "scheme_single":
            return self._scheme(inner.data)
        return self._user_scheme(inner, where)

    def _build_KeyValueSchemeAsMultiScheme(self, args: List[Any], props: Dict[str, Any],
                                           methods: List[Any], factory: Any,
                                           where: str) -> _Value:
        inner = self._wrapped(args, "KeyValueSchemeAsMultiScheme", where)
        if inner.kind == "scheme_single" and inner.data == "string" and \
                _simple_name(self._class_of(args[0])) == "StringKeyValueScheme":
            return self._scheme("string_key_value")
        return self._user_scheme(inner, where)

    def _build_MessageMetadataSchemeAsMultiScheme(self, args: List[Any], props: Dict[str, Any],
                                                  methods: List[Any], factory: Any,
                                                  where: str) -> _Value:
        inner = self._wrapped(args, "MessageMetadataSchemeAsMultiScheme", where)
        if _simple_name(self._class_of(inner)) == "StringMessageAndMetadataScheme":
            return self._scheme("message_metadata")
        return self._user_scheme(inner, where)

    def _class_of(self, value: _Value) -> str:
        return value.class_name

    def _user_scheme(self, inner: _Value, where: str) -> _Value:
        cls = inner.class_name or "?"
        placeholder = python_placeholder(cls)
        self.unmapped.append(f"{where}: scheme {cls} not mapped: port the scheme to Python "
                             f"and set spout.scheme (placeholder {placeholder!r}).")
        return self._scheme(placeholder)

    def _build_SpoutConfig(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                           factory: Any, where: str) -> _Value:
        if len(args) == 4:
            hosts, topic, zk_root, sid = args
            client_id = None
        elif len(args) == 5:
            hosts, topic, client_id, zk_root, sid = args
        else:
            raise ConfigError(f"{where}: SpoutConfig takes (hosts, topic, zkRoot, id) or "
                              f"(hosts, topic, clientId, zkRoot, id), got {len(args)} "
                              f"constructorArgs.", key=where, value=len(args))
        spout: Dict[str, Any] = {"topic": topic, "zkRoot": zk_root, "id": sid}
        if client_id is not None:
            spout["clientId"] = client_id
        storm_names = {s.storm_name for s in SPOUT_FIELDS if not s.extension}
        for name, value in props.items():
            if name == "forceFromStart":
                self.unmapped.append(f"{where}: forceFromStart (0.9.x) written as "
                                     f"ignoreZkOffsets; note that since 0.10.0 a first start "
                                     f"honours startOffsetTime.")
                name = "ignoreZkOffsets"
            if name == "scheme":
                if isinstance(value, _Value) and value.kind == "scheme":
                    value = value.data
                elif isinstance(value, _Value) and value.kind == "scheme_single":
                    value = value.data  # a Scheme set directly: treat as its MultiScheme
                elif isinstance(value, _Value):
                    value = self._user_scheme(value, where).data
            if name in storm_names and name not in ("topic", "zkRoot", "id"):
                spout[name] = value
            else:
                self.unmapped.append(f"{where}: property {name!r} not mapped (not a "
                                     f"SpoutConfig field).")
        for name, _ in methods:
            self.unmapped.append(f"{where}: configMethod {name!r} not mapped (no equivalent).")
        return _Value("spout_config", {"hosts": hosts, "spout": spout})

    def _build_KafkaSpout(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                          factory: Any, where: str) -> _Value:
        if len(args) == 1 and isinstance(args[0], _Value) and args[0].kind == "java":
            arg = args[0]
            raise ConfigError(
                f"{where}: KafkaSpout's SpoutConfig is {self._describe(args)}, a class this "
                f"converter does not know (a SpoutConfig subclass of your project?). Its "
                f"constructor and fields cannot be read from Flux: change its className to "
                f"org.apache.storm.kafka.SpoutConfig (constructorArgs hosts, topic, zkRoot, id; "
                f"SpoutConfig fields as properties) and convert again, or write the spout "
                f"section by hand (docs/configuration.md).", key=where, value=arg.class_name)
        if len(args) != 1 or not isinstance(args[0], _Value) or args[0].kind != "spout_config":
            raise ConfigError(f"{where}: KafkaSpout takes one SpoutConfig (a ref), got "
                              f"{self._describe(args)}.", key=where, value=len(args))
        self._extra(where, props, methods)
        return _Value("kafka_spout", args[0].data)


# --- Flux to CONFIG ---------------------------------------------------------------------


_TOPOLOGY_KEY_NAMES = {s.storm_name for s in TOPOLOGY_FIELDS}


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
    unmapped: List[str] = []
    for key in doc:
        if key not in ("name", "config", "components", "spouts", "bolts", "streams"):
            what = "includes are not followed; convert the included file too" \
                if key == "includes" else "not mapped (no equivalent)"
            unmapped.append(f"{key}: {what}.")
    components: Dict[str, Mapping[str, Any]] = {}
    for comp in doc.get("components") or []:
        if isinstance(comp, Mapping) and "id" in comp:
            components[str(comp["id"])] = comp
    resolver = _FluxResolver(components, unmapped)

    config: Dict[str, Any] = {}
    topology: Dict[str, Any] = {}
    if doc.get("name") is not None:
        topology["name"] = doc["name"]
    _flux_storm_config(doc.get("config") or {}, topology, unmapped)

    # spouts
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
        config["spout"] = built.data["spout"]
        tasks = sp.get("numTasks", sp.get("parallelism"))
        if tasks is not None:
            config["spark"] = {"tasks": tasks}
        if built.kind == "client_spout":
            config["kafkaSpout"] = built.data["kafkaSpout"]
            if not config["kafkaSpout"].get("groupId"):
                unmapped.append(f"{where}: no group id (setGroupId or setProp group.id): Storm "
                                f"builds the spout without one, but no commit can succeed "
                                f"without a consumer group; set kafkaSpout.groupId (the group "
                                f"the Storm topology committed to, to resume from it).")
            continue
        hosts = built.data["hosts"]
        if isinstance(hosts, _Value) and hosts.kind == "hosts":
            config["hosts"] = hosts.data
        else:
            unmapped.append(f"{where}: broker hosts {getattr(hosts, 'class_name', hosts)!r} "
                            f"not mapped: write hosts (zk, static or bootstrap) by hand.")
    if spout_id is None:
        listed = ", ".join(str(sp.get("className")) for sp in doc.get("spouts") or []) or "none"
        raise ConfigError(f"{source} has no KafkaSpout under spouts (found: {listed}); the "
                          f"converter reads storm-kafka's org.apache.storm.kafka.KafkaSpout "
                          f"(storm.kafka.KafkaSpout) and storm-kafka-client's "
                          f"org.apache.storm.kafka.spout.KafkaSpout.", key="spouts",
                          value=source)
    config["topology"] = topology

    # bolts and streams
    bolts = _flux_bolts(doc, spout_id, unmapped, resolver.used)
    if len(bolts) == 1 and set(bolts[0]) <= {"name", "bolt", "parallelism"}:
        config["bolt"] = bolts[0]["bolt"]  # one bolt reading the spout: the simple form
    elif bolts:
        topology["bolts"] = bolts

    for cid in components:
        if cid not in resolver.used:
            unmapped.append(f"components[{cid}] ({components[cid].get('className')}) not "
                            f"mapped: not used by the KafkaSpout.")
    for where, placeholder in find_placeholders(config):
        unmapped.append(f"{where}: placeholder {placeholder} was not substituted; "
                        f"{placeholder_fix(placeholder)}.")
    return Conversion(config, unmapped)


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


def _flux_storm_config(conf: Any, topology: Dict[str, Any], unmapped: List[str]) -> None:
    if not isinstance(conf, Mapping):
        unmapped.append(f"config: {conf!r} is not a mapping; not mapped.")
        return
    for key, value in conf.items():
        if key in _TOPOLOGY_KEY_NAMES or key in AUTH_KEYS:
            if key == "topology.name" and "name" in topology:
                if topology["name"] != value:
                    unmapped.append(f"config.topology.name {value!r} ignored: Flux uses the "
                                    f"top-level name {topology['name']!r}.")
                continue
            topology["name" if key == "topology.name" else key] = value
        else:
            unmapped.append(f"config.{key} not mapped (no equivalent here).")


def _flux_bolts(doc: Mapping[str, Any], spout_id: str,
                unmapped: List[str], used: Optional[set] = None) -> List[Dict[str, Any]]:
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
        placeholder = python_placeholder(cls)
        unmapped.append(f"bolts[{bid}] {cls} not mapped: port the bolt to Python "
                        f"(placeholder {placeholder!r}).")
        entry: Dict[str, Any] = {"name": bid, "bolt": placeholder}
        if b.get("parallelism") is not None:
            entry["parallelism"] = b["parallelism"]
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
            detail = (grouping.get("customClass") or {}).get("className", "") \
                if gtype == "CUSTOM" else ""
            unmapped.append(f"streams[{name}]: grouping {gtype}{' ' + detail if detail else ''} "
                            f"not mapped: written as shuffle; port it if order matters.")
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
        elif entry["inputs"] == [{"from": SPOUT_NAME, "grouping": "shuffle"}]:
            del entry["inputs"]  # the pipeline's default input
    return bolts


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
    if ":" not in text and simple in SCHEME_CLASSES and (_simple_name(text) or text == simple):
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


# --- files -------------------------------------------------------------------------------


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


def detect_format(path: str, text: str) -> str:
    """``"properties"`` or ``"flux"``: by extension, else by content."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".properties":
        return "properties"
    if ext in (".yaml", ".yml"):
        return "flux"
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return "properties"
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
                 fmt: Optional[str] = None) -> Conversion:
    """Read and convert a Flux YAML or ``.properties`` file.

    Parameters
    ----------
    path : str
        The file to convert.
    filter_path : str, optional
        A ``.properties`` file for Flux ``${key}`` substitution (Flux ``--filter``).
    env : Mapping, optional
        Environment for ``${ENV-NAME}`` (Flux ``--env-filter``); None disables it.
    fmt : {"flux", "properties"}, optional
        Force the input format instead of detecting it.
    """
    text = _read(path, "file")
    kind = fmt or detect_format(path, text)
    if kind == "properties":
        if filter_path is not None:
            raise ConfigError("--filter applies to Flux YAML files only; drop it for a "
                              ".properties file.", key="--filter", value=filter_path)
        return convert_properties(text, source=path)
    properties = None
    if filter_path is not None:
        properties = load_properties(_read(filter_path, "filter file"), source=filter_path)
    return convert_flux(text, properties=properties, env=env, source=path)


__all__ = [
    "Conversion", "substitute", "load_properties", "convert_flux", "convert_properties",
    "convert_file", "detect_format", "python_placeholder", "GROUPINGS", "SPOUT_NAME",
    "SCHEME_CLASSES",
    "PROPERTIES_HOSTS", "PROPERTIES_STATIC_PREFIX", "PROPERTIES_SPOUT_PREFIXES",
    "PROPERTIES_KAFKA_PREFIX", "PROPERTIES_SPARK",
]
