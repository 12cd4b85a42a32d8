"""config convert of Storm's ShellBolt: Flux's FluxShellBolt and a Java class extending
ShellBolt (storm-starter's SplitSentence) become ``shell`` bolts that run the script."""

from __future__ import annotations

from pathlib import Path

from storm_kafka_compat.flux.convert import convert_file
from storm_kafka_compat.java import convert_java
from storm_kafka_compat.topology.spec import from_spec

DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_flux_shell_bolt_becomes_a_shell_bolt_entry() -> None:
    conv = convert_file(str(DATA / "flux" / "shell_bolt.yaml"))
    split, count = conv.config["topology"]["bolts"]
    assert split == {"name": "splitsentence", "shell": ["python", "splitsentence.py"],
                     "output_fields": ["word"], "parallelism": 2}
    assert count["inputs"] == [{"from": "splitsentence", "grouping": "fields",
                                "fields": ["word"]}]
    assert any("'python splitsentence.py' runs as a subprocess" in n for n in conv.unmapped)
    topology = from_spec({"bolts": [split]}, spout_fields=("str",))
    assert topology.bolts["splitsentence"].output_fields == {"default": ("word",)}


def test_a_java_class_extending_shell_bolt_becomes_a_shell_bolt_entry() -> None:
    [conv] = convert_java([str(DATA / "java" / "shell_bolt" / "WordCountTopology.java")])
    assert conv.error is None
    bolts = {b["name"]: b for b in conv.config["topology"]["bolts"]}
    assert bolts["split"] == {"name": "split", "shell": ["python", "splitsentence.py"],
                              "output_fields": ["word"], "parallelism": 8}
    assert bolts["count"]["bolt"] == "demo.WordCountTopology:WordCount"  # Java: to port
    notes = "\n".join(conv.unmapped)
    assert "splitsentence.py' runs as a subprocess" in notes
    assert "WordCount not mapped: port the bolt" in notes
