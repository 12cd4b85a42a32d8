"""Java topology sources into CONFIG: one CONFIG per KafkaSpout the code builds.

The sources are parsed (:mod:`.source`), the methods that build a topology are run by
the evaluator (:mod:`.interpret`), and each KafkaSpout it saw is described as the Flux
components it was built from and resolved by the Flux converter's own resolver
(:class:`~storm_kafka_compat.flux.components.ComponentResolver`): the same classes,
checks and messages as ``config convert topology.yaml``. The ``TopologyBuilder``'s
declarations become Flux spouts, bolts and streams, mapped by
:func:`~storm_kafka_compat.flux.convert.flux_bolts`.

Values read at run time are placeholders (``${kafka.topic}``, ``${args.0}``,
``${ENV-KAFKA_TOPIC}``) that ``--filter``/``--env-filter`` fill as they fill a Flux
file's (:func:`~storm_kafka_compat.flux.common.substitute`, on the CONFIG's text);
values the source does not give (a helper it cannot follow, a random or time-based
id) are written as ``${<CONFIG key>}`` and listed with the file, line and expression.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from storm_kafka_compat.config import PLACEHOLDER_RE, find_placeholders, parse_yaml
from storm_kafka_compat.config.traps import Evidence
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.flux.common import Conversion, substitute
from storm_kafka_compat.flux.components import ComponentResolver, Resolved
from storm_kafka_compat.java.shell_bolts import as_flux_shell_bolt
from storm_kafka_compat.flux.common import place_bolts, storm_config_into
from storm_kafka_compat.flux.convert import flux_bolts, spout_sections
from storm_kafka_compat.java.interpret import Interpreter
from storm_kafka_compat.java.source import (JAVA_LANG, Method, SourceTree, load_tree,
                                            text_of)
from storm_kafka_compat.java.values import (ENV, FILLABLE, OPAQUE_RE, RANDOM, TIME, UNRESOLVED,
                                            BoltDecl,
                                            ClassRef, JObject, SpoutDecl, Submission, Unknown)

#: words in a method's text that make it part of building a topology
_TOPOLOGY_WORDS = ("KafkaSpout", "SpoutConfig", "setSpout", "submitTopology")


@dataclass
class JavaConversion(Conversion):
    """The CONFIG of one KafkaSpout found in Java sources.

    Attributes
    ----------
    source : str
        ``File.java:line`` where the KafkaSpout is built.
    spout_name : str or None
        Its name in ``setSpout``.
    error : str or None
        Why this spout could not be converted (its config is then empty).
    """

    source: str = ""
    spout_name: Optional[str] = None
    error: Optional[str] = None
    #: ``${<CONFIG key>}`` written for a value the source does not give -> why
    opaque: Dict[str, Unknown] = field(default_factory=dict)

    @property
    def file_stem(self) -> str:
        """A file name for this CONFIG: ``<topology name>-<spout name>``."""
        name = str((self.config.get("topology") or {}).get("name") or "topology")
        parts = [p for p in (name, self.spout_name) if p and "${" not in str(p)]
        stem = "-".join(str(p) for p in parts) or os.path.splitext(
            self.source.split(":")[0])[0]
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)


def convert_java(paths: Sequence[str], *, properties: Optional[Mapping[str, str]] = None,
                 env: Optional[Mapping[str, str]] = None) -> List[JavaConversion]:
    """Convert the topologies of Java sources (files or directories) into CONFIGs.

    Parameters
    ----------
    paths : sequence of str
        ``.java`` files and directories (walked for ``.java`` files); constants are
        followed across all of them.
    properties : Mapping, optional
        ``--filter`` values for the placeholders (``kafka.topic=orders``,
        ``args.0=orders``); a placeholder the file does not give takes the default the
        code gives, if any.
    env : Mapping, optional
        ``--env-filter``: the environment for ``${ENV-NAME}``; None leaves them.

    Returns
    -------
    list of JavaConversion
        One per KafkaSpout, in source order.

    Raises
    ------
    ConfigError
        No Java file, or no KafkaSpout in any of them.
    """
    tree = load_tree(paths)
    interp = Interpreter(tree)
    for method in topology_roots(tree):
        interp.run_root(method)
    if not interp.spouts:
        raise ConfigError(_no_spout(tree, interp, paths), value=", ".join(paths))
    syntax = [f"{f.path}:{line}: syntax error; the statement there is not read: set what it "
              f"sets by hand." for f in tree.files if not f.support for line in f.errors()]
    advice = _missing_advice(tree, interp)
    if advice is not None:
        syntax.append(f"not read: {advice}")
    out: List[JavaConversion] = []
    seen: Set[Any] = set()
    for spout in interp.spouts:
        conv = _convert_spout(interp, spout)
        key = (conv.source, repr(conv.config))
        if key in seen:
            continue      # the same helper reached from two roots
        seen.add(key)
        if conv.error is None:
            _substitute(conv, interp.unknowns, properties, env)
        conv.unmapped[:0] = syntax
        out.append(conv)
    return out


def _no_spout(tree: SourceTree, interp: Interpreter, paths: Sequence[str]) -> str:
    """Why no KafkaSpout was found; the advice to give a directory only when the code
    names classes of the project that no file read declares."""
    given = [f for f in tree.files if not f.support]
    text = (f"no KafkaSpout is built in {len(given)} Java file(s) under {', '.join(paths)}: "
            f"the converter looks for storm-kafka's org.apache.storm.kafka.KafkaSpout "
            f"(storm.kafka.KafkaSpout) and storm-kafka-client's "
            f"org.apache.storm.kafka.spout.KafkaSpout created with new")
    advice = _missing_advice(tree, interp)
    if advice:
        return f"{text}; {advice}"
    return f"{text}, and the code read builds none (a spout built elsewhere, by reflection " \
           f"or by a class of a library, is not seen): write the CONFIG by hand " \
           f"(docs/configuration.md)."


def _missing_advice(tree: SourceTree, interp: Interpreter) -> Optional[str]:
    """The classes of the project the code uses that no file read declares, and the
    advice to give their directory; None when there are none."""
    missing = sorted(interp.missing | {
        f"{cls.superclass} (the parent of {cls.name})"
        for f in tree.files if not f.support for cls in f.classes
        if cls.superclass is not None and tree.parent(cls) is None and
        cls.superclass.split(".")[0] not in f.imports and cls.superclass not in JAVA_LANG and
        not cls.superclass.endswith(("Exception", "Error", "Thread"))})
    if not missing:
        return None
    return (f"the code uses classes of the project that no file read declares "
            f"({', '.join(missing)}): give the directory that holds them with the "
            f"topology's main class (src/main/java).")


def topology_roots(tree: SourceTree) -> List[Method]:
    """The methods to run: those that build a topology (or call one that does) and that
    no other method of the tree calls, ``main`` first; the methods of support files (the
    directory of a file given alone) only when the code reaches them."""
    methods = [m for cls in tree.classes() for ms in cls.methods.values() for m in ms
               if m.body is not None and not cls.file.support]
    text = {id(m): text_of(m.body) for m in methods}
    relevant = {id(m) for m in methods if any(w in text[id(m)] for w in _TOPOLOGY_WORDS)}
    names = {m.name for m in methods if id(m) in relevant}
    changed = True
    while changed:
        changed = False
        for m in methods:
            if id(m) not in relevant and any(f"{n}(" in text[id(m)] for n in names):
                relevant.add(id(m))
                names.add(m.name)
                changed = True
    called = set()
    for m in methods:
        for n in names:
            if n != m.name and f"{n}(" in text[id(m)]:
                called.add(n)
    roots = [m for m in methods if id(m) in relevant and
             (m.name == "main" or m.name not in called) and m.name != "<init>"]
    return sorted(roots, key=lambda m: m.name != "main")


# --- one spout ------------------------------------------------------------------------------


class _JavaResolver(ComponentResolver):
    """The Flux resolver, naming components by class, variable and line; a component
    argument the source does not give (``${?N}``: a parameter, reflection, a field never
    set) becomes the placeholders of what it stands for, named later by CONFIG key."""

    def __init__(self, components: Mapping[str, Mapping[str, Any]], unmapped: List[str],
                 objects: Mapping[str, JObject], unknowns: Mapping[str, Unknown]) -> None:
        super().__init__(components, unmapped)
        self.objects = objects
        self.unknowns = unknowns

    def where_of(self, cid: str) -> str:
        obj = self.objects.get(cid)
        return obj.describe() if obj is not None else cid

    def show(self, value: Any) -> str:
        tokens = [m.group(0) for m in OPAQUE_RE.finditer(value)] \
            if isinstance(value, str) else []
        if tokens:
            return ", ".join(f"`{u.origin.text}` ({u.origin.where}, not known from the source)"
                             for u in (self.unknowns[t] for t in tokens if t in self.unknowns))
        return super().show(value)

    @staticmethod
    def opaque(args: Sequence[Any]) -> Optional[str]:
        """The one argument, when it is a value the source does not give."""
        if len(args) == 1 and isinstance(args[0], str) and OPAQUE_RE.fullmatch(args[0]):
            return args[0]
        return None

    def _wrapped(self, args: List[Any], wrapper: str, where: str) -> Any:
        token = self.opaque(args)
        if token is not None:        # Class.forName(name).newInstance(), a parameter
            return Resolved("scheme_single", token)
        return super()._wrapped(args, wrapper, where)

    def _user_scheme(self, inner: Resolved, where: str) -> Resolved:
        if isinstance(inner.data, str) and OPAQUE_RE.fullmatch(inner.data):
            return self._scheme(inner.data)
        return super()._user_scheme(inner, where)

    def _build_KafkaSpout(self, args: List[Any], props: Dict[str, Any], methods: List[Any],
                          factory: Any, where: str) -> Resolved:
        token = self.opaque(args)
        if token is None:
            return super()._build_KafkaSpout(args, props, methods, factory, where)
        return Resolved("kafka_spout", {"hosts": Resolved("hosts", {"zk": token}), "spout": {
            "topic": token, "zkRoot": token, "id": token}})

    def _build_client_KafkaSpout(self, args: List[Any], props: Dict[str, Any],
                                 methods: List[Any], factory: Any, where: str) -> Any:
        token = self.opaque(args)
        if token is None:
            return super()._build_client_KafkaSpout(args, props, methods, factory, where)
        return Resolved("client_spout", {
            "kafkaSpout": {"bootstrapServers": token, "topics": [token], "groupId": token},
            "spout": {"scheme": "record_translator"}})


def _components(interp: Interpreter, root: JObject, extra: Sequence[JObject] = ()
                ) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, JObject], Dict[int, str]]:
    """The Flux components of ``root`` and every object it refers to; a value that is no
    component nor plain value (``args`` itself, a declaration) is opaque at its object."""
    comps: Dict[str, Dict[str, Any]] = {}
    objects: Dict[str, JObject] = {}
    ids: Dict[int, str] = {}

    def ref(value: Any, owner: JObject) -> Any:
        if isinstance(value, JObject):
            return {"ref": visit(value)}
        if isinstance(value, list):
            return [ref(v, owner) for v in value]
        if isinstance(value, ClassRef):
            return value.name
        if isinstance(value, (SpoutDecl, BoltDecl, Submission)) or not isinstance(
                value, (str, int, float, bool, type(None))):
            return interp.opaque_at(owner.origin)
        return value

    def visit(obj: JObject) -> str:
        if id(obj) in ids:
            return ids[id(obj)]
        cid = obj.var or obj.simple
        while cid in comps:
            cid += "'"
        ids[id(obj)] = cid
        comps[cid] = {}
        objects[cid] = obj
        comps[cid] = {
            "id": cid, "className": obj.class_name,
            "constructorArgs": [ref(a, obj) for a in obj.args],
            "properties": [{"name": k, "value": ref(v, obj)} for k, v in obj.props.items()],
            "configMethods": [{"name": n, "args": [ref(a, obj) for a in args]}
                              for n, args, _ in obj.methods],
        }
        if obj.factory is not None:
            comps[cid]["factory"] = obj.factory
        return cid

    visit(root)
    for obj in extra:
        visit(obj)
    return comps, objects, ids


def _convert_spout(interp: Interpreter, spout: JObject) -> JavaConversion:
    decl, builder = _declaration(interp, spout)
    unmapped: List[str] = []
    config: Dict[str, Any] = {}
    bolts = [d.component for d in (builder.decls if builder is not None else [])
             if isinstance(d, BoltDecl) and isinstance(d.component, JObject)]
    comps, objects, ids = _components(interp, spout, bolts)
    resolver = _JavaResolver(comps, unmapped, objects, interp.unknowns)
    where = spout.describe()
    conv = JavaConversion(config, unmapped, source=spout.origin.where,
                          spout_name=str(decl.name) if decl is not None else None)
    try:
        built = resolver.component(ids[id(spout)], where)
        if not isinstance(built, Resolved) or built.kind not in ("kafka_spout", "client_spout"):
            raise ConfigError(f"{where}: not a KafkaSpout this converter can read.")
        tasks = None
        if decl is not None:
            tasks = decl.tasks if decl.tasks is not None else decl.parallelism
        spout_sections(built, where, tasks, config, unmapped)
    except ConfigError as exc:
        conv.error = f"{exc}"
        conv.config = {}
        return conv
    topology: Dict[str, Any] = config.setdefault("topology", {})
    _submission(interp, builder, topology, unmapped, where)
    if builder is not None and decl is not None:
        doc = _flux_doc(builder, comps, ids)
        for entry in doc["bolts"]:
            unmapped.extend(as_flux_shell_bolt(interp.tree, entry) or ())
        place_bolts(config, flux_bolts(doc, str(decl.name), unmapped, resolver.used))
    elif builder is None:
        unmapped.append(f"{where}: no TopologyBuilder.setSpout of this spout was found; the "
                        f"bolts are not mapped (write bolt or topology.bolts by hand).")
    servers = (config.get("spout") or {}).get("zkServers")
    if isinstance(servers, list) and len(servers) == 1 and interp.fillable(servers[0]):
        config["spout"]["zkServers"] = servers[0]   # ${args.1}: "zk1,zk2" fills the list
    found: Dict[str, List[Unknown]] = {}
    conv.config = _name_opaque(_no_objects(config, objects, interp), interp.unknowns, found)
    conv.evidence = {key: _evidence(us) for key, us in found.items()}
    conv.opaque = {f"${{{key}}}": us[0] for key, us in found.items()
                   if OPAQUE_RE.fullmatch(us[0].token)}
    conv.ported_schemes = resolver.ported_schemes
    return conv


def _evidence(unknowns: List[Unknown]) -> Evidence:
    """The strongest of a value's placeholders (a per-run one first) as trap evidence."""
    u = sorted(unknowns, key=lambda u: (not u.per_run, u.kind != UNRESOLVED))[0]
    return Evidence(u.kind, u.origin.where, u.origin.text)


