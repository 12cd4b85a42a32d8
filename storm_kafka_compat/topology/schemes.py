"""Schemes: how one Kafka message becomes zero or more tuples (storm-kafka ``generateTuples``).

A scheme has ``fields`` (the output field names) and ``to_tuples(message)``,
returning a list of value lists, one per tuple. A message whose value is null
(a tombstone) gives no tuple whatever the scheme (except ``record_translator``,
below), and a message giving no tuple
is acked and skipped by the pipeline; every tuple of one message shares the
message id (partition, offset).

Built-in names (``SpoutConfig.scheme``), with the Storm class each stands for:

========================  ===========================  ====================================
name                      fields                       Storm class
========================  ===========================  ====================================
``raw`` (default)         ``("bytes",)``               ``RawMultiScheme``
``string``                ``("str",)``                 ``SchemeAsMultiScheme(StringScheme)``
``key_value``             ``("key", "value")``         ``KeyValueSchemeAsMultiScheme`` over raw bytes
``string_key_value``      ``("str",)``                 ``KeyValueSchemeAsMultiScheme(StringKeyValueScheme)``
``message_metadata``      ``("str","partition","offset")``  ``StringMessageAndMetadataScheme``
``string_with_topic``     ``("str", "topic")``         ``StringMultiSchemeWithTopic``
``record_translator``     ``("topic", "partition",``   storm-kafka-client's ``DefaultRecordTranslator``
                          ``"offset", "key", "value")`` over ``StringDeserializer`` key and value
``record_with_headers``   ``record_translator``'s      none: what a translator of one's own
                          and ``"timestamp",``         reads from ``ConsumerRecord`` (Kafka
                          ``"headers"``                0.11+ headers), as Spark's
                                                       ``includeHeaders``
========================  ===========================  ====================================

Headers: every fetched message carries ``headers``, a sequence of ``(key str,
value bytes)`` pairs in record order (empty before Kafka 0.11 and for records
without any), and ``timestamp`` in epoch ms (-1 or None before Kafka 0.10), with
either backend. ``record_with_headers`` emits them as a list of pairs and the
timestamp as an int (-1 when the broker has none); a scheme of one's own
(``to_tuples(message)``) reads ``message.headers`` itself. Storm's storm-kafka
schemes only ever saw the value (its fetches predate headers); storm-kafka-client
gave a ``RecordTranslator`` the whole ``ConsumerRecord``.

``record_translator`` is the one exception to the tombstone rule: like Storm's
translator it emits a null value as ``None`` (the tuple still carries topic,
partition, offset and key).

Storm's fully qualified class names are accepted as aliases. Anything else is
``module:callable``: a class or factory returning a scheme (an object with
``to_tuples``, or Storm-style ``deserialize``/``deserialize_key_and_value``/
``deserialize_message_with_metadata`` methods), or a plain function
``bytes -> list of values | None`` (fields from its ``fields`` attribute,
default ``("value",)``).
"""

from __future__ import annotations

import inspect
import logging
from typing import (Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple,
                    runtime_checkable)

from storm_kafka_compat.config import STORM_SCHEME_CLASSES
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.objects import load_object

logger = logging.getLogger(__name__)

__all__ = [
    "Scheme", "MessageLike", "RawScheme", "StringScheme", "ValueScheme", "value_tuple_of",
    "KeyValueSchemeAsMultiScheme",
    "RawKeyValueScheme", "StringKeyValueScheme", "StringMessageAndMetadataScheme",
    "StringMultiSchemeWithTopic", "RecordTranslatorScheme", "RecordWithHeadersScheme",
    "SchemeAsMultiScheme", "FunctionScheme", "BUILTIN_SCHEMES", "load_scheme",
]


class MessageLike(Protocol):
    """What a scheme reads from a fetched Kafka message (``headers``: ``(key,
    value)`` pairs, empty before Kafka 0.11; ``timestamp``: epoch ms, -1 or None
    before Kafka 0.10)."""

    @property
    def key(self) -> Optional[bytes]: ...

    @property
    def value(self) -> Optional[bytes]: ...

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def offset(self) -> int: ...

    @property
    def headers(self) -> Sequence[Tuple[str, bytes]]: ...


