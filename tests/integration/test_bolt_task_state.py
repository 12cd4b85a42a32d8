"""One state per bolt task, as in Storm (issue 31): storm-starter's WordCount and a
running maximum on Storm's stateful-bolt API, read from a real Kafka 3.9 topic on Spark
local[2], end with exactly the true counts; and the same final counts as Storm 2.8.3's
own LocalCluster running the same topology shape on the same topic."""

from __future__ import annotations

import collections

import pytest

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from tests import stateful_bolts
from tests.integration.conftest_spark import spark, spark_records  # noqa: F401
from tests.peers.fixtures import storm2_ready  # noqa: F401
from tests.peers.storm_topologies import storm_running_max, storm_word_counts
from tests.stateful_inputs import as_messages, key_values, running_max, sentences, word_counts

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 4


def make_job(topic, zk_server, zk_root, bootstrap, spec, state_dir):
    return job_config_from_dict({
        "spout": {"topic": topic, "zkRoot": f"{zk_root}/offsets", "id": f"stateful-{topic}",
                  "scheme": "string", "stateUpdateIntervalMs": 300},
        "hosts": {"bootstrap": bootstrap},
        "topology": {"topology.name": "stateful", "topology.id": "stateful-py",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": zk_server.port,
                     "topology.state.dir": str(state_dir), **spec},
        "spark": {"master": "local[2]"}})


def run_to_end(job, spark):  # noqa: F811
    pipe = Pipeline(job, spark=spark)
    summary = pipe.run(RunOptions(until_caught_up=True, idle_sleep_ms=50))
    return pipe, summary


def test_word_count_counts_every_word_exactly_on_local_2(
        spark, spark_records, zk_server, zk_root, kafka39, unique, tmp_path):  # noqa: F811
    lines = sentences(3000, seed=31)
    topic = unique("wordcount")
    kafka39.create_topic(topic, PARTITIONS, 1)
    kafka39.produce(topic, as_messages(lines, PARTITIONS))
    job = make_job(topic, zk_server, zk_root, kafka39.bootstrap, stateful_bolts.WORD_COUNT,
                   tmp_path / "state")
    pipe, summary = run_to_end(job, spark)
    assert pipe.layout.stages == (("first",), ("state", "report"))
    records = [r for r in spark_records(topic) if r.get("kind") == "state"]
    assert stateful_bolts.final_values(records) == word_counts(lines)
    # each word was counted by one process for the whole run (one instance per task)
    pids = collections.defaultdict(set)
    for r in records:
        pids[r["key"]].add(r["pid"])
    assert all(len(p) == 1 for p in pids.values()), dict(pids)
    assert summary.batches > 1 and summary.bolt_errors == {}


def test_running_max_on_storms_stateful_api_is_exact(
        spark, spark_records, zk_server, zk_root, kafka39, unique, tmp_path):  # noqa: F811
    lines = key_values(2000, seed=32)
    topic = unique("runningmax")
    kafka39.create_topic(topic, PARTITIONS, 1)
    kafka39.produce(topic, as_messages(lines, PARTITIONS))
    job = make_job(topic, zk_server, zk_root, kafka39.bootstrap, stateful_bolts.RUNNING_MAX,
                   tmp_path / "state")
    run_to_end(job, spark)
    assert stateful_bolts.final_values(spark_records(topic)) == running_max(lines)


def test_the_same_final_counts_as_storm_on_the_same_topic(
        spark, spark_records, zk_server, zk_root, kafka39, unique, tmp_path,  # noqa: F811
        storm2_ready):  # noqa: F811
    """Storm 2.8.3 (LocalCluster, Java bolts of the same shape, storm-kafka-client's
    spout) and the project read one topic; both end with the same counts and maxima."""
    words = sentences(2000, seed=33)
    maxima = key_values(1000, seed=34)
    results = {}
    for name, lines, spec, storm in (
            ("wordcount", words, stateful_bolts.WORD_COUNT, storm_word_counts),
            ("runningmax", maxima, stateful_bolts.RUNNING_MAX, storm_running_max)):
        topic = unique(name)
        kafka39.create_topic(topic, PARTITIONS, 1)
        kafka39.produce(topic, as_messages(lines, PARTITIONS))
        in_storm = storm(kafka39.bootstrap, topic, tmp_path / f"storm-{name}",
                         messages=len(lines))
        # a zkRoot per topology: the second must not resume from the first's offsets
        job = make_job(topic, zk_server, f"{zk_root}/{name}", kafka39.bootstrap, spec,
                       tmp_path / f"state-{name}")
        run_to_end(job, spark)
        ours = stateful_bolts.final_values(spark_records(topic))
        results[name] = (ours, in_storm)
        assert ours == in_storm, name
    assert results["wordcount"][0] == word_counts(words)
    assert results["runningmax"][0] == running_max(maxima)
