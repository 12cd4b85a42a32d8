"""config convert of Python Storm topologies: streamparse Topology classes and Pyleus YAML
(flux/streamparse_topology.py, flux/pyleus.py), with the traps of the result."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

streamparse = pytest.importorskip("streamparse")

from storm_kafka_compat.errors import ConfigError  # noqa: E402
from storm_kafka_compat.flux.convert import convert_file, detect_format  # noqa: E402
from storm_kafka_compat.topology.spec import from_spec  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "python_storm"
BOOTSTRAP = Path(streamparse.__file__).parent / "bootstrap" / "project"


@pytest.fixture
def quickstart(tmp_path: Path) -> Path:
    """The files of ``sparse quickstart`` that are not templates: topologies/, src/."""
    shutil.copytree(BOOTSTRAP / "topologies", tmp_path / "topologies",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(BOOTSTRAP / "src", tmp_path / "src",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_the_quickstart_topology_converts_with_the_kafka_spout_for_its_python_spout(
        quickstart: Path, tmp_path: Path) -> None:
    flt = tmp_path / "kafka.properties"
    flt.write_text("spout.topic=words\nhosts.zk=zk1:2181\nspout.zkRoot=/wc\n"
                   "spout.id=wordcount\nspout.scheme=myjob.schemes:word\n")
    path = str(quickstart / "topologies" / "wordcount.py")
    assert detect_format(path, "") == "streamparse"
    conv = convert_file(path, filter_path=str(flt))
    assert conv.config["spout"] == {"topic": "words", "zkRoot": "/wc", "id": "wordcount",
                                    "scheme": "myjob.schemes:word"}
    assert conv.config["hosts"] == {"zk": "zk1:2181"}
    assert conv.config["topology"]["name"] == "word_count"
    assert conv.config["topology"]["bolts"] == [
        {"name": "count_bolt", "bolt": "bolts.wordcount:WordCountBolt", "parallelism": 2,
         "inputs": [{"from": "spout", "grouping": "fields", "fields": ["word"]}]}]
    notes = "\n".join(conv.unmapped)
    assert "WordSpout" in notes and "('word',)" in notes and str(quickstart / "src") in notes
    assert "zkServers" in {t.key.split(".")[-1] for t in conv.traps()}


def test_a_kafka_java_spout_shell_bolts_groupings_and_config(tmp_path: Path) -> None:
    (tmp_path / "topo.py").write_text(textwrap.dedent('''
        from streamparse import Grouping, JavaSpout, ShellBolt, Topology
        from streamparse import Bolt


        class Upper(Bolt):
            outputs = ["word"]

            def process(self, tup):
                self.emit([tup.values[0].upper()])


        class Audit(Topology):
            config = {"topology.message.timeout.secs": 90, "topology.workers": 4}
            kafka = JavaSpout.spec(name="kafka", full_class_name="storm.kafka.KafkaSpout",
                                   args_list=[], outputs=["str"])
            split = ShellBolt.spec(command="python", script="splitsentence.py",
                                   inputs=[kafka], par=3, outputs=["word"])
            upper = Upper.spec(inputs={split: Grouping.ALL})
            last = Upper.spec(inputs={upper: Grouping.GLOBAL, split: Grouping.LOCAL_OR_SHUFFLE})
    '''))
    conv = convert_file(str(tmp_path / "topo.py"))
    bolts = {b["name"]: b for b in conv.config["topology"]["bolts"]}
    assert bolts["split"] == {"name": "split", "shell": ["python", "splitsentence.py"],
                              "output_fields": ["word"], "parallelism": 3}
    assert bolts["upper"]["bolt"] == "skc_streamparse_topology_topo:Upper"
    assert bolts["upper"]["inputs"] == [{"from": "split", "grouping": "all"}]
    assert sorted(i["grouping"] for i in bolts["last"]["inputs"]) == ["global", "shuffle"]
    assert conv.config["spout"]["scheme"] == "string"
    assert conv.config["topology"]["topology.message.timeout.secs"] == 90
    notes = "\n".join(conv.unmapped)
    assert "topology.workers" in notes and "local_or_shuffle" in notes
    assert "SpoutConfig is Java" not in notes  # its fields are the string scheme's


def test_a_file_that_does_not_import_names_the_paths_it_was_given(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("from streamparse import Topology\nimport nowhere\n")
    with pytest.raises(ConfigError, match="could not be imported.*ModuleNotFoundError"):
        convert_file(str(tmp_path / "broken.py"))


def test_the_pyleus_topology_converts_module_bolts_in_process_or_as_multilang(
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(DATA / "pyleus" / "pyleus_topology.yaml")
    assert detect_format(path, (DATA / "pyleus" / "pyleus_topology.yaml").read_text()) \
        == "pyleus"
    conv = convert_file(path)
    assert conv.config["spout"] == {"topic": "words", "zkRoot": "/pyleus-kafka-offsets/word_count",
                                    "id": "pyleus-word_count", "scheme": "string",
                                    "ignoreZkOffsets": True, "startOffsetTime": -2}
    assert conv.config["hosts"] == {"zk": "localhost:2181"}
    split, count = conv.config["topology"]["bolts"]
    assert split == {"name": "split-words", "shell": ["python", "-m", "word_count.split_words"],
                     "resources": str(DATA / "pyleus"), "output_fields": ["word"],
                     "parallelism": 2}
    assert count["bolt"] == "word_count.count_words:CountWords"
    assert count["inputs"] == [{"from": "split-words", "grouping": "fields", "fields": ["word"]}]
    assert conv.config["topology"]["topology.message.timeout.secs"] == 60
    assert {"ignoreZkOffsets", "zkServers", "id"} <= {t.key.split(".")[-1] for t in conv.traps()}
    assert any("workers" in n for n in conv.unmapped)
    assert any(f"imported from {DATA / 'pyleus'}" in n for n in conv.unmapped)
    monkeypatch.syspath_prepend(str(DATA / "pyleus"))
    from_spec({"bolts": conv.config["topology"]["bolts"]}, spout_fields=("str",))


def test_pyleus_without_a_kafka_spout_says_so(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text("name: t\ntopology:\n  - spout: {name: s, module: m}\n"
                                     "  - bolt: {name: b, module: m, groupings: "
                                     "[{shuffle_grouping: s}]}\n")
    with pytest.raises(ConfigError, match="no spout of type: kafka"):
        convert_file(str(tmp_path / "t.yaml"))
