"""streamparse bolts run as they are (storm_kafka_compat.topology.compat.streamparse):
the quickstart's WordCountBolt, explicit acks and anchors, streams, errors, batching bolts,
saved state."""

from __future__ import annotations

import logging
import pickle
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import pytest

streamparse = pytest.importorskip("streamparse")

from storm_kafka_compat.batch import FetchPlan  # noqa: E402
from storm_kafka_compat.topology.compat.streamparse import StreamparseBolt  # noqa: E402
from storm_kafka_compat.executor.dag import LocalRuntime  # noqa: E402
from storm_kafka_compat.executor.process import process_batch  # noqa: E402
from storm_kafka_compat.kafka.client import KafkaMessage  # noqa: E402
from storm_kafka_compat.topology.bolts import RichBolt  # noqa: E402
from storm_kafka_compat.topology.spec import from_spec  # noqa: E402
from storm_kafka_compat.topology.instances import instantiate_bolt  # noqa: E402
from storm_kafka_compat.topology.state import TaskState  # noqa: E402
from storm_kafka_compat.topology.tuples import StormTuple  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "python_storm"
QUICKSTART_SRC = Path(streamparse.__file__).parent / "bootstrap" / "project" / "src"


@pytest.fixture(autouse=True)
def _paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(DATA))
    monkeypatch.syspath_prepend(str(QUICKSTART_SRC))


class LineScheme:
    fields = ("line",)

    def to_tuples(self, message: Any) -> List[List[Any]]:
        return [[message.value.decode()]]


class Recorder(RichBolt):
    """Keeps what reaches it, by stream; acks."""

    got: List[Tuple[str, List[Any]]] = []

    def declare_output_fields(self) -> Sequence[str]:
        return ()

    def execute(self, tup: StormTuple) -> None:
        Recorder.got.append((tup.stream, list(tup.values)))
        self.collector.ack(tup)


def lines(*texts: str) -> List[KafkaMessage]:
    return [KafkaMessage(i, None, t.encode(), 0, 0, (), "words", 0) for i, t in enumerate(texts)]


def run(bolts: List[Dict[str, Any]], *texts: str) -> Tuple[Any, LocalRuntime]:
    Recorder.got = []
    runtime = LocalRuntime(from_spec({"bolts": bolts}), {"topology.name": "t"},
                           spout_fields=LineScheme.fields)
    out = process_batch(lines(*texts), scheme=LineScheme(), topology=runtime,
                        plan_filter=FetchPlan.at(0))
    return out, runtime


def bolt_of(runtime: LocalRuntime, name: str, task: int = 0) -> Any:
    return runtime.runners[name][task].bolt.bolt


def test_the_quickstart_word_count_bolt_counts_as_in_storm() -> None:
    """Its process(), emit() auto-anchored, auto-ack, self.logger; Counter per task."""
    out, runtime = run([
        {"name": "split", "bolt": "sp_bolts:SplitBolt"},
        {"name": "count", "bolt": "bolts.wordcount:WordCountBolt", "parallelism": 2,
         "inputs": [{"from": "split", "grouping": "fields", "fields": ["word"]}]},
        {"name": "out", "bolt": f"{__name__}:Recorder",
         "inputs": [{"from": "count", "grouping": "global"}]},
    ], "a dog a", "b dog", "a")
    assert out.acked == [(0, 3)] and out.failed == []
    counters = Counter()
    for task in (0, 1):
        counters.update(bolt_of(runtime, "count", task).counter)
    assert counters == {"a": 3, "dog": 20, "b": 1}  # the quickstart counts a dog as 10
    assert Recorder.got[-1][0] == "default"
    assert max(v[1] for _s, v in Recorder.got if v[0] == "dog") == 20
    assert isinstance(runtime.runners["count"][0].bolt, StreamparseBolt)


