"""The one SparkSession of a test session (local[2], UI off).

Import the fixture where needed: ``from tests.integration.conftest_spark import spark``.

Spark's Python workers inherit the environment of the moment the session
starts, so the record file of the test bolts (``tests/bolts.py``) is fixed
here, once per session: ``STORM_KAFKA_COMPAT_TEST_RECORD`` names a file in a
session temp folder. Tests tell their records apart by topic
(:func:`spark_records`).
"""

import os
import sys

import pytest

RECORD_ENV = "STORM_KAFKA_COMPAT_TEST_RECORD"


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ.setdefault(RECORD_ENV,
                          str(tmp_path_factory.mktemp("spark-records") / "records.jsonl"))
    from storm_kafka_compat.config import SparkConfig
    from storm_kafka_compat.engine.spark import get_spark

    session = get_spark(SparkConfig(master="local[2]", app_name="storm-kafka-compat-tests"))
    session._skc_record_path = os.environ[RECORD_ENV]
    yield session
    session.stop()


@pytest.fixture
def spark_records(spark):
    """Return ``read(topic) -> list of record dicts`` written by the test bolts in
    the Spark workers for that topic."""
    from tests.bolts import read_records

    path = spark._skc_record_path

    def read(topic):
        return [r for r in read_records(path) if r.get("topic") == topic]

    return read
