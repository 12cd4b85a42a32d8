"""Java sources parsed with tree-sitter's Java grammar, and what the converter asks of them:
the classes of a source tree, their constant fields and methods, and class names as the
imports of a file resolve them.

The grammar (``tree-sitter-java``) covers Java 1.0 to 21 (records, text blocks, ``var``,
switch expressions) and recovers from syntax errors: a file that does not compile still
gives a tree, with ``ERROR`` nodes where the grammar gave up; the converter reads around
them and says where they are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import tree_sitter_java
from tree_sitter import Language, Node, Parser

from storm_kafka_compat.errors import ConfigError

_LANGUAGE = Language(tree_sitter_java.language())

#: type declarations whose bodies hold fields and methods
TYPE_DECLARATIONS = ("class_declaration", "interface_declaration", "enum_declaration",
                     "record_declaration")
#: the classes of ``java.lang`` a topology names without importing them
JAVA_LANG = ("String", "Integer", "Long", "Boolean", "Double", "Math", "System", "Object",
             "Short", "Byte", "Float", "Character", "Class", "Thread", "Runtime",
             "StringBuilder")


@dataclass(frozen=True)
class Origin:
    """Where an expression is: ``file:line`` and its source text."""

    path: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{os.path.basename(self.path)}:{self.line}"

    def __str__(self) -> str:
        return f"{self.where} `{self.text}`"


def text_of(node: Optional[Node]) -> str:
    """A node's source text, on one line (for messages); ``""`` for a missing node."""
    if node is None:
        return ""
    raw = (node.text or b"").decode("utf-8", "replace")
    return " ".join(raw.split())


@dataclass
class Method:
    """A method or constructor: its parameters' names and its body."""

    name: str
    params: List[str]
    body: Optional[Node]
    node: Node
    cls: "JavaClass"
    static: bool


@dataclass
class JavaClass:
    """A type declaration (nested ones are classes of their own, named ``Outer.Inner``)."""

    name: str                   # simple name
    qualified: str              # package + nesting, dots
    file: "SourceFile"
    node: Node
    fields: Dict[str, Tuple[Node, bool]] = field(default_factory=dict)  # name -> (init, final)
    methods: Dict[str, List[Method]] = field(default_factory=dict)
    outer: Optional["JavaClass"] = None
    #: the ``extends`` type as written (no type arguments), None without one
    superclass: Optional[str] = None
    #: an enum's constants and their arguments (None: no argument list)
    enum_constants: Dict[str, Optional[Node]] = field(default_factory=dict)


@dataclass
class SourceFile:
    """One parsed ``.java`` file and its imports."""

    path: str
    tree_root: Node
    package: str = ""
    #: read for the classes it declares (a parent class, constants), not run as a topology
    support: bool = False
    imports: Dict[str, str] = field(default_factory=dict)      # simple name -> qualified
    wildcards: List[str] = field(default_factory=list)         # packages, with a trailing dot
    static_imports: Dict[str, str] = field(default_factory=dict)  # member -> class qualified
    static_wildcards: List[str] = field(default_factory=list)  # class qualified names
    classes: List[JavaClass] = field(default_factory=list)

    def errors(self) -> List[int]:
        """Lines where the grammar recovered from a syntax error."""
        lines: List[int] = []
        stack = [self.tree_root]
        while stack:
            node = stack.pop()
            if node.type == "ERROR" or node.is_missing:
                lines.append(node.start_point[0] + 1)
            elif node.has_error:
                stack.extend(node.children)
        return sorted(set(lines))


def parse_java(text: bytes, path: str) -> SourceFile:
    """Parse one Java file (never raises on bad syntax: see :meth:`SourceFile.errors`)."""
    tree = Parser(_LANGUAGE).parse(text)
    src = SourceFile(path, tree.root_node)
    for node in tree.root_node.named_children:
        if node.type == "package_declaration":
            name = next((c for c in node.named_children
                         if c.type in ("scoped_identifier", "identifier")), None)
            src.package = text_of(name) if name is not None else ""
        elif node.type == "import_declaration":
            _read_import(src, node)
        elif node.type in TYPE_DECLARATIONS:
            _read_type(src, node, None)
    return src


