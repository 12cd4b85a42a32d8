"""Operator tools on a Kafka-store CONFIG (``kafkaSpout.offsetStore: kafka``) without
servers: lag and explain read an in-memory group (commit metadata included, which
tansu drops) and a scripted Kafka; explain's decision is checked against the one
the storm-kafka-client spout makes on the same group; ``offsets reset`` refuses with
Kafka's command."""

from __future__ import annotations

import json
import pytest
import yaml

from storm_kafka_compat.cli.main import main
from storm_kafka_compat.cli.offsets_cmd import kafka_consumer_groups_reset
from storm_kafka_compat.spout.client.first_poll import (NO_COMMIT, OUT_OF_RANGE, RESUME,
                                                  RESUME_FOREIGN, STRATEGY, CommitMetadata)
from storm_kafka_compat.runtime import Runtime
from storm_kafka_compat.testing.groups import MemoryGroupOffsets
from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.kafka.lazy import LazyKafka
from storm_kafka_compat.tools import ToolEnv
from storm_kafka_compat.tools.explain import explain_group
from storm_kafka_compat.tools.lag import GROUP_TABLE_COLUMNS, lag, monitor_json

OURS = "orders-1-100"
OTHER = "other-7-700"


def meta(topology_id: str) -> str:
    return CommitMetadata(topology_id, 3, "Thread-9-kafka-spout-executor[3 3]").to_json()


def job(**client):
    section = {"groupId": "g", "bootstrapServers": "k1:9092", "topics": ["orders"], **client}
    return job_config_from_dict({"kafkaSpout": section,
                                 "topology": {"name": "orders", "id": OURS},
                                 "bolt": "tests.bolts:record"})


def scripted(logs, topic="orders"):
    """``logs``: partition -> (log start, log end)."""
    k = ScriptedKafka()
    k.create_topic(topic, len(logs))
    for p, (start, end) in logs.items():
        k.append(topic, p, *[b"x"] * end)
        if start:
            k.set_log_start(topic, p, start)
    return k


def env_for(j, kafka, groups) -> ToolEnv:
    return ToolEnv(j, store=object(), kafka=LazyKafka(j, lambda boot: kafka), groups=groups)


# --- lag ---------------------------------------------------------------------------------------

def test_lag_reads_the_group_and_the_commit_metadata():
    kafka = scripted({0: (0, 10), 1: (2, 8), 2: (0, 5), 3: (0, 4)})
    groups = MemoryGroupOffsets({("orders", 0): (7, meta(OTHER)), ("orders", 1): (8, ""),
                                 ("orders", 2): (1, "storm-1.1.1 metadata")})
    rows = lag(env_for(job(), kafka, groups))
    assert [(r.partition, r.committed, r.log_start, r.log_end, r.lag, r.topology_id)
            for r in rows] == [(0, 7, 0, 10, 3, OTHER), (1, 8, 2, 8, 0, None),
                               (2, 1, 0, 5, 4, None), (3, None, 0, 4, None, None)]
    assert {r.group for r in rows} == {"g"} and {r.zk_path for r in rows} == {None}
    assert monitor_json(rows) == {"orders": {
        "0": {"consumerCommittedOffset": 7, "logHeadOffset": 10, "lag": 3},
        "1": {"consumerCommittedOffset": 8, "logHeadOffset": 8, "lag": 0},
        "2": {"consumerCommittedOffset": 1, "logHeadOffset": 5, "lag": 4},
        "3": {"consumerCommittedOffset": -1, "logHeadOffset": 4, "lag": 5}}}
    row = rows[0].group_table_row()
    assert tuple(row) == GROUP_TABLE_COLUMNS
    assert row["GROUP"] == "g" and row["TOPOLOGY-ID"] == OTHER and row["LAG"] == 3


