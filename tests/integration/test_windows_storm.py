"""Windowed bolts against real Storm (issue 35): one Kafka 3.9 topic read by Storm 2.8.3
(LocalCluster, BaseWindowedBolt in Java) and by the project on Spark local[2] (the Python
ports, tests/windowed_bolts.py): a window of the last 5 tuples every 3, and tumbling 10 s
windows on the records' own time with a 3 s lag, give the same windows with the same
counts on both, and the truth; the project's driver is killed mid-window and a new one
resumes: every window still fires once, whole."""

from __future__ import annotations

import os
import random

import pytest

from storm_kafka_compat.engine.driver import Pipeline
from tests.integration.conftest_spark import spark, spark_records  # noqa: F401
from tests.peers.fixtures import storm2_ready  # noqa: F401
from tests.peers.storm_windows import storm_window_results
from tests.time_runs import drive_then_kill, make_job, run_until
from tests.windowed_bolts import sliding_truth, tumbling_truth

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SPEC = {"bolts": [
    {"name": "parse", "bolt": "tests.windowed_bolts:ParseEvent",
     "inputs": [{"from": "spout", "grouping": "shuffle"}]},
    {"name": "sliding", "bolt": "tests.windowed_bolts:SlidingCount",
     "inputs": [{"from": "parse", "grouping": "global"}]},
    {"name": "tumbling", "bolt": "tests.windowed_bolts:TumblingByTime",
     "inputs": [{"from": "parse", "grouping": "global"}]},
    {"name": "report", "bolt": "tests.windowed_bolts:Record",
     "inputs": [{"from": "sliding", "grouping": "shuffle"},
                {"from": "tumbling", "grouping": "shuffle"}]}]}


def lines_with_times(n, seed):
    """``"<ms> <word>"``, 400 ms apart with up to 2 s of disorder (under the 3 s lag)."""
    rng = random.Random(seed)
    return [f"{i * 400 + rng.randrange(0, 2000)} {rng.choice('abcdef')}" for i in range(n)]


def ours(records, kind):
    if kind == "sliding":
        return sorted((r["first"], r["last"], r["count"]) for r in records
                      if r.get("kind") == "sliding")
    return sorted((r["end"], r["count"]) for r in records if r.get("kind") == "tumbling")


def test_windows_match_storm_with_the_driver_killed_mid_window(
        spark, spark_records, zk_server, zk_root, kafka39, unique, tmp_path,  # noqa: F811
        storm2_ready):  # noqa: F811
    lines = lines_with_times(150, seed=35)
    sliding, tumbling = sliding_truth(lines), tumbling_truth(lines)
    topic = unique("windows")
    kafka39.create_topic(topic, 1, 1)        # one partition: a count window sees one order
    kafka39.produce(topic, [(0, None, line.encode()) for line in lines[:90]])
    os.environ["SKC_TEST_RUN"] = topic
    job = make_job(topic, zk_server, zk_root, kafka39.bootstrap, SPEC, tmp_path / "state")
    first = Pipeline(job, spark=spark, pace=False)
    assert first.layout.stages == (("parse",), ("sliding", "tumbling", "report"))

    def mid_window():
        done = ours(spark_records(topic), "tumbling")
        pm = first.spout.managers().get((topic, 0)) if first.spout.managers() else None
        return len(done) >= 3 and pm is not None and pm.committed_to > 0

    drive_then_kill(first, mid_window, timeout_s=150)
    before = ours(spark_records(topic), "tumbling")
    kafka39.produce(topic, [(0, None, line.encode()) for line in lines[90:]])
    second = Pipeline(job, spark=spark, take_over=True, pace=False)
    run_until(second, lambda: (len(ours(spark_records(topic), "tumbling")) >= len(tumbling)
                               and len(ours(spark_records(topic), "sliding")) >= len(sliding)),
              timeout_s=150)
    got = {kind: ours(spark_records(topic), kind) for kind in ("sliding", "tumbling")}
    assert before and before == got["tumbling"][:len(before)]
    assert got["tumbling"] == sorted(tumbling.items())        # once each, whole
    assert got["sliding"] == sorted(sliding)
    # Storm 2.8.3 on the same topic, the Java bolts of the same windows
    storm = storm_window_results("windows", kafka39.bootstrap, topic, tmp_path / "storm",
                                 expected={"sliding": len(sliding),
                                           "tumbling": len(tumbling)})
    assert sorted(tuple(int(v) for v in row) for row in storm["tumbling"]) == got["tumbling"]
    assert sorted(tuple(int(v) for v in row) for row in storm["sliding"]) == got["sliding"]