def _read_import(src: SourceFile, node: Node) -> None:
    static = any(c.type == "static" for c in node.children)
    wildcard = any(c.type == "asterisk" for c in node.children)
    name_node = next((c for c in node.named_children
                      if c.type in ("scoped_identifier", "identifier")), None)
    if name_node is None:
        return
    name = text_of(name_node)
    if static and wildcard:
        src.static_wildcards.append(name)
    elif static:
        cls, _, member = name.rpartition(".")
        src.static_imports[member] = cls
    elif wildcard:
        src.wildcards.append(name + ".")
    else:
        src.imports[name.rpartition(".")[2]] = name


def _modifiers(node: Node) -> str:
    mods = next((c for c in node.children if c.type == "modifiers"), None)
    return text_of(mods) if mods is not None else ""


def _read_type(src: SourceFile, node: Node, outer: Optional[JavaClass]) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    name = text_of(name_node)
    prefix = outer.qualified if outer is not None else src.package
    cls = JavaClass(name, f"{prefix}.{name}" if prefix else name, src, node, outer=outer)
    parent = node.child_by_field_name("superclass")
    if parent is not None and parent.named_children:
        cls.superclass = text_of(parent.named_children[0]).split("<", 1)[0]
    src.classes.append(cls)
    body = node.child_by_field_name("body")
    _read_members(src, cls, body.named_children if body is not None else [],
                  node.type == "interface_declaration")


def _read_members(src: SourceFile, cls: JavaClass, members: Sequence[Node],
                  interface: bool) -> None:
    for member in members:
        if member.type in ("field_declaration", "constant_declaration"):
            final = interface or "final" in _modifiers(member).split()
            for decl in member.children_by_field_name("declarator"):
                value = decl.child_by_field_name("value")
                if value is not None:
                    cls.fields[text_of(decl.child_by_field_name("name"))] = (value, final)
        elif member.type in ("method_declaration", "constructor_declaration"):
            params = member.child_by_field_name("parameters")
            names = [text_of(p.child_by_field_name("name")) for p in
                     (params.named_children if params is not None else [])
                     if p.child_by_field_name("name") is not None]
            mname = "<init>" if member.type == "constructor_declaration" \
                else text_of(member.child_by_field_name("name"))
            method = Method(mname, names, member.child_by_field_name("body"), member, cls,
                            "static" in _modifiers(member).split())
            cls.methods.setdefault(mname, []).append(method)
        elif member.type in TYPE_DECLARATIONS:
            _read_type(src, member, cls)
        elif member.type == "enum_constant":
            cls.enum_constants[text_of(member.child_by_field_name("name"))] = \
                member.child_by_field_name("arguments")
        elif member.type == "enum_body_declarations":
            _read_members(src, cls, member.named_children, False)


@dataclass
class SourceTree:
    """Every Java file of a conversion, with the classes they declare."""

    files: List[SourceFile]

    def __post_init__(self) -> None:
        self.by_qualified: Dict[str, JavaClass] = {}
        self.by_simple: Dict[str, List[JavaClass]] = {}
        for f in self.files:
            for cls in f.classes:
                self.by_qualified[cls.qualified] = cls
                self.by_simple.setdefault(cls.name, []).append(cls)

    def classes(self) -> Iterator[JavaClass]:
        for f in self.files:
            yield from f.classes

    def parent(self, cls: JavaClass) -> Optional[JavaClass]:
        """The class ``cls`` extends, when it is in the tree."""
        if cls.superclass is None:
            return None
        found = self.find_class(cls.superclass, cls.file, cls.outer)
        return found if found is not cls else None

    def lineage(self, cls: JavaClass) -> List[JavaClass]:
        """``cls``, its parent, the parent's parent... as far as the tree holds them."""
        out = [cls]
        parent = self.parent(cls)
        while parent is not None and parent not in out:
            out.append(parent)
            parent = self.parent(parent)
        return out

    def of_object(self, class_name: str) -> Optional[JavaClass]:
        """The tree's class of an object's (qualified, ``$``-nested) class name."""
        return self.by_qualified.get(class_name.replace("$", "."))

    def find_class(self, name: str, src: SourceFile,
                   context: Optional[JavaClass] = None) -> Optional[JavaClass]:
        """The tree's class a name means in ``src`` (simple, dotted or qualified)."""
        if name in self.by_qualified:
            return self.by_qualified[name]
        head, _, rest = name.partition(".")
        # nested classes of the class in context, then of the file, then imports
        scope = context
        while scope is not None:
            if scope.name == head:
                return self.by_qualified.get(scope.qualified + ("." + rest if rest else ""))
            nested = self.by_qualified.get(f"{scope.qualified}.{name}")
            if nested is not None:
                return nested
            scope = scope.outer
        qualified = self.qualify(head, src)
        if qualified is not None:
            return self.by_qualified.get(qualified + ("." + rest if rest else ""))
        return None

    def qualify(self, simple: str, src: SourceFile) -> Optional[str]:
        """The qualified name of a simple class name in ``src``, when known: imported,
        declared in the file's package, or in a wildcard-imported package of the tree."""
        if simple in src.imports:
            return src.imports[simple]
        same = f"{src.package}.{simple}" if src.package else simple
        if same in self.by_qualified:
            return same
        for pkg in src.wildcards:
            if pkg + simple in self.by_qualified:
                return pkg + simple
        return None


