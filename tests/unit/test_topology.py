"""TopologyBuilder, validation, from_spec and routing."""

from __future__ import annotations

import random
import subprocess
import sys
import types
from collections import Counter
from typing import Any, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.topology.bolts import BasicBolt, RichBolt, SimpleBolt
from storm_kafka_compat.topology.builder import TopologyBuilder
from storm_kafka_compat.topology.spec import from_spec
from storm_kafka_compat.topology.grouping import Grouping, route, stable_hash
from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.topology.tuples import StormTuple


class Split(BasicBolt):
    def declare_output_fields(self) -> Any:
        return ("word", "n")

    def execute(self, tup: StormTuple, collector: Any) -> None:
        for w in tup["str"].split():
            collector.emit([w, 1])


class Sink(RichBolt):
    def execute(self, tup: StormTuple) -> None:
        self.collector.ack(tup)


class TwoStreams(BasicBolt):
    def declare_output_fields(self) -> Any:
        return {"default": ("a",), "errors": ("reason", "offset")}

    def execute(self, tup: StormTuple, collector: Any) -> None:
        pass


def test_builder_orders_stages_and_subscribers() -> None:
    b = TopologyBuilder().set_spout("kafka", ("str",))
    b.set_bolt("count", Sink, 2).fields_grouping("split", ["word"])
    b.set_bolt("split", Split, 3).shuffle_grouping("kafka")
    b.set_bolt("audit", Sink).all_grouping("kafka").global_grouping("split")
    topo = b.build()
    assert topo.order == ["split", "count", "audit"]
    assert topo.stages() == [["split"], ["count", "audit"]]
    assert [n for n, _ in topo.subscribers[("kafka", "default")]] == ["split", "audit"]
    assert topo.stream_fields("split", "default") == ("word", "n")
    assert topo.parallelism("split") == 3 and topo.parallelism("kafka") == 1


@pytest.mark.parametrize("build, fragment", [
    (lambda b: b.set_bolt("x", Sink).shuffle_grouping("nowhere"), "unknown component 'nowhere'"),
    (lambda b: b.set_bolt("x", Sink).shuffle_grouping("kafka", stream="other"),
     "stream 'other'"),
    (lambda b: b.set_bolt("x", Split).fields_grouping("kafka", ["word"]),
     "fields grouping on ['word']"),
    (lambda b: b.set_bolt("x", Sink), "has no input"),
    (lambda b: b.set_bolt("x", Sink, 0), "parallelism 0"),
    (lambda b: b.set_bolt("kafka", Sink), "used twice"),
    (lambda b: b.set_bolt("x", Sink, kind="weird"), "kind 'weird'"),
    (lambda b: b.set_bolt("x", Sink).grouping("sideways", "kafka"), "grouping 'sideways'"),
    (lambda b: b.set_bolt("x", Sink).grouping("custom", "kafka"), "needs 'custom: module:Class'"),
    (lambda b: b.set_bolt("x", Split).partial_key_grouping("kafka", ["word"]),
     "fields grouping on ['word']"),
])
def test_validation_errors(build: Any, fragment: str) -> None:
    b = TopologyBuilder().set_spout("kafka", ("str",))
    with pytest.raises(TopologyError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        build(b)
        b.build()


def test_cycle_is_named() -> None:
    b = TopologyBuilder().set_spout("kafka", ("str",))
    b.set_bolt("a", Split).shuffle_grouping("kafka").shuffle_grouping("c")
    b.set_bolt("b", Split).shuffle_grouping("a")
    b.set_bolt("c", Split).shuffle_grouping("b")
    with pytest.raises(TopologyError, match="cycle") as info:
        b.build()
    assert set(info.value.value) >= {"a", "b", "c"}
    assert isinstance(info.value, ConfigError)


def test_no_spout() -> None:
    with pytest.raises(TopologyError, match="no spout"):
        TopologyBuilder().build()


def test_declared_streams_are_checked() -> None:
    b = TopologyBuilder().set_spout("kafka", ("str",))
    b.set_bolt("t", TwoStreams).shuffle_grouping("kafka")
    b.set_bolt("e", Sink).fields_grouping("t", ["reason"], stream="errors")
    topo = b.build()
    assert topo.stream_fields("t", "errors") == ("reason", "offset")


# --- routing ------------------------------------------------------------------------------

def _t(*values: Any, fields: tuple = ("k", "v")) -> StormTuple:
    return StormTuple(list(values), fields)


@pytest.mark.parametrize("grouping, n, expected", [
    (Grouping("global", "s"), 4, [0]),
    (Grouping("all", "s"), 3, [0, 1, 2]),
    (Grouping("shuffle", "s"), 1, [0]),
    (Grouping("fields", "s", fields=("k",)), 1, [0]),
    (Grouping("all", "s"), 1, [0]),
])
def test_route_table(grouping: Grouping, n: int, expected: list) -> None:
    assert route(grouping, _t("a", 1), n) == expected


def test_shuffle_round_robin_and_random() -> None:
    g = Grouping("shuffle", "s")
    assert [route(g, _t(1, 2), 3, seq=i)[0] for i in range(6)] == [0, 1, 2, 0, 1, 2]
    rng = random.Random(5)
    counts = Counter(route(g, _t(1, 2), 4, rng=rng)[0] for _ in range(4000))
    assert set(counts) == {0, 1, 2, 3} and min(counts.values()) > 800


def test_fields_grouping_uses_only_the_grouping_fields() -> None:
    g = Grouping("fields", "s", fields=("k",))
    tasks = {route(g, _t("same", v), 8)[0] for v in range(50)}
    assert len(tasks) == 1
    spread = Counter(route(g, _t(f"key{i}", 0), 8)[0] for i in range(4000))
    assert len(spread) == 8 and min(spread.values()) > 300


@given(st.lists(st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.binary(),
                          st.floats(allow_nan=False)), min_size=1, max_size=4))
