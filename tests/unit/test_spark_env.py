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
