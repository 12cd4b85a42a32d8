"""``storm-kafka-compat bench --json`` with tiny sizes runs and prints the report."""

import json

import pytest
from click.testing import CliRunner

from storm_kafka_compat.cli.main import cli
from tests.integration.conftest_spark import spark  # noqa: F401

pytestmark = pytest.mark.integration


def test_bench_json_tiny(spark):  # noqa: F811  (the session's Spark is reused by the command)
    result = CliRunner().invoke(cli, [
        "bench", "--json", "--messages", "200", "--partitions", "2", "--size", "16",
        "--memory-window", "1000", "--zk-partitions", "1,3", "--plan-partitions", "2,20",
        "--warmup-messages", "5", "--repeat", "2", "--latency-seconds", "2"],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"machine", "options", "fetch", "plain", "pipeline", "latency", "memory",
            "zookeeper", "planning", "ratios", "targets", "skipped", "command"} <= set(report)
    # a real Apache Kafka 0.9.0.1 broker unless Java or npm is missing (then it says so)
    assert report["machine"]["broker"] == "kafka09" or any(
        s.startswith("kafka09:") for s in report["skipped"])
    raw = report["fetch"]["raw"]["kafka-python"]
    assert raw["messages"] == 200 and len(raw["runs"]) == 2
    assert raw["min"] <= raw["median"] <= raw["max"]
    assert report["plain"]["kafka-python"]["messages"] == 200
    assert report["pipeline"]["kafka-python"]["messages"] == 200
    assert len(report["pipeline"]["kafka-python"]["runs"]) == 2
    lat = report["latency"]["kafka-python"]
    assert lat["samples"] == lat["produced"] > 0 and lat["p50_ms"] <= lat["p99_ms"]
    assert report["ratios"]["pipeline_over_plain"]["kafka-python"] > 0
    assert set(report["memory"]) == {"in_order", "random", "batches"}
    assert [z["partitions"] for z in report["zookeeper"]] == [1, 3]
    assert all(z["round_trips_per_commit"] == 1 for z in report["zookeeper"])
    assert [p["partitions"] for p in report["planning"]] == [2, 20]
    assert report["ratios"]["pipeline_over_raw"]["kafka-python"] > 0
    names = {t["name"] for t in report["targets"]}
    assert "pipeline kafka-python / plain PySpark job kafka-python" in names
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        assert any(s.startswith("confluent:") for s in report["skipped"])
    else:
        assert report["pipeline"]["confluent"]["messages"] == 200
        assert report["ratios"]["confluent_over_kafka_python"]["raw"] > 0
    assert spark.sparkContext._jsc is not None     # the shared session was not stopped
