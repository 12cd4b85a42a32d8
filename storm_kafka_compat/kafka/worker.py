"""The Kafka client of a Python worker: one per backend and settings, reused across tasks.

Spark keeps a Python worker alive between tasks (``spark.python.worker.reuse``),
so a client cached here keeps its connections and, with librdkafka, its
prefetched data from one batch to the next. Every executor-side reader (the
pipeline's tasks, the DataFrame mode, the Structured Streaming source) asks
here, so the configured ``backend`` is honoured everywhere.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

from storm_kafka_compat.config import SpoutConfig
from storm_kafka_compat.config.kafka_settings import Backend
from storm_kafka_compat.kafka.client import KafkaAccess

_CLIENTS: Dict[Tuple[Any, ...], KafkaAccess] = {}


def worker_kafka(backend: Backend, bootstrap: Sequence[str], spout: SpoutConfig,
                 kafka_conf: Tuple[Tuple[str, Any], ...],
                 fetch_timeout_ms: Optional[int] = None) -> KafkaAccess:
    """The cached :class:`~storm_kafka_compat.kafka.client.KafkaAccess` for these settings.

    ``kafka_conf`` is the backend's own settings as sorted pairs
    (``KafkaSettings.for_backend``); the fetch fields of ``spout`` that the
    adapters read are part of the key. ``fetch_timeout_ms`` bounds one fetch
    (default ``socketTimeoutMs``; the pipeline's tasks pass
    :func:`~storm_kafka_compat.kafka.client.fetch_deadline_ms`).
    """
    s = spout
    key = (backend, tuple(bootstrap), s.fetch_size_bytes, s.fetch_max_wait, s.min_fetch_byte,
           s.buffer_size_bytes, s.socket_timeout_ms, s.client_id, kafka_conf, fetch_timeout_ms)
    client = _CLIENTS.get(key)
    if client is None:
        if backend == "confluent":
            from storm_kafka_compat.kafka.confluent import ConfluentAccess
            client = ConfluentAccess(list(bootstrap), s, dict(kafka_conf),
                                     fetch_timeout_ms=fetch_timeout_ms)
        else:
            from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
            client = KafkaPythonAccess(list(bootstrap), s, dict(kafka_conf),
                                       fetch_timeout_ms=fetch_timeout_ms)
        _CLIENTS[key] = client
    return client
