"""The migration traps (config/traps.py): each setting, its consequence and its fix."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest

from storm_kafka_compat.cli.main import main
from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.config.traps import (CAUTION, DANGER, Evidence, TrapFacts, find_traps,
                                             suggested_topology_id)
from storm_kafka_compat.flux import convert_flux, convert_properties

BASE: Dict[str, Any] = {"spout": {"topic": "clicks", "zkRoot": "/offsets", "id": "clicks-spout",
                                  "zkServers": ["zk1"], "zkPort": 2181},
                        "hosts": {"zk": "zk1:2181"},
                        "topology": {"name": "clicks", "id": "clicks-compat"}}


def config(spout: Optional[Dict[str, Any]] = None, topology: Optional[Dict[str, Any]] = None,
           **sections: Any) -> Dict[str, Any]:
    out = {k: dict(v) for k, v in BASE.items()}
    out["spout"].update(spout or {})
    out["topology"].update(topology or {})
    out.update(sections)
    return out


def kinds(cfg: Dict[str, Any], **facts: Any) -> List[str]:
    """Trap kinds of a CONFIG, found both ways (loaded job and raw mapping) alike."""
    from_mapping = [t.kind for t in find_traps(TrapFacts.from_mapping(cfg, **facts))]
    if not facts:
        assert [t.kind for t in find_traps(TrapFacts.from_job(job_config_from_dict(cfg)))] \
            == from_mapping
    return from_mapping


@pytest.mark.parametrize("spout, topology, expected", [
    ({}, {}, []),
    ({"ignoreZkOffsets": True}, {}, ["ignore_zk_offsets"]),
    ({"forceFromStart": True}, {}, ["ignore_zk_offsets"]),
    ({"ignoreZkOffsets": True}, {"id": None}, ["ignore_zk_offsets", "topology_id"]),
    ({}, {"id": None}, ["topology_id"]),
    ({"id": "3f1c2d9e-8a47-4b2e-9c1d-2e5f7a9b0c11"}, {}, ["per_run_id"]),
    ({"id": "clicks-1514764800123"}, {}, ["per_run_id"]),
    ({"zkRoot": "/storm/clicks"}, {}, ["zk_root_topic"]),
    ({"maxOffsetBehind": 2000000, "startOffsetTime": -1}, {}, ["max_offset_behind"]),
    ({"maxOffsetBehind": 2000000, "startOffsetTime": 1700000000000,
      "maxOffsetBehindResetToWindow": True}, {}, ["max_offset_behind"]),
    ({"maxOffsetBehind": 2000000}, {}, []),     # measured from the log start: no skip
    # below what a partition may hold in flight (a batch: 1,000,000 new messages per
    # partition by default): failures are dropped, not retried
    ({"maxOffsetBehind": 500}, {}, ["max_offset_behind_in_flight"]),
    ({"maxOffsetBehind": 100000}, {}, ["max_offset_behind_in_flight"]),
    ({"maxOffsetBehind": 100000}, {"topology.max.spout.pending": 50000}, []),
    ({"maxOffsetBehind": 500}, {"topology.max.spout.pending": 400}, []),
    ({"maxOffsetBehind": 500}, {"topology.max.spout.pending": 2000},
     ["max_offset_behind_in_flight"]),
    ({"maxOffsetBehind": 500, "startOffsetTime": -1}, {},
     ["max_offset_behind", "max_offset_behind_in_flight"]),
])
def test_storm_kafka_traps(spout: Dict[str, Any], topology: Dict[str, Any],
                           expected: List[str]) -> None:
    cfg = config(spout, topology)
    if topology.get("id", "") is None:
        del cfg["topology"]["id"]
    assert kinds(cfg) == expected


def test_each_trap_says_consequence_and_fix() -> None:
    cfg = config({"ignoreZkOffsets": True, "startOffsetTime": -1})
    del cfg["topology"]["id"]
    ignore, topo = find_traps(TrapFacts.from_mapping(cfg))
    assert ignore.severity == DANGER and topo.severity == DANGER
    assert "first start ignores the stored offsets and starts at the startOffsetTime -1: " \
           "everything produced since Storm stopped is skipped; without a fixed topology.id " \
           "every restart does the same." in ignore.consequence
    assert ignore.fix.startswith("set spout.ignoreZkOffsets: false for the cut-over")
    assert "<name>-<driver pid>-<epoch seconds>" in topo.consequence
    assert "`topology: {id: clicks-compat}`" in topo.fix
    behind = find_traps(TrapFacts.from_mapping(config({"maxOffsetBehind": 500,
                                                       "startOffsetTime": -1})))[0]
    assert behind.severity == CAUTION and "more than 500 messages" in behind.consequence
    assert "STORM-399" in behind.consequence
    in_flight = find_traps(TrapFacts.from_mapping(config({"maxOffsetBehind": 500})))[0]
    assert in_flight.kind == "max_offset_behind_in_flight"
    assert "below the 1000000 messages a partition may have in flight" in in_flight.consequence
    assert "not retried" in in_flight.consequence and "skipped" in in_flight.consequence
    assert in_flight.fix.startswith("raise maxOffsetBehind above 1000000")


def test_per_run_id_from_the_source_names_the_expression_and_how_to_find_the_id() -> None:
    ev = {"spout.id": Evidence("random", "Topo.java:18", "UUID.randomUUID().toString()")}
    trap = find_traps(TrapFacts.from_mapping(config({"id": "${spout.id}"}), ev))[0]
    assert trap.kind == "per_run_id" and trap.where == "Topo.java:18 `UUID.randomUUID().toString()`"
    assert "`storm-kafka-compat offsets show --zk zk1:2181 --zk-root /offsets` lists every id" \
        in trap.fix
    time_root = {"spout.zkRoot": Evidence("time", "T.java:3", '"/k-" + System.nanoTime()')}
    assert [t.kind for t in find_traps(TrapFacts.from_mapping(config(), time_root))] == \
        ["zk_root_per_run"]


@pytest.mark.parametrize("strategy, expected", [
    ("EARLIEST", ["first_poll", "topology_id"]), ("LATEST", ["first_poll", "topology_id"]),
    ("UNCOMMITTED_EARLIEST", ["topology_id"]), (None, ["topology_id"]),
])
def test_client_first_poll_strategies(strategy: Any, expected: List[str]) -> None:
    section: Dict[str, Any] = {"groupId": "g", "bootstrapServers": "k:9092", "topics": ["t"]}
    if strategy:
        section["firstPollOffsetStrategy"] = strategy
    cfg = {"kafkaSpout": section, "topology": {"name": "x"}}
    assert kinds(cfg) == expected
    traps = find_traps(TrapFacts.from_job(job_config_from_dict(cfg)))
    if strategy in ("EARLIEST", "LATEST"):
        assert f"set firstPollOffsetStrategy: UNCOMMITTED_{strategy}" in traps[0].fix
        assert traps[1].severity == DANGER   # a per-run id restarts the strategy each run


def test_custom_scheme_of_a_converted_topology_suggests_the_built_in() -> None:
    flux = """