#: topology sources in languages the converter does not read, by extension
UNREAD_LANGUAGES: Dict[str, str] = {".scala": "Scala", ".clj": "Clojure", ".cljc": "Clojure",
                                    ".kt": "Kotlin", ".groovy": "Groovy"}


def source_language(path: str) -> Optional[str]:
    """``Topology.scala`` -> ``"Scala"``: the language of a source file the converter does
    not read (None for any other file)."""
    return UNREAD_LANGUAGES.get(os.path.splitext(path)[1].lower())


def not_read(path: str, language: str) -> str:
    """The one line that says a source file is not read."""
    return (f"{path} is a {language} source, which config convert does not read (it reads "
            f"Java sources, Flux YAML and .properties): write its CONFIG by hand "
            f"(docs/configuration.md).")


def java_files(paths: Sequence[str]) -> List[str]:
    """The ``.java`` files of ``paths`` (files, or directories walked in name order).

    Raises
    ------
    ConfigError
        A path that does not exist, or no ``.java`` file at all.
    """
    out: List[str] = []
    others: Dict[str, int] = {}
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                out.extend(os.path.join(root, n) for n in sorted(names) if n.endswith(".java"))
                for n in names:
                    language = source_language(n)
                    if language is not None:
                        others[language] = others.get(language, 0) + 1
        elif os.path.isfile(path):
            out.append(path)
        else:
            raise ConfigError(f"{path} does not exist; give a .java file or a directory of "
                              f"Java sources.", value=path)
    if not out and others:
        held = ", ".join(f"{n} {lang}" for lang, n in sorted(others.items()))
        raise ConfigError(f"no .java file under {', '.join(paths)}, only sources in other "
                          f"languages ({held} file(s)), which config convert does not read: "
                          f"write the CONFIG by hand (docs/configuration.md).",
                          value=", ".join(paths))
    if not out:
        raise ConfigError(f"no .java file under {', '.join(paths)}; give the topology's "
                          f"source directory (src/main/java).", value=", ".join(paths))
    return out


def load_tree(paths: Sequence[str]) -> SourceTree:
    """Parse every ``.java`` file of ``paths`` into one :class:`SourceTree`; a file given
    alone brings the other ``.java`` files of its directory as support (their classes are
    known: a parent class, constants; their methods are not run as topologies)."""
    given = java_files(paths)
    seen = {os.path.abspath(p) for p in given}
    support: List[str] = []
    for path in paths:
        if os.path.isfile(path) and path.endswith(".java"):
            folder = os.path.dirname(os.path.abspath(path))
            for name in sorted(os.listdir(folder)):
                full = os.path.join(folder, name)
                if name.endswith(".java") and full not in seen and os.path.isfile(full):
                    seen.add(full)
                    support.append(full)
    files = [_parse_file(p) for p in given]
    for path in support:
        files.append(_parse_file(path))
        files[-1].support = True
    return SourceTree(files)


def _parse_file(path: str) -> SourceFile:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}; check the path.",
                          value=path) from None
    return parse_java(data, path)
