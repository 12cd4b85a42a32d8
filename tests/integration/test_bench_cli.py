"""``storm-kafka-compat bench --json`` with tiny sizes runs, as a command of its own
(its Spark session carries Spark's Kafka source), and prints the report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CLI = Path(sys.executable).with_name("storm-kafka-compat")


def test_bench_json_tiny() -> None:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run([
        str(CLI), "bench", "--json", "--messages", "200", "--partitions", "2", "--size", "16",
        "--memory-window", "1000", "--zk-partitions", "1,3", "--plan-partitions", "2,20",
        "--warmup-messages", "5", "--repeat", "2", "--latency-seconds", "2",
        "--scale-partitions", "5", "--scale-sizes", "1000000", "--word-count", "400"],
        capture_output=True, text=True, env=env, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"machine", "options", "fetch", "plain", "plain_defaults", "plain_settings",
            "spark_source", "frontends", "pipeline", "latency", "memory", "zookeeper", "planning",
            "ratios", "targets", "skipped", "command"} <= set(report)
    # a real Apache Kafka 3.9 broker unless Java or Maven is missing (then it says so)
    assert report["machine"]["broker"] == "kafka39" or any(
        s.startswith("kafka39:") for s in report["skipped"])
    raw = report["fetch"]["raw"]["kafka-python"]
    assert raw["messages"] == 200 and len(raw["runs"]) == 2
    assert raw["min"] <= raw["median"] <= raw["max"]
    assert report["plain"]["kafka-python"]["messages"] == 200
    assert report["plain_defaults"]["kafka-python"]["messages"] == 200
    # the baseline runs with the pipeline's consumer settings, and says which
    assert report["plain_settings"]["kafka-python"]["fetch_max_wait_ms"] == 100
    assert report["pipeline"]["kafka-python"]["messages"] == 200
    assert len(report["pipeline"]["kafka-python"]["runs"]) == 2
    lat = report["latency"]["kafka-python"]
    assert lat["samples"] == lat["produced"] > 0 and lat["p50_ms"] <= lat["p99_ms"]
    assert report["ratios"]["pipeline_over_plain"]["kafka-python"] > 0
    assert set(report["memory"]) == {"in_order", "random", "batches"}
    assert [z["partitions"] for z in report["zookeeper"]] == [1, 3]
    assert all(z["round_trips_per_commit"] == 1 for z in report["zookeeper"])
    assert [p["partitions"] for p in report["planning"]] == [2, 20]
    # the cost as the work grows: the main figure, 5 partitions, 1 MB values (the same
    # 3,200 bytes: 2 messages, one a partition), the multi-stage topology
    rows = {row["name"]: row for row in report["scaling"]}
    assert list(rows) == ["main: 2 partitions, 16 B values", "5 partitions",
                          "1,000,000 B values", "multi-stage, 2 partitions"]
    assert [rows[n]["messages"] for n in rows] == [200, 200, 2, 200]
    for name, row in rows.items():
        f = row["backends"]["kafka-python"]
        assert f["pipeline_over_plain"] > 0 and f["plain_msgs_per_s"] > 0, name
        assert name.startswith("main") or f["pipeline_growth"] > 0
        assert len(row["pipeline"]["kafka-python"]["runs"]) == 2
    assert rows["multi-stage, 2 partitions"]["pipeline"]["kafka-python"]["batches"] >= 1
    # the two-stage figure with its state kept: the counts matched (else an error)
    wc = report["word_count"]
    assert wc["sentences"] == 400
    assert wc["kafka-python"]["pipeline"]["messages"] == 400
    assert wc["kafka-python"]["plain"]["messages"] == 400
    assert wc["kafka-python"]["pipeline_over_plain"] > 0
    # the bound of calling the bolts per tuple: the same counts (else an error), a rate
    assert wc["kafka-python"]["bolt_calls"]["messages"] == 400
    assert wc["kafka-python"]["bolt_calls_over_plain"] > 0
    assert wc["kafka-python"]["pipeline_over_bolt_calls"] > 0
    # a streamparse bolt's cost per tuple beside the project's own (the test extra has it)
    bolts = report["python_bolts"]
    assert set(bolts["us_per_tuple"]) == {"own", "streamparse", "multilang"}
    assert bolts["over_own"]["own"] == 1 and all(v > 0 for v in bolts["us_per_tuple"].values())
    plan = report["planning"][-1]
    assert plan["state_bytes"] > 0 and plan["plan_bytes"] > 0
    names = {t["name"] for t in report["targets"]}
    assert ("pipeline kafka-python / plain PySpark job kafka-python (the pipeline's consumer "
            "settings)") in names
    if report["machine"]["broker"] == "kafka39":
        for kind in ("arrow", "batch", "count", "streaming"):
            assert report["spark_source"][kind]["messages"] == 200
            assert len(report["spark_source"][kind]["runs"]) == 2
        assert rows["5 partitions"]["spark_arrow"]["messages"] == 200
        assert rows["5 partitions"]["backends"]["kafka-python"]["pipeline_over_spark_arrow"] > 0
    # the project's own front ends beside Spark's source, on the main topic
    for front in ("storm_source", "dataframe"):
        figure = report["frontends"][front]["kafka-python"]
        assert figure["messages"] == 200 and len(figure["runs"]) == 2
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        assert any(s.startswith("confluent:") for s in report["skipped"])
    else:
        assert report["pipeline"]["confluent"]["messages"] == 200
        assert report["plain_settings"]["confluent"]["fetch.queue.backoff.ms"] == 10
        assert report["ratios"]["confluent_over_kafka_python"]["raw"] > 0
