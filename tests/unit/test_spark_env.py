import os

from storm_kafka_compat.engine import spark as spark_mod


def test_spark_submit_is_detected_by_its_gateway(monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert not spark_mod.under_spark_submit()
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "40123")
    assert spark_mod.under_spark_submit()


def test_loopback_binding_only_for_a_local_master(monkeypatch):
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    spark_mod.prepare_environment(local=False)
    assert "SPARK_LOCAL_IP" not in os.environ
    spark_mod.prepare_environment(("/opt/job",), local=True)
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert os.environ["PYTHONPATH"].split(os.pathsep)[0] == "/opt/job"


def test_a_local_master_retries_a_task_as_a_cluster_does():
    """local mode tries a task once: a dead Python worker would fail the whole batch
    and throw away every partition's results (issue 17)."""
    retries = spark_mod.with_task_retries
    assert retries("local[2]") == "local[2,4]"
    assert retries("local[*]") == "local[*,4]"
    assert retries("local") == "local[1,4]"
    assert retries("local[3,1]") == "local[3,1]"            # the user's choice stands
    assert retries("spark://10.0.0.1:7077") == "spark://10.0.0.1:7077"
    assert retries("yarn") == "yarn"
    assert retries("local-cluster[2,1,1024]") == "local-cluster[2,1,1024]"