def test_partitions_come_from_the_client_subscription_not_the_spout_section():
    kafka = scripted({0: (0, 1), 1: (0, 1)}, topic="orders-eu")
    kafka.create_topic("orders-us", 1)
    kafka.create_topic("billing", 2)
    j = job(topics=None, topicPattern="orders-.*")
    env = env_for(j, kafka, MemoryGroupOffsets())
    assert [i.key for i in env.partitions()] == [("orders-eu", 0), ("orders-eu", 1),
                                                 ("orders-us", 0)]
    # kafkaSpout.bootstrapServers, as the client spout
    assert "k1:9092" in env.kafka.brokers


def test_the_group_store_needs_a_kafka_store_config():
    j = job_config_from_dict({"spout": {"topic": "orders", "zkRoot": "/o", "id": "s"},
                              "hosts": {"static": {0: "k1:9092"}},
                              "topology": {"name": "orders"}})
    env = ToolEnv(j, store=object(), kafka=scripted({0: (0, 1)}))
    assert not env.kafka_store and env.group_id is None
    with pytest.raises(ConfigError, match="offsetStore: kafka"):
        env.group_offsets()


# --- explain: the same decision as the client spout -----------------------------------------------

WRITERS = {
    "fresh": None,
    "this topology": (6, meta(OURS)),
    "another topology": (6, meta(OTHER)),
    "migration tool": (6, ""),
    "not JSON": (6, "1.1.1:whatever"),
    "below the log start": (1, meta(OURS)),
    "beyond the log end": (40, meta(OTHER)),
}


@pytest.mark.parametrize("strategy", ["EARLIEST", "LATEST", "UNCOMMITTED_EARLIEST",
                                      "UNCOMMITTED_LATEST"])
@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("reset", [None, "latest"])
def test_explain_matches_what_client_spout_decides(strategy, writer, reset):
    consumer = {"auto.offset.reset": reset} if reset else {}
    j = job(firstPollOffsetStrategy=strategy, consumer=consumer)
    committed = WRITERS[writer]
    offsets = {("orders", 0): committed} if committed else {}
    kafka = scripted({0: (3, 15), 1: (0, 9)})

    spout = Runtime(j, kafka=LazyKafka(j, lambda boot: kafka), topology_id=OURS,
                    groups=MemoryGroupOffsets(offsets)).spout()
    spout.maybe_refresh(0)
    expected = {k: (d.decision, d.start_offset, d.reason) for k, d in spout.decisions.items()}

    items = explain_group(env_for(j, kafka, MemoryGroupOffsets(offsets)), topology_id=OURS)
    assert {(e.topic, e.partition): (e.decision, e.start_offset, e.reason)
            for e in items} == expected
    first = items[0]
    assert (first.committed, first.metadata) == (committed or (None, None))
    assert items[1].decision == NO_COMMIT


def test_explain_names_each_rule():
    kafka = scripted({0: (0, 10), 1: (0, 10), 2: (0, 10), 3: (0, 10)})
    groups = MemoryGroupOffsets({("orders", 0): (4, meta(OURS)), ("orders", 1): (4, meta(OTHER)),
                                 ("orders", 2): (4, "")})
    by = {e.partition: e for e in explain_group(env_for(job(firstPollOffsetStrategy="EARLIEST"),
                                                        kafka, groups))}
    assert (by[0].decision, by[0].start_offset) == (RESUME, 4)
    assert by[0].committed_topology_id == OURS and "this topology" in by[0].reason
    assert (by[1].decision, by[1].start_offset, by[1].committed_topology_id) == (STRATEGY, 0,
                                                                                OTHER)
    assert (by[2].decision, by[2].start_offset, by[2].committed_topology_id) == (STRATEGY, 0,
                                                                                None)
    assert (by[3].decision, by[3].start_offset) == (NO_COMMIT, 0)
    uncommitted = {e.partition: e for e in explain_group(env_for(job(), kafka, groups))}
    assert (uncommitted[1].decision, uncommitted[1].start_offset) == (RESUME_FOREIGN, 4)


