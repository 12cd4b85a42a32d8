"""Schemes: storm-kafka's generateTuples decision order and built-in schemes."""

from __future__ import annotations

import sys
import types
from typing import Any, NamedTuple, Optional

import pytest

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.config.objects import load_object
from storm_kafka_compat.topology.schemes import (BUILTIN_SCHEMES, KeyValueSchemeAsMultiScheme,
                                                 Scheme, load_scheme)


class Msg(NamedTuple):
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    topic: str = "orders"
    partition: int = 3
    timestamp: int = 0


@pytest.mark.parametrize("name, msg, fields, tuples", [
    ("raw", Msg(5, None, b"\x00\xff"), ("bytes",), [[b"\x00\xff"]]),
    ("raw", Msg(5, b"k", b""), ("bytes",), [[b""]]),
    ("string", Msg(5, None, "héllo".encode()), ("str",), [["héllo"]]),
    ("string", Msg(5, b"k", b"v"), ("str",), [["v"]]),
    ("key_value", Msg(5, b"k", b"v"), ("key", "value"), [[b"k", b"v"]]),
    ("key_value", Msg(5, None, b"v"), ("key", "value"), [[None, b"v"]]),
    ("string_key_value", Msg(5, None, b"v"), ("str",), [["v"]]),
    ("string_key_value", Msg(5, b"k", b"v"), ("str",), [[{"k": "v"}]]),
    ("message_metadata", Msg(41, b"k", b"v"), ("str", "partition", "offset"), [["v", 3, 41]]),
    ("string_with_topic", Msg(5, None, b"v"), ("str", "topic"), [["v", "orders"]]),
    ("org.apache.storm.kafka.StringScheme", Msg(5, None, b"v"), ("str",), [["v"]]),
    ("backtype.storm.spout.RawMultiScheme", Msg(5, None, b"v"), ("bytes",), [[b"v"]]),
])
def test_builtin_schemes(name: str, msg: Msg, fields: tuple, tuples: list) -> None:
    scheme = load_scheme(name)
    assert isinstance(scheme, Scheme)
    assert scheme.fields == fields
    assert scheme.to_tuples(msg) == tuples


@pytest.mark.parametrize("name", sorted(set(BUILTIN_SCHEMES)
                                         - {"record_translator", "record_with_headers"}))
def test_tombstone_gives_no_tuple_for_every_builtin(name: str) -> None:
    assert load_scheme(name).to_tuples(Msg(7, b"key", None)) == []


def test_record_translator_emits_a_tombstone_with_a_none_value() -> None:
    assert load_scheme("record_translator").to_tuples(Msg(7, b"key", None)) == [
        ["orders", 3, 7, "key", None]]


class Record(NamedTuple):
    """A kafka-python ``ConsumerRecord``'s shape: headers a list, timestamp None on v0."""
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: Any
    timestamp: Optional[int]
    topic: str = "orders"
    partition: int = 3


@pytest.mark.parametrize("msg, row", [
    (Record(9, b"k", "é".encode(), [("trace", b"\x01"), ("trace", b"\x02")], 1700000000123),
     ["orders", 3, 9, "k", "é", 1700000000123, [("trace", b"\x01"), ("trace", b"\x02")]]),
    # librdkafka's shape (KafkaMessage): headers a tuple of pairs
    (Record(9, None, b"v", (("h", b""),), 5), ["orders", 3, 9, None, "v", 5, [("h", b"")]]),
    # Kafka 0.9: no headers, no timestamp; and a tombstone is emitted
    (Record(9, b"k", None, [], None), ["orders", 3, 9, "k", None, -1, []]),
    (Msg(9, None, b"v"), ["orders", 3, 9, None, "v", 0, []]),   # an object without headers
])
def test_record_with_headers_emits_timestamp_and_headers_in_record_order(msg, row) -> None:
    scheme = load_scheme("record_with_headers")
    assert scheme.fields == ("topic", "partition", "offset", "key", "value", "timestamp",
                             "headers")
    assert scheme.to_tuples(msg) == [row]


def test_unknown_scheme_lists_valid_names() -> None:
    with pytest.raises(ConfigError) as info:
        load_scheme("strng")
    err = info.value
    assert "strng" in str(err)
    for name in BUILTIN_SCHEMES:
        assert name in str(err)
    assert err.key == "spout.scheme"
    assert set(err.allowed or ()) == set(BUILTIN_SCHEMES)