@runtime_checkable
class Scheme(Protocol):
    """Turns one message into tuples.

    Attributes
    ----------
    fields : tuple of str
        Output field names; every tuple has one value per field.
    """

    fields: Tuple[str, ...]

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        """Value lists, one per tuple; ``[]`` for a message giving no tuple."""
        ...


def _utf8(data: bytes) -> str:
    # Storm 1.1.1+ decodes as UTF-8 (1.0.0-1.1.0 used the platform charset)
    return data.decode("utf-8")


class RawScheme:
    """``RawMultiScheme``: one tuple holding the value bytes."""

    fields: Tuple[str, ...] = ("bytes",)

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value
        return [] if value is None else [[value]]

    @staticmethod
    def value_tuple(value: Optional[bytes]) -> Optional[List[Any]]:
        """The one tuple of a message with this value (None: no tuple)."""
        return None if value is None else [value]

    @staticmethod
    def value_tuples(values: List[Optional[bytes]]) -> List[Optional[List[Any]]]:
        """:meth:`value_tuple` of every value (one comprehension, no call per value)."""
        return [None if v is None else [v] for v in values]


class StringScheme:
    """``StringScheme``: one tuple holding the value decoded as UTF-8."""

    fields: Tuple[str, ...] = ("str",)

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value   # UTF-8 as _utf8, inline: the most used scheme's hot path
        return [] if value is None else [[value.decode("utf-8")]]

    @staticmethod
    def value_tuple(value: Optional[bytes]) -> Optional[List[Any]]:
        """The one tuple of a message with this value (None: no tuple)."""
        return None if value is None else [value.decode("utf-8")]

    @staticmethod
    def value_tuples(values: List[Optional[bytes]]) -> List[Optional[List[Any]]]:
        """:meth:`value_tuple` of every value (one comprehension, no call per value);
        raises on the first value that is not UTF-8."""
        return [None if v is None else [v.decode("utf-8")] for v in values]


#: a value scheme's two forms: one value -> its tuple, every value -> their tuples
ValueScheme = Tuple[Callable[[Optional[bytes]], Optional[List[Any]]],
                    Callable[[List[Optional[bytes]]], List[Optional[List[Any]]]]]


def value_tuple_of(scheme: Any) -> Optional[ValueScheme]:
    """For a scheme that reads nothing but the value and gives at most one tuple (the
    built-in ``raw`` and ``string``, not a subclass): its ``value_tuple`` (a value to
    its tuple, None for no tuple) and ``value_tuples`` (the same over a list). The
    engine then works on the fetch's value column and builds no message object. None
    for every other scheme."""
    if type(scheme) in (RawScheme, StringScheme):
        return scheme.value_tuple, scheme.value_tuples
    return None


class RawKeyValueScheme:
    """Key and value bytes as two fields: ``[key, value]`` (key None when absent).

    A Storm-style key-value scheme: ``deserialize`` for keyless messages and
    ``deserialize_key_and_value`` otherwise; wrap it in
    :class:`KeyValueSchemeAsMultiScheme`.
    """

    fields: Tuple[str, ...] = ("key", "value")

    def deserialize(self, value: bytes) -> Optional[List[Any]]:
        return [None, value]

    def deserialize_key_and_value(self, key: bytes, value: bytes) -> Optional[List[Any]]:
        return [key, value]


class StringKeyValueScheme:
    """``StringKeyValueScheme``: ``[value]`` without key, ``[{key: value}]`` with one.

    ``deserialize_key_and_value(None, value)`` is ``[value]``, as in Storm: a
    keyless message gives the value alone whichever method is called.
    """

    fields: Tuple[str, ...] = ("str",)

    def deserialize(self, value: bytes) -> Optional[List[Any]]:
        return [_utf8(value)]

    def deserialize_key_and_value(self, key: Optional[bytes],
                                  value: bytes) -> Optional[List[Any]]:
        if key is None:
            return self.deserialize(value)
        return [{_utf8(key): _utf8(value)}]


