"""The KafkaBolt's producer: Java producer properties to kafka-python, one cached
producer per executor process.

A Storm topology gives its ``KafkaBolt`` Java producer properties
(``bootstrap.servers``, ``acks``, ``key.serializer`` ...). :func:`producer_config`
turns them, with the job's client settings (``kafka_settings_from_dict(...)
.for_kafka_python()``: the pinned ``api_version`` above all), into a kafka-python
``KafkaProducer`` configuration; :func:`shared_producer` keeps one producer per
configuration in the process (a Spark Python worker), as Storm keeps one per bolt
task.

Idempotence: ``enable.idempotence=true`` is passed on where the brokers support it
(Kafka 0.11+); asked of an older broker it is a configuration error, not a silent
downgrade. It is off unless asked: kafka-python 3 turns it on by default, the Java
clients Storm 1.x/2.x shipped with did not.
"""

from __future__ import annotations

import struct
import threading
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from storm_kafka_compat.errors import ConfigError

__all__ = ["producer_config", "shared_producer", "close_shared_producers", "IDEMPOTENCE_SINCE",
           "SERIALIZERS", "serializer_for"]

#: the first broker version with idempotent produce (KIP-98)
IDEMPOTENCE_SINCE = (0, 11)

_TRUE = ("true", "1", "yes")


def _as_bool(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in _TRUE


def producer_config(properties: Mapping[str, Any],
                    client: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """kafka-python ``KafkaProducer`` settings from Java producer properties.

    Parameters
    ----------
    properties : mapping
        The bolt's producer properties, Java names (``bootstrap.servers``).
    client : mapping, optional
        The job's kafka-python client settings (``api_version`` ...); the
        properties win where both set a value.

    Raises
    ------
    ConfigError
        A property kafka-python's producer does not have, a serializer without a
        Python counterpart, or idempotence asked of a broker older than 0.11.
    """
    from kafka import KafkaProducer

    known = KafkaProducer.DEFAULT_CONFIG
    out: Dict[str, Any] = {k: v for k, v in (client or {}).items() if k in known}
    props = dict(properties)
    out["key_serializer"] = serializer_for(props.pop("key.serializer", None),
                                           "producerProperties.key.serializer")
    out["value_serializer"] = serializer_for(props.pop("value.serializer", None),
                                             "producerProperties.value.serializer")
    idempotent = _as_bool(props.pop("enable.idempotence", False))
    for java_name, value in props.items():
        name = java_name.replace(".", "_")
        if name not in known or name in ("key_serializer", "value_serializer"):
            raise ConfigError(
                f"producer property {java_name!r} has no kafka-python counterpart; valid: "
                f"{', '.join(sorted(k.replace('_', '.') for k in known))}",
                key=f"producerProperties.{java_name}", value=value)
        default = known[name]
        if name == "acks":
            out[name] = "all" if str(value) in ("all", "-1") else int(value)
            continue
        if (isinstance(value, str) and isinstance(default, (int, float))
                and not isinstance(default, bool)):
            value = int(value)
        if name == "bootstrap_servers" and isinstance(value, str):
            value = [s.strip() for s in value.split(",") if s.strip()]
        out[name] = value
    version: Optional[Tuple[int, ...]] = out.get("api_version")
    if idempotent and version is not None and tuple(version) < IDEMPOTENCE_SINCE:
        raise ConfigError(
            f"enable.idempotence=true needs brokers 0.11 or newer, and the job pins "
            f"api_version {'.'.join(map(str, version))}; remove enable.idempotence (duplicates "
            f"then remain possible, see docs/kafka-bolt.md) or upgrade the brokers",
            key="producerProperties.enable.idempotence", value=True)
    out["enable_idempotence"] = idempotent
    if idempotent:
        out["acks"] = "all"  # the producer refuses idempotence with fewer acks
    if "bootstrap_servers" not in out:
        raise ConfigError("the KafkaBolt's producer properties need bootstrap.servers "
                          "(host:port,...)", key="producerProperties.bootstrap.servers")
    return out


_LOCK = threading.Lock()
_PRODUCERS: Dict[Tuple[Tuple[str, str], ...], Any] = {}


def _cache_key(config: Mapping[str, Any]) -> Tuple[Tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in config.items()))


def shared_producer(config: Mapping[str, Any]) -> Any:
    """The process's ``KafkaProducer`` for ``config`` (created on first use)."""
    key = _cache_key(config)
    with _LOCK:
        producer = _PRODUCERS.get(key)
        if producer is None:
            from kafka import KafkaProducer
            producer = KafkaProducer(**config)
            _PRODUCERS[key] = producer
        return producer


def close_shared_producers(timeout_s: float = 10.0) -> None:
    """Flush and close every cached producer (tests, interpreter shutdown)."""
    with _LOCK:
        producers = list(_PRODUCERS.values())
        _PRODUCERS.clear()
    for p in producers:
        p.close(timeout=timeout_s)


# --- Java serializer classes and their Python counterparts --------------------------

def _string(value: Any) -> Optional[bytes]:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def _bytes(value: Any) -> Optional[bytes]:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"ByteArraySerializer needs bytes, got {type(value).__name__} {value!r}; "
                    f"use org.apache.kafka.common.serialization.StringSerializer for text")


def _int32(value: Any) -> Optional[bytes]:
    return None if value is None else struct.pack(">i", int(value))


def _int64(value: Any) -> Optional[bytes]:
    return None if value is None else struct.pack(">q", int(value))


_PKG = "org.apache.kafka.common.serialization."
#: Java serializer class -> Python function with the same bytes on the wire
SERIALIZERS: Dict[str, Callable[[Any], Optional[bytes]]] = {
    _PKG + "StringSerializer": _string,
    _PKG + "ByteArraySerializer": _bytes,
    _PKG + "IntegerSerializer": _int32,
    _PKG + "LongSerializer": _int64,
}


def serializer_for(class_name: Optional[str], key: str) -> Callable[[Any], Optional[bytes]]:
    """The Python serializer for a Java ``key.serializer``/``value.serializer`` class.

    None (not set) gives bytes as they are and anything else as UTF-8 text.

    Raises
    ------
    ConfigError
        The class is not one of :data:`SERIALIZERS`.
    """
    if class_name is None:
        return _string
    fn = SERIALIZERS.get(str(class_name))
    if fn is None:
        raise ConfigError(f"{key}={class_name!r} has no Python counterpart; use one of "
                          f"{', '.join(sorted(SERIALIZERS))}", key=key, value=class_name,
                          allowed=tuple(sorted(SERIALIZERS)))
    return fn
