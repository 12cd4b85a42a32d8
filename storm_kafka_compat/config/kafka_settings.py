"""The CONFIG's ``kafka`` mapping, split by the client each setting belongs to.

Two client libraries read Kafka here: kafka-python (the driver's metadata and
offset client, the consumer-group client of the operator tools and client mode,
and the executors with ``backend: kafka-python``) and librdkafka through
confluent-kafka (the executors with ``backend: confluent``). Their settings are
spelled differently, and each rejects the other's, so the mapping is split:

==============================  ===============================================
key in ``kafka:``               goes to
==============================  ===============================================
``backend``                     ours: ``kafka-python`` (default) or ``confluent``
``bootstrap_servers``           ours: extra brokers to ask for metadata
``api_version``                 the brokers' version, for every client (below)
``name_with_underscores``       every kafka-python client (``KafkaConsumer`` /
                                ``KafkaAdminClient`` setting names)
``name.with.dots``              librdkafka (``backend: confluent`` only)
``kafkaPython: {...}``          kafka-python only, verbatim
``librdkafka: {...}``           librdkafka only, verbatim
==============================  ===============================================

``api_version`` (``"0.9"``, ``"0.10.2"``, ``[0, 9]``; ``auto`` or absent: ask the
broker) is what an old cluster needs: kafka-python's version probe makes a Kafka
0.9 broker drop the connection, and librdkafka must not send ApiVersion requests
to brokers older than 0.10. It becomes kafka-python's ``api_version`` tuple and
librdkafka's ``api.version.request=false`` plus ``broker.version.fallback`` for
brokers before 0.10 (``broker.version.fallback`` alone from 0.10 on). A
``broker.version.fallback`` given without ``api_version`` sets both too.

With ``backend: confluent`` the common security settings written the
kafka-python way, and ``isolation_level``, are also given to librdkafka under its
names (:data:`LIBRDKAFKA_ALIASES`); any other librdkafka setting is written dotted.

``isolation_level`` (``read_uncommitted``, the default of both backends here, or
``read_committed``) is what a fetch of a topic written by transactional producers
returns: every record, or only those of committed transactions. storm-kafka read
every record (its fetch requests predate transactions), and so does
storm-kafka-client's ``KafkaConsumer`` by default; librdkafka's own default
(``read_committed``) is overridden so that both backends read the same records.

This module is pure: it imports neither kazoo, kafka-python nor pyspark
(:func:`check_client_settings` imports the client libraries to ask them which
keys they know).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Literal, Mapping, Optional, Sequence, Tuple, Union, get_args

from storm_kafka_compat.errors import ConfigError

#: floor of the fetch wait (kafka-python fetch_max_wait_ms, librdkafka
#: fetch.wait.max.ms). Kafka waits this long only when less than the minimum bytes
#: are available, so with data nothing is delayed; an idle partition is then asked
#: once per 100 ms instead of busy-polled as storm-kafka does with fetchMaxWait 0 and
#: minFetchByte 0 (STORM-1680/STORM-1674). Some Kafka-protocol brokers need it too:
#: one measured returned no partition data at 0 ms, one record per fetch at 1 ms and
#: everything available at 100 ms (docs/testing.md).
MIN_FETCH_MAX_WAIT_MS = 100

#: Kafka's consumer default fetch.max.bytes, the least a group's response may carry
GROUP_FETCH_MAX_BYTES = 50 * 1024 * 1024


def group_fetch_max_bytes(fetch_max_bytes: int) -> int:
    """The byte budget of a whole fetch response (kafka-python ``fetch_max_bytes``,
    librdkafka ``fetch.max.bytes``) for a consumer holding several partitions, given
    the one-partition budget ``fetch_max_bytes`` (fetchSizeBytes, or the ``kafka``
    mapping's own): at least Kafka's own consumer default, 50 MiB.

    storm-kafka fetched one partition a request, so fetchSizeBytes bounded a
    partition's fetch; it still bounds each partition of a response
    (``max_partition_fetch_bytes``), and a consumer of one partition keeps it as its
    whole budget. A consumer holding a task's many partitions gets up to this much of
    them in one response, where a response bounded by fetchSizeBytes carried about one
    partition's share (435 round trips, each asking for every partition, for 4,000,000
    records over 512 partitions; docs/performance.md)."""
    return max(int(fetch_max_bytes), GROUP_FETCH_MAX_BYTES)


#: the fetch backends: kafka-python, or librdkafka through confluent-kafka
Backend = Literal["kafka-python", "confluent"]
BACKENDS: Tuple[Backend, ...] = get_args(Backend)
#: the brokers a client starts from: ``host:port`` strings, or one comma-separated string
BootstrapServers = Union[str, Sequence[str]]
#: keys of the ``kafka`` mapping that are ours, not a client's
OWN_KEYS = ("backend", "bootstrap_servers", "bootstrap.servers", "api_version",
            "kafkaPython", "librdkafka")
#: the first broker version that answers ApiVersions requests (KIP-35)
API_VERSIONS_SINCE = (0, 10)
#: kafka-python settings given to librdkafka too, under librdkafka's names
LIBRDKAFKA_ALIASES = {
    "client_id": "client.id",
    "isolation_level": "isolation.level",
    "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanisms",
    "sasl_plain_username": "sasl.username",
    "sasl_plain_password": "sasl.password",
    "ssl_cafile": "ssl.ca.location",
    "ssl_certfile": "ssl.certificate.location",
    "ssl_keyfile": "ssl.key.location",
    "ssl_password": "ssl.key.password",
}

_VERSION = re.compile(r"^\d+(\.\d+){1,3}$")


def parse_api_version(value: Any, key: str = "kafka.api_version") -> Optional[Tuple[int, ...]]:
    """``"0.9"``, ``"0.9.0.1"``, ``[0, 9]``, ``(0, 10, 2)`` -> a tuple of ints;
    ``None``/``"auto"`` -> None (ask the broker).

    Raises
    ------
    ConfigError
        Anything else, naming the value and the accepted forms.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    if isinstance(value, (list, tuple)) and 2 <= len(value) <= 4 \
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return tuple(value)
    if isinstance(value, str) and _VERSION.match(value.strip()):
        return tuple(int(p) for p in value.strip().split("."))
    if isinstance(value, float):
        return parse_api_version(repr(value), key)
    raise ConfigError(f"{key} {value!r} is not a Kafka broker version; write it as a string "
                      "such as \"0.9\", \"0.10.2\" or \"2.8\" (or a list [0, 9]), or \"auto\" to "
                      "ask the broker (brokers from 0.10 on)", key=key, value=value)