def test_explain_without_topology_id_uses_the_run_id_as_the_pipeline_does():
    """No --topology-id: the id a run would write (topology.id here), so a commit
    naming it is this topology's."""
    kafka = scripted({0: (0, 10)})
    groups = MemoryGroupOffsets({("orders", 0): (4, meta(OURS))})
    (item,) = explain_group(env_for(job(firstPollOffsetStrategy="LATEST"), kafka, groups))
    assert (item.topology_id, item.decision, item.start_offset) == (OURS, RESUME, 4)
    (other,) = explain_group(env_for(job(firstPollOffsetStrategy="LATEST"), kafka, groups),
                             topology_id="orders-2-200")
    assert (other.decision, other.start_offset) == (STRATEGY, 10)


def test_explain_reports_a_refused_start_when_auto_offset_reset_is_none():
    kafka = scripted({0: (5, 10)})
    groups = MemoryGroupOffsets({("orders", 0): (2, meta(OURS))})
    (item,) = explain_group(env_for(job(consumer={"auto.offset.reset": "none"}), kafka, groups))
    assert (item.decision, item.start_offset) == (OUT_OF_RANGE, None)
    assert "auto.offset.reset is none" in item.reason and "refuses to start" in item.reason


def test_explain_json_fields():
    kafka = scripted({0: (0, 10)})
    groups = MemoryGroupOffsets({("orders", 0): (4, meta(OTHER))})
    (item,) = explain_group(env_for(job(), kafka, groups))
    d = json.loads(json.dumps(item.as_dict()))
    assert d == {"topic": "orders", "partition": 0, "group": "g", "zk_path": None,
                 "stored": None, "committed": 4, "metadata": meta(OTHER),
                 "committed_topology_id": OTHER, "strategy": "UNCOMMITTED_EARLIEST",
                 "decision": RESUME_FOREIGN, "start_offset": 4, "reason": item.reason,
                 "log_start_offset": 0, "log_end_offset": 10, "topology_id": OURS}


# --- reset: refused with Kafka's command --------------------------------------------------------

@pytest.mark.parametrize("args,fragment", [
    (["--to-earliest"], "--topic orders --reset-offsets --to-earliest --dry-run"),
    (["--to-offset", "5", "--execute"], "--reset-offsets --to-offset 5 --execute"),
    (["--shift-by", "-3", "--partitions", "0,2-3"],
     "--topic orders:0,2,3 --reset-offsets --shift-by -3 --dry-run"),
    (["--to-datetime", "2024-05-01T12:00:00+02:00"],
     "--to-datetime 2024-05-01T10:00:00.000Z --dry-run"),
])
def test_reset_of_a_kafka_store_config_is_refused_with_the_kafka_command(tmp_path, capsys,
                                                                         args, fragment):
    path = tmp_path / "client.yaml"
    path.write_text(yaml.safe_dump({
        "kafkaSpout": {"groupId": "orders-g", "bootstrapServers": "127.0.0.1:1",
                       "topics": ["orders"]},
        "topology": {"name": "orders"}, "bolt": "tests.bolts:record"}))
    code = main(["offsets", "reset", str(path), *args])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.startswith("Error: offsets reset writes the spout's ZooKeeper documents")
    assert ("kafka-consumer-groups --bootstrap-server 127.0.0.1:1 --group orders-g "
            in captured.err)
    assert fragment in captured.err
    assert "offsets migrate ZK-CONFIG --to-kafka-group orders-g" in captured.err


@pytest.mark.parametrize("section,partitions,want", [
    ({"topicPattern": "orders-.*", "topics": None}, None, "--all-topics"),
    ({"topics": ["a", "b"]}, "b:1,0", "--topic b:1,0 --topic a:0"),
])
def test_kafka_consumer_groups_topics(section, partitions, want):
    j = job(**section)
    assert f" {want} --reset-offsets" in kafka_consumer_groups_reset(
        j, "latest", None, partitions, False)


def test_kafka_consumer_groups_rejects_a_bad_partition_list():
    with pytest.raises(ConfigError, match="'x'"):
        kafka_consumer_groups_reset(job(), "latest", None, "x", False)