def test_invalid_utf8_raises() -> None:
    with pytest.raises(UnicodeDecodeError):
        load_scheme("string").to_tuples(Msg(1, None, b"\xff\xfe"))


@pytest.fixture()
def user_module() -> Any:
    mod = types.ModuleType("user_schemes_for_tests")

    class CsvScheme:
        fields = ("a", "b")

        def to_tuples(self, message: Any) -> list:
            if message.value is None:
                return []
            return [line.split(",") for line in message.value.decode().splitlines()]

    class StormStyle:
        fields = ("n",)

        def deserialize(self, value: bytes) -> Optional[list]:
            return None if value == b"skip" else [int(value)]

    class StormKeyValue:
        fields = ("k", "v")

        def deserialize(self, value: bytes) -> list:
            return ["-", value.decode()]

        def deserialize_key_and_value(self, key: bytes, value: bytes) -> list:
            return [key.decode(), value.decode()]

    class WithMetadata:
        fields = ("v", "where")

        def deserialize_message_with_metadata(self, value: bytes, partition: int,
                                              offset: int) -> list:
            return [value, f"{partition}@{offset}"]

    def parse_int(value: bytes) -> Optional[list]:
        return None if not value else [int(value)]

    def upper(value: bytes) -> list:
        return [value.decode().upper(), len(value)]
    upper.fields = ("up", "len")  # type: ignore[attr-defined]

    def make_csv() -> CsvScheme:
        return CsvScheme()

    for name, obj in dict(CsvScheme=CsvScheme, StormStyle=StormStyle,
                          StormKeyValue=StormKeyValue, WithMetadata=WithMetadata,
                          parse_int=parse_int, upper=upper, make_csv=make_csv).items():
        setattr(mod, name, obj)
    sys.modules[mod.__name__] = mod
    yield mod
    del sys.modules[mod.__name__]


@pytest.mark.parametrize("attr, msg, fields, tuples", [
    ("CsvScheme", Msg(1, None, b"1,2\n3,4"), ("a", "b"), [["1", "2"], ["3", "4"]]),
    ("make_csv", Msg(1, None, b"1,2"), ("a", "b"), [["1", "2"]]),
    ("StormStyle", Msg(1, None, b"42"), ("n",), [[42]]),
    ("StormStyle", Msg(1, None, b"skip"), ("n",), []),
    ("StormKeyValue", Msg(1, b"k", b"v"), ("k", "v"), [["k", "v"]]),
    ("StormKeyValue", Msg(1, None, b"v"), ("k", "v"), [["-", "v"]]),
    ("WithMetadata", Msg(9, b"ignored", b"v"), ("v", "where"), [[b"v", "3@9"]]),
    ("parse_int", Msg(1, None, b"17"), ("value",), [[17]]),
    ("parse_int", Msg(1, None, b""), ("value",), []),
    ("upper", Msg(1, None, b"ab"), ("up", "len"), [["AB", 2]]),
])
def test_user_schemes(user_module: Any, attr: str, msg: Msg, fields: tuple, tuples: list) -> None:
    scheme = load_scheme(f"{user_module.__name__}:{attr}")
    assert scheme.fields == fields
    assert scheme.to_tuples(msg) == tuples
    assert scheme.to_tuples(msg._replace(value=None)) == []


def test_key_value_wrapper_uses_key_only_when_present(user_module: Any) -> None:
    scheme = KeyValueSchemeAsMultiScheme(user_module.StormKeyValue())
    assert scheme.to_tuples(Msg(1, b"", b"v")) == [["", "v"]]  # empty key is a key


@pytest.mark.parametrize("path, fragment", [
    ("no_such_module_xyz:thing", "cannot be imported"),
    ("storm_kafka_compat.topology.schemes:nope", "no attribute"),
    ("storm_kafka_compat.topology.schemes:", "module:callable"),
])
def test_load_object_errors(path: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_object(path, key="spout.scheme")


def test_non_scheme_object_rejected(user_module: Any) -> None:
    user_module.not_a_scheme = 42
    with pytest.raises(ConfigError, match="not a scheme"):
        load_scheme(f"{user_module.__name__}:not_a_scheme")


def test_builtin_names_match_what_config_accepts() -> None:
    from storm_kafka_compat.config import SCHEME_NAMES
    assert set(BUILTIN_SCHEMES) == set(SCHEME_NAMES)