name: t
components:
  - {id: hosts, className: org.apache.storm.kafka.ZkHosts, constructorArgs: ["zk:2181"]}
  - {id: inner, className: com.acme.JsonEventScheme}
  - {id: scheme, className: org.apache.storm.spout.SchemeAsMultiScheme,
     constructorArgs: [{ref: inner}]}
  - id: cfg
    className: org.apache.storm.kafka.SpoutConfig
    constructorArgs: [{ref: hosts}, "t", "/r", "i"]
    properties: [{name: scheme, ref: scheme}]
spouts:
  - {id: s, className: org.apache.storm.kafka.KafkaSpout, constructorArgs: [{ref: cfg}]}
"""
    traps = convert_flux(flux).traps()
    scheme = next(t for t in traps if t.kind == "custom_scheme")
    assert "own Scheme class com.acme.JsonEventScheme" in scheme.consequence
    assert scheme.fix.startswith("if com.acme.JsonEventScheme decodes as string, with "
                                 "json.loads in the first bolt does")
    # a .properties file and Flux alike suggest the fixed topology id
    props = convert_properties("kafka.topic=t\nkafka.zkRoot=/r\nkafka.id=i\n"
                               "kafka.zkHosts=zk:2181\ntopology.name=orders\n")
    assert [t.kind for t in props.traps()] == ["offsets_zookeeper", "topology_id"]
    assert "orders-compat" in props.traps()[1].fix
    assert suggested_topology_id("${args.0}") == "my-topology-compat"


def test_config_check_prints_the_traps(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml
    path = tmp_path / "job.yaml"
    cfg = config({"ignoreZkOffsets": True})
    path.write_text(yaml.safe_dump(cfg))
    assert main(["config", "check", str(path), "--no-imports"]) == 0
    err = capsys.readouterr().err
    assert "trap: spout.ignoreZkOffsets: ignoreZkOffsets (forceFromStart) is true" in err


@pytest.mark.parametrize("spout, topology, trapped", [
    ({}, {}, True),                                          # 127.0.0.1:2181, silently
    ({"zkServers": ["zk1"]}, {}, False),
    ({}, {"storm.zookeeper.servers": ["storm-zk1"]}, False),  # Storm's own ZooKeeper, given
    ({"zkServers": "${args.1}"}, {}, False),                  # a placeholder still to fill
])
def test_offsets_on_the_default_zookeeper_are_a_trap(spout: Dict[str, Any],
                                                     topology: Dict[str, Any],
                                                     trapped: bool) -> None:
    """Issue 34 item 6: neither zkServers nor storm.zookeeper.servers: the documents go
    to 127.0.0.1:2181; `config check` and `config convert` say it once, as a trap."""
    cfg = config(spout, topology)
    del cfg["spout"]["zkServers"]
    cfg["spout"].update(spout)
    found = [t for t in find_traps(TrapFacts.from_mapping(cfg)) if t.kind == "offsets_zookeeper"]
    assert bool(found) is trapped
    if "${" not in str(spout):
        assert [t.kind for t in find_traps(TrapFacts.from_job(job_config_from_dict(cfg)))] == \
            [t.kind for t in find_traps(TrapFacts.from_mapping(cfg))]
    if trapped:
        assert "default 127.0.0.1:2181" in found[0].consequence
        assert found[0].fix.startswith("set spout.zkServers (and zkPort)")


def test_convert_names_the_default_zookeeper_trap_and_check_says_it_once(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "spout.properties"
    path.write_text("kafka.topic=t\nkafka.zkRoot=/r\nkafka.id=i\nkafka.zkHosts=zk:2181\n"
                    "topology.name=orders\n")
    assert main(["config", "convert", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.count("STORM-692") == 1
    assert "trap: spout.zkServers: neither spout.zkServers nor topology " \
           "storm.zookeeper.servers is set" in err
    cfg = config(topology={"storm.zookeeper.servers": ["storm-zk1"]})
    del cfg["spout"]["zkServers"]
    from storm_kafka_compat.config import config_warnings
    notes = config_warnings(job_config_from_dict(cfg))
    assert any("STORM-692" in n for n in notes)          # a note: where, given
    del cfg["topology"]["storm.zookeeper.servers"]
    assert not any("STORM-692" in n for n in config_warnings(job_config_from_dict(cfg)))


# --- what differs for bolts (issue 31, item 4a) -----------------------------------------------

WORDCOUNT_BOLTS = [
    {"name": "split", "bolt": "tests.bolts:record", "parallelism": 2},
    {"name": "count", "bolt": "tests.bolts:record", "parallelism": 4,
     "inputs": [{"from": "split", "grouping": "fields", "fields": ["word"]}]},
    {"name": "report", "bolt": "tests.bolts:record",
     "inputs": [{"from": "count", "grouping": "global"}]}]


def test_config_check_says_where_bolt_tasks_run_and_their_state_lives(tmp_path, capsys):
    """Issue 31 item 4a: before it bites, `config check` says what parallelism and Storm's
    workers mean here, where a bolt task's state lives and what a restart does to it."""
    import yaml
    path = tmp_path / "wordcount.yaml"
    path.write_text(yaml.safe_dump(config(topology={"bolts": WORDCOUNT_BOLTS,
                                                    "topology.state.dir": "/var/lib/wc"})))
    assert main(["config", "check", str(path), "--no-imports"]) == 0
    traps = [line for line in capsys.readouterr().err.splitlines()
             if line.startswith("trap: topology.bolts")]
    assert traps == [
        "trap: topology.bolts: the bolts fed by fields, global or all groupings, count "
        "(4 tasks), report (1 task), run one instance per task for the life of the job in "
        "bolt-host processes on the driver's machine (topology.bolt.hosts), not spread over "
        "Storm's topology.workers; their state is saved with the offsets at each commit "
        "under /var/lib/wc (topology.state.dir, on the driver's machine); at a restart it is "
        "restored when the saved offsets equal the stored ones, else they start empty with "
        "a warning (after an offsets reset, or another writer); split runs in every fetching "
        "Spark task's Python worker: one instance per worker, whatever its parallelism, and "
        "what it keeps in fields is per worker and gone at a restart. Fix: keep "
        "topology.state.dir on a disk that outlives the driver's host (the state is not in "
        "ZooKeeper); docs/migration-guide.md, \"Bolts: parallelism, workers, state\", says "
        "what a crash and a restart do."]


