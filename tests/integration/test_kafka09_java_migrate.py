"""A Java topology converted into CONFIG resumes from the documents Storm wrote, on a real
Apache Kafka 0.9.0.1 broker and ZooKeeper; ``migrate plan`` on the same servers: a safe
cut-over, an id that does not match the one Storm used, and a topology that still writes.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest
import yaml

from storm_kafka_compat.cli.main import main
from tests.bolts import read_records
from tests.integration.kafka09_jobs import KAFKA_09, cli, get, put, storm_document, zk_job

pytestmark = [pytest.mark.integration]

STORM_ID = "clicks-8-1690000000"

TOPOLOGY = """
package com.acme.clicks;

import java.io.FileInputStream;
import java.util.Arrays;
import java.util.Properties;
import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.kafka.*;
import org.apache.storm.spout.SchemeAsMultiScheme;
import org.apache.storm.topology.TopologyBuilder;

public class ClickTopology {
    private static final String SPOUT_ID = "clicks" + "-spout";

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.load(new FileInputStream(args[1]));
        SpoutConfig cfg = new SpoutConfig(new ZkHosts(props.getProperty("kafka.zk")),
            props.getProperty("kafka.topic"), props.getProperty("offsets.root"), SPOUT_ID);
        cfg.scheme = new SchemeAsMultiScheme(new StringScheme());
        cfg.zkServers = Arrays.asList(props.getProperty("offsets.zk.host"));
        cfg.zkPort = Integer.parseInt(props.getProperty("offsets.zk.port"));
        cfg.startOffsetTime = kafka.api.OffsetRequest.EarliestTime();
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("clicks", new KafkaSpout(cfg), 2);
        builder.setBolt("record", new RecordBolt(), 2).shuffleGrouping("clicks");
        StormSubmitter.submitTopology(args[0], new Config(), builder.createTopology());
    }
}
"""


@pytest.mark.spark
def test_converted_java_topology_resumes_from_storm_documents(tmp_path, kafka09, kafka09_topic,
                                                              zk_root):
    counts = {0: 120, 1: 80}
    topic = kafka09_topic(2, [(p, None, f"m{p}-{i}".encode())
                              for p, n in counts.items() for i in range(n)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    zk = kafka09.zk()
    put(zk, f"{zk_root}/clicks-spout/partition_0",
        storm_document(topic, 0, 70, broker=broker, topology_id=STORM_ID))
    put(zk, f"{zk_root}/clicks-spout/partition_1",
        storm_document(topic, 1, 80, broker=broker, topology_id=STORM_ID))

    source = tmp_path / "src" / "ClickTopology.java"
    source.parent.mkdir()
    source.write_text(TOPOLOGY)
    prod = tmp_path / "prod.properties"         # what the topology read from args[1]
    prod.write_text(f"kafka.zk={kafka09.zk_connect}\nkafka.topic={topic}\n"
                    f"offsets.root={zk_root}\noffsets.zk.host=127.0.0.1\n"
                    f"offsets.zk.port={kafka09.zookeeper.port}\nargs.0=clicks\n")
    job = tmp_path / "job.yaml"
    done = cli("config", "convert", str(source.parent), "--filter", str(prod), "-o", str(job))
    assert done.returncode == 0, done.stderr
    converted = yaml.safe_load(job.read_text())
    # a one-element list read from a property is written as that property's value (a
    # comma-separated string the CONFIG splits, so "zk1,zk2" in the file gives two hosts)
    assert converted["spout"] == {"topic": topic, "zkRoot": zk_root, "id": "clicks-spout",
                                  "scheme": "string", "zkServers": "127.0.0.1",
                                  "zkPort": kafka09.zookeeper.port, "startOffsetTime": -2}
    assert converted["hosts"] == {"zk": kafka09.zk_connect}
    assert converted["bolt"] == "com.acme.clicks:RecordBolt"
    assert "convert: bolts[record] com.acme.clicks.RecordBolt not mapped: port the bolt" \
        in done.stderr
    # what the operator adds: the ported bolt, the broker generation, a fixed id
    converted.update(bolt="tests.bolts:record", kafka=dict(KAFKA_09),
                     spark={"master": "local[2]", "tasks": 2})
    converted["topology"]["id"] = "clicks-compat"
    job.write_text(yaml.safe_dump(converted))

    record = tmp_path / "records.jsonl"
    run = cli("run", str(job), "--until-caught-up", "--json", record=record)
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    assert {p["partition"]: (p["decision"], p["resumed_from"])
            for p in summary["partitions"]} == {0: ("resume", 70), 1: ("resume", 80)}
    seen = [(r["partition"], r["offset"]) for r in read_records(str(record))]
    assert sorted(seen) == [(0, o) for o in range(70, 120)]      # once each, nothing before
    assert get(zk, f"{zk_root}/clicks-spout/partition_0") == storm_document(
        topic, 0, 120, broker=broker, topology_id="clicks-compat")


# --- migrate plan ----------------------------------------------------------------------------

def _seed(zk: Any, zk_root: str, spout_id: str, topic: str, offsets: Dict[int, int],
          broker: Tuple[str, int]) -> None:
    for p, offset in offsets.items():
        put(zk, f"{zk_root}/{spout_id}/partition_{p}",
            storm_document(topic, p, offset, broker=broker, topology_id=STORM_ID))


def _plan(config: Path, capsys: Any, *extra: str) -> Tuple[int, Dict[str, Any]]:
    code = main(["migrate", "plan", str(config), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_migrate_plan_safe(tmp_path, kafka09, kafka09_topic, zk_root, capsys):
    topic = kafka09_topic(2, [(p, None, b"x") for p in (0, 1) for _ in range(30)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    _seed(kafka09.zk(), zk_root, "spout1", topic, {0: 10, 1: 30}, broker)
    config = zk_job(tmp_path / "job.yaml", kafka09, topic, zk_root)
    code, plan = _plan(config, capsys, "--watch", "1")
    assert code == 0 and plan["safe"] is True, plan["problems"]
    assert [(p["partition"], p["decision"], p["start_offset"]) for p in plan["partitions"]] == \
        [(0, "resume", 10), (1, "resume", 30)]
    assert plan["lag"] == {f"{topic}/0": 20, f"{topic}/1": 0}
    assert plan["changed_during_watch"] == [] and plan["other_ids"] == []
    assert plan["verdict"].startswith("safe to start")
    # the screen: a table, the watch, one verdict line
    assert main(["migrate", "plan", str(config), "--watch", "0"]) == 0
    screen = capsys.readouterr().out.splitlines()
    assert screen[0] == f"{zk_root}/spout1 (this job writes topology id 'clicks-9-1700000000')"
    assert screen[-1].startswith("safe to start: every partition resumes or starts as shown")


def test_migrate_plan_names_the_ids_storm_used(tmp_path, kafka09, kafka09_topic, zk_root,
                                               capsys):
    topic = kafka09_topic(2, [(p, None, b"x") for p in (0, 1) for _ in range(20)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    zk = kafka09.zk()
    old, last = "6f0c1e2a-1111-4b2e-9c1d-2e5f7a9b0c11", "9d4e8b7c-2222-4f3a-8b1c-0a1b2c3d4e5f"
    _seed(zk, zk_root, old, topic, {0: 5, 1: 6}, broker)
    _seed(zk, zk_root, last, topic, {0: 15, 1: 16}, broker)   # written last: Storm's last run
    config = zk_job(tmp_path / "job.yaml", kafka09, topic, zk_root, spout_id="spout-new")
    code, plan = _plan(config, capsys, "--watch", "0")
    assert code == 1 and plan["safe"] is False
    assert [d["id"] for d in plan["other_ids"]] == [last, old]
    assert plan["other_ids"][0]["offsets"] == {f"{zk_root}/{last}/partition_0": 15,
                                               f"{zk_root}/{last}/partition_1": 16}
    assert plan["other_ids"][0]["topology_ids"] == [STORM_ID]
    assert [p["decision"] for p in plan["partitions"]] == ["no_state", "no_state"]
    assert len(plan["problems"]) == 1
    assert re.fullmatch(
        re.escape(f"no document under {zk_root}/spout-new, but 2 other id(s) under the root "
                  f"hold offsets of topic {topic!r}: {last!r} (partition_0: 15, partition_1: "
                  f"16; last written ") + r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ" +
        re.escape(f"); {old!r} (partition_0: 5, partition_1: 6; last written ") + ".*" +
        re.escape(f"); if the Storm topology used {last!r}, set spout.id: {last}"),
        plan["problems"][0]), plan["problems"][0]
    # the listing the random-id trap points at
    assert main(["offsets", "show", "--zk", f"127.0.0.1:{kafka09.zookeeper.port}",
                 "--zk-root", zk_root, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [d["id"] for d in listed] == [last, old]


def test_migrate_plan_sees_a_topology_that_still_writes(tmp_path, kafka09, kafka09_topic,
                                                        zk_root, capsys):
    topic = kafka09_topic(1, [(0, None, b"x") for _ in range(50)])
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    zk = kafka09.zk()
    _seed(zk, zk_root, "spout1", topic, {0: 10}, broker)
    config = zk_job(tmp_path / "job.yaml", kafka09, topic, zk_root)
    stop = threading.Event()

    def storm_commits() -> None:      # a live Storm topology: a commit every 200 ms
        offset = 10
        while not stop.wait(0.2):
            offset += 1
            put(zk, f"{zk_root}/spout1/partition_0",
                storm_document(topic, 0, offset, broker=broker, topology_id=STORM_ID))

    writer = threading.Thread(target=storm_commits, daemon=True)
    writer.start()
    try:
        code, plan = _plan(config, capsys, "--watch", "1.5")
    finally:
        stop.set()
        writer.join(timeout=5)
    assert code == 1
    assert plan["changed_during_watch"] == [f"{zk_root}/spout1/partition_0"]
    assert plan["problems"][0].startswith(
        f"1 offset(s) changed during the 1.5 s watch ({zk_root}/spout1/partition_0): the Storm "
        f"topology (or another job) still commits; stop it")