def test_stable_hash_equal_values_hash_alike(values: list) -> None:
    assert stable_hash(values) == stable_hash(list(values))
    assert 0 <= stable_hash(values) < 2**32


def test_stable_hash_is_not_salted() -> None:
    code = ("from storm_kafka_compat.topology.grouping import stable_hash;"
            "print(stable_hash(['user-42', b'x', 7]))")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": seed}, check=True).stdout
            for seed in ("1", "2")}
    assert runs == {f"{stable_hash(['user-42', b'x', 7])}\n"}


def test_stable_hash_distinguishes_framing() -> None:
    assert stable_hash(["ab", "c"]) != stable_hash(["a", "bc"])
    assert stable_hash([1]) == stable_hash([1.0])
    assert stable_hash(["1"]) != stable_hash([1])


# --- from_spec ---------------------------------------------------------------------------

@pytest.fixture()
def bolts_module() -> Iterator[str]:
    mod = types.ModuleType("user_bolts_for_topology_tests")

    def upper(tup: StormTuple) -> list:
        return [[tup["str"].upper()]]

    def sink(tup: StormTuple) -> None:
        return None

    mod.upper = upper  # type: ignore[attr-defined]
    mod.sink = sink  # type: ignore[attr-defined]
    mod.Split = Split  # type: ignore[attr-defined]
    mod.Sink = Sink  # type: ignore[attr-defined]
    sys.modules[mod.__name__] = mod
    yield mod.__name__
    del sys.modules[mod.__name__]


def test_from_spec_builds_the_topology(bolts_module: str) -> None:
    topo = from_spec({"bolts": [
        {"name": "split", "bolt": f"{bolts_module}:Split", "kind": "basic", "parallelism": 2,
         "inputs": [{"from": "spout", "grouping": "shuffle"}]},
        {"name": "up", "bolt": f"{bolts_module}:upper", "output_fields": ["u"]},
        {"name": "count", "bolt": f"{bolts_module}:Sink", "kind": "rich",
         "inputs": [{"from": "split", "grouping": "fields", "fields": ["word"]},
                    {"from": "up", "grouping": "global"}]},
    ]}, spout_fields=("str",))
    assert topo.order == ["split", "up", "count"]
    assert topo.bolts["split"].parallelism == 2
    assert topo.bolts["up"].inputs == [Grouping("shuffle", "spout")]
    assert isinstance(topo.bolts["up"].new_instance(), SimpleBolt)
    assert topo.stream_fields("up", "default") == ("u",)
    assert isinstance(topo.bolts["count"].new_instance(), Sink)