def _declaration(interp: Interpreter, spout: JObject
                 ) -> Tuple[Optional[SpoutDecl], Optional[JObject]]:
    for builder in interp.builders:
        for d in builder.decls:
            if isinstance(d, SpoutDecl) and d.component is spout:
                return d, builder
    return None, None


def _submission(interp: Interpreter, builder: Optional[JObject], topology: Dict[str, Any],
                unmapped: List[str], where: str) -> None:
    """``topology.name`` and Storm config keys from the submission of ``builder``."""
    mine = [s for s in interp.submissions if s.topology is builder] or \
        (interp.submissions if len(interp.builders) <= 1 else [])
    mine.sort(key=lambda s: s.local)       # a cluster submission before a LocalCluster one
    if not mine:
        topology["name"] = "${topology.name}"
        unmapped.append(f"{where}: no StormSubmitter.submitTopology of this topology was "
                        f"found; topology.name written as ${{topology.name}}: give it with "
                        f"--filter (topology.name=...) or edit the CONFIG.")
        return
    sub = mine[0]
    topology["name"] = sub.name if not isinstance(sub.name, (JObject, list)) else \
        "${topology.name}"
    if isinstance(sub.conf, JObject):
        storm_config_into(dict(sub.conf.entries), topology, unmapped)


def _flux_doc(builder: JObject, comps: Mapping[str, Mapping[str, Any]],
              ids: Mapping[int, str]) -> Dict[str, Any]:
    """The builder's declarations as a Flux file's spouts, bolts and streams."""
    doc: Dict[str, Any] = {"components": list(comps.values()), "spouts": [], "bolts": [],
                           "streams": []}
    for d in builder.decls:
        component = d.component
        cls = component.class_name if isinstance(component, JObject) else str(component)
        entry: Dict[str, Any] = {"id": str(d.name), "className": cls}
        if d.parallelism is not None:
            entry["parallelism"] = d.parallelism
        if isinstance(d, SpoutDecl):
            doc["spouts"].append(entry)
            continue
        if isinstance(component, JObject) and id(component) in ids:
            comp = comps[ids[id(component)]]
            entry["configMethods"] = comp["configMethods"]
            entry["properties"] = comp["properties"]
        if d.config:
            entry["config"] = dict(d.config)
        doc["bolts"].append(entry)
        for inp in d.inputs:
            doc["streams"].append({"from": str(inp["from"]), "to": str(d.name),
                                   "grouping": inp["grouping"]})
    return doc