class KeyValueSchemeAsMultiScheme:
    """``KeyValueSchemeAsMultiScheme``: key present -> ``deserialize_key_and_value``,
    else ``deserialize(value)``; a None result gives no tuple."""

    def __init__(self, scheme: Any) -> None:
        self.scheme = scheme
        self.fields: Tuple[str, ...] = tuple(scheme.fields)

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value
        if value is None:
            return []
        key = message.key
        if key is not None:
            values = self.scheme.deserialize_key_and_value(key, value)
        else:
            values = self.scheme.deserialize(value)
        return [] if values is None else [list(values)]


class SchemeAsMultiScheme:
    """``SchemeAsMultiScheme``: a Storm-style single scheme (``deserialize(bytes)``
    returning one value list or None)."""

    def __init__(self, scheme: Any) -> None:
        self.scheme = scheme
        self.fields: Tuple[str, ...] = tuple(scheme.fields)

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value
        if value is None:
            return []
        values = self.scheme.deserialize(value)
        return [] if values is None else [list(values)]


class MessageMetadataSchemeAsMultiScheme:
    """``MessageMetadataSchemeAsMultiScheme``: ``deserialize_message_with_metadata(
    value, partition, offset)``; the key is ignored."""

    def __init__(self, scheme: Any) -> None:
        self.scheme = scheme
        self.fields: Tuple[str, ...] = tuple(scheme.fields)

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value
        if value is None:
            return []
        values = self.scheme.deserialize_message_with_metadata(
            value, message.partition, message.offset)
        return [] if values is None else [list(values)]


class StringMessageAndMetadataScheme:
    """``StringMessageAndMetadataScheme``: ``[str, partition, offset]``."""

    fields: Tuple[str, ...] = ("str", "partition", "offset")

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value
        if value is None:
            return []
        return [[_utf8(value), message.partition, message.offset]]


class StringMultiSchemeWithTopic:
    """``StringMultiSchemeWithTopic``: ``[str, topic]``."""

    fields: Tuple[str, ...] = ("str", "topic")

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value
        if value is None:
            return []
        return [[_utf8(value), message.topic]]


class RecordTranslatorScheme:
    """storm-kafka-client's ``DefaultRecordTranslator`` with its default
    ``StringDeserializer`` key and value: ``[topic, partition, offset, key, value]``.

    A null key or value stays ``None``; a tombstone is emitted, not skipped.
    """

    fields: Tuple[str, ...] = ("topic", "partition", "offset", "key", "value")

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        key, value = message.key, message.value
        return [[message.topic, message.partition, message.offset,
                 None if key is None else _utf8(key),
                 None if value is None else _utf8(value)]]


class RecordWithHeadersScheme:
    """``record_translator``'s fields, then the record's ``timestamp`` (epoch ms,
    -1 when the broker keeps none) and ``headers`` (a list of ``(key, value
    bytes)`` pairs): ``[topic, partition, offset, key, value, timestamp, headers]``.

    Like the translator, a tombstone is emitted with value None.
    """

    fields: Tuple[str, ...] = ("topic", "partition", "offset", "key", "value", "timestamp",
                               "headers")

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        key, value = message.key, message.value
        timestamp = getattr(message, "timestamp", None)
        return [[message.topic, message.partition, message.offset,
                 None if key is None else _utf8(key),
                 None if value is None else _utf8(value),
                 -1 if timestamp is None else int(timestamp),
                 [(k, v) for k, v in (getattr(message, "headers", None) or ())]]]


class FunctionScheme:
    """A plain function ``bytes -> list of values | None``: one tuple per message.

    Parameters
    ----------
    function : callable
        Called with the value bytes.
    fields : sequence of str, optional
        Output fields; default the function's ``fields`` attribute, else ``("value",)``.
    """

    def __init__(self, function: Callable[[bytes], Optional[Sequence[Any]]],
                 fields: Optional[Sequence[str]] = None) -> None:
        self.function = function
        self.fields: Tuple[str, ...] = tuple(
            fields if fields is not None else getattr(function, "fields", ("value",)))

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        value = message.value
        if value is None:
            return []
        values = self.function(value)
        return [] if values is None else [list(values)]