def test_explicit_acks_fails_anchors_streams_and_task_ids() -> None:
    out, runtime = run([
        {"name": "route", "bolt": "sp_bolts:RoutingBolt",
         "inputs": [{"from": "spout"}]},
        {"name": "ok", "bolt": f"{__name__}:Recorder", "inputs": [{"from": "route"}]},
        {"name": "bad", "bolt": f"{__name__}:Recorder",
         "inputs": [{"from": "route", "stream": "errors"}]},
    ], "w", "fail", "xy")
    assert out.acked == [(0, 1), (2, 3)] and out.failed == [1]
    assert sorted(Recorder.got) == [("default", ["w"]), ("errors", ["xy"])]
    route = bolt_of(runtime, "route")
    assert route.seen == 3 and route.task_ids == [[0], [0]]


def test_an_exception_fails_the_input_and_reaches_the_driver_as_a_value(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="pystorm.component.boom"):
        out, _rt = run([{"name": "boom", "bolt": "sp_bolts:Boom"}], "x", "boom", "y")
    assert out.acked == [(0, 1), (2, 3)] and out.failed == [1]
    assert [(e.component, e.kind, e.offset) for e in out.errors] == [("boom", "ValueError", 1)]
    assert "saw x" in caplog.text and "logged through log()" in caplog.text


@pytest.mark.parametrize("cls", ["GroupCount", "TimedGroupCount"])
def test_batching_bolts_process_their_batches_when_the_engine_batch_ends(cls: str) -> None:
    """No tick tuples needed: the engine's batch end is the batch boundary, so every
    tuple is acked (auto_ack) within the batch that carries it."""
    out, runtime = run([
        {"name": "split", "bolt": "sp_bolts:SplitBolt"},
        {"name": "group", "bolt": f"sp_bolts:{cls}", "inputs": [{"from": "split"}]},
        {"name": "out", "bolt": f"{__name__}:Recorder", "inputs": [{"from": "group"}]},
    ], "a b a", "b a")
    assert out.acked == [(0, 2)] and out.failed == []
    assert sorted(v for _s, v in Recorder.got) == [["a", 3], ["b", 2]]
    assert bolt_of(runtime, "group")._batches == {}


def test_the_bolts_own_attributes_are_its_saved_state() -> None:
    _out, runtime = run([
        {"name": "count", "bolt": "bolts.wordcount:WordCountBolt",
         "inputs": [{"from": "spout", "grouping": "fields", "fields": ["line"]}]},
    ], "a", "a", "dog")
    adapter = runtime.runners["count"][0].bolt
    data = TaskState("count[0]", adapter).save(1)
    fresh = LocalRuntime(runtime.topology, {}, spout_fields=LineScheme.fields)
    again = fresh.runners["count"][0].bolt
    TaskState("count[0]", again).restore(data)
    assert again.bolt.counter == {"a": 2, "dog": 10} and again.bolt.total == 12
    kind, saved = pickle.loads(data)
    assert kind == "custom" and "serializer" not in saved and "_reader_lock" not in saved


def test_a_streamparse_bolt_is_detected_and_described() -> None:
    from sp_bolts import RoutingBolt  # type: ignore[import-not-found]
    adapter = instantiate_bolt(RoutingBolt, name="route")
    assert isinstance(adapter, StreamparseBolt)
    assert adapter.declare_output_fields() == {"default": ("word",), "errors": ("bad",)}
    with pytest.raises(Exception, match="streamparse"):
        instantiate_bolt(RoutingBolt, "basic", name="route")


def test_the_python_bolts_micro_benchmark_measures_each_way() -> None:
    """bench/python_bolts.py: own bolt, streamparse in-process, streamparse over multilang;
    each acks every tuple (a small run: the figures are in docs/performance.md)."""
    from storm_kafka_compat.workshop.bench.python_bolts import measure
    figures = measure(300, 1)
    assert set(figures) == {"own", "streamparse", "multilang"}
    assert all(us > 0 for us in figures.values())
