"""A small evaluator of topology code: it runs the statements of the methods that build a
topology, in order, over the values of :mod:`.values`, and records what a Storm topology
builds: every KafkaSpout, the ``TopologyBuilder`` declarations and the submissions.

It follows local variables, fields initialised in place (``static final`` constants of the
file or of any class of the source tree, static imports included), string concatenation
and arithmetic, and the methods of the tree it can call with known arguments (a helper
that builds the ``SpoutConfig``). Loops run their body once; both branches of an ``if``
whose condition is not a constant run, in order. What it cannot follow becomes an
:class:`~.values.Unknown` with the file, the line and the expression.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from tree_sitter import Node

from storm_kafka_compat.java.operations import (NO_RESULT, arithmetic, convert, java_format,
                                                nested_dollar, string_method, time_unit_call,
                                                topics_varargs, unescape)
from storm_kafka_compat.java.source import (JAVA_LANG, JavaClass, Method, Origin, SourceFile,
                                            SourceTree, text_of)
from storm_kafka_compat.java.values import (ARGS, CONFIG_SETTERS, CONSTANTS, ENV, KAFKA_SPOUTS,
                                            KNOWN_CLASSES, LOOKUP, LOOKUP_METHODS, MAP_CLASSES,
                                            OFFSET_TIMES, OPAQUE_RE, PER_RUN_CALLS, PER_RUN_CLASSES,
                                            RANDOM, TIME, UNRESOLVED, KAFKA_CONFIG_CLASSES,
                                            BoltDecl, ClassRef, JObject, MainArgs, SpoutDecl,
                                            Submission, Unknown, java_string, kafka_config_key,
                                            storm_config_key)

#: packages of the JDK, Storm and Kafka: never a class of the project that is missing
FOREIGN_PACKAGES = ("java.", "javax.", "org.apache.storm.", "storm.", "backtype.",
                    "org.apache.kafka.", "kafka.", "com.google.", "org.slf4j.")
#: JDK and Storm classes a topology may name without importing them (not the project's)
JDK_NAMES = ("TimeUnit", "OffsetRequest", "Optional", "Objects", "Thread", "Config")
#: how deep helper methods are followed
MAX_DEPTH = 12
#: how many elements a ``for (x : list)`` loop runs over
MAX_LOOP = 64
#: the groupings of a BoltDeclarer and the Flux grouping type each is
GROUPING_METHODS: Dict[str, str] = {
    "shuffleGrouping": "SHUFFLE", "localOrShuffleGrouping": "LOCAL_OR_SHUFFLE",
    "noneGrouping": "NONE", "fieldsGrouping": "FIELDS", "allGrouping": "ALL",
    "globalGrouping": "GLOBAL", "directGrouping": "DIRECT", "customGrouping": "CUSTOM",
    "partialKeyGrouping": "PARTIAL_KEY",
}


#: call_tree's default: the method runs on the caller's object
_SAME: Any = object()


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


@dataclass
class Frame:
    """One method being run: its file, class and local variables."""

    src: SourceFile
    cls: Optional[JavaClass]
    locals: Dict[str, Any] = field(default_factory=dict)
    depth: int = 0
    this: Optional[JObject] = None


class Interpreter:
    """Runs topology methods of a :class:`SourceTree` and keeps what they build."""

    def __init__(self, tree: SourceTree) -> None:
        self.tree = tree
        self.unknowns: Dict[str, Unknown] = {}
        self.spouts: List[JObject] = []
        self.builders: List[JObject] = []
        self.submissions: List[Submission] = []
        self._field_cache: Dict[Tuple[str, str], Any] = {}
        #: classes of the project the code uses that no file read declares
        self.missing: Set[str] = set()
        self._evaluating: List[Tuple[str, str]] = []

    # --- placeholders ---------------------------------------------------------------------

    def unknown(self, kind: str, node: Node, frame: Frame, *, key: Optional[str] = None,
                default: Any = None) -> str:
        """Register an :class:`Unknown` and return its token."""
        origin = self.origin(node, frame)
        if key is not None:
            token = f"${{{key}}}"
            known = self.unknowns.get(token)
            if known is None or (known.default is None and default is not None):
                self.unknowns[token] = Unknown(token, kind, origin, key, default)
            return token
        return self.opaque_at(origin, kind)

    def opaque_at(self, origin: Origin, kind: str = UNRESOLVED) -> str:
        """Register an opaque :class:`Unknown` of the expression at ``origin``."""
        token = f"${{?{len(self.unknowns)}}}"
        self.unknowns[token] = Unknown(token, kind, origin)
        return token

    def opaque_kind(self, *values: Any) -> Optional[str]:
        """The strongest kind of the opaque tokens in ``values`` (random > time > unresolved)."""
        kinds = set()
        for v in values:
            if isinstance(v, (JObject, ClassRef, MainArgs, SpoutDecl, BoltDecl)):
                kinds.add(UNRESOLVED)
            elif isinstance(v, str):
                kinds.update(self.unknowns[f"${{?{m}}}"].kind for m in OPAQUE_RE.findall(v))
            elif isinstance(v, list):
                kind = self.opaque_kind(*v)
                if kind:
                    kinds.add(kind)
        for kind in (RANDOM, TIME, UNRESOLVED):
            if kind in kinds:
                return kind
        return None

    def note_missing(self, qualified: str, frame: Frame) -> None:
        """Keep a class the code uses that is the project's own (its package, or an
        import under the same first two package names) and not among the files read."""
        package, _, simple = qualified.replace("$", ".").rpartition(".")
        if not package or package.startswith(FOREIGN_PACKAGES) or not frame.src.package or \
                simple in JDK_NAMES or any(simple in names for names in KNOWN_CLASSES.values()):
            return
        own = frame.src.package.split(".")[:2]
        if package == frame.src.package or package.split(".")[:2] == own:
            self.missing.add(qualified.replace("$", "."))

    def origin(self, node: Node, frame: Frame) -> Origin:
        return Origin(frame.src.path, node.start_point[0] + 1, text_of(node))

    # --- methods --------------------------------------------------------------------------

    def run_method(self, method: Method, args: Sequence[Any], depth: int = 0,
                   this: Optional[JObject] = None) -> Any:
        """Run a method with argument values; its return value (None without one)."""
        frame = Frame(method.cls.file, method.cls, depth=depth, this=this)
        for i, name in enumerate(method.params):
            frame.locals[name] = args[i] if i < len(args) else None
        if method.body is None:
            return None
        try:
            self.exec_block(method.body, frame)
        except _Return as ret:
            return ret.value
        return None

    def run_root(self, method: Method) -> None:
        """Run a method nobody calls: ``main``'s args are :class:`MainArgs`, other
        parameters are unknown."""
        frame = Frame(method.cls.file, method.cls)
        args: List[Any] = []
        params = method.node.child_by_field_name("parameters")
        for p in params.named_children if params is not None else []:
            name = p.child_by_field_name("name")
            if name is None:
                continue
            if method.name == "main" and "String" in text_of(p.child_by_field_name("type")
                                                             or p):
                args.append(MainArgs())
            else:
                args.append(self.unknown(UNRESOLVED, p, frame))
        this = None
        if not method.static and method.name != "<init>":   # an instance method: a new one
            this = JObject(method.cls.qualified, self.origin(method.node, frame))
            self.construct(method.cls, [], this, 1)
        self.run_method(method, args, this=this)

    # --- statements -----------------------------------------------------------------------

    def exec_block(self, node: Node, frame: Frame) -> None:
        for stmt in node.named_children:
            self.exec_stmt(stmt, frame)

    def exec_stmt(self, node: Node, frame: Frame) -> None:
        kind = node.type
        if node.has_error and kind in ("local_variable_declaration", "expression_statement",
                                       "return_statement", "ERROR"):
            return   # what the grammar recovered may join two statements: not guessed at
        if kind == "local_variable_declaration":
            for decl in node.children_by_field_name("declarator"):
                name = text_of(decl.child_by_field_name("name"))
                value_node = decl.child_by_field_name("value")
                value = self.eval(value_node, frame) if value_node is not None else None
                if isinstance(value, JObject) and value.var is None:
                    value.var = name
                frame.locals[name] = value
        elif kind == "expression_statement":
            for child in node.named_children:
                self.eval(child, frame)
        elif kind == "return_statement":
            expr = node.named_children[0] if node.named_children else None
            raise _Return(self.eval(expr, frame) if expr is not None else None)
        elif kind == "block":
            self.exec_block(node, frame)
        elif kind == "if_statement":
            cond = self.eval(node.child_by_field_name("condition"), frame)
            then, other = node.child_by_field_name("consequence"), \
                node.child_by_field_name("alternative")
            if cond is True or cond is False:
                chosen = then if cond else other
                if chosen is not None:
                    self.exec_stmt(chosen, frame)
                return
            for branch in (then, other):
                if branch is not None:
                    try:
                        self.exec_stmt(branch, frame)
                    except _Return:
                        pass   # a branch that returns: the other one runs too
        elif kind in ("try_statement", "try_with_resources_statement"):
            for part in node.named_children:
                if part.type == "block":
                    self.exec_block(part, frame)
                elif part.type == "finally_clause":
                    for b in part.named_children:
                        self.exec_stmt(b, frame)
                elif part.type == "resource_specification":
                    for res in part.named_children:
                        value = res.child_by_field_name("value")
                        resource = res.child_by_field_name("name")
                        if value is not None and resource is not None:
                            frame.locals[text_of(resource)] = self.eval(value, frame)
        elif kind == "enhanced_for_statement":
            items = self.eval(node.child_by_field_name("value"), frame)
            name = text_of(node.child_by_field_name("name"))
            loop_body = node.child_by_field_name("body")
            values = items[:MAX_LOOP] if isinstance(items, list) else [items] \
                if self.fillable(items) else [self.unknown(UNRESOLVED, node, frame)]
            for item in values:
                frame.locals[name] = item
                if loop_body is not None:
                    self.exec_stmt(loop_body, frame)
        elif kind in ("for_statement", "while_statement", "do_statement"):
            body = node.child_by_field_name("body")
            for init in node.children_by_field_name("init"):
                self.exec_stmt(init, frame) if init.type.endswith("declaration") \
                    else self.eval(init, frame)
            if body is not None:
                self.exec_stmt(body, frame)   # once: see the module docstring
        elif kind == "explicit_constructor_invocation":
            self.chained_constructor(node, frame)
        elif kind == "labeled_statement":
            for child in node.named_children[1:]:
                self.exec_stmt(child, frame)
        elif kind == "synchronized_statement":
            body = node.child_by_field_name("body") or node.named_children[-1]
            self.exec_stmt(body, frame)
        # other statements (throw, switch, assert, local classes) do not build a topology

    # --- expressions ----------------------------------------------------------------------

    def eval(self, node: Optional[Node], frame: Frame) -> Any:
        if node is None:
            return None
        method = getattr(self, "_eval_" + node.type, None)
        if method is None:
            return self.unknown(UNRESOLVED, node, frame)
        return method(node, frame)

    def _eval_parenthesized_expression(self, node: Node, frame: Frame) -> Any:
        return self.eval(node.named_children[0], frame)

    def _eval_string_literal(self, node: Node, frame: Frame) -> Any:
        parts: List[str] = []
        for child in node.named_children:
            raw = text_of(child) if child.type != "multiline_string_fragment" else \
                (child.text or b"").decode("utf-8", "replace")
            if child.type == "escape_sequence":
                parts.append(unescape(raw))
            elif child.type == "multiline_string_fragment":
                parts.append(raw)
            elif child.type == "string_interpolation":
                return self.unknown(UNRESOLVED, node, frame)
            else:
                parts.append((child.text or b"").decode("utf-8", "replace"))
        text = "".join(parts)
        if (node.text or b"").startswith(b'"""'):
            text = textwrap.dedent(text.split("\n", 1)[1] if "\n" in text else text)
        return text

    def _eval_character_literal(self, node: Node, frame: Frame) -> Any:
        return unescape(text_of(node)[1:-1])

    def _eval_decimal_integer_literal(self, node: Node, frame: Frame) -> Any:
        text = text_of(node).replace("_", "").rstrip("lL")
        if len(text) > 1 and text.startswith("0"):
            return int(text, 8)
        return int(text)

    def _eval_hex_integer_literal(self, node: Node, frame: Frame) -> Any:
        return int(text_of(node).replace("_", "").rstrip("lL"), 16)

    _eval_octal_integer_literal = _eval_decimal_integer_literal

    def _eval_binary_integer_literal(self, node: Node, frame: Frame) -> Any:
        return int(text_of(node).replace("_", "").rstrip("lL")[2:], 2)

    def _eval_decimal_floating_point_literal(self, node: Node, frame: Frame) -> Any:
        return float(text_of(node).replace("_", "").rstrip("fFdD"))

    def _eval_true(self, node: Node, frame: Frame) -> Any:
        return True

    def _eval_false(self, node: Node, frame: Frame) -> Any:
        return False

    def _eval_null_literal(self, node: Node, frame: Frame) -> Any:
        return None

    def _eval_this(self, node: Node, frame: Frame) -> Any:
        return frame.this

    def _eval_class_literal(self, node: Node, frame: Frame) -> Any:
        return ClassRef(self.qualify(text_of(node.named_children[0]), frame))

    def _eval_cast_expression(self, node: Node, frame: Frame) -> Any:
        value = self.eval(node.child_by_field_name("value"), frame)
        java_type = text_of(node.child_by_field_name("type"))
        if java_type in ("int", "long", "short", "Integer", "Long") and isinstance(value, float):
            return int(value)
        return value

    def _eval_array_initializer(self, node: Node, frame: Frame) -> Any:
        return [self.eval(c, frame) for c in node.named_children]

    def _eval_array_creation_expression(self, node: Node, frame: Frame) -> Any:
        value = node.child_by_field_name("value")
        if value is not None:
            return self.eval(value, frame)
        return self.unknown(UNRESOLVED, node, frame)

    def _eval_identifier(self, node: Node, frame: Frame) -> Any:
        name = text_of(node)
        if name in frame.locals:
            return frame.locals[name]
        return self.name_value(name, node, frame)

    def name_value(self, name: str, node: Node, frame: Frame) -> Any:
        """A simple name that is not a local: this object's field, a field of the class
        or an outer class, a static import, or a class."""
        if frame.this is not None and name in frame.this.props:
            return frame.this.props[name]
        scope = frame.cls
        while scope is not None:
            for declaring in self.tree.lineage(scope):
                if name in declaring.fields:
                    return self.field_value(declaring, name, node, frame)
            scope = scope.outer
        owner = frame.src.static_imports.get(name)
        candidates = [owner] if owner else list(frame.src.static_wildcards)
        for qualified in candidates:
            cls = self.tree.by_qualified.get(qualified)
            if cls is not None and name in cls.fields:
                return self.field_value(cls, name, node, frame)
        if name[:1].isupper() or name in JAVA_LANG:
            return ClassRef(self.qualify(name, frame))
        return self.unknown(UNRESOLVED, node, frame)

    def field_value(self, cls: JavaClass, name: str, node: Node, frame: Frame) -> Any:
        """A field initialised in place (constants are read once)."""
        init, final = cls.fields[name]
        key = (cls.qualified, name)
        if key in self._field_cache:
            return self._field_cache[key]
        if key in self._evaluating:
            return self.unknown(UNRESOLVED, node, frame)
        self._evaluating.append(key)
        try:
            value = self.eval(init, Frame(cls.file, cls, depth=frame.depth))
        finally:
            self._evaluating.pop()
        if final and not isinstance(value, JObject):
            self._field_cache[key] = value
        return value

    def _eval_field_access(self, node: Node, frame: Frame) -> Any:
        obj_node = node.child_by_field_name("object")
        name = text_of(node.child_by_field_name("field"))
        qualified = self.package_path(node, frame)
        if qualified is not None:
            return qualified
        obj = self.eval(obj_node, frame)
        if isinstance(obj, ClassRef):
            return self.static_field(obj, name, node, frame)
        if isinstance(obj, JObject):
            if name in obj.props:
                return obj.props[name]
            own = self.tree.of_object(obj.class_name)
            for cls in self.tree.lineage(own) if own is not None else []:
                if name in cls.fields:
                    return self.field_value(cls, name, node, frame)
            return self.unknown(UNRESOLVED, node, frame)
        if isinstance(obj, MainArgs) and name == "length":
            return self.unknown(UNRESOLVED, node, frame)
        if isinstance(obj, list) and name == "length":
            return len(obj)
        if obj is None and obj_node is not None and obj_node.type == "this":
            return self.name_value(name, node, frame)
        return self.unknown(UNRESOLVED, node, frame)

    def package_path(self, node: Node, frame: Frame) -> Optional[ClassRef]:
        """``kafka.api.OffsetRequest`` or ``org.apache.storm.kafka.ZkHosts``: a class
        named with its package (the head is no variable, field or class)."""
        parts = text_of(node).split(".")
        if not all(p.isidentifier() for p in parts) or not parts[0][:1].islower():
            return None
        head = parts[0]
        if head in frame.locals or (frame.this is not None and head in frame.this.props):
            return None
        scope = frame.cls
        while scope is not None:
            if head in scope.fields:
                return None
            scope = scope.outer
        if head in frame.src.static_imports:
            return None
        if not parts[-1][:1].isupper() or any(p[:1].isupper() for p in parts[:-1]):
            return None   # package.Class.FIELD: the field access of the class reference
        return ClassRef(".".join(parts))

    def static_field(self, ref: ClassRef, name: str, node: Node, frame: Frame) -> Any:
        cls = self.tree.find_class(ref.name, frame.src, frame.cls)
        if cls is not None:
            if name in cls.fields:
                return self.field_value(cls, name, node, frame)
            nested = self.tree.by_qualified.get(f"{cls.qualified}.{name}")
            if nested is not None:
                return ClassRef(nested.qualified)
            if cls.enum_constants.get(name) is not None:
                return self.enum_constant(cls, name, frame)
            return f"{cls.name}.{name}"          # an enum constant of the tree
        self.note_missing(ref.name, frame)
        simple = ref.name.rpartition(".")[2].replace("$", ".")
        if f"{simple}.{name}" in CONSTANTS:
            return CONSTANTS[f"{simple}.{name}"]
        if simple == "Config" and name.isupper():
            return storm_config_key(name)
        if simple in KAFKA_CONFIG_CLASSES and name.isupper():
            return kafka_config_key(name)
        if name[:1].isupper() and not name.isupper() and "_" not in name:
            return ClassRef(f"{ref.name}${name}")  # a nested class
        # an enum constant (FirstPollOffsetStrategy.EARLIEST)
        return f"{simple}.{name}"

    def enum_constant(self, cls: JavaClass, name: str, frame: Frame) -> Any:
        """``Keys.KAFKA_TOPIC("kafka.topic")``: the constant as an object its constructor
        ran on (so ``Keys.KAFKA_TOPIC.key()`` is ``"kafka.topic"``), built once."""
        key = (cls.qualified, name)
        if key not in self._field_cache:
            args_node = cls.enum_constants[name]
            init = Frame(cls.file, cls, depth=frame.depth)
            args = [self.eval(a, init) for a in (args_node.named_children
                                                  if args_node is not None else [])]
            node = args_node if args_node is not None else cls.node
            obj = JObject(cls.qualified, self.origin(node, init), args, var=name)
            self.construct(cls, args, obj, frame.depth + 1)
            self._field_cache[key] = obj
        return self._field_cache[key]

    def _eval_array_access(self, node: Node, frame: Frame) -> Any:
        array = self.eval(node.child_by_field_name("array"), frame)
        index = self.eval(node.child_by_field_name("index"), frame)
        if isinstance(array, MainArgs) and isinstance(index, int):
            return self.unknown(ARGS, node, frame, key=f"args.{index}")
        if isinstance(array, list) and isinstance(index, int) and 0 <= index < len(array):
            return array[index]
        return self.unknown(UNRESOLVED, node, frame)

    def _eval_assignment_expression(self, node: Node, frame: Frame) -> Any:
        left = node.child_by_field_name("left")
        op = text_of(node.child_by_field_name("operator"))
        value = self.eval(node.child_by_field_name("right"), frame)
        if op != "=":
            current = self.eval(left, frame)
            value = self.binary(op[:-1], current, value, node, frame)
        if left is None:
            return value
        if left.type == "identifier":
            name = text_of(left)
            if name in frame.locals or frame.this is None:
                frame.locals[name] = value
            else:
                frame.this.props[name] = value
            if isinstance(value, JObject) and value.var is None:
                value.var = name
        elif left.type == "field_access":
            target = self.eval(left.child_by_field_name("object"), frame)
            name = text_of(left.child_by_field_name("field"))
            if isinstance(target, JObject):
                target.props[name] = value
        return value

    def _eval_update_expression(self, node: Node, frame: Frame) -> Any:
        return self.unknown(UNRESOLVED, node, frame)

    def _eval_unary_expression(self, node: Node, frame: Frame) -> Any:
        op = text_of(node.child_by_field_name("operator"))
        value = self.eval(node.child_by_field_name("operand"), frame)
        if op == "-" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
        if op == "+" and isinstance(value, (int, float)):
            return value
        if op == "!" and isinstance(value, bool):
            return not value
        return self.unknown(self.opaque_kind(value) or UNRESOLVED, node, frame)

    def _eval_binary_expression(self, node: Node, frame: Frame) -> Any:
        op = text_of(node.child_by_field_name("operator"))
        left = self.eval(node.child_by_field_name("left"), frame)
        right = self.eval(node.child_by_field_name("right"), frame)
        return self.binary(op, left, right, node, frame)

    def binary(self, op: str, left: Any, right: Any, node: Node, frame: Frame) -> Any:
        kind = self.opaque_kind(left, right)
        if kind is not None:
            return self.unknown(kind, node, frame)
        if op == "+" and (isinstance(left, str) or isinstance(right, str)):
            return java_string(left) + java_string(right)
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool)
                      for v in (left, right))
        if numbers:
            result = arithmetic(op, left, right)
            if result is not None:
                return result
        if op in ("==", "!=") and not any(isinstance(v, str) and "${" in v
                                          for v in (left, right)):
            return (left == right) if op == "==" else (left != right)
        if op in ("&&", "||") and isinstance(left, bool) and isinstance(right, bool):
            return (left and right) if op == "&&" else (left or right)
        return self.unknown(UNRESOLVED, node, frame)

    def _eval_ternary_expression(self, node: Node, frame: Frame) -> Any:
        cond = self.eval(node.child_by_field_name("condition"), frame)
        yes = self.eval(node.child_by_field_name("consequence"), frame)
        no = self.eval(node.child_by_field_name("alternative"), frame)
        if cond is True or cond is False:
            return yes if cond else no
        # `args.length > 0 ? args[0] : "orders"`: the placeholder, with its default
        for value, other in ((yes, no), (no, yes)):
            if self.with_default(value, other):
                return value
        return self.unknown(self.opaque_kind(yes, no) or UNRESOLVED, node, frame)

    def fillable(self, value: Any) -> bool:
        """A value that is one placeholder a --filter fills (``${kafka.topic}``)."""
        known = self.unknowns.get(value) if isinstance(value, str) else None
        return known is not None and known.key is not None

    def with_default(self, value: Any, default: Any) -> bool:
        """Give the fillable placeholder ``value`` the code's ``default``; False when
        ``value`` is no such placeholder or ``default`` is no plain value."""
        if not self.fillable(value) or self.opaque_kind(default) is not None or \
                isinstance(default, JObject) or default is None:
            return False
        known = self.unknowns[value]
        self.unknowns[value] = Unknown(known.token, known.kind, known.origin, known.key, default)
        return True

    def _eval_object_creation_expression(self, node: Node, frame: Frame) -> Any:
        type_node = node.child_by_field_name("type")
        if type_node is None:
            return self.unknown(UNRESOLVED, node, frame)
        name = self.type_name(type_node)
        qualified = self.qualify(name, frame)
        args = self.arguments(node, frame)
        simple = qualified.rpartition(".")[2]
        if simple in PER_RUN_CLASSES:
            return self.unknown(PER_RUN_CLASSES[simple], node, frame)
        if simple in ("ArrayList", "LinkedList", "HashSet", "TreeSet") :
            return list(args[0]) if args and isinstance(args[0], list) else []
        if simple == "String" and len(args) == 1 and isinstance(args[0], str):
            return args[0]
        if qualified.endswith("KafkaSpoutConfig$Builder"):
            args = topics_varargs(args)
        obj = JObject(qualified, self.origin(node, frame), args)
        if qualified in KAFKA_SPOUTS:
            self.spouts.append(obj)
        elif simple == "TopologyBuilder":
            self.builders.append(obj)
        elif simple in ("Properties", "HashMap", "TreeMap", "LinkedHashMap", "Config") and \
                args and isinstance(args[0], JObject):
            obj.entries.update(args[0].entries)
        tree_cls = self.tree.find_class(name, frame.src, frame.cls)
        if tree_cls is not None:
            self.construct(tree_cls, args, obj, frame.depth + 1)
        return obj

    def construct(self, cls: JavaClass, args: List[Any], obj: JObject, depth: int) -> None:
        """Run the constructor of ``cls`` that takes ``args`` on ``obj``; without a
        ``super(...)``/``this(...)`` first, the parent's no-argument one first, as Java
        does."""
        if depth >= MAX_DEPTH:
            return
        init = next((m for m in cls.methods.get("<init>", []) if len(m.params) == len(args)),
                    None)
        chained = init is not None and init.body is not None and any(
            c.type == "explicit_constructor_invocation" for c in init.body.named_children[:1])
        parent = self.tree.parent(cls)
        if parent is not None and not chained and (init is not None or not args):
            self.construct(parent, [], obj, depth + 1)
        if init is not None:
            self.run_method(init, args, depth, this=obj)

    def chained_constructor(self, node: Node, frame: Frame) -> None:
        """``super(...)`` or ``this(...)`` in a constructor."""
        which = node.child_by_field_name("constructor")
        target = frame.cls if which is not None and which.type == "this" else (
            self.tree.parent(frame.cls) if frame.cls is not None else None)
        if target is not None and frame.this is not None:
            self.construct(target, self.arguments(node, frame), frame.this, frame.depth + 1)

    def _eval_method_invocation(self, node: Node, frame: Frame) -> Any:
        obj_node = node.child_by_field_name("object")
        name = text_of(node.child_by_field_name("name"))
        args = self.arguments(node, frame)
        if obj_node is None:
            return self.call_here(name, args, node, frame)
        if obj_node.type == "super":
            parent = self.tree.parent(frame.cls) if frame.cls is not None else None
            found = self.find_method(parent, name, args) if parent is not None else None
            if found is None:
                return self.unknown(UNRESOLVED, node, frame)
            return self.call_tree(found, name, args, node, frame)
        obj = self.eval(obj_node, frame)
        if isinstance(obj, ClassRef):
            return self.static_call(obj, name, args, node, frame)
        if isinstance(obj, JObject):
            own = self.tree.of_object(obj.class_name)
            found = self.find_method(own, name, args) if own is not None else None
            if found is not None:      # a method of the project's class, on that object
                return self.call_tree(found, name, args, node, frame, this=obj)
            if own is not None and own.enum_constants and name in ("name", "toString") \
                    and not args:
                return obj.var
            if own is None:
                self.note_missing(obj.class_name, frame)
            return self.object_call(obj, name, args, node, frame)
        if isinstance(obj, BoltDecl):
            return self.bolt_call(obj, name, args, node, frame)
        if isinstance(obj, SpoutDecl):
            if name == "setNumTasks" and args:
                obj.tasks = args[0]
            return obj
        plain = self.plain_call(obj, name, args)
        if plain is not NO_RESULT:
            return plain
        if isinstance(obj, str) and obj.startswith("TimeUnit."):
            converted = time_unit_call(obj, name, args)
            if converted is not NO_RESULT:
                return converted
        if isinstance(obj, str) and self.opaque_kind(obj) is None:
            result = string_method(obj, name, args)
            if result is not NO_RESULT:
                return result
        if name in LOOKUP_METHODS and args and isinstance(args[0], str) and "${" not in args[0]:
            default = args[1] if len(args) > 1 and name in ("getProperty", "getOrDefault") \
                else None
            return self.unknown(LOOKUP, node, frame, key=args[0], default=default)
        if isinstance(obj, str) and name in ("trim", "toString", "intern") and not args:
            return obj
        kind = self.opaque_kind(obj)
        return self.unknown(kind if kind in (RANDOM, TIME) else UNRESOLVED, node, frame)

    def plain_call(self, obj: Any, name: str, args: List[Any]) -> Any:
        """Calls on a list or a placeholder: ``list.add(x)``; ``${args.1}.split(",")``
        (the placeholder stands for the list: a comma-separated value fills it);
        ``Optional.ofNullable(v).orElse(d)`` (``d``: the code's default for ``v``)."""
        if isinstance(obj, list) and name == "add" and len(args) == 1:
            obj.append(args[0])
            return True
        if isinstance(obj, list) and name == "addAll" and len(args) == 1 and \
                isinstance(args[0], list):
            obj.extend(args[0])
            return True
        if name == "split" and self.fillable(obj):
            return obj
        if name == "orElse" and len(args) == 1 and not isinstance(obj, JObject):
            if obj is None:
                return args[0]
            self.with_default(obj, args[0])
            return obj
        return NO_RESULT

    def _eval_method_reference(self, node: Node, frame: Frame) -> Any:
        return self.unknown(UNRESOLVED, node, frame)

    _eval_lambda_expression = _eval_method_reference

    # --- calls ----------------------------------------------------------------------------

    def arguments(self, node: Node, frame: Frame) -> List[Any]:
        args = node.child_by_field_name("arguments")
        return [self.eval(a, frame) for a in (args.named_children if args is not None else [])]

    def call_here(self, name: str, args: List[Any], node: Node, frame: Frame) -> Any:
        """A call without a receiver: a method of this class (or an outer one), or a
        statically imported one."""
        own = self.tree.of_object(frame.this.class_name) if frame.this is not None else None
        found = self.find_method(own, name, args) if own is not None else None  # overrides
        scope = frame.cls
        while found is None and scope is not None:
            found = self.find_method(scope, name, args)
            scope = scope.outer
        if found is not None:
            return self.call_tree(found, name, args, node, frame)
        owner = frame.src.static_imports.get(name)
        for qualified in [owner] if owner else frame.src.static_wildcards:
            cls = self.tree.by_qualified.get(qualified)
            if cls is not None and name in cls.methods:
                return self.call_tree(cls, name, args, node, frame)
        return self.unknown(UNRESOLVED, node, frame)

    def find_method(self, cls: JavaClass, name: str, args: List[Any]) -> Optional[JavaClass]:
        """The class of ``cls``'s lineage (itself first) that declares ``name`` with as
        many parameters as ``args``."""
        for c in self.tree.lineage(cls):
            if any(len(m.params) == len(args) for m in c.methods.get(name, [])):
                return c
        return None

    def call_tree(self, cls: JavaClass, name: str, args: List[Any], node: Node,
                  frame: Frame, this: Any = _SAME) -> Any:
        """Run a method of the source tree with these arguments (on ``this``; by default
        the caller's object)."""
        candidates = [m for m in cls.methods[name] if len(m.params) == len(args)]
        if not candidates or frame.depth >= MAX_DEPTH:
            return self.unknown(UNRESOLVED, node, frame)
        return self.run_method(candidates[0], args, frame.depth + 1,
                               this=frame.this if this is _SAME else this)

    def static_call(self, ref: ClassRef, name: str, args: List[Any], node: Node,
                    frame: Frame) -> Any:
        tree_cls = self.tree.find_class(ref.name, frame.src, frame.cls)
        found = self.find_method(tree_cls, name, args) if tree_cls is not None else None
        if found is not None:
            return self.call_tree(found, name, args, node, frame, this=None)
        if tree_cls is None:
            self.note_missing(ref.name, frame)
        simple = ref.name.rpartition(".")[2].replace("$", ".")
        call = f"{simple}.{name}"
        short = f"{simple.rpartition('.')[2]}.{name}"
        if call in PER_RUN_CALLS or short in PER_RUN_CALLS:
            return self.unknown(PER_RUN_CALLS.get(call) or PER_RUN_CALLS[short], node, frame)
        if short in OFFSET_TIMES:
            return OFFSET_TIMES[short]
        if simple == "Optional" and name in ("of", "ofNullable") and len(args) == 1:
            return args[0]          # .orElse(d) gives it its default: plain_call
        opaque = self.opaque_kind(*args)
        if simple == "System" and name == "getenv" and len(args) == 1 and isinstance(args[0], str):
            return self.unknown(ENV, node, frame, key=f"ENV-{args[0]}")
        if simple == "System" and name == "getProperty" and args and isinstance(args[0], str):
            return self.unknown(LOOKUP, node, frame, key=args[0],
                                default=args[1] if len(args) > 1 else None)
        if simple in ("Integer", "Long", "Short") and name in ("parseInt", "parseLong",
                                                                "valueOf", "decode") and args:
            return convert(args[0], int)
        if simple in ("Double", "Float") and name in ("parseDouble", "parseFloat", "valueOf") \
                and args:
            return convert(args[0], float)
        if simple == "Boolean" and name in ("parseBoolean", "valueOf") and args:
            return convert(args[0], lambda s: s.strip().lower() == "true")
        if simple in ("String", "Integer", "Long", "Objects") and name in ("valueOf", "toString") \
                and len(args) == 1 and opaque is None:
            return java_string(args[0])
        if name in ("asList", "of", "singletonList", "newArrayList", "copyOf") and opaque is None:
            if len(args) == 1 and isinstance(args[0], list) and name != "singletonList":
                return list(args[0])
            return list(args)
        if simple == "String" and name == "join" and len(args) >= 2 and opaque is None:
            items = args[1] if len(args) == 2 and isinstance(args[1], list) else args[1:]
            return str(args[0]).join(java_string(v) for v in items)
        if simple == "String" and name == "format" and args and opaque is None:
            formatted = java_format(args[0], args[1:])
            if formatted is not NO_RESULT:
                return formatted
        if simple in ("StormSubmitter",) and name.startswith("submitTopology") and len(args) >= 3:
            self.submissions.append(Submission(args[0], args[1], args[2],
                                               self.origin(node, frame), local=False))
            return None
        if name in ("builder", "fromString", "compile", "seconds", "milliSeconds",
                    "microSeconds") and not ref.name.startswith("java.lang."):
            if name == "builder":
                args = topics_varargs(args)
            return JObject(ref.name, self.origin(node, frame), args, factory=name)
        return self.unknown(opaque if opaque in (RANDOM, TIME) else UNRESOLVED, node, frame)

    def object_call(self, obj: JObject, name: str, args: List[Any], node: Node,
                    frame: Frame) -> Any:
        simple = obj.simple
        origin = self.origin(node, frame)
        if simple == "TopologyBuilder":
            return self.builder_call(obj, name, args, node, frame)
        if simple == "LocalCluster" and name.startswith("submitTopology") and len(args) >= 3:
            self.submissions.append(Submission(args[0], args[1], args[2], origin, local=True))
            return None
        if simple in MAP_CLASSES or simple.endswith("Map"):
            if name in ("put", "setProperty") and len(args) == 2:
                if isinstance(args[0], str):
                    obj.entries[args[0]] = args[1]
                obj.methods.append((name, args, origin))
                return None
            if name == "putAll" and len(args) == 1 and isinstance(args[0], JObject):
                obj.entries.update(args[0].entries)
                obj.methods.append((name, args, origin))
                return None
            if name in CONFIG_SETTERS and len(args) == 1:
                obj.entries[CONFIG_SETTERS[name]] = args[0]
                return None
            if name in LOOKUP_METHODS and args and isinstance(args[0], str):
                if args[0] in obj.entries:
                    return obj.entries[args[0]]
                default = args[1] if len(args) > 1 else None
                return self.unknown(LOOKUP, node, frame, key=args[0], default=default)
            if name in ("load", "loadFromXML"):
                return None
        if name == "build" and not args:
            if obj.class_name.endswith("$Builder"):
                return JObject(obj.class_name[:-len("$Builder")], origin, [obj])
            return obj
        if name in ("toString",) and not args:
            return self.unknown(UNRESOLVED, node, frame)
        obj.methods.append((name, args, origin))
        return obj   # setters of builders and fluent setters return the object

    def builder_call(self, obj: JObject, name: str, args: List[Any], node: Node,
                     frame: Frame) -> Any:
        origin = self.origin(node, frame)
        if name == "setSpout" and len(args) >= 2:
            decl: Any = SpoutDecl(args[0], args[1], args[2] if len(args) > 2 else None, origin)
        elif name == "setBolt" and len(args) >= 2:
            decl = BoltDecl(args[0], args[1], args[2] if len(args) > 2 else None, origin)
        elif name == "createTopology":
            return obj
        else:
            return self.unknown(UNRESOLVED, node, frame)
        obj.decls.append(decl)
        return decl

    def bolt_call(self, decl: BoltDecl, name: str, args: List[Any], node: Node,
                  frame: Frame) -> Any:
        if name in GROUPING_METHODS and args:
            grouping: Dict[str, Any] = {"type": GROUPING_METHODS[name]}
            rest = list(args[1:])
            if rest and isinstance(rest[0], str):
                grouping["streamId"] = rest.pop(0)
            if rest and isinstance(rest[0], JObject) and rest[0].simple == "Fields":
                fields = rest[0].args
                grouping["args"] = list(fields[0]) if len(fields) == 1 and \
                    isinstance(fields[0], list) else list(fields)
            elif rest and isinstance(rest[0], JObject):
                grouping["customClass"] = {"className": rest[0].class_name}
            decl.inputs.append({"from": args[0], "to": decl.name, "grouping": grouping,
                                "origin": self.origin(node, frame)})
        elif name == "setNumTasks" and args:
            decl.tasks = args[0]
        elif name == "addConfiguration" and len(args) >= 2:
            decl.config[args[0]] = args[1]
        return decl

    # --- names ----------------------------------------------------------------------------

    def type_name(self, node: Node) -> str:
        """The class a type node names, nested classes joined with dots, no generics."""
        if node.type == "generic_type":
            node = node.named_children[0]
        if node.type == "scoped_type_identifier":
            return ".".join(text_of(c) for c in node.named_children
                            if c.type in ("type_identifier", "scoped_type_identifier",
                                          "identifier"))
        return text_of(node).split("<", 1)[0]

    def qualify(self, name: str, frame: Frame) -> str:
        """A class name as the file's imports resolve it: nested classes with ``$``
        (Flux's spelling), a class of the tree by its qualified name."""
        parts = name.split(".")
        if not parts[0][:1].isupper():
            return nested_dollar(name)      # already qualified
        head, nested = parts[0], parts[1:]
        tree_cls = self.tree.find_class(name, frame.src, frame.cls)
        if tree_cls is not None:
            return tree_cls.qualified
        qualified = frame.src.imports.get(head)
        if qualified is None:
            for pkg in frame.src.wildcards:
                if head in KNOWN_CLASSES.get(pkg, ()):
                    qualified = pkg + head
                    break
        if qualified is None:
            # not imported: java.lang, else (most likely) a class of the file's package
            qualified = f"java.lang.{head}" if head in JAVA_LANG else (
                f"{frame.src.package}.{head}" if frame.src.package else head)
        return nested_dollar(qualified) + "".join("$" + n for n in nested)