BUILTIN_SCHEMES: Dict[str, Callable[[], Any]] = {
    "raw": RawScheme,
    "string": StringScheme,
    "key_value": lambda: KeyValueSchemeAsMultiScheme(RawKeyValueScheme()),
    "string_key_value": lambda: KeyValueSchemeAsMultiScheme(StringKeyValueScheme()),
    "message_metadata": StringMessageAndMetadataScheme,
    "string_with_topic": StringMultiSchemeWithTopic,
    "record_translator": RecordTranslatorScheme,
    "record_with_headers": RecordWithHeadersScheme,
}

#: Storm class names accepted in place of the built-in names (the table config uses)
STORM_CLASS_ALIASES: Dict[str, str] = STORM_SCHEME_CLASSES


def adapt_scheme(obj: Any, *, name: str = "scheme") -> Scheme:
    """Wrap a scheme-like object into a :class:`Scheme`.

    Accepts, in this order: an object with ``to_tuples``; a Storm-style
    metadata scheme (``deserialize_message_with_metadata``); a key-value scheme
    (``deserialize_key_and_value``); a single scheme (``deserialize``); a plain
    callable ``bytes -> list | None``.
    """
    if hasattr(obj, "to_tuples") and hasattr(obj, "fields"):
        obj.fields = tuple(obj.fields) if not isinstance(obj.fields, tuple) else obj.fields
        return obj  # type: ignore[no-any-return]
    if hasattr(obj, "deserialize_message_with_metadata") and hasattr(obj, "fields"):
        return MessageMetadataSchemeAsMultiScheme(obj)
    if hasattr(obj, "deserialize_key_and_value") and hasattr(obj, "fields"):
        return KeyValueSchemeAsMultiScheme(obj)
    if hasattr(obj, "deserialize") and hasattr(obj, "fields"):
        return SchemeAsMultiScheme(obj)
    if callable(obj):
        return FunctionScheme(obj)
    raise ConfigError(
        f"{name}: {obj!r} is not a scheme; give an object with 'fields' and "
        f"'to_tuples(message)' (or Storm-style 'deserialize'), or a function bytes -> list",
        key="spout.scheme", value=name)


def load_scheme(name: str) -> Scheme:
    """The scheme named ``name`` (``SpoutConfig.scheme``).

    Parameters
    ----------
    name : str
        A built-in name (see the module docstring), a Storm scheme class name,
        or ``module:callable``.

    Raises
    ------
    ConfigError
        Unknown name (the message lists the valid ones) or a callable that does
        not give a scheme.
    """
    builtin = STORM_CLASS_ALIASES.get(name, name)
    factory = BUILTIN_SCHEMES.get(builtin)
    if factory is not None:
        return factory()  # type: ignore[no-any-return]
    if ":" not in name:
        valid = sorted(BUILTIN_SCHEMES)
        raise ConfigError(
            f"unknown scheme {name!r}; use one of {', '.join(valid)} "
            f"or 'package.module:callable' for your own", key="spout.scheme", value=name,
            allowed=valid)
    obj = load_object(name, key="spout.scheme")
    if inspect.isclass(obj):
        obj = obj()
    elif callable(obj) and not _looks_like_value_function(obj):
        obj = obj()
    return adapt_scheme(obj, name=name)


def _looks_like_value_function(obj: Callable[..., Any]) -> bool:
    """True for a function taking one argument (bytes -> values), False for a
    zero-argument factory."""
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return True
    required = [p for p in params if p.default is p.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(required) >= 1


#: storm conf key carrying storm-kafka-client's ``emitNullTuples`` to the executors
EMIT_NULL_TUPLES_KEY = "kafka.spout.emit.null.tuples"


class EmitNullTuples:
    """storm-kafka-client's ``emitNullTuples=true``: a record the scheme turns into
    no tuple (a tombstone, or a translator returning null) is emitted as one tuple
    of ``None`` values instead of being acked and skipped."""

    def __init__(self, scheme: Scheme) -> None:
        self.scheme = scheme
        self.fields = scheme.fields

    def to_tuples(self, message: MessageLike) -> List[List[Any]]:
        rows = self.scheme.to_tuples(message)
        return rows if rows else [[None] * len(self.fields)]
