"""Multilang bolts (compat/shell.py, compat/multilang.py): the protocol's messages, and a
pystorm bolt run as its own process as Storm runs it (no Maven needed: pystorm speaks the
same JSON multilang as Storm's storm.py, which tests/integration/test_python_storm.py runs)."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from storm_kafka_compat.topology.compat.multilang import (ProtocolError, encode, handshake,
                                                 read_message, tuple_message)
from storm_kafka_compat.topology.compat.shell import ShellBolt
from storm_kafka_compat.executor.dag import LocalRuntime
from storm_kafka_compat.executor.process import process_batch
from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.kafka.client import KafkaMessage
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.topology.bolts import RichBolt
from storm_kafka_compat.topology.spec import from_spec
from storm_kafka_compat.topology.schemes import load_scheme
from storm_kafka_compat.topology.tuples import StormTuple

DATA = Path(__file__).resolve().parents[1] / "data" / "python_storm"


def test_messages_are_json_then_a_line_end() -> None:
    assert encode({"command": "sync"}) == b'{"command": "sync"}\nend\n'
    assert encode([1, 2]) == b"[1, 2]\nend\n"
    assert tuple_message("7", "split", "default", 1, ("a",)) == \
        b'{"id": "7", "comp": "split", "stream": "default", "task": 1, "tuple": ["a"]}\nend\n'
    assert b'"pidDir": "/tmp/p"' in handshake({}, {"taskid": 0}, "/tmp/p")
    wire = io.BytesIO(b'{"command":\n "emit"}\nend\n[3]\nend\n')
    assert read_message(wire) == {"command": "emit"} and read_message(wire) == [3]
    with pytest.raises(ProtocolError, match="closed its output"):
        read_message(wire)
    with pytest.raises(ProtocolError, match="print"):
        read_message(io.BytesIO(b"hello\nend\n"))


class Recorder(RichBolt):
    got: List[Tuple[str, List[Any]]] = []

    def execute(self, tup: StormTuple) -> None:
        Recorder.got.append((tup.stream, list(tup.values)))
        self.collector.ack(tup)


def lines(*texts: str) -> List[KafkaMessage]:
    return [KafkaMessage(i, None, t.encode(), 0, 0, (), "words", 0) for i, t in enumerate(texts)]


def run(spec: Dict[str, Any], *texts: str) -> Tuple[Any, LocalRuntime]:
    Recorder.got = []
    runtime = LocalRuntime(from_spec(spec), {"topology.name": "t"}, spout_fields=("str",))
    out = process_batch(lines(*texts), scheme=load_scheme("string"), topology=runtime,
                        plan_filter=FetchPlan.at(0))
    return out, runtime


@pytest.fixture
def resources(tmp_path: Path) -> Path:
    shutil.copy(DATA / "pystorm_split.py", tmp_path)
    pytest.importorskip("pystorm")
    return tmp_path


def test_a_pystorm_script_runs_as_a_subprocess_per_task(resources: Path) -> None:
    spec = {"bolts": [
        {"name": "split", "shell": ["python", "pystorm_split.py"], "resources": str(resources),
         "output_fields": ["word"], "parallelism": 2},
        {"name": "out", "bolt": f"{__name__}:Recorder", "inputs": [{"from": "split"}]}]}
    out, runtime = run(spec, "a b", "c", "d e f")
    try:
        assert out.acked == [(0, 3)] and out.failed == []
        assert sorted(v[0] for _s, v in Recorder.got) == ["a", "b", "c", "d", "e", "f"]
        procs = [r.bolt.proc for r in runtime.runners["split"]]
        assert len({p.pid for p in procs}) == 2 and all(p.poll() is None for p in procs)
        assert [p.args[0] for p in procs] == [sys.executable] * 2  # "python": the job's
        out2 = process_batch(lines("g h"), scheme=load_scheme("string"), topology=runtime,
                             plan_filter=FetchPlan.at(0))
        assert out2.acked == [(0, 1)]  # the same processes, batch after batch
        assert [r.bolt.proc.pid for r in runtime.runners["split"]] == [p.pid for p in procs]
    finally:
        runtime.cleanup()
    assert all(p.poll() is not None for p in procs)


def test_a_script_that_dies_fails_its_batch_is_counted_and_starts_again(
        tmp_path: Path) -> None:
    (tmp_path / "dies.py").write_text(
        "import sys, json\n"
        "msg = sys.stdin.readline(); sys.stdin.readline()\n"
        "conf = json.loads(msg)\n"
        "open(conf['pidDir'] + '/1', 'w').close()\n"
        "print(json.dumps({'pid': 1})); print('end'); sys.stdout.flush()\n"
        "sys.exit(5)\n")
    spec = {"bolts": [{"name": "dies", "shell": "python dies.py", "resources": str(tmp_path),
                       "output_fields": []}]}
    out, runtime = run(spec, "a", "b")
    try:
        assert out.failed == [0, 1] and out.acked == []
        [error] = out.errors
        assert error.component == "dies" and error.kind == "ShellBoltError"
        assert "exit code 5" in error.message and "2 tuple(s) failed" in error.message
        assert runtime.runners["dies"][0].bolt.proc is None  # started again next batch
    finally:
        runtime.cleanup()


def test_a_shell_bolt_entry_needs_its_fields_and_a_command() -> None:
    with pytest.raises(TopologyError, match="output_fields"):
        from_spec({"bolts": [{"name": "s", "shell": ["python", "x.py"]}]})
    with pytest.raises(TopologyError, match="command"):
        from_spec({"bolts": [{"name": "s", "shell": [], "output_fields": []}]})
    with pytest.raises(TopologyError, match="'shell'"):
        from_spec({"bolts": [{"name": "s"}]})
    spec = from_spec({"bolts": [{"name": "s", "shell": "node split.js",
                                 "output_fields": ["word"]}]}).bolts["s"]
    bolt = spec.new_instance()
    assert isinstance(bolt, ShellBolt) and bolt.command == ["node", "split.js"]
    assert bolt.argv() == ["node", "split.js"] and bolt.proc is None
