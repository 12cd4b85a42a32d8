"""The storm-kafka offset document: json-simple bytes out, Storm's read rules in (pure).

Writing
    storm-kafka serialises an insertion-ordered map with json-simple 1.1
    ``JSONValue.toJSONString`` and stores the UTF-8 bytes. :func:`json_simple_dumps`
    reproduces that output byte for byte (compact, keys in insertion order,
    json-simple's escaping, which includes ``/`` as ``\\/``), and
    :func:`encode_document` builds the document with storm-kafka's key order::

        {"topology":{"id":..,"name":..},"offset":..,"partition":..,"broker":{"host":..,"port":..},"topic":..}

    ``offset`` is always the next offset to process (the lowest offset not yet
    acked), never the last one processed.

Reading
    :func:`parse_document` applies the rules of storm-kafka 1.0.3+ (strict
    ``parseWithException``): the bytes are decoded as UTF-8 (malformed sequences
    become U+FFFD, as Java does), parsed with json-simple's grammar (which is
    lenient about commas and colons but rejects ``NaN``, single quotes and
    trailing data), and Storm resumes from the document only when ``topology.id``
    is a string and ``offset`` is a JSON integer within Java's ``long`` range.
    Everything else is "no state" in Storm; :class:`StoredDocument` says why in
    ``problem``. Whether the offset is > 0 is the start-up decision's business,
    not a parse problem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

#: Java ``Long.MIN_VALUE`` / ``Long.MAX_VALUE``
JAVA_LONG_MIN = -(2**63)
JAVA_LONG_MAX = 2**63 - 1
_JAVA_INT_MAX = 2**31 - 1

# --- writing: json-simple 1.1 JSONValue.toJSONString ---------------------------

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _needs_unicode_escape(code: int) -> bool:
    # json-simple escapes C0 controls, DEL + C1 controls and the U+2000 block
    return code <= 0x1F or 0x7F <= code <= 0x9F or 0x2000 <= code <= 0x20FF


def _escape(text: str) -> str:
    out: List[str] = []
    for ch in text:
        short = _SHORT_ESCAPES.get(ch)
        if short is not None:
            out.append(short)
            continue
        code = ord(ch)
        if _needs_unicode_escape(code):
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    return "".join(out)


def json_simple_dumps(value: Any) -> str:
    """Serialise like json-simple 1.1 ``JSONValue.toJSONString``.

    Supports ``str``, ``int`` (decimal), ``bool``, ``None``, ``dict`` with
    ``str`` keys (insertion order kept) and ``list``/``tuple``. No whitespace.
    Strings escape ``"`` ``\\`` ``/`` (as ``\\/``), ``\\b \\f \\n \\r \\t`` and
    U+0000-U+001F, U+007F-U+009F, U+2000-U+20FF as ``\\uXXXX`` (upper-case hex);
    every other character is written raw.

    Raises
    ------
    TypeError
        For any other type (floats included: Java's ``Double.toString`` is not
        reproduced, and storm-kafka documents hold no floats).
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        return f'"{_escape(value)}"'
    if isinstance(value, Mapping):
        parts = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"json_simple_dumps: object keys must be str, got {key!r}")
            parts.append(f'"{_escape(key)}":{json_simple_dumps(item)}')
        return "{" + ",".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(json_simple_dumps(item) for item in value) + "]"
    raise TypeError(f"json_simple_dumps: unsupported type {type(value).__name__} ({value!r}); "
                    f"use str, int, bool, None, dict or list")


def _require_str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {value!r}")
    return value


def _require_int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int (not bool/float/str), got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} {value} is outside [{low}, {high}]")
    return value


def encode_document(*, topology_id: str, topology_name: str, offset: int, partition: int,
                    broker_host: str, broker_port: int, topic: str) -> bytes:
    """Build the bytes storm-kafka's ``PartitionManager.commit()`` writes.

    Parameters
    ----------
    topology_id, topology_name : str
        ``topology.id`` and ``topology.name``.
    offset : int
        The next offset to process (lowest un-acked), a Java ``long``.
    partition : int
        The partition number.
    broker_host : str
        Host of the leader the partition was fetched from (informational).
    broker_port : int
        Its port.
    topic : str
        The partition's real topic.

    Returns
    -------
    bytes
        Compact UTF-8 JSON, keys in storm-kafka's order.

    Raises
    ------
    TypeError
        When a number is not an ``int`` (``bool`` included) or a text is not a ``str``.
    ValueError
        When a number is outside its Java range.
    """
    doc = {
        "topology": {"id": _require_str("topology_id", topology_id),
                     "name": _require_str("topology_name", topology_name)},
        "offset": _require_int("offset", offset, JAVA_LONG_MIN, JAVA_LONG_MAX),
        "partition": _require_int("partition", partition, 0, _JAVA_INT_MAX),
        "broker": {"host": _require_str("broker_host", broker_host),
                   "port": _require_int("broker_port", broker_port, 0, 65535)},
        "topic": _require_str("topic", topic),
    }
    # Java's String.getBytes("UTF-8") writes '?' for an unpaired surrogate
    return json_simple_dumps(doc).encode("utf-8", errors="replace")


