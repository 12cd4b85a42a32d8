import pytest

prometheus_client = pytest.importorskip(
    "prometheus_client", reason="prometheus-client (the prometheus extra) is not installed")

from storm_kafka_compat.engine.prometheus import PrometheusExporter, split_key  # noqa: E402


@pytest.mark.parametrize("name,key,expected", [
    ("kafkaOffset", "clicks/partition_3/spoutLag", ("clicks", "3", "spoutLag")),
    ("kafkaOffset", "clicks/totalSpoutLag", ("clicks", "total", "totalSpoutLag")),
    ("kafkaOffset", "a.b/partition_0/latestCompletedOffset", ("a.b", "0", "latestCompletedOffset")),
    ("kafkaPartition", "partition_2/fetchAPICallCount", ("", "2", "fetchAPICallCount")),
    ("kafkaPartition", "t/partition_2/lostMessageCount", ("t", "2", "lostMessageCount")),
    ("kafkaPartition", "nonsense", None),
])
def test_split_key(name, key, expected):
    assert split_key(name, key) == expected


def test_records_become_labelled_gauges():
    exporter = PrometheusExporter(port=None, registry=prometheus_client.CollectorRegistry())
    exporter.update({"name": "kafkaOffset", "value": {"clicks/partition_1/spoutLag": 42,
                                                      "clicks/totalSpoutLag": 50}})
    exporter.update({"name": "kafkaPartition", "value": {"partition_1/fetchAPILatencyMax": None,
                                                         "partition_1/fetchAPICallCount": 7}})
    exporter.update({"name": "stormKafkaCompat", "value": {"commitFailures": 2}})
    text = prometheus_client.generate_latest(exporter.registry).decode()
    assert 'storm_kafka_offset{metric="spoutLag",partition="1",topic="clicks"} 42.0' in text
    assert ('storm_kafka_offset{metric="totalSpoutLag",partition="total",topic="clicks"} 50.0'
            in text)
    assert 'storm_kafka_partition{metric="fetchAPICallCount",partition="1",topic=""} 7.0' in text
    assert 'storm_kafka_compat{metric="commitFailures"} 2.0' in text
