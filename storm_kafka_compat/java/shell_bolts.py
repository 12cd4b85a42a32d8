"""Storm's ``ShellBolt`` in Java sources: a class of the tree that extends ``ShellBolt``
(storm-starter's ``SplitSentence``: ``super("python", "splitsentence.py")`` in its
constructor, ``new Fields("word")`` in ``declareOutputFields``) becomes the Flux
``FluxShellBolt`` it is equivalent to, so the Flux path maps it to a ``shell`` bolt."""

from __future__ import annotations

import ast
from typing import Any, Dict, Iterator, List, Optional

from storm_kafka_compat.java.source import JavaClass, SourceTree, text_of

__all__ = ["SHELL_BOLT_CLASSES", "FLUX_SHELL_BOLT", "as_flux_shell_bolt"]

FLUX_SHELL_BOLT = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt"
#: the class a multilang bolt extends, by the names a source may use
SHELL_BOLT_CLASSES = ("ShellBolt", "org.apache.storm.task.ShellBolt",
                      "backtype.storm.task.ShellBolt")


def _nodes(node: Any, kind: str) -> Iterator[Any]:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == kind:
            yield n
        stack.extend(reversed(n.named_children))


def _strings(node: Any) -> List[str]:
    """The string literals among a node's arguments, in order."""
    out: List[str] = []
    for lit in _nodes(node, "string_literal"):
        try:
            value = ast.literal_eval(text_of(lit))
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, str):
            out.append(value)
    return out


def _shell_root(tree: SourceTree, cls: JavaClass) -> Optional[JavaClass]:
    """The class of ``cls``'s lineage that extends ShellBolt, or None."""
    for c in tree.lineage(cls):
        if c.superclass in SHELL_BOLT_CLASSES:
            return c
    return None


def as_flux_shell_bolt(tree: SourceTree, entry: Dict[str, Any]) -> Optional[List[str]]:
    """Rewrite a Flux bolt entry whose class extends ShellBolt as a FluxShellBolt with its
    command and output fields; what could not be read, one line each (None: not a
    ShellBolt)."""
    cls = tree.of_object(str(entry.get("className", "")))
    root = _shell_root(tree, cls) if cls is not None else None
    if cls is None or root is None:
        return None
    notes: List[str] = []
    command: List[str] = []
    for method in root.methods.get("<init>", []):
        for call in _nodes(method.node, "explicit_constructor_invocation"):
            if text_of(call).startswith("super"):
                command = _strings(call)
    fields: List[str] = []
    for c in tree.lineage(cls):
        for method in c.methods.get("declareOutputFields", []):
            for new in _nodes(method.node, "object_creation_expression"):
                if "Fields" in text_of(new).split("(", 1)[0]:
                    fields = _strings(new)
                    break
            if fields:
                break
        if fields:
            break
    if not command:
        notes.append(f"{cls.qualified} extends ShellBolt but its super(...) command is not "
                     f"made of string literals: set 'shell' by hand.")
    if not fields:
        notes.append(f"{cls.qualified}: no new Fields(...) in declareOutputFields: set "
                     f"output_fields by hand.")
    entry["className"] = FLUX_SHELL_BOLT
    entry["constructorArgs"] = [command, fields]
    entry.pop("configMethods", None)
    entry.pop("properties", None)
    return notes