# --- reading: json-simple 1.1 JSONParser grammar ---------------------------------

class _ParseError(Exception):
    pass


class _LongOverflow:
    """Remembers the first integer literal that Java's ``Long.valueOf`` rejects."""

    def __init__(self) -> None:
        self.literal: Optional[str] = None


_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WS = " \t\r\n"
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t"}
_HEX = set("0123456789abcdefABCDEF")
_EOF = ("eof", None)
#: the start of every reason for a document that ends too early (a cut write, a
#: hand edit saved half-way)
_TRUNCATED = "truncated: the document ends"


class _Lexer:
    """Tokens of json-simple's JFlex grammar: values, ``{ } [ ] , :``, EOF."""

    def __init__(self, text: str, overflow: _LongOverflow) -> None:
        self.text = text
        self.pos = 0
        self.overflow = overflow

    def next(self) -> Tuple[str, Any]:
        text, n = self.text, len(self.text)
        while self.pos < n and text[self.pos] in _WS:
            self.pos += 1
        if self.pos >= n:
            return _EOF
        ch = text[self.pos]
        if ch in "{}[],:":
            self.pos += 1
            return (ch, None)
        if ch == '"':
            return ("value", self._string())
        if ch == "-" or ch.isascii() and ch.isdigit():
            match = _NUMBER.match(text, self.pos)
            if match is None:
                raise _ParseError(f"unexpected character {ch!r} at {self.pos}")
            self.pos = match.end()
            literal = match.group(0)
            if match.group(1) or match.group(2):
                return ("value", float(literal))
            number = int(literal)
            if not JAVA_LONG_MIN <= number <= JAVA_LONG_MAX and self.overflow.literal is None:
                self.overflow.literal = literal
            return ("value", number)
        for word, value in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, self.pos):
                self.pos += len(word)
                return ("value", value)
        raise _ParseError(f"unexpected character {ch!r} at {self.pos}")

    def _string(self) -> str:
        text, n = self.text, len(self.text)
        self.pos += 1
        out: List[str] = []
        while True:
            if self.pos >= n:
                raise _ParseError(_TRUNCATED + " inside a string")
            ch = text[self.pos]
            if ch == '"':
                self.pos += 1
                return "".join(out)
            if ch != "\\":
                out.append(ch)
                self.pos += 1
                continue
            esc = text[self.pos + 1:self.pos + 2]
            if esc in _SIMPLE_ESCAPES:
                out.append(_SIMPLE_ESCAPES[esc])
                self.pos += 2
            elif (esc == "u" and len(text) >= self.pos + 6
                  and set(text[self.pos + 2:self.pos + 6]) <= _HEX):
                out.append(chr(int(text[self.pos + 2:self.pos + 6], 16)))
                self.pos += 6
            else:
                raise _ParseError(f"bad escape at {self.pos}")


def _parse_json_simple(text: str, overflow: _LongOverflow) -> Any:
    """Parse like json-simple's ``JSONParser.parse`` (1.1).

    Faithful quirks: commas are optional separators inside objects and arrays
    (``[1 2]`` and ``{"a":1,}`` parse), a colon after a key is optional, integer
    literals may have leading zeros; a top-level value must be followed by the
    end of input.
    """
    lexer = _Lexer(text, overflow)

    def value_after(token: Tuple[str, Any]) -> Any:
        kind, val = token
        if kind == "value":
            return val
        if kind == "{":
            return parse_object()
        if kind == "[":
            return parse_array()
        if token == _EOF:
            raise _ParseError(_TRUNCATED + " before a value")
        raise _ParseError(f"unexpected token {kind!r}")

    def parse_object() -> Dict[str, Any]:
        obj: Dict[str, Any] = {}
        while True:
            kind, val = lexer.next()
            if kind == ",":
                continue
            if kind == "}":
                return obj
            if kind == "eof":
                raise _ParseError(_TRUNCATED + " before the object's closing '}'")
            if kind != "value" or not isinstance(val, str):
                raise _ParseError("object key is not a string")
            key = val
            while True:
                token = lexer.next()
                if token[0] == ":":
                    continue
                if token[0] in ("value", "{", "["):
                    obj[key] = value_after(token)
                    break
                if token == _EOF:
                    raise _ParseError(f"{_TRUNCATED} after the key {key!r}")
                raise _ParseError(f"unexpected token {token[0]!r} after key {key!r}")

    def parse_array() -> List[Any]:
        arr: List[Any] = []
        while True:
            token = lexer.next()
            if token[0] == ",":
                continue
            if token[0] == "]":
                return arr
            if token[0] in ("value", "{", "["):
                arr.append(value_after(token))
                continue
            if token == _EOF:
                raise _ParseError(_TRUNCATED + " before the array's closing ']'")
            raise _ParseError(f"unexpected token {token[0]!r} in array")

    first = lexer.next()
    if first[0] not in ("value", "{", "["):
        raise _ParseError("no JSON value")
    result = value_after(first)
    if lexer.next() != _EOF:
        raise _ParseError("data after the JSON value")
    return result