@pytest.mark.parametrize("spec, fragment", [
    ({"bolts": []}, "non-empty list"),
    ({"bolts": [{"name": "a"}]}, "'name' and 'bolt'"),
    ({"bolts": [{"name": "a", "bolt": "m:f", "colour": 1}]}, "unknown key"),
    ({"bolts": [], "extra": 1}, "unknown key"),
    ({"bolts": [{"name": "a", "bolt": "{mod}:sink", "inputs": [{"grouping": "all"}]}]},
     "needs 'from'"),
    ({"bolts": [{"name": "a", "bolt": "{mod}:sink",
                 "inputs": [{"from": "spout", "grouping": "fields", "fields": ["nope"]}]}]},
     "fields grouping on"),
    ({"bolts": [{"name": "a", "bolt": "{mod}:sink",
                 "inputs": [{"from": "spout", "grouping": "local"}]}]}, "grouping 'local'"),
    ({"bolts": [{"name": "a", "bolt": "{mod}:sink", "kind": "fancy"}]}, "kind 'fancy'"),
])
def test_from_spec_errors(bolts_module: str, spec: Any, fragment: str) -> None:
    def fill(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: fill(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [fill(v) for v in obj]
        return obj.replace("{mod}", bolts_module) if isinstance(obj, str) else obj
    with pytest.raises(ConfigError, match=fragment):
        from_spec(fill(spec), spout_fields=("str",))


def test_spout_fields_bound_later_from_the_scheme(bolts_module: str) -> None:
    spec = {"bolts": [{"name": "a", "bolt": f"{bolts_module}:sink",
                       "inputs": [{"from": "spout", "grouping": "fields", "fields": ["str"]}]}]}
    topo = from_spec(spec)
    assert not topo.spout_fields_declared
    bound = topo.with_spout_fields(("str",))
    assert bound.spout_streams == {"default": ("str",)}
    with pytest.raises(TopologyError, match="fields grouping on"):
        topo.with_spout_fields(("bytes",))


# --- bolt instantiation ------------------------------------------------------------------

def test_instantiation_kinds() -> None:
    from storm_kafka_compat.topology.bolts import bolt_kind
    from storm_kafka_compat.topology.instances import instantiate_bolt

    proto = Split()
    proto.marker = [1]  # type: ignore[attr-defined]
    a, b = instantiate_bolt(proto), instantiate_bolt(proto)
    assert a is not b and a.marker is not b.marker      # deep copy per task

    assert isinstance(instantiate_bolt(Sink), Sink)
    assert isinstance(instantiate_bolt(lambda: Sink()), Sink)   # zero-arg factory
    assert isinstance(instantiate_bolt(lambda t: None), SimpleBolt)

    class Duck:
        def execute(self, tup: Any, collector: Any) -> None:
            pass
    assert bolt_kind(Duck()) == "basic"
    with pytest.raises(ConfigError, match="neither a basic bolt"):
        instantiate_bolt(lambda: 42, "basic")


def test_from_spec_detects_kind_and_rejects_a_class_as_simple(bolts_module: str) -> None:
    topo = from_spec({"bolts": [{"name": "s", "bolt": f"{bolts_module}:Split"},
                                {"name": "k", "bolt": f"{bolts_module}:Sink",
                                 "inputs": [{"from": "s"}]}]}, spout_fields=("str",))
    assert isinstance(topo.bolts["s"].new_instance(), Split)
    assert topo.bolts["k"].inputs == [Grouping("shuffle", "s")]
    with pytest.raises(ConfigError, match="set kind: basic"):
        from_spec({"bolts": [{"name": "s", "bolt": f"{bolts_module}:Split", "kind": "simple"}]},
                  spout_fields=("str",))


def test_the_engines_spout_tuple_is_the_keyword_built_one_slot_for_slot() -> None:
    from storm_kafka_compat.topology.tuples import StormTuple, spout_tuple
    fast = spout_tuple(["a", 1], ("s", "n"), "spout", "t", 3, 42)
    slow = StormTuple(["a", 1], ("s", "n"), source_component="spout", topic="t", partition=3,
                      offset=42)
    for slot in StormTuple.__slots__:
        assert getattr(fast, slot) == getattr(slow, slot), slot
    assert fast.anchors is not slow.anchors and fast["n"] == 1
    assert fast.message_id == (3, 42)


def test_the_emits_positional_tuple_sets_every_slot_as_the_keyword_one() -> None:
    from storm_kafka_compat.topology.tuples import StormTuple, make_tuple
    anchors = {7: 9}
    fast = make_tuple(["w"], ("word",), "words", "split", 1, "t", 3, 42, anchors)
    slow = StormTuple(["w"], ("word",), stream="words", source_component="split",
                      source_task=1, topic="t", partition=3, offset=42, anchors={7: 9})
    for slot in StormTuple.__slots__:
        assert getattr(fast, slot) == getattr(slow, slot), slot
    assert fast.anchors is anchors


def test_a_misspelt_component_in_inputs_gets_did_you_mean(bolts_module: str) -> None:
    """Issue 34 item 9: a bolt name in CONFIG with a near match names it."""
    spec = {"bolts": [
        {"name": "split", "bolt": f"{bolts_module}:Split", "kind": "basic"},
        {"name": "count", "bolt": f"{bolts_module}:Sink", "kind": "rich",
         "inputs": [{"from": "splitt", "grouping": "fields", "fields": ["word"]}]},
    ]}
    with pytest.raises(TopologyError, match="unknown component 'splitt'; did you mean "
                                            "'split'\\?; use one of spout, split, count"):
        from_spec(spec, spout_fields=("str",))
    spec["bolts"][1]["inputs"][0]["from"] = "zzz"
    with pytest.raises(TopologyError) as err:
        from_spec(spec, spout_fields=("str",))
    assert "did you mean" not in str(err.value)
