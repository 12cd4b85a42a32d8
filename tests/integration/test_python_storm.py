"""Python Storm topologies, unchanged, on the project (issue 36), fed by a real Kafka 3.9
topic on Spark local[2] and checked against the truth computed in Python (streamparse's
quickstart: test_streamparse_quickstart.py):

* a Pyleus topology YAML: a storm.py module bolt as a multilang subprocess, a streamparse
  module bolt in process;
* storm-starter's shape in Java: SplitSentence extends ShellBolt running splitsentence.py
  (storm.py's BasicBolt) unchanged, converted from the Java source;
* storm.py's Bolt with explicit anchors, acks, fails, reportError and task ids.

Storm's storm.py comes from Maven Central (org.apache.storm:multilang-python:2.8.3) at
test time (tests/peers/multilang.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from storm_kafka_compat.engine.shipping import ship
from storm_kafka_compat.flux.convert import convert_file
from storm_kafka_compat.java import convert_java
from tests import stateful_bolts
from tests.integration.conftest_spark import spark, spark_records  # noqa: F401
from tests.peers import multilang
from tests.python_storm_support import REPORT, Keep, run_job
from tests.stateful_inputs import as_messages, sentences, word_counts

streamparse = pytest.importorskip("streamparse")

pytestmark = [pytest.mark.integration, pytest.mark.spark]

DATA = Path(__file__).resolve().parents[1] / "data"
PARTITIONS = 4


@pytest.fixture(scope="module")
def storm_py_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    why = multilang.why_not()
    if why is not None:
        pytest.skip(f"Storm's storm.py (multilang-python 2.8.3) cannot be had: {why}")
    directory = tmp_path_factory.mktemp("multilang")
    multilang.storm_py_into(directory)
    return directory


def test_a_pyleus_topology_runs_with_the_true_counts(
        spark, spark_records, zk_server, zk_root, kafka39, unique, tmp_path,  # noqa: F811
        storm_py_dir, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "pyleus"
    shutil.copytree(DATA / "python_storm" / "pyleus", project,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(storm_py_dir / "storm.py", project)
    topic = unique("pyleus")
    yaml_path = project / "pyleus_topology.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("topic: words", f"topic: {topic}"))
    conv = convert_file(str(yaml_path))
    split, count = conv.config["topology"]["bolts"]
    assert split["shell"] == ["python", "-m", "word_count.split_words"]
    assert count["bolt"] == "word_count.count_words:CountWords"
    conv.config["topology"]["bolts"].append(
        {**REPORT, "inputs": [{"from": "count-words", "grouping": "shuffle"}]})
    monkeypatch.syspath_prepend(str(project))
    ship(spark.sparkContext, [str(project / "word_count")])
    lines = sentences(300, seed=37)
    kafka39.create_topic(topic, PARTITIONS, 1)
    kafka39.produce(topic, as_messages(lines, PARTITIONS))
    summary = run_job(conv.config, topic, zk_server, zk_root, kafka39.bootstrap,
                      tmp_path / "state", spark)
    assert summary.bolt_errors == {}
    assert stateful_bolts.final_values(spark_records(topic)) == word_counts(lines)


def test_a_java_shell_bolt_topology_runs_splitsentence_unchanged(
        spark, spark_records, zk_server, zk_root, kafka39, unique, tmp_path,  # noqa: F811
        storm_py_dir) -> None:
    """storm-starter's shape: SplitSentence extends ShellBolt("python",
    "splitsentence.py"); the Java WordCount is ported (tests.stateful_bolts.WordCount)."""
    resources = tmp_path / "resources"
    resources.mkdir()
    shutil.copy(DATA / "python_storm" / "splitsentence.py", resources)
    shutil.copy(storm_py_dir / "storm.py", resources)
    [conv] = convert_java([str(DATA / "java" / "shell_bolt" / "WordCountTopology.java")])
    bolts = {b["name"]: b for b in conv.config["topology"]["bolts"]}
    assert bolts["split"]["shell"] == ["python", "splitsentence.py"]
    bolts["split"].update(resources=str(resources), parallelism=2)
    bolts["count"].update(bolt="tests.stateful_bolts:WordCount", parallelism=3)
    conv.config["topology"]["bolts"] = [bolts["split"], bolts["count"], REPORT]
    lines = sentences(300, seed=38)
    topic = unique("shellbolt")
    kafka39.create_topic(topic, PARTITIONS, 1)
    kafka39.produce(topic, as_messages(lines, PARTITIONS))
    summary = run_job(conv.config, topic, zk_server, zk_root, kafka39.bootstrap,
                      tmp_path / "state", spark)
    assert summary.bolt_errors == {}
    assert stateful_bolts.final_values(spark_records(topic)) == word_counts(lines)


def test_storm_py_bolt_anchors_acks_fails_reports_and_asks_task_ids(
        storm_py_dir: Path, tmp_path: Path) -> None:
    """storm.py's Bolt (explicit.py): emit returns the task ids (read back from us),
    reportError and fail reach the outcome, a sys.exit fails what it held."""
    from storm_kafka_compat.executor.dag import LocalRuntime
    from storm_kafka_compat.executor.process import process_batch
    from storm_kafka_compat.kafka.client import KafkaMessage
    from storm_kafka_compat.batch import FetchPlan
    from storm_kafka_compat.topology.spec import from_spec
    from storm_kafka_compat.topology.schemes import load_scheme
    shutil.copy(DATA / "python_storm" / "explicit.py", tmp_path)
    shutil.copy(storm_py_dir / "storm.py", tmp_path)
    Keep.kept = []
    spec = {"bolts": [
        {"name": "explicit", "shell": ["python", "explicit.py"], "resources": str(tmp_path),
         "output_fields": {"default": ["upper"], "tasks": ["ids"]}},
        {"name": "out", "bolt": "tests.python_storm_support:Keep",
         "inputs": [{"from": "explicit"}, {"from": "explicit", "stream": "tasks"}]}]}
    runtime = LocalRuntime(from_spec(spec), {}, spout_fields=("str",))
    scheme = load_scheme("string")
    try:
        texts = ["a", "fail", "b"]
        out = process_batch([KafkaMessage(i, None, t.encode(), 0, 0, (), "t", 0)
                             for i, t in enumerate(texts)], scheme=scheme,
                            topology=runtime, plan_filter=FetchPlan.at(0))
        assert out.acked == [(0, 1), (2, 3)] and out.failed == [1]
        [error] = out.errors
        assert error.kind == "ShellBoltError" and "asked to fail: fail" in error.message
        got = Keep.kept
        assert ["A"] in got and ["B"] in got and ["[0]"] in got  # task ids came back
        died = process_batch([KafkaMessage(3, None, b"die", 0, 0, (), "t", 0)],
                             scheme=scheme, topology=runtime, plan_filter=FetchPlan.at(3))
        assert died.failed == [3] and "exit code 3" in died.errors[0].message
        again = process_batch([KafkaMessage(4, None, b"c", 0, 0, (), "t", 0)],
                              scheme=scheme, topology=runtime, plan_filter=FetchPlan.at(4))
        assert again.acked == [(4, 5)]  # started again
    finally:
        runtime.cleanup()