# --- Storm's read rules -------------------------------------------------------------

@dataclass(frozen=True)
class StoredDocument:
    """One stored document as Storm would read it.

    Attributes
    ----------
    data : bytes
        The raw bytes of the znode.
    parsed : Any
        The JSON value (json-simple grammar), or None when it does not parse
        (``null`` also gives None; see ``problem``).
    topology_id : str or None
        ``topology.id`` when it is a string.
    offset : int or None
        ``offset`` (the next offset to process) when it is a JSON integer within
        Java's ``long`` range.
    problem : str or None
        None when Storm 1.0.3+ would take both values (and resume, if the offset
        is > 0); otherwise a short reason ("invalid JSON", "offset missing", ...).
        ``topology_id``/``offset`` may still be set for display when another
        part is broken; only use them for resuming when ``problem`` is None.
    """

    data: bytes
    parsed: Any
    topology_id: Optional[str]
    offset: Optional[int]
    problem: Optional[str]

    @property
    def usable(self) -> bool:
        """True when Storm would take ``topology.id`` and ``offset`` from it."""
        return self.problem is None

    @property
    def text(self) -> str:
        """The bytes decoded as UTF-8 (malformed sequences replaced), for logs."""
        return self.data.decode("utf-8", errors="replace")


def _show(value: Any) -> str:
    if isinstance(value, float):
        shown = repr(value)
    else:
        try:
            shown = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def parse_document(data: bytes) -> StoredDocument:
    """Read stored bytes with storm-kafka 1.0.3+'s rules.

    Parameters
    ----------
    data : bytes
        The znode's data.

    Returns
    -------
    StoredDocument
        Never raises for bad content: every failure Storm would swallow (and
        treat as "no state") is reported in ``problem``.
    """
    data = bytes(data)
    if not data:
        return StoredDocument(data, None, None, None, "empty document")
    text = data.decode("utf-8", errors="replace")
    overflow = _LongOverflow()
    try:
        parsed = _parse_json_simple(text, overflow)
    except _ParseError as exc:
        return StoredDocument(data, None, None, None, f"invalid JSON ({exc})")
    except RecursionError:
        return StoredDocument(data, None, None, None, "invalid JSON (nested too deeply)")

    if not isinstance(parsed, dict):
        return StoredDocument(data, parsed, None, None,
                              f"root is not an object ({_kind(parsed)})")

    topology_id: Optional[str] = None
    topology_problem: Optional[str] = None
    if "topology" not in parsed:
        topology_problem = "topology missing"
    elif not isinstance(parsed["topology"], dict):
        topology_problem = f"topology is not an object ({_show(parsed['topology'])})"
    else:
        topology = parsed["topology"]
        if "id" not in topology:
            topology_problem = "topology.id missing"
        elif not isinstance(topology["id"], str):
            topology_problem = f"topology.id is not a string ({_show(topology['id'])})"
        else:
            topology_id = topology["id"]

    offset: Optional[int] = None
    offset_problem: Optional[str] = None
    if "offset" not in parsed:
        offset_problem = "offset missing"
    else:
        raw = parsed["offset"]
        if isinstance(raw, bool) or not isinstance(raw, int):
            offset_problem = f"offset is not an integer ({_show(raw)})"
        elif not JAVA_LONG_MIN <= raw <= JAVA_LONG_MAX:
            offset_problem = f"offset {raw} is outside Java's 64-bit long range"
        else:
            offset = raw

    problem = topology_problem or offset_problem
    if problem is None and overflow.literal is not None:
        # json-simple's Long.valueOf throws on any such literal: the whole parse fails
        problem = f"invalid JSON (integer {overflow.literal} is outside Java's 64-bit long range)"
    return StoredDocument(data, parsed, topology_id, offset, problem)


def document_fields(parsed: Any) -> Dict[str, Any]:
    """Return the informational fields of a parsed document, for tools.

    Returns
    -------
    dict
        ``topic`` (str or None), ``partition`` (int or None), ``broker``
        (``{"host": str, "port": int}`` or None) and ``topology_name``
        (str or None); a field is None when missing or of the wrong type.
    """
    fields: Dict[str, Any] = {"topic": None, "partition": None, "broker": None,
                              "topology_name": None}
    if not isinstance(parsed, dict):
        return fields
    if isinstance(parsed.get("topic"), str):
        fields["topic"] = parsed["topic"]
    partition = parsed.get("partition")
    if isinstance(partition, int) and not isinstance(partition, bool):
        fields["partition"] = partition
    broker = parsed.get("broker")
    if isinstance(broker, dict):
        host, port = broker.get("host"), broker.get("port")
        if isinstance(host, str) and isinstance(port, int) and not isinstance(port, bool):
            fields["broker"] = {"host": host, "port": port}
    topology = parsed.get("topology")
    if isinstance(topology, dict) and isinstance(topology.get("name"), str):
        fields["topology_name"] = topology["name"]
    return fields
