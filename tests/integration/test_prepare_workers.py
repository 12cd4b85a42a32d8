"""The Python workers are prepared before the first batch, as Storm prepares its bolts
before the spout's first tuple (engine/runner.py ``prepare_workers``): Spark local[2],
tansu (nothing here depends on the broker), ZooKeeper from pyspark's jars."""

import time

import pytest

from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from tests import bolts
from tests.integration.conftest_spark import spark, spark_records  # noqa: F401
from tests.integration.test_pipeline_spark import make_config

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_each_slot_prepares_a_python_worker_before_the_first_batch(
        spark, zk_server, zk_root, tansu, kafka_topic):  # noqa: F811
    topic = kafka_topic(partitions=4, messages=[(i % 4, None, f"m{i}".encode())
                                                for i in range(400)])
    job = make_config(topic, zk_server, zk_root, tansu,
                      topology={"topology.name": topic}, topology_spec=bolts.PREPARE_SPEC)
    pipe = FirstBatchTimed(job, spark=spark)
    summary = pipe.run(RunOptions(until_caught_up=True, idle_sleep_ms=50))
    assert summary.messages == 400
    records = [r for r in bolts.read_records(spark._skc_record_path)
               if r.get("tag") == topic]
    assert pipe.first_batch is not None
    early = {r["pid"] for r in records
             if r["kind"] == "prepare" and r["time"] < pipe.first_batch}
    # both slots of local[2], each in a Python worker of its own, before the first
    # batch was planned (without the preparation a worker's bolt is prepared in it)
    assert len(early) == 2, records
    assert len([r for r in records if r["kind"] == "execute"]) == 400


class FirstBatchTimed(Pipeline):
    """Notes when its first batch started (wall time, as the bolts record)."""

    first_batch = None

    def batch(self, options):
        if self.first_batch is None:
            self.first_batch = time.time()
        return super().batch(options)
