"""Flux ``components`` resolved: ``className``/``constructorArgs``/``properties``/
``configMethods`` of storm-kafka's classes (hosts, SpoutConfig, schemes, KafkaSpout)
and, through :mod:`.client`, storm-kafka-client's builders, into CONFIG values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set

from storm_kafka_compat.config import SPOUT_FIELDS
from storm_kafka_compat.flux.client import ClientComponents, ComponentKind, client_builder_name
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.flux.common import CORE_SPOUT_PACKAGES, KAFKA_PACKAGES, TRIDENT_PACKAGES


# --- Flux components -----------------------------------------------------------------


def simple_name(class_name: str) -> Optional[str]:
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


#: KafkaConfig.securityProtocol values (HDP's storm-kafka) -> the CONFIG's ``kafka`` settings
SECURITY_PROTOCOLS: Dict[str, Dict[str, str]] = {
    "PLAINTEXT": {},
    "SSL": {"security_protocol": "SSL"},
    # HDP's names for Kafka's SASL_PLAINTEXT: Kerberos, the Java client's default mechanism
    "PLAINTEXTSASL": {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI"},
    "SASLPLAINTEXT": {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI"},
    "SASL_PLAINTEXT": {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "GSSAPI"},
    "SASL_SSL": {"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"},
}


def kafka_security(value: Any, where: str, unmapped: List[str]) -> Dict[str, Any]:
    """``spoutConfig.securityProtocol`` as the CONFIG's ``kafka`` settings (kafka-python
    names, which both backends read), with what the operator still has to provide.

    Raises
    ------
    ConfigError
        A protocol Kafka does not know.
    """
    if isinstance(value, str) and "${" in value:
        unmapped.append(f"{where}: securityProtocol is {value}, given at run time: written as "
                        f"kafka.security_protocol; fill it with Kafka's name (SASL_PLAINTEXT "
                        f"for HDP's PLAINTEXTSASL) and set kafka.sasl_mechanism (GSSAPI for "
                        f"Kerberos).")
        return {"security_protocol": value}
    name = str(value).strip().upper()
    if name not in SECURITY_PROTOCOLS:
        raise ConfigError(f"{where}: securityProtocol {value!r} is not a Kafka security "
                          f"protocol; use one of {', '.join(SECURITY_PROTOCOLS)} (HDP's "
                          f"PLAINTEXTSASL is SASL_PLAINTEXT), or write the CONFIG's kafka "
                          f"section by hand (docs/configuration.md, kafka).",
                          key=f"{where}.securityProtocol", value=value)
    settings = dict(SECURITY_PROTOCOLS[name])
    if settings.get("sasl_mechanism") == "GSSAPI":
        unmapped.append(f"{where}: securityProtocol {value} written as kafka.security_protocol "
                        f"{settings['security_protocol']} with sasl_mechanism GSSAPI (Kerberos, "
                        f"as the topology's JAAS file had it): the principal and keytab of "
                        f"that file are not read; run kinit with them where the driver and "
                        f"executors run (kafka-python uses the ticket cache; install gssapi), "
                        f"or set kafka.sasl_mechanism to what the brokers take.")
    if "SSL" in settings.get("security_protocol", ""):
        unmapped.append(f"{where}: securityProtocol {value}: the Java truststore is not read; "
                        f"set kafka.ssl_cafile to the brokers' CA certificate (PEM).")
    return settings


@dataclass
class Resolved:
    """A resolved component: what it stands for in our CONFIG."""

    kind: ComponentKind
    data: Any = None
    class_name: str = ""
    cid: str = ""                  # the component id, when built from ``components``


class ComponentResolver(ClientComponents):
    """Builds components on demand, following ``ref``/``reflist``."""

    def __init__(self, components: Mapping[str, Mapping[str, Any]],
                 unmapped: List[str]) -> None:
        self.components = components
        self.cache: Dict[str, Resolved] = {}
        self.unmapped = unmapped
        self.used: Set[str] = set()
        self.ported_schemes: List[str] = []
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

    def component(self, cid: str, where: str) -> Resolved:
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
            built = self.build(self.components[cid], self.where_of(cid))
        finally:
            self._stack.pop()
        self.used.add(cid)
        built.cid = cid
        self.cache[cid] = built
        return built

    def where_of(self, cid: str) -> str:
        """How messages name a component."""
        return f"components[{cid}]"

    # construction -----------------------------------------------------------
    def build(self, comp: Mapping[str, Any], where: str) -> Resolved:
        class_name = str(comp.get("className", ""))
        simple = simple_name(class_name) or client_builder_name(class_name)
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
            return Resolved("java", class_name=class_name)
        built: Resolved = builder(args, props, methods, factory, where)
        built.class_name = class_name
        return built

    def _new_value(self, kind: ComponentKind, data: Any) -> Resolved:
        return Resolved(kind, data)

    def _placeholder(self, class_name: str) -> str:
        return python_placeholder(class_name)

    def _describe(self, args: Sequence[Any]) -> str:
        """Constructor arguments as a reader names them (never an internal repr)."""
        if not args:
            return "no constructorArgs"
        return ", ".join(self.show(a) for a in args)

    def show(self, value: Any) -> str:
        """One value as a reader names it: a component by where it is and its class, a
        list item by item, anything else as written."""
        if isinstance(value, Resolved):
            where = self.where_of(value.cid) if value.cid else "a component"
            return f"{where} of class {value.class_name or '?'}"
        if isinstance(value, list):
            return "[" + ", ".join(self.show(v) for v in value) + "]"
        return repr(value)

    def _extra(self, where: str, props: Mapping[str, Any], methods: Sequence[Any],
               known_props: Sequence[str] = ()) -> None:
        for name in props:
            if name not in known_props:
                self.unmapped.append(f"{where}: property {name!r} not mapped (no equivalent).")
        for name, _ in methods:
            self.unmapped.append(f"{where}: configMethod {name!r} not mapped (no equivalent).")

    def _build_ZkHosts(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                       factory: Any, where: str) -> Resolved:
        if not 1 <= len(args) <= 2:
            raise ConfigError(f"{where}: ZkHosts takes (brokerZkStr[, brokerZkPath]), got "
                              f"{len(args)} constructorArgs.", key=where, value=args)
        hosts: Dict[str, Any] = {"zk": args[0]}
        if len(args) == 2:
            hosts["brokerZkPath"] = args[1]
        if "refreshFreqSecs" in props:
            hosts["refreshFreqSecs"] = props["refreshFreqSecs"]
        self._extra(where, props, methods, ("refreshFreqSecs",))
        return Resolved("hosts", hosts)

    def _build_StaticHosts(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                           factory: Any, where: str) -> Resolved:
        if len(args) != 1 or not isinstance(args[0], Resolved) or args[0].kind != "gpi":
            raise ConfigError(f"{where}: StaticHosts takes one GlobalPartitionInformation "
                              f"(a ref), got {self._describe(args)}.", key=where,
                              value=len(args))
        gpi = args[0].data
        hosts: Dict[str, Any] = {"static": dict(sorted(gpi["partitions"].items()))}
        if gpi["use_topic"]:
            hosts["useTopicNameForPartitionPathId"] = True
        self._extra(where, props, methods)
        return Resolved("hosts", hosts)

    def _build_GlobalPartitionInformation(self, args: List[Any], props: Dict[str, Any],
                                          methods: List[Any], factory: Any,
                                          where: str) -> Resolved:
        use_topic = bool(args[1]) if len(args) >= 2 else False
        partitions: Dict[int, str] = {}
        rest = []
        for name, margs in methods:
            if name == "addPartition" and len(margs) == 2:
                broker = margs[1]
                addr = broker.data if isinstance(broker, Resolved) and broker.kind == "broker" \
                    else broker
                partitions[int(margs[0])] = str(addr)
            else:
                rest.append((name, margs))
        self._extra(where, props, rest)
        return Resolved("gpi", {"topic": args[0] if args else None, "use_topic": use_topic,
                              "partitions": partitions})

    def _build_Broker(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                      factory: Any, where: str) -> Resolved:
        if factory == "fromString" and len(args) == 1:
            text = str(args[0])
            return Resolved("broker", text if ":" in text else f"{text}:9092")
        if factory is None and len(args) in (1, 2):
            port = int(args[1]) if len(args) == 2 else 9092
            return Resolved("broker", f"{args[0]}:{port}")
        raise ConfigError(f"{where}: Broker takes (host[, port]) or factory fromString(text), "
                          f"got {self._describe(args)}.", key=where, value=len(args))

    # schemes
    def _scheme(self, name: str) -> Resolved:
        return Resolved("scheme", name)

    def _build_RawMultiScheme(self, *a: Any) -> Resolved:
        return self._scheme("raw")

    def _build_RawScheme(self, *a: Any) -> Resolved:
        return Resolved("scheme_single", "raw")

    def _build_StringScheme(self, *a: Any) -> Resolved:
        return Resolved("scheme_single", "string")

    # both extend StringScheme: wrapped in SchemeAsMultiScheme they give one "str" field
    _build_StringKeyValueScheme = _build_StringScheme
    _build_StringMessageAndMetadataScheme = _build_StringScheme

    def _build_StringMultiSchemeWithTopic(self, *a: Any) -> Resolved:
        return self._scheme("string_with_topic")

    def _wrapped(self, args: List[Any], wrapper: str, where: str) -> Any:
        if len(args) != 1 or not isinstance(args[0], Resolved):
            raise ConfigError(f"{where}: {wrapper} takes one scheme (a ref), got "
                              f"{self._describe(args)}.", key=where, value=len(args))
        return args[0]

    def _build_SchemeAsMultiScheme(self, args: List[Any], props: Dict[str, Any],
                                   methods: List[Any], factory: Any, where: str) -> Resolved:
        inner = self._wrapped(args, "SchemeAsMultiScheme", where)
        if inner.kind == "scheme_single":
            return self._scheme(inner.data)
        return self._user_scheme(inner, where)

    def _build_KeyValueSchemeAsMultiScheme(self, args: List[Any], props: Dict[str, Any],
                                           methods: List[Any], factory: Any,
                                           where: str) -> Resolved:
        inner = self._wrapped(args, "KeyValueSchemeAsMultiScheme", where)
        if inner.kind == "scheme_single" and inner.data == "string" and \
                simple_name(self._class_of(args[0])) == "StringKeyValueScheme":
            return self._scheme("string_key_value")
        return self._user_scheme(inner, where)

    def _build_MessageMetadataSchemeAsMultiScheme(self, args: List[Any], props: Dict[str, Any],
                                                  methods: List[Any], factory: Any,
                                                  where: str) -> Resolved:
        inner = self._wrapped(args, "MessageMetadataSchemeAsMultiScheme", where)
        if simple_name(self._class_of(inner)) == "StringMessageAndMetadataScheme":
            return self._scheme("message_metadata")
        return self._user_scheme(inner, where)

    def _class_of(self, value: Resolved) -> str:
        return value.class_name

    def _user_scheme(self, inner: Resolved, where: str) -> Resolved:
        cls = inner.class_name or "?"
        self.ported_schemes.append(cls)
        placeholder = python_placeholder(cls)
        self.unmapped.append(f"{where}: scheme {cls} not mapped: port the scheme to Python "
                             f"and set spout.scheme (placeholder {placeholder!r}).")
        return self._scheme(placeholder)

    def _build_SpoutConfig(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                           factory: Any, where: str) -> Resolved:
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
        kafka: Dict[str, Any] = {}
        for name, value in props.items():
            if name == "securityProtocol":       # KafkaConfig's field in HDP's storm-kafka
                kafka.update(kafka_security(value, where, self.unmapped))
                continue
            if name == "forceFromStart":
                self.unmapped.append(f"{where}: forceFromStart (0.9.x) written as "
                                     f"ignoreZkOffsets; note that since 0.10.0 a first start "
                                     f"honours startOffsetTime.")
                name = "ignoreZkOffsets"
            if name == "scheme":
                if isinstance(value, Resolved) and value.kind == "scheme":
                    value = value.data
                elif isinstance(value, Resolved) and value.kind == "scheme_single":
                    value = value.data  # a Scheme set directly: treat as its MultiScheme
                elif isinstance(value, Resolved):
                    value = self._user_scheme(value, where).data
            if name in storm_names:   # topic, zkRoot and id are public fields too
                spout[name] = value
            else:
                self.unmapped.append(f"{where}: property {name!r} not mapped (not a "
                                     f"SpoutConfig field).")
        for name, _ in methods:
            self.unmapped.append(f"{where}: configMethod {name!r} not mapped (no equivalent).")
        return Resolved("spout_config", {"hosts": hosts, "spout": spout, "kafka": kafka})

    def _build_KafkaSpout(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                          factory: Any, where: str) -> Resolved:
        if len(args) == 1 and isinstance(args[0], Resolved) and args[0].kind == "java":
            arg = args[0]
            raise ConfigError(
                f"{where}: KafkaSpout's SpoutConfig is {self._describe(args)}, a class this "
                f"converter does not know (a SpoutConfig subclass of your project?). Its "
                f"constructor and fields cannot be read from Flux: change its className to "
                f"org.apache.storm.kafka.SpoutConfig (constructorArgs hosts, topic, zkRoot, id; "
                f"SpoutConfig fields as properties) and convert again, or write the spout "
                f"section by hand (docs/configuration.md).", key=where, value=arg.class_name)
        if len(args) != 1 or not isinstance(args[0], Resolved) or args[0].kind != "spout_config":
            raise ConfigError(f"{where}: KafkaSpout takes one SpoutConfig (a ref), got "
                              f"{self._describe(args)}.", key=where, value=len(args))
        self._extra(where, props, methods)
        return Resolved("kafka_spout", args[0].data)
