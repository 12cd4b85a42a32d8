"""The one SparkSession of a test session (local[2], UI off).

Import the fixture where needed: ``from tests.integration.conftest_spark import spark``.
"""

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from storm_kafka_compat.config import SparkConfig
    from storm_kafka_compat.pipeline.spark import get_spark

    session = get_spark(SparkConfig(master="local[2]", app_name="storm-kafka-compat-tests"))
    yield session
    session.stop()