def _no_objects(config: Any, objects: Mapping[str, JObject], interp: Interpreter) -> Any:
    """A component left where the CONFIG wants a value (an object of the project's class
    set as a SpoutConfig field) becomes an opaque value at the object's line."""
    if isinstance(config, dict):
        return {k: _no_objects(v, objects, interp) for k, v in config.items()}
    if isinstance(config, list):
        return [_no_objects(v, objects, interp) for v in config]
    if isinstance(config, Resolved):
        obj = objects.get(config.cid)
        if obj is not None:
            return interp.opaque_at(obj.origin)
        return None
    return config


def _name_opaque(config: Any, unknowns: Mapping[str, Unknown],
                 evidence: Dict[str, List[Unknown]], path: str = "") -> Any:
    """Replace every value holding an opaque ``${?N}`` by ``${<its CONFIG key>}``, the
    opaque placeholder first in ``evidence[key]``; ``evidence`` gets every key built
    from placeholders."""
    if isinstance(config, dict):
        return {k: _name_opaque(v, unknowns, evidence, f"{path}.{k}" if path else str(k))
                for k, v in config.items()}
    if isinstance(config, list):
        return [_name_opaque(v, unknowns, evidence, f"{path}[{i}]")
                for i, v in enumerate(config)]
    if not isinstance(config, str):
        return config
    found = [unknowns[m.group(0)] for m in PLACEHOLDER_RE.finditer(config)
             if m.group(0) in unknowns]
    if found:
        evidence[path] = found
    opaque = [u for u in found if OPAQUE_RE.fullmatch(u.token)]
    if not opaque:
        return config
    evidence[path] = opaque[:1] + [u for u in found if u not in opaque]
    return f"${{{path}}}"