def test_a_simple_bolt_and_a_shuffle_only_topology_say_their_instances_are_per_worker():
    simple = find_traps(TrapFacts.from_job(job_config_from_dict(
        config(bolt="tests.bolts:record"))))
    (trap,) = [t for t in simple if t.kind == "bolt_tasks"]
    assert trap.key == "bolt" and "one instance per worker" in trap.consequence
    shuffled = find_traps(TrapFacts.from_mapping(config(topology={"bolts": [
        {"name": "a", "bolt": "m:a", "parallelism": 3},
        {"name": "b", "bolt": "m:b", "inputs": [{"from": "a", "grouping": "shuffle"}]}]})))
    (trap,) = [t for t in shuffled if t.kind == "bolt_tasks"]
    assert trap.consequence.startswith("a, b run in every fetching Spark task's Python worker")
    assert "bolt-host" not in trap.consequence and trap.severity == CAUTION


def test_convert_says_what_topology_workers_and_the_bolts_become(capsys):
    """`config convert` of a Flux topology with topology.workers and a fields grouping."""
    import pathlib
    flux = pathlib.Path(__file__).resolve().parents[1] / "data" / "flux"
    assert main(["config", "convert", str(flux / "kafka_spout_topology.yaml"),
                 "--filter", str(flux / "dev.properties")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "convert: config.topology.workers 2 not mapped: Storm's worker processes have no " \
           "equal here. The Spark master and its executors (spark.master, spark.conf) run " \
           "the fetching tasks and every bolt behind shuffle groupings; the tasks of bolts " \
           "fed by fields, global or all groupings run one instance each in bolt-host " \
           "processes on the driver's machine (topology.bolt.hosts); see the trap on " \
           "topology.bolts and docs/migration-guide.md, \"Bolts: parallelism, workers, " \
           "state\"." in err, err
    assert any(line.startswith("trap: topology.bolts: ") for line in err), err
