"""What `storm-kafka-compat run` says and leaves behind (issue 34, items 7, 8 and 10;
issue 31, item 4b), read from the console as an operator reads it: the CLI runs with its
pipeline on a scripted Kafka, an in-memory ZooKeeper and in-process tasks (no servers)."""

import json

import pytest
import yaml

from storm_kafka_compat.cli.main import main
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.store import NodeStat
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from storm_kafka_compat.testing.scripted import ScriptedKafka
from tests import bolts

#: 2024-05-01 10:00:00 UTC, 10:05:00 UTC (epoch ms)
MAY_1_10H, MAY_1_10H05 = 1714557600000, 1714557900000


@pytest.fixture(autouse=True)
def clear_seen():
    bolts.SEEN.clear()


def storm_doc(topic, partition, offset):
    return encode_document(topology_id="clicks-3-1700000000", topology_name="clicks",
                           offset=offset, partition=partition, broker_host="k1",
                           broker_port=9092, topic=topic)


@pytest.fixture
def servers(monkeypatch):
    """The run command's pipeline on a scripted Kafka (topic ``clicks``, 2 partitions of
    30 messages) and an in-memory ZooKeeper (``servers.store``)."""
    from storm_kafka_compat.engine import driver, spark

    class Servers:
        kafka = ScriptedKafka()
        store = MemoryStateStore()

    s = Servers()
    s.kafka.create_topic("clicks", 2)
    for p in range(2):
        s.kafka.append("clicks", p, *[f"m{p}-{i}".encode() for i in range(30)])
    real = driver.Pipeline

    def pipeline(job, **kw):
        return real(job, runner=InProcessRunner(s.kafka), store=s.store,
                    kafka_factory=lambda boot: s.kafka, sleep=lambda _s: None, **kw)

    monkeypatch.setattr(driver, "Pipeline", pipeline)
    monkeypatch.setattr(spark, "prepare_environment", lambda *a, **kw: None)
    return s


def config(tmp_path, spout_id="clicks-spout"):
    path = tmp_path / f"{spout_id}.yaml"
    path.write_text(yaml.safe_dump({
        "spout": {"topic": "clicks", "zkRoot": "/kafka-offsets", "id": spout_id,
                  "scheme": "string", "startOffsetTime": -2},
        "hosts": {"static": {0: "k1:9092", 1: "k1:9092"}},
        "topology": {"name": "clicks", "id": "clicks-9-1700000000"},
        "bolt": "tests.bolts:record"}))
    return str(path)


