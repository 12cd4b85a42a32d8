"""Kafka access behind a small interface (:class:`KafkaAccess`).

``KafkaPythonAccess`` (kafka-python) is imported lazily so that pure code can use
the interface without kafka-python installed.
"""

from typing import Any

from storm_kafka_compat.kafka.client import KafkaAccess, KafkaMessage

__all__ = ["KafkaAccess", "KafkaMessage", "KafkaPythonAccess"]


def __getattr__(name: str) -> Any:  # PEP 562: keep kafka-python out of pure imports
    if name == "KafkaPythonAccess":
        from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
        return KafkaPythonAccess
    raise AttributeError(name)
