"""Kafka's broker registry in ZooKeeper, every version, and Java regex matching.

Parses the znodes storm-kafka's ``DynamicBrokersReader`` reads:

* ``<brokerZkPath>/ids/<id>``: broker registration, versions 1-5
  (0.8.x to 3.9): ``host``/``port`` at the top level, ``endpoints`` from v2,
  ``rack`` v3, ``listener_security_protocol_map`` v4, ``features`` v5.
* ``<brokerZkPath>/topics/<topic>``: replica assignment, versions 1-3.
* ``<brokerZkPath>/topics/<topic>/partitions/<p>/state``: leader and ISR.

This module is pure: callers pass the bytes.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from storm_kafka_compat.config import Broker
from storm_kafka_compat.errors import BrokerRegistryError, ConfigError, NoLeaderError

log = logging.getLogger(__name__)

PLAINTEXT = "PLAINTEXT"


# --- paths --------------------------------------------------------------------

def ids_path(base: str) -> str:
    """``<base>/ids``."""
    return _join(base, "ids")


def broker_path(base: str, broker_id: int) -> str:
    """``<base>/ids/<id>``."""
    return _join(base, "ids", str(broker_id))


def topics_path(base: str) -> str:
    """``<base>/topics``."""
    return _join(base, "topics")


def topic_path(base: str, topic: str) -> str:
    """``<base>/topics/<topic>``."""
    return _join(base, "topics", topic)


def partitions_path(base: str, topic: str) -> str:
    """``<base>/topics/<topic>/partitions``."""
    return _join(base, "topics", topic, "partitions")


def state_path(base: str, topic: str, partition: int) -> str:
    """``<base>/topics/<topic>/partitions/<p>/state``."""
    return _join(base, "topics", topic, "partitions", str(partition), "state")


def _join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/")] + list(parts))


# --- /brokers/ids/<id> ------------------------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    """One registered listener: ``listener`` name, its security ``protocol``, address."""

    listener: str
    protocol: str
    host: str
    port: int


@dataclass(frozen=True)
class BrokerRegistration:
    """A parsed ``/brokers/ids/<id>`` document."""

    broker_id: int
    version: int
    host: Optional[str]
    port: int
    endpoints: Tuple[Endpoint, ...] = ()
    jmx_port: int = -1
    timestamp: Optional[str] = None
    rack: Optional[str] = None
    features: Mapping[str, Any] = field(default_factory=dict)

    def address(self, listener_name: Optional[str] = None) -> Broker:
        """The address to fetch from.

        With ``listener_name``: that listener's endpoint. Otherwise the
        top-level ``host``/``port`` when set (what storm-kafka reads); when the
        broker registered no PLAINTEXT listener (``host`` null, ``port`` -1)
        the endpoint whose protocol is PLAINTEXT, else the first endpoint
        (logged at WARN: the client then needs matching security settings).

        Raises
        ------
        BrokerRegistryError
            No usable address.
        """
        if listener_name is not None:
            for ep in self.endpoints:
                if ep.listener == listener_name:
                    return Broker(ep.host, ep.port)
            raise BrokerRegistryError(
                f"broker {self.broker_id} has no listener named {listener_name!r} "
                f"(registered: {[ep.listener for ep in self.endpoints]}); set the "
                "listener name to one of those")
        if self.host is not None and self.port >= 0:
            return Broker(self.host, self.port)
        for ep in self.endpoints:
            if ep.protocol == PLAINTEXT:
                return Broker(ep.host, ep.port)
        if self.endpoints:
            ep = self.endpoints[0]
            log.warning("broker %d registers no PLAINTEXT listener; using listener %s "
                        "(%s) at %s:%d: the Kafka client needs matching security settings",
                        self.broker_id, ep.listener, ep.protocol, ep.host, ep.port)
            return Broker(ep.host, ep.port)
        raise BrokerRegistryError(
            f"broker {self.broker_id} registration has host null, port {self.port} and no "
            "endpoints; the broker must advertise a listener")


_ENDPOINT = re.compile(r"^([A-Za-z0-9_.-]+)://(\[[^\]]*\]|[^:/]*):(-?\d+)$")


def parse_endpoint(text: str, protocol_map: Optional[Mapping[str, str]] = None) -> Endpoint:
    """Parse ``LISTENER://host:port`` (IPv6 hosts in brackets).

    The security protocol comes from ``protocol_map`` (v4+); without one the
    listener name *is* the protocol (v2/v3).
    """
    m = _ENDPOINT.match(text.strip())
    if not m:
        raise ValueError(f"endpoint {text!r} is not LISTENER://host:port")
    listener, host, port = m.group(1), m.group(2), int(m.group(3))
    if host.startswith("["):
        host = host[1:-1]
    protocol = (protocol_map or {}).get(listener, listener)
    return Endpoint(listener, protocol, host, port)


def parse_broker_registration(data: bytes, *, broker_id: int,
                              zk_path: Optional[str] = None) -> BrokerRegistration:
    """Parse a ``/brokers/ids/<id>`` document of any version (1-5).

    Unknown keys are ignored. Raises :class:`BrokerRegistryError` naming the
    path when the bytes are not such a document.
    """
    doc = _json_object(data, zk_path, "broker registration")
    try:
        version = int(doc.get("version", 1))
        host = doc.get("host")
        if host is not None and not isinstance(host, str):
            raise ValueError(f"host {host!r} is not a string")
        port = int(doc["port"]) if doc.get("port") is not None else -1
        pmap = doc.get("listener_security_protocol_map") or {}
        endpoints = tuple(parse_endpoint(e, pmap) for e in (doc.get("endpoints") or ()))
        jmx = doc.get("jmx_port")
        ts = doc.get("timestamp")
        return BrokerRegistration(
            broker_id=broker_id, version=version, host=host, port=port,
            endpoints=endpoints, jmx_port=int(jmx) if jmx is not None else -1,
            timestamp=str(ts) if ts is not None else None, rack=doc.get("rack"),
            features=dict(doc.get("features") or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise BrokerRegistryError(
            f"broker registration at {zk_path} is malformed ({exc}): {data!r}; check "
            "brokerZkPath points at Kafka's broker registry", zk_path=zk_path) from exc


# --- /brokers/topics/<t>/partitions/<p>/state ---------------------------------------

@dataclass(frozen=True)
class PartitionState:
    """A parsed partition ``state`` znode."""

    leader: int
    leader_epoch: int = 0
    controller_epoch: int = 0
    isr: Tuple[int, ...] = ()
    version: int = 1
    leader_recovery_state: Optional[int] = None


def parse_partition_state(data: bytes, *, topic: str, partition: int,
                          zk_path: Optional[str] = None,
                          require_leader: bool = True) -> PartitionState:
    """Parse ``.../partitions/<p>/state``.

    Raises
    ------
    NoLeaderError
        ``leader`` is -1 and ``require_leader`` is true (storm-kafka's
        "No leader found for partition").
    BrokerRegistryError
        The document is malformed.
    """
    doc = _json_object(data, zk_path, "partition state")
    try:
        state = PartitionState(
            leader=int(doc["leader"]), leader_epoch=int(doc.get("leader_epoch", 0)),
            controller_epoch=int(doc.get("controller_epoch", 0)),
            isr=tuple(int(b) for b in doc.get("isr") or ()),
            version=int(doc.get("version", 1)),
            leader_recovery_state=(int(doc["leader_recovery_state"])
                                   if "leader_recovery_state" in doc else None))
    except (KeyError, TypeError, ValueError) as exc:
        raise BrokerRegistryError(
            f"partition state of {topic}/{partition} at {zk_path} is malformed ({exc}): "
            f"{data!r}", topic=topic, partition=partition, zk_path=zk_path) from exc
    if require_leader and state.leader == -1:
        raise NoLeaderError(
            f"No leader found for partition {partition} of topic {topic!r} (leader -1 at "
            f"{zk_path}); bring a replica of {topic}/{partition} back online or run a "
            "leader election, then restart", topic=topic, partition=partition,
            zk_path=zk_path)
    return state


# --- /brokers/topics/<t> ---------------------------------------------------------------

@dataclass(frozen=True)
class TopicAssignment:
    """A parsed ``/brokers/topics/<topic>`` document (versions 1-3)."""

    version: int
    partitions: Mapping[int, Tuple[int, ...]]
    adding_replicas: Mapping[int, Tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, Tuple[int, ...]] = field(default_factory=dict)
    topic_id: Optional[str] = None


def parse_topic_assignment(data: bytes, *, topic: str,
                           zk_path: Optional[str] = None) -> TopicAssignment:
    """Parse ``/brokers/topics/<topic>`` (partition keys are strings in the JSON)."""
    doc = _json_object(data, zk_path, "topic assignment")

    def replicas(m: Any) -> Dict[int, Tuple[int, ...]]:
        return {int(p): tuple(int(b) for b in r) for p, r in (m or {}).items()}

    try:
        return TopicAssignment(
            version=int(doc.get("version", 1)), partitions=replicas(doc["partitions"]),
            adding_replicas=replicas(doc.get("adding_replicas")),
            removing_replicas=replicas(doc.get("removing_replicas")),
            topic_id=doc.get("topic_id"))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BrokerRegistryError(
            f"topic assignment of {topic!r} at {zk_path} is malformed ({exc}): {data!r}",
            topic=topic, zk_path=zk_path) from exc


def _json_object(data: Optional[bytes], zk_path: Optional[str], what: str) -> Dict[str, Any]:
    try:
        doc = json.loads((data or b"").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BrokerRegistryError(f"{what} at {zk_path} is not JSON: {data!r}; check "
                                  "brokerZkPath points at Kafka's broker registry",
                                  zk_path=zk_path) from exc
    if not isinstance(doc, dict):
        raise BrokerRegistryError(f"{what} at {zk_path} is not a JSON object: {data!r}",
                                  zk_path=zk_path)
    return doc


# --- Java regex full match -----------------------------------------------------------

def java_full_match(regex: str, name: str) -> bool:
    """``Pattern.compile(regex).matcher(name).matches()``: the *whole* name must match.

    Python's ``re.fullmatch`` is used (never ``re.match``, which accepts a
    prefix). Java syntax Python lacks is translated: ``\\Q...\\E`` quoting,
    ``(?<name>...)`` named groups and ``\\z``. Differences that remain:
    Unicode classes ``\\p{...}`` are rejected with a ConfigError; Java's
    ``[a-z&&[^e]]`` class intersection is not understood (Python reads ``&&``
    literally); Python 3.11+ accepts possessive quantifiers and atomic groups
    like Java.

    Raises
    ------
    ConfigError
        The regex cannot be compiled.
    """
    return _compile_java(regex).fullmatch(name) is not None


@functools.lru_cache(maxsize=256)
def _compile_java(regex: str) -> "re.Pattern[str]":
    if "\\p{" in regex or "\\P{" in regex:
        raise ConfigError(f"topic regex {regex!r} uses Java Unicode classes (\\p{{...}}), "
                          "which Python's re does not support; write the character class "
                          "out", key="spout.topic", value=regex)
    out = []
    i = 0
    while i < len(regex):
        if regex.startswith("\\Q", i):
            end = regex.find("\\E", i + 2)
            end = len(regex) if end < 0 else end
            out.append(re.escape(regex[i + 2:end]))
            i = end + 2
        elif regex.startswith("\\z", i):
            out.append("\\Z")
            i += 2
        elif regex[i] == "\\" and i + 1 < len(regex):
            out.append(regex[i:i + 2])
            i += 2
        elif regex.startswith("(?<", i) and i + 3 < len(regex) and regex[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
        else:
            out.append(regex[i])
            i += 1
    try:
        return re.compile("".join(out))
    except re.error as exc:
        raise ConfigError(f"topic regex {regex!r} does not compile ({exc}); fix the "
                          "pattern in spout.topic", key="spout.topic", value=regex) from exc