def version_string(version: Tuple[int, ...]) -> str:
    """``(0, 9)`` -> ``"0.9.0"``: librdkafka's ``broker.version.fallback`` wants
    at least three parts."""
    parts = list(version) + [0] * (3 - len(version))
    return ".".join(str(p) for p in parts)


@dataclass(frozen=True)
class KafkaSettings:
    """The ``kafka`` mapping, split by client (see the module docstring)."""

    backend: Backend = "kafka-python"
    #: the brokers' version, or None to let each client ask
    api_version: Optional[Tuple[int, ...]] = None
    #: extra ``host:port`` brokers to bootstrap from
    bootstrap_servers: Tuple[str, ...] = ()
    #: settings for every kafka-python client (``api_version`` not included)
    kafka_python: Mapping[str, Any] = field(default_factory=dict)
    #: settings for librdkafka (version settings not included)
    librdkafka: Mapping[str, Any] = field(default_factory=dict)

    def for_kafka_python(self) -> Dict[str, Any]:
        """What a kafka-python ``KafkaConsumer``/``KafkaAdminClient`` is given."""
        out = dict(self.kafka_python)
        if self.api_version is not None:
            out["api_version"] = self.api_version
        return out

    def for_librdkafka(self) -> Dict[str, Any]:
        """What a librdkafka consumer is given (dotted names)."""
        out: Dict[str, Any] = {}
        for key, name in LIBRDKAFKA_ALIASES.items():
            if key in self.kafka_python:
                out[name] = self.kafka_python[key]
        if self.api_version is not None:
            if self.api_version < API_VERSIONS_SINCE:
                out["api.version.request"] = False
            out["broker.version.fallback"] = version_string(self.api_version)
        out.update(self.librdkafka)
        return out

    def for_backend(self, backend: Optional[str] = None) -> Dict[str, Any]:
        """The settings of the fetch backend (``self.backend`` by default)."""
        if (backend or self.backend) == "confluent":
            return self.for_librdkafka()
        return self.for_kafka_python()


def _backend(name: str, section: str) -> Backend:
    """``name`` as a :data:`Backend`."""
    for backend in BACKENDS:
        if name == backend:
            return backend
    raise ConfigError(f"{section}.backend {name!r} is not a fetch backend; use one of "
                      f"{', '.join(BACKENDS)}", key=f"{section}.backend", value=name)


