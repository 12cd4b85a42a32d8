"""DataFrame mode on real servers: the driver loop with DataFrameRunner.

A batch function that returns acks the batch, one that raises gets the batch
retried, one that returns failed rows gets only those retried; the documents
reach the log end.

tansu workaround: ``kafka_topic`` writes one record per batch (tansu's high
watermark); test_kafka09_spark_sources.py runs DataFrame mode on Apache Kafka
0.9.0.1 with a batching producer.
"""

import pytest

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.executor.reader import KAFKA_COLUMNS
from storm_kafka_compat.engine.dataframe import DataFrameRunner
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.offsets.document import parse_document
from tests.integration.conftest_spark import spark  # noqa: F401

pytestmark = pytest.mark.integration


def _job(zk_server, tansu, topic, zk_root, **spout):
    return job_config_from_dict({
        "spout": {"topic": topic, "zkRoot": zk_root, "id": "df-spout",
                  "zkServers": [zk_server.connect_string], "stateUpdateIntervalMs": 0, **spout},
        "hosts": {"bootstrap": tansu.bootstrap},
        "topology": {"name": "df-topo", "id": "df-topo-1-1"},
    })


def _run(job, spark, function):  # noqa: F811
    executor = DataFrameRunner(spark, function)
    # these tests check what a batch's outcome means, on whole batches; the driver's
    # time-sized batches (on by default for this mode) are tested in test_pacing.py
    summary = Pipeline(job, spark=spark, runner=executor, sleep=lambda s: None,
                       pace=False).run(
        RunOptions(until_caught_up=True, max_messages_per_partition=50, idle_sleep_ms=0,
                   max_batches=20))
    return summary, executor


def _offsets(zk_client, zk_root, partitions):
    return [parse_document(zk_client.get_async(f"{zk_root}/df-spout/partition_{p}")
                           .get(timeout=10)[0]).offset for p in range(partitions)]


def _produce(kafka_topic, partitions, n):
    return kafka_topic(partitions=partitions, messages=[
        (p, f"k{i}".encode(), f"v{p}-{i}".encode()) for p in range(partitions) for i in range(n)])


def test_a_function_that_returns_acks_everything(
        spark, zk_server, zk_client, zk_root, tansu, kafka_topic):  # noqa: F811
    topic = _produce(kafka_topic, 2, 30)
    seen = []

    def batch(df):
        assert tuple(df.columns) == KAFKA_COLUMNS
        seen.extend((r["partition"], r["offset"], r["value"]) for r in df.collect())

    summary, executor = _run(_job(zk_server, tansu, topic, zk_root), spark, batch)
    assert summary.stopped_by == "caught up"
    assert sorted(seen) == sorted((p, i, f"v{p}-{i}".encode()) for p in range(2)
                                  for i in range(30))
    assert _offsets(zk_client, zk_root, 2) == [30, 30]
    assert executor.failed_batches == 0


def test_a_function_that_raises_once_gets_the_batch_retried(
        spark, zk_server, zk_client, zk_root, tansu, kafka_topic):  # noqa: F811
    topic = _produce(kafka_topic, 1, 20)
    calls = []

    def batch(df):
        calls.append(sorted(r["offset"] for r in df.select("offset").collect()))
        if len(calls) == 1:
            raise RuntimeError("sink unavailable")

    summary, executor = _run(_job(zk_server, tansu, topic, zk_root), spark, batch)
    assert calls[0] == list(range(20)) and calls[1] == list(range(20))   # the retry
    assert executor.failed_batches == 1
    assert summary.partitions[0].failed == 20
    assert _offsets(zk_client, zk_root, 1) == [20]


def test_returned_failed_rows_are_the_only_ones_retried(
        spark, zk_server, zk_client, zk_root, tansu, kafka_topic):  # noqa: F811
    topic = _produce(kafka_topic, 2, 15)
    seen = []
    failed_once = set()

    def batch(df):
        rows = [(r["topic"], r["partition"], r["offset"]) for r in df.collect()]
        seen.extend((p, o) for _, p, o in rows)
        bad = [(t, p, o) for t, p, o in rows if o in (3, 7) and (p, o) not in failed_once]
        failed_once.update((p, o) for _, p, o in bad)
        if bad:      # a DataFrame of the failed rows for partition 0, a list for partition 1
            df_bad = df.where("partition = 0 and offset in (3, 7)")
            return df_bad if all(p == 0 for _, p, _ in bad) else bad
        return None

    summary, executor = _run(_job(zk_server, tansu, topic, zk_root), spark, batch)
    counts = {}
    for key in seen:
        counts[key] = counts.get(key, 0) + 1
    assert {k for k, n in counts.items() if n == 2} == {(0, 3), (0, 7), (1, 3), (1, 7)}
    assert all(counts.get((p, o)) in (1, 2) for p in range(2) for o in range(15))
    assert len(counts) == 30
    assert _offsets(zk_client, zk_root, 2) == [15, 15]