def test_run_refuses_an_id_without_documents_while_other_ids_hold_the_topic(
        tmp_path, servers, capsys):
    """Issue 34 item 7 / issue 31 item 4b: a wrong spout.id used to replay the topic from
    startOffsetTime silently. `run` stops (exit 2) in `migrate plan`'s words, naming the
    ids, their offsets and when they were written; --new-id starts it on purpose."""
    store = servers.store
    store.write_many({"/kafka-offsets/clicks-spout/partition_0": storm_doc("clicks", 0, 12),
                      "/kafka-offsets/clicks-spout/partition_1": storm_doc("clicks", 1, 20),
                      "/kafka-offsets/old-spout/partition_0": storm_doc("clicks", 0, 3),
                      # another spout of the topology, on another topic: not a candidate
                      "/kafka-offsets/views-spout/partition_0": storm_doc("views", 0, 9)})
    store.stats["/kafka-offsets/clicks-spout/partition_0"] = NodeStat(MAY_1_10H05, 4)
    store.stats["/kafka-offsets/clicks-spout/partition_1"] = NodeStat(MAY_1_10H, 4)
    store.stats["/kafka-offsets/old-spout/partition_0"] = NodeStat(MAY_1_10H, 1)
    job = config(tmp_path, spout_id="clicks-spuot")
    assert main(["run", job, "--until-caught-up"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "Error: no document under /kafka-offsets/clicks-spuot, but 2 other id(s) under the "
        "root hold offsets of topic 'clicks': 'clicks-spout' (partition_0: 12, partition_1: 20;"
        " last written 2024-05-01 10:05:00Z); 'old-spout' (partition_0: 3; last written "
        "2024-05-01 10:00:00Z); if the Storm topology used 'clicks-spout', set spout.id: "
        "clicks-spout. If this id is new on purpose (every partition then starts at "
        "startOffsetTime), run with --new-id"]
    assert bolts.SEEN == [] and "/kafka-offsets/clicks-spuot/partition_0" not in store.docs

    # the id Storm used resumes; a new id on purpose starts at startOffsetTime, warned
    assert main(["run", config(tmp_path), "--until-caught-up"]) == 0
    assert min(r["offset"] for r in bolts.SEEN if r["partition"] == 0) == 12
    capsys.readouterr()
    assert main(["run", job, "--until-caught-up", "--new-id"]) == 0
    err = capsys.readouterr().err
    assert "warning: no document under /kafka-offsets/clicks-spuot, but 2 other id(s)" in err
    assert "starting at startOffsetTime, the id taken as new" in err
    # once it has documents of its own, the id starts without the flag
    assert main(["run", job, "--until-caught-up"]) == 0


def test_a_new_id_alone_under_its_root_or_beside_other_topics_starts(tmp_path, servers):
    servers.store.write_many({"/kafka-offsets/views-spout/partition_0":
                              storm_doc("views", 0, 9)})
    assert main(["run", config(tmp_path), "--until-caught-up"]) == 0
    assert len(bolts.SEEN) == 60


def test_the_summary_file_survives_a_console_that_went_away(tmp_path, servers, monkeypatch):
    """Issue 34 item 8: `run ... 2>&1 | tee log` and Ctrl-C: the terminal's SIGINT ends tee
    too, so the summary printed after the final commit has no reader. --summary-file
    keeps it (written before it is printed), and the run still exits 0."""
    import os
    import sys
    read_end, write_end = os.pipe()
    os.close(read_end)                                   # tee is gone
    dead = os.fdopen(write_end, "w")
    monkeypatch.setattr(sys, "stderr", dead)
    monkeypatch.setattr(sys, "stdout", dead)
    summary = tmp_path / "summary.json"
    try:
        assert main(["run", config(tmp_path), "--until-caught-up",
                     "--summary-file", str(summary)]) == 0
    finally:
        monkeypatch.undo()
        dead.close()
    written = json.loads(summary.read_text())
    assert written["stopped_by"] == "caught up" and written["messages"] == 60
    assert [(p["partition"], p["acked"], p["committed"]) for p in written["partitions"]] == \
        [(0, 30, 30), (1, 30, 30)]
    assert not (tmp_path / "summary.json.tmp").exists()


def test_the_last_progress_line_counts_the_batches_the_summary_counts(tmp_path, servers, capsys):
    """Issue 34 item 10: the last progress line said "batch 45" where the summary said "54
    batches": progress lines come every 5 s, so the last one was up to 5 s old. The run now
    ends with one more line, after the final commit, counting the same batches."""
    assert main(["run", config(tmp_path), "--until-caught-up", "--max-messages", "7"]) == 0
    err = capsys.readouterr().err.splitlines()
    progress = [line for line in err if line.startswith("batch ")]
    stopped = err[-1]
    assert stopped.startswith("stopped: caught up; 60 messages in 6 batches, "), stopped
    assert progress[-1].startswith("batch 6: ") and ", lag 0, pending 0, " in progress[-1]


def test_status_and_offsets_show_give_one_lag_at_the_same_moment(tmp_path, servers):
    """Issue 34 item 10: `status` showed LAG 17 where `offsets show` (log end - committed)
    gave 39. LAG is now log end - committed everywhere (structs.lag); what is completed but
    not yet committed shows as SPOUT-LAG (Storm's spoutLag), beside it."""
    from storm_kafka_compat.cli.console import load_config
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions
    from storm_kafka_compat.engine.report import STATUS_COLUMNS, status_rows
    from storm_kafka_compat.tools import ToolEnv
    from storm_kafka_compat.tools.lag import TABLE_COLUMNS, lag
    job = load_config(config(tmp_path))
    kafka, store = servers.kafka, servers.store
    pipe = Pipeline(job)                   # on the fixture's scripted servers
    options = RunOptions(max_messages_per_partition=7)
    pipe.open()
    pipe.batch(options)
    pipe.spout.commit()                    # 7 per partition committed
    pipe.batch(options)                    # 7 more completed, not committed yet
    status = {(r["TOPIC"], r["PARTITION"]): r for r in status_rows(pipe.reporter.report(1000))}
    with ToolEnv(job, store=store, kafka_factory=lambda boot: kafka) as env:
        shown = {(r.topic, r.partition): r.table_row() for r in lag(env)}
    for key, row in shown.items():
        assert status[key]["LAG"] == row["LAG"] == 30 - 7, (status[key], row)
        assert status[key]["SPOUT-LAG"] == 30 - 14
    assert "SPOUT-LAG" in STATUS_COLUMNS and "LAG" in TABLE_COLUMNS
    assert status[("TOTAL", "all")]["LAG"] == 46 and status[("TOTAL", "all")]["SPOUT-LAG"] == 32
    pipe.run(RunOptions(until_caught_up=True))