def kafka_settings_from_dict(value: Optional[Mapping[str, Any]],
                             section: str = "kafka") -> KafkaSettings:
    """Split and check a ``kafka`` mapping (structure only; see
    :func:`check_client_settings` for the key names).

    Raises
    ------
    ConfigError
        A section that is not a mapping, an unknown backend, a malformed
        ``api_version``, or librdkafka (dotted) settings with the kafka-python
        backend.
    """
    if value is None:
        return KafkaSettings()
    if not isinstance(value, Mapping):
        raise ConfigError(f"{section} must be a mapping of Kafka client settings, got "
                          f"{type(value).__name__}", key=section, value=value)
    backend = _backend(str(value.get("backend", "kafka-python")), section)
    servers = value.get("bootstrap_servers", value.get("bootstrap.servers")) or ()
    if isinstance(servers, str):
        servers = [s.strip() for s in servers.split(",") if s.strip()]
    kafka_python: Dict[str, Any] = {}
    librdkafka: Dict[str, Any] = {}
    for sub, target in (("kafkaPython", kafka_python), ("librdkafka", librdkafka)):
        part = value.get(sub)
        if part is None:
            continue
        if not isinstance(part, Mapping):
            raise ConfigError(f"{section}.{sub} must be a mapping of settings, got "
                              f"{type(part).__name__}", key=f"{section}.{sub}", value=part)
        target.update({str(k): v for k, v in part.items()})
    for key, v in value.items():
        key = str(key)
        if key in OWN_KEYS:
            continue
        (librdkafka if "." in key else kafka_python)[key] = v
    api_version = parse_api_version(value.get("api_version", kafka_python.pop("api_version", None)),
                                    f"{section}.api_version")
    fallback = librdkafka.pop("broker.version.fallback", None)
    if fallback is not None:
        parsed = parse_api_version(str(fallback), f"{section}.broker.version.fallback")
        if api_version is None:
            api_version = parsed
        librdkafka["broker.version.fallback"] = str(fallback)
    if backend == "kafka-python" and librdkafka:
        keys = ", ".join(sorted(librdkafka))
        raise ConfigError(
            f"{section} holds librdkafka settings ({keys}) but {section}.backend is "
            "kafka-python, which never reads them; set backend: confluent, or write the "
            "kafka-python setting names (with underscores, e.g. security_protocol)",
            key=f"{section}.{sorted(librdkafka)[0]}", value=librdkafka[sorted(librdkafka)[0]])
    return KafkaSettings(backend, api_version, tuple(str(s) for s in servers),
                         kafka_python, librdkafka)


def check_client_settings(settings: KafkaSettings, section: str = "kafka") -> None:
    """Ask the client libraries whether they know every key given to them.

    Raises
    ------
    ConfigError
        A kafka-python key neither ``KafkaConsumer`` nor ``KafkaAdminClient``
        knows, or a librdkafka key librdkafka rejects (checked only when
        confluent-kafka is installed), naming the key and where the settings are
        listed.
    """
    from kafka import KafkaAdminClient, KafkaConsumer
    known = set(KafkaConsumer.DEFAULT_CONFIG) | set(KafkaAdminClient.DEFAULT_CONFIG)
    for key, v in settings.kafka_python.items():
        if key not in known:
            hint = (f"; {key!r} looks like a librdkafka name: write it dotted "
                    f"({key.replace('_', '.')}) with backend: confluent"
                    if key.replace("_", ".") in _LIKELY_LIBRDKAFKA else "")
            raise ConfigError(f"{section}.{key} is not a kafka-python KafkaConsumer or "
                              "KafkaAdminClient setting (see kafka-python's KafkaConsumer "
                              f"documentation for the names){hint}", key=f"{section}.{key}",
                              value=v)
    if settings.backend != "confluent" or not settings.librdkafka:
        return
    try:
        from confluent_kafka import Consumer, KafkaException
    except ImportError:
        return
    for key, v in settings.for_librdkafka().items():
        try:
            Consumer({"group.id": "skc-config-check", "log_level": 3, key: v}).close()
        except (KafkaException, ValueError, TypeError) as exc:
            raise ConfigError(f"{section}.{key} {v!r} is refused by librdkafka: {exc}; see "
                              "librdkafka's CONFIGURATION.md for the consumer settings",
                              key=f"{section}.{key}", value=v) from exc


#: librdkafka names users often write with underscores
_LIKELY_LIBRDKAFKA = ("fetch.queue.backoff.ms", "queued.max.messages.kbytes",
                      "queued.min.messages", "api.version.request", "broker.version.fallback",
                      "socket.keepalive.enable", "statistics.interval.ms")


def kafka_python_name(java_name: str) -> Optional[str]:
    """The kafka-python spelling of a Java client setting (``security.protocol`` ->
    ``security_protocol``), or None when kafka-python has no such setting."""
    from kafka import KafkaAdminClient, KafkaConsumer
    name = java_name.replace(".", "_")
    known = set(KafkaConsumer.DEFAULT_CONFIG) | set(KafkaAdminClient.DEFAULT_CONFIG)
    return name if name in known else None


def add_java_client_setting(kafka: Dict[str, Any], java_name: str, value: Any) -> None:
    """Put a Java client setting (from a Storm topology's properties) into a
    ``kafka`` mapping: under its kafka-python name when kafka-python has it, else
    in the ``librdkafka`` sub-mapping (librdkafka shares most Java names; it is
    read with ``backend: confluent``)."""
    name = kafka_python_name(java_name)
    if name is not None:
        kafka[name] = value
    else:
        kafka.setdefault("librdkafka", {})[java_name] = value
