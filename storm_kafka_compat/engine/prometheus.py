"""Prometheus export of the metric records (optional extra ``prometheus``).

Each record the driver sends (``kafkaOffset``, ``kafkaPartition``,
``stormKafkaCompat``; :meth:`storm_kafka_compat.engine.report.Reporter.emit_metrics`)
becomes gauges named after Storm's metric, with the Storm key split into labels:

* ``kafkaOffset`` key ``<topic>/partition_<N>/<name>`` ->
  ``storm_kafka_offset{topic, partition, metric=<name>}``; per-topic totals
  ``<topic>/<totalName>`` -> the same gauge with ``partition="total"``;
* ``kafkaPartition`` key ``[<topic>/]partition_<N>/<name>`` ->
  ``storm_kafka_partition{topic, partition, metric}`` (topic empty when not in
  the key);
* ``stormKafkaCompat`` -> ``storm_kafka_compat{metric}``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Mapping, Optional, Tuple

from storm_kafka_compat.errors import ConfigError

_PARTITION = re.compile(r"^(?:(?P<topic>.+)/)?partition_(?P<p>\d+)/(?P<metric>[^/]+)$")
_TOTAL = re.compile(r"^(?P<topic>.+)/(?P<metric>total[A-Za-z]+)$")


def split_key(name: str, key: str) -> Optional[Tuple[str, str, str]]:
    """``(topic, partition, metric)`` of a Storm metric key, or None."""
    m = _PARTITION.match(key)
    if m:
        return m.group("topic") or "", m.group("p"), m.group("metric")
    m = _TOTAL.match(key)
    if m and name == "kafkaOffset":
        return m.group("topic"), "total", m.group("metric")
    return None


class PrometheusExporter:
    """Serves the gauges on ``port`` (``registry`` injectable for tests)."""

    def __init__(self, port: Optional[int] = None, registry: Any = None) -> None:
        try:
            from prometheus_client import CollectorRegistry, Gauge, start_http_server
        except ImportError as exc:
            raise ConfigError("--prometheus-port needs prometheus-client: "
                              "pip install 'storm-kafka-compat[prometheus]'",
                              key="prometheus-port", value=port) from exc
        self.registry = registry if registry is not None else CollectorRegistry()
        labels = ["topic", "partition", "metric"]
        self.gauges: Dict[str, Any] = {
            "kafkaOffset": Gauge("storm_kafka_offset", "Storm kafkaOffset metric", labels,
                                 registry=self.registry),
            "kafkaPartition": Gauge("storm_kafka_partition", "Storm kafkaPartition metric",
                                    labels, registry=self.registry),
            "stormKafkaCompat": Gauge("storm_kafka_compat", "storm-kafka-compat counters",
                                      ["metric"], registry=self.registry),
        }
        if port is not None:
            start_http_server(port, addr="127.0.0.1", registry=self.registry)

    def update(self, record: Mapping[str, Any]) -> None:
        name = record.get("name")
        values = record.get("value")
        gauge = self.gauges.get(str(name))
        if gauge is None or not values:
            return
        for key, value in values.items():
            if value is None:
                continue
            if name == "stormKafkaCompat":
                gauge.labels(metric=key).set(value)
                continue
            parts = split_key(str(name), key)
            if parts is not None:
                topic, partition, metric = parts
                gauge.labels(topic=topic, partition=partition, metric=metric).set(value)
