"""Java's own operations on the values the evaluator (:mod:`.interpret`) holds: string
literals' escapes, arithmetic and comparisons, ``Integer.parseInt``, ``String`` methods,
``String.format``, ``TimeUnit`` conversions, nested class names (pure). An operation
that does not apply answers :data:`NO_RESULT`."""

from __future__ import annotations

import codecs
import re
from typing import Any, Callable, List

from storm_kafka_compat.java.values import TIME_UNITS_MS, java_string

#: what an operation answers when it does not apply (None is a Java value)
NO_RESULT: Any = object()
#: a Java escape sequence in a string literal
ESCAPE_RE = re.compile(r"\\(u+[0-9a-fA-F]{4}|[0-7]{1,3}|.)", re.S)



def nested_dollar(name: str) -> str:
    """``a.b.Outer.Inner`` -> ``a.b.Outer$Inner`` (package parts are lower case)."""
    parts = name.split(".")
    first_class = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts) - 1)
    return ".".join(parts[:first_class + 1]) + "".join("$" + p for p in parts[first_class + 1:])


def time_unit_call(unit: str, name: str, args: List[Any]) -> Any:
    """``TimeUnit.SECONDS.toMillis(10)`` -> 10000."""
    source = unit.partition(".")[2]
    target = name[2:].upper()
    target = {"MILLIS": "MILLISECONDS", "NANOS": "NANOSECONDS",
              "MICROS": "MICROSECONDS"}.get(target, target)
    if name.startswith("to") and len(args) == 1 and isinstance(args[0], (int, float)) and \
            source in TIME_UNITS_MS and target in TIME_UNITS_MS:
        return int(args[0] * TIME_UNITS_MS[source] / TIME_UNITS_MS[target])
    return NO_RESULT


def topics_varargs(args: List[Any]) -> List[Any]:
    """``builder(servers, "a", "b")``: the ``String... topics`` form, as a list of topics."""
    if len(args) > 2 and all(isinstance(a, str) for a in args):
        return [args[0], list(args[1:])]
    return args


def unescape(text: str) -> str:
    def one(m: "re.Match[str]") -> str:
        body = m.group(1)
        if body.startswith("u"):
            return chr(int(body.lstrip("u"), 16))
        if body[0] in "01234567":
            return chr(int(body, 8))
        return codecs.decode("\\" + body, "unicode_escape") if body in "btnfr" else body
    return ESCAPE_RE.sub(one, text)


def arithmetic(op: str, a: Any, b: Any) -> Any:
    both_int = isinstance(a, int) and isinstance(b, int)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/" and b != 0:
        return int(a / b) if both_int else a / b
    if op == "%" and b != 0 and both_int:
        return int(a - b * int(a / b))
    if both_int and op in ("<<", ">>", "&", "|", "^"):
        return {"<<": a << b, ">>": a >> b, "&": a & b, "|": a | b, "^": a ^ b}[op]
    if op in ("<", ">", "<=", ">="):
        return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
    if op in ("==", "!="):
        return (a == b) if op == "==" else (a != b)
    return None


def convert(value: Any, to: Callable[[str], Any]) -> Any:
    """``Integer.parseInt(x)``: a placeholder stays (the filter's value is typed later)."""
    if isinstance(value, str) and "${" in value:
        return value
    try:
        return to(value) if isinstance(value, str) else (
            to(str(value)) if to is not int else int(value))
    except (TypeError, ValueError):
        return value


def string_method(text: str, name: str, args: List[Any]) -> Any:
    if "${" in text and name not in ("trim", "toString", "intern"):
        return NO_RESULT
    if name in ("trim", "strip"):
        return text.strip()
    if name in ("toString", "intern"):
        return text
    if name == "toLowerCase":
        return text.lower()
    if name == "toUpperCase":
        return text.upper()
    if name == "concat" and len(args) == 1 and isinstance(args[0], str):
        return text + args[0]
    if name == "replace" and len(args) == 2 and all(isinstance(a, str) for a in args):
        return text.replace(args[0], args[1])
    if name == "split" and len(args) == 1 and isinstance(args[0], str):
        return [p for p in re.split(args[0], text)]
    if name == "equals" and len(args) == 1:
        return text == args[0]
    if name == "isEmpty" and not args:
        return text == ""
    return NO_RESULT


def java_format(fmt: Any, args: List[Any]) -> Any:
    if not isinstance(fmt, str):
        return NO_RESULT
    values = iter(args)
    try:
        return re.sub(r"%[sd]", lambda m: java_string(next(values)), fmt)
    except StopIteration:
        return fmt
