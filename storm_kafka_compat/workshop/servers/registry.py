"""Write Kafka's broker registry into ZooKeeper, in the formats Kafka wrote.

No ZooKeeper-mode Kafka runs on these machines, so tests (and the ``demo``
command) write what such a broker would have written, pointing at a running
Kafka-protocol broker (tansu):

* ``<path>/ids/<id>``: registration versions 1-5 (0.8.x to 3.9);
* ``<path>/topics/<t>``: replica assignment versions 1-3;
* ``<path>/topics/<t>/partitions/<p>/state``: leader, ISR and epochs.

Nodes are persistent (a real registration is ephemeral; nothing here depends
on that). Every call waits at most ``timeout_s`` (kazoo's blocking calls hang
while disconnected). The ``*_json`` encoders are pure and usable on their own.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Type

from storm_kafka_compat.discovery import registry as paths

#: default security protocol of the single listener when ``plaintext=False``
DEFAULT_SECURE_PROTOCOL = "SSL"


def _dumps(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def broker_registration_json(host: str, port: int, *, version: int = 5,
                             plaintext: bool = True, listener_name: Optional[str] = None,
                             security_protocol: Optional[str] = None,
                             rack: Optional[str] = None, jmx_port: int = -1,
                             timestamp_ms: Optional[int] = None,
                             features: Optional[Mapping[str, Mapping[str, int]]] = None) -> bytes:
    """Bytes of a ``/brokers/ids/<id>`` document of ``version`` 1-5.

    Parameters
    ----------
    host, port : str, int
        The listener's advertised address.
    version : int
        1 (0.8.x), 2 (0.9.x), 3 (0.10.0/0.10.1), 4 (0.10.2-2.6), 5 (2.7-3.9).
    plaintext : bool
        False writes what a broker without a PLAINTEXT listener writes:
        ``"host":null,"port":-1`` and the listener only in ``endpoints``.
        Needs version >= 2.
    listener_name : str, optional
        The listener's name (v4+; default ``PLAINTEXT``, or the security
        protocol when ``plaintext`` is false).
    security_protocol : str, optional
        The listener's protocol (default ``PLAINTEXT``, or ``SSL`` when
        ``plaintext`` is false).
    rack : str, optional
        Written from v3 on when given.
    timestamp_ms : int, optional
        Registration time (written as a string); default now.
    features : mapping, optional
        v5 ``features`` (default ``{}``).
    """
    if not 1 <= version <= 5:
        raise ValueError(f"broker registration version must be 1..5, got {version}")
    if not plaintext and version < 2:
        raise ValueError("a version 1 registration always has a PLAINTEXT host/port; "
                         "use version >= 2 with plaintext=False")
    protocol = security_protocol or ("PLAINTEXT" if plaintext else DEFAULT_SECURE_PROTOCOL)
    if version < 4:  # endpoints are named by protocol before listener names existed
        listener = protocol
    else:
        listener = listener_name or protocol
    ts = str(timestamp_ms if timestamp_ms is not None else int(time.time() * 1000))
    top_host: Optional[str] = host if plaintext else None
    top_port = port if plaintext else -1
    endpoint = f"{listener}://{'[' + host + ']' if ':' in host else host}:{port}"
    doc: Dict[str, Any] = {}
    if version == 1:
        doc = {"jmx_port": jmx_port, "timestamp": ts, "host": host, "version": 1, "port": port}
    elif version in (2, 3):
        doc = {"jmx_port": jmx_port, "timestamp": ts, "endpoints": [endpoint]}
        if version == 3 and rack is not None:
            doc["rack"] = rack
        doc.update({"host": top_host, "version": version, "port": top_port})
    else:
        doc = {"listener_security_protocol_map": {listener: protocol},
               "endpoints": [endpoint]}
        if rack is not None:
            doc["rack"] = rack
        doc["jmx_port"] = jmx_port
        if version == 5:
            doc["features"] = dict(features or {})
        doc.update({"host": top_host, "timestamp": ts, "port": top_port, "version": version})
    return _dumps(doc)


def topic_assignment_json(replicas: Mapping[int, Sequence[int]], *, version: int = 1,
                          topic_id: Optional[str] = None) -> bytes:
    """Bytes of a ``/brokers/topics/<t>`` document of ``version`` 1-3.

    ``topic_id`` (v3) defaults to a random base64 UUID, as Kafka writes it.
    """
    if not 1 <= version <= 3:
        raise ValueError(f"topic assignment version must be 1..3, got {version}")
    parts = {str(p): list(r) for p, r in sorted(replicas.items())}
    if version == 1:
        return _dumps({"version": 1, "partitions": parts})
    doc: Dict[str, Any] = {"partitions": parts}
    if version == 3:
        doc["topic_id"] = topic_id or base64.urlsafe_b64encode(
            uuid.uuid4().bytes).decode("ascii").rstrip("=")
    doc.update({"adding_replicas": {}, "removing_replicas": {}, "version": version})
    return _dumps(doc)


def partition_state_json(leader: int, *, isr: Optional[Sequence[int]] = None,
                         leader_epoch: int = 0, controller_epoch: int = 1) -> bytes:
    """Bytes of ``.../partitions/<p>/state`` (always version 1).

    ``isr`` defaults to ``[leader]`` (``[]`` when ``leader`` is -1).
    """
    if isr is None:
        isr = [] if leader == -1 else [leader]
    return _dumps({"controller_epoch": controller_epoch, "leader": leader, "version": 1,
                   "leader_epoch": leader_epoch, "isr": list(isr)})


def _put(client: Any, path: str, data: bytes, timeout_s: float) -> None:
    from kazoo.exceptions import NodeExistsError
    parent = path.rsplit("/", 1)[0]
    if parent:
        client.ensure_path_async(parent).get(timeout=timeout_s)
    try:
        client.create_async(path, data).get(timeout=timeout_s)
    except NodeExistsError:
        client.set_async(path, data).get(timeout=timeout_s)


def write_broker(client: Any, broker_id: int, host: str, port: int, *,
                 path: str = "/brokers", timeout_s: float = 10.0, **kwargs: Any) -> str:
    """Write ``<path>/ids/<broker_id>``; ``kwargs`` go to
    :func:`broker_registration_json`. Returns the znode path."""
    zpath = paths.broker_path(path, broker_id)
    _put(client, zpath, broker_registration_json(host, port, **kwargs), timeout_s)
    return zpath


def write_topic(client: Any, topic: str, leaders: Mapping[int, int], *,
                path: str = "/brokers", topic_version: int = 1, leader_epoch: int = 0,
                controller_epoch: int = 1, timeout_s: float = 10.0) -> None:
    """Write ``<path>/topics/<topic>`` and a ``state`` per partition.

    ``leaders`` maps partition -> leader broker id (-1: no leader); each
    partition's replica list is ``[leader]``.
    """
    replicas = {p: ([] if b == -1 else [b]) for p, b in leaders.items()}
    _put(client, paths.topic_path(path, topic),
         topic_assignment_json(replicas, version=topic_version), timeout_s)
    for p, b in sorted(leaders.items()):
        _put(client, paths.state_path(path, topic, p).rsplit("/", 1)[0], b"", timeout_s)
        _put(client, paths.state_path(path, topic, p),
             partition_state_json(b, leader_epoch=leader_epoch,
                                  controller_epoch=controller_epoch), timeout_s)


def write_broker_registry(client: Any, *, brokers: Mapping[int, Tuple[str, int]],
                          topics: Mapping[str, Mapping[int, int]], path: str = "/brokers",
                          version: int = 5, topic_version: int = 1,
                          plaintext: bool = True, listener_name: Optional[str] = None,
                          security_protocol: Optional[str] = None,
                          rack: Optional[str] = None, controller_epoch: int = 1,
                          leader_epoch: int = 0,
                          features: Optional[Mapping[str, Mapping[str, int]]] = None,
                          timeout_s: float = 10.0) -> None:
    """Write a whole registry: brokers, topics, partition states.

    Parameters
    ----------
    client : kazoo.client.KazooClient
        A started client (its chroot, if any, applies).
    brokers : mapping
        ``{broker_id: (host, port)}``.
    topics : mapping
        ``{topic: {partition: leader_id}}`` (-1 for no leader).
    path : str
        ``brokerZkPath``.
    version : int
        Broker registration version 1-5 (see :func:`broker_registration_json`).
    topic_version : int
        Topic assignment version 1-3.
    plaintext, listener_name, security_protocol, rack, features
        See :func:`broker_registration_json`.
    """
    for bid, (host, port) in sorted(brokers.items()):
        write_broker(client, bid, host, port, path=path, timeout_s=timeout_s, version=version,
                     plaintext=plaintext, listener_name=listener_name,
                     security_protocol=security_protocol, rack=rack, features=features)
    for topic, leaders in topics.items():
        write_topic(client, topic, leaders, path=path, topic_version=topic_version,
                    leader_epoch=leader_epoch, controller_epoch=controller_epoch,
                    timeout_s=timeout_s)


def set_leader(client: Any, topic: str, partition: int, leader_id: int, *,
               path: str = "/brokers", controller_epoch: int = 1,
               timeout_s: float = 10.0) -> None:
    """Move a partition's leader (``-1``: no leader), bumping ``leader_epoch``
    as Kafka's controller does."""
    from kazoo.exceptions import NoNodeError
    zpath = paths.state_path(path, topic, partition)
    try:
        raw, _ = client.get_async(zpath).get(timeout=timeout_s)
        epoch = int(json.loads(raw.decode("utf-8")).get("leader_epoch", 0)) + 1
    except NoNodeError:
        epoch = 0
    _put(client, zpath, partition_state_json(leader_id, leader_epoch=epoch,
                                             controller_epoch=controller_epoch), timeout_s)


def delete_broker(client: Any, broker_id: int, *, path: str = "/brokers",
                  timeout_s: float = 10.0) -> None:
    """Remove ``<path>/ids/<broker_id>`` (a broker whose session expired)."""
    from kazoo.exceptions import NoNodeError
    try:
        client.delete_async(paths.broker_path(path, broker_id)).get(timeout=timeout_s)
    except NoNodeError:
        pass


def delete_topic(client: Any, topic: str, *, path: str = "/brokers",
                 timeout_s: float = 10.0) -> None:
    """Remove ``<path>/topics/<topic>`` and everything below it."""
    from kazoo.exceptions import NoNodeError
    _delete_tree(client, paths.topic_path(path, topic), timeout_s, NoNodeError)


def _delete_tree(client: Any, zpath: str, timeout_s: float,
                 no_node: Type[BaseException]) -> None:
    try:
        children = client.get_children_async(zpath).get(timeout=timeout_s)
    except no_node:
        return
    for child in children:
        _delete_tree(client, f"{zpath}/{child}", timeout_s, no_node)
    try:
        client.delete_async(zpath).get(timeout=timeout_s)
    except no_node:
        pass