def _substitute(conv: JavaConversion, unknowns: Mapping[str, Unknown],
                properties: Optional[Mapping[str, str]],
                env: Optional[Mapping[str, str]]) -> None:
    """Fill the placeholders as Flux's ``--filter``/``--env-filter`` would, then list
    those left with where the code reads them."""
    if properties is not None or env is not None:
        fill: Dict[str, str] = {}
        for u in unknowns.values():
            if u.key is None or u.default is None or isinstance(u.default, JObject):
                continue
            if (u.kind == ENV and env is not None and u.key[4:] not in env) or \
                    (u.kind != ENV and properties is not None and u.key not in properties):
                fill[u.key] = str(u.default).lower() if isinstance(u.default, bool) \
                    else str(u.default)
        fill.update(properties or {})
        text = substitute(Conversion(conv.config).to_yaml(), fill, env)
        conv.config = parse_yaml(text, source=conv.source) or {}
    for where, token in find_placeholders(conv.config):
        if token in conv.opaque:
            u = conv.opaque[token]
            why = {RANDOM: "is random, new on every run",
                   TIME: "depends on the time of the run"}.get(u.kind, "could not be resolved")
            conv.unmapped.append(f"{where}: {u.origin.where} `{u.origin.text}` {why}; written "
                                 f"as {token}: give it with --filter ({token[2:-1]}=...) or "
                                 f"edit the CONFIG.")
            continue
        read = unknowns.get(token)
        if read is None or read.kind not in FILLABLE or read.key is None:
            continue
        default = f" (the code's default: {read.default!r})" if read.default is not None else ""
        how = (f"set {read.key[4:]} and give --env-filter" if read.kind == ENV else
               f"give it with --filter FILE ({read.key}=...)")
        conv.unmapped.append(f"{where}: {token} is read at run time by {read.origin.where} "
                             f"`{read.origin.text}`{default}; {how}.")
