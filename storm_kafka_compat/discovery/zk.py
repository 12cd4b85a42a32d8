"""ZkDiscovery: partitions and leaders from Kafka's broker registry in ZooKeeper.

What storm-kafka's ``ZkCoordinator`` + ``DynamicBrokersReader`` do, over kazoo:

* ``<brokerZkPath>/topics/<topic>/partitions``: only the number of children
  ``n`` is used; partitions ``0..n-1`` are assumed;
* ``.../partitions/<p>/state``: the leader id; ``-1`` raises
  :class:`~storm_kafka_compat.errors.NoLeaderError`;
* ``<brokerZkPath>/ids/<leader>``: the leader's address (every registration
  version; see :mod:`storm_kafka_compat.discovery.registry`). A missing
  node leaves the partition out of this refresh, logged at ERROR (Kafka does
  not update leader and registration atomically, STORM-1682);
* wildcard mode (``kafka.topic.wildcard.match``): ``SpoutConfig.topic`` is a
  Java regex fully matched against the children of ``<brokerZkPath>/topics``;
  offsets then live under ``zkRoot/id/<topic>/partition_N``. A matched topic
  whose ``partitions`` node is gone by the time it is read (deleted in between)
  is skipped (Storm throws);

Deviation: matched topics are taken in sorted order (storm-kafka uses
ZooKeeper's unsorted child order), so every task computes the same list.

The registry is read through a small :class:`RegistryReader`, so the logic is
tested with a fake; :class:`KazooRegistryReader` is the real one.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Protocol

from storm_kafka_compat.config import Broker, SpoutConfig, TopologyConfig, ZkHosts
from storm_kafka_compat.discovery import registry
from storm_kafka_compat.discovery.base import Discovery, PartitionInfo, known_topics
from storm_kafka_compat.errors import BrokerRegistryError, CoordinatorError

log = logging.getLogger(__name__)


class RegistryReader(Protocol):
    """Read access to Kafka's ZooKeeper."""

    def children(self, path: str) -> Optional[List[str]]:
        """Child names of ``path``, or ``None`` when the node does not exist."""
        ...

    def data(self, path: str) -> Optional[bytes]:
        """Data of ``path``, or ``None`` when the node does not exist."""
        ...


def read_partitions(reader: RegistryReader, base_path: str, topic: str, *,
                    wildcard: bool = False,
                    listener_name: Optional[str] = None) -> List[PartitionInfo]:
    """Read the ordered partition list ``L`` from the registry under ``base_path``.

    Parameters
    ----------
    reader : RegistryReader
        Access to Kafka's ZooKeeper.
    base_path : str
        ``ZkHosts.brokerZkPath`` (``/brokers``).
    topic : str
        The topic, or in wildcard mode a Java regex.
    wildcard : bool
        ``kafka.topic.wildcard.match``.
    listener_name : str, optional
        Which registered listener to fetch from (see
        :meth:`~storm_kafka_compat.discovery.registry.BrokerRegistration.address`).

    Raises
    ------
    NoLeaderError
        A partition's state says ``leader: -1``.
    BrokerRegistryError
        A topic's ``partitions`` node or a ``state`` node is missing or malformed.
    """
    if wildcard:
        tpath = registry.topics_path(base_path)
        names = reader.children(tpath)
        if names is None:
            _check_registry(reader, base_path)
            raise BrokerRegistryError(
                f"{tpath} does not exist; check brokerZkPath ({base_path!r}) and the "
                "ZooKeeper connect string's chroot", zk_path=tpath)
        topics = sorted(t for t in names if registry.java_full_match(topic, t))
        if not topics:
            log.warning("no topic under %s matches the regex %r", tpath, topic)
    else:
        topics = [topic]
    brokers: Dict[int, Optional[Broker]] = {}
    out: List[PartitionInfo] = []
    for t in topics:
        ppath = registry.partitions_path(base_path, t)
        children = reader.children(ppath)
        if children is None and wildcard:
            # listed a moment ago: deleted since (or not yet fully created)
            log.warning("topic %r matched %r but %s is gone: the topic is being deleted "
                        "or created; skipped this refresh", t, topic, ppath)
            continue
        if children is None:
            _check_registry(reader, base_path)
            raise BrokerRegistryError(
                f"{ppath} does not exist: topic {t!r} is unknown to Kafka (or still being "
                f"created); check the topic name and brokerZkPath ({base_path!r})"
                + known_topics(t, reader.children(registry.topics_path(base_path))),
                topic=t, zk_path=ppath)
        for p in range(len(children)):
            spath = registry.state_path(base_path, t, p)
            raw = reader.data(spath)
            if raw is None:
                raise BrokerRegistryError(
                    f"{spath} does not exist although {ppath} has {len(children)} "
                    "children; the topic is being created or the registry is damaged",
                    topic=t, partition=p, zk_path=spath)
            state = registry.parse_partition_state(raw, topic=t, partition=p, zk_path=spath)
            if state.leader not in brokers:
                brokers[state.leader] = _broker(reader, base_path, state.leader, listener_name)
            leader = brokers[state.leader]
            if leader is None:
                log.error("Node %s does not exist; partition %s/%d is skipped until its "
                          "leader %d registers", registry.broker_path(base_path, state.leader),
                          t, p, state.leader)
                continue
            out.append(PartitionInfo(t, p, leader, t if wildcard else None))
    return out


def _check_registry(reader: RegistryReader, base_path: str) -> None:
    """Raise when no broker registry exists at all under ``base_path``: what a
    ZooKeeper with no ZooKeeper-mode Kafka (a KRaft cluster's, or none) looks like.

    Raises
    ------
    BrokerRegistryError
        ``<base>/ids`` does not exist or has no broker.
    """
    ids = reader.children(registry.ids_path(base_path))
    if ids:
        return
    path = registry.ids_path(base_path)
    found = "does not exist" if ids is None else "is empty"
    raise BrokerRegistryError(
        f"no Kafka broker registers in this ZooKeeper ({path} {found}): Kafka in KRaft mode "
        "(every 4.x cluster, and 3.x clusters without ZooKeeper) keeps no broker registry "
        "in ZooKeeper. Use the bootstrap discovery instead of hosts.zk (hosts: {bootstrap: "
        "\"broker1:9092,broker2:9092\"}); the offset documents can stay in this ZooKeeper "
        "(storm.zookeeper.servers/port or spout.zkServers/zkPort). Otherwise check that "
        "the brokers are up, the chroot of hosts.zk and brokerZkPath", zk_path=path)


def _broker(reader: RegistryReader, base: str, broker_id: int,
            listener_name: Optional[str]) -> Optional[Broker]:
    path = registry.broker_path(base, broker_id)
    raw = reader.data(path)
    if raw is None:
        return None
    reg = registry.parse_broker_registration(raw, broker_id=broker_id, zk_path=path)
    try:
        return reg.address(listener_name)
    except BrokerRegistryError as exc:
        exc.zk_path = path
        raise


class KazooRegistryReader:
    """:class:`RegistryReader` over a connected kazoo client.

    Every call waits at most ``timeout_s``; a timeout or connection loss
    raises :class:`~storm_kafka_compat.errors.CoordinatorError`.
    """

    def __init__(self, client: Any, *, timeout_s: float = 15.0) -> None:
        self.client = client
        self.timeout_s = timeout_s

    def children(self, path: str) -> Optional[List[str]]:
        from kazoo.exceptions import NoNodeError
        try:
            return list(self.client.get_children_async(path).get(timeout=self.timeout_s))
        except NoNodeError:
            return None
        except Exception as exc:
            raise _unreachable(self.client, path, exc) from exc

    def data(self, path: str) -> Optional[bytes]:
        from kazoo.exceptions import NoNodeError
        try:
            data: Optional[bytes]
            data, _stat = self.client.get_async(path).get(timeout=self.timeout_s)
            return data
        except NoNodeError:
            return None
        except Exception as exc:
            raise _unreachable(self.client, path, exc) from exc


def _unreachable(client: Any, path: str, exc: BaseException) -> CoordinatorError:
    hosts = getattr(client, "hosts", "?")
    return CoordinatorError(f"reading {path} from Kafka's ZooKeeper {hosts} failed "
                            f"({type(exc).__name__}: {exc}); check ZkHosts and that "
                            "ZooKeeper is up", zk_path=path)


def connect_kazoo(hosts: ZkHosts, topology: TopologyConfig) -> Any:
    """Start a read-only kazoo client on ``hosts.broker_zk_str`` (chroot included)
    with the ``storm.zookeeper.*`` session and connection timeouts.

    Registry reads are not retried here: one that fails fails the refresh, and the
    assignment keeps the last good partitions and refreshes again at the next
    period or fetch failure (:mod:`storm_kafka_compat.spout.assignment`). The one
    ZooKeeper retry loop of the project is the offset store's
    (:class:`~storm_kafka_compat.offsets.zkstore.ZkStateStore`, Storm's RetryNTimes).

    Raises
    ------
    CoordinatorError
        ZooKeeper did not answer within ``storm.zookeeper.connection.timeout``.
    """
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry
    client = KazooClient(
        hosts=hosts.broker_zk_str, timeout=topology.zookeeper_session_timeout_ms / 1000.0,
        connection_retry=KazooRetry(max_tries=-1, max_delay=1.0), read_only=True)
    try:
        client.start(timeout=topology.zookeeper_connection_timeout_ms / 1000.0)
    except Exception as exc:
        client.stop()
        client.close()
        raise CoordinatorError(
            f"cannot connect to Kafka's ZooKeeper {hosts.broker_zk_str!r} within "
            f"{topology.zookeeper_connection_timeout_ms} ms ({exc}); check "
            "hosts.zk and storm.zookeeper.connection.timeout") from exc
    return client


class ZkDiscovery(Discovery):
    """The partitions of :class:`~storm_kafka_compat.config.ZkHosts` (Kafka's registry).

    Parameters
    ----------
    hosts : ZkHosts
        Connect string (with optional chroot), ``brokerZkPath``, ``refreshFreqSecs``.
    spout : SpoutConfig
        ``topic`` (a regex in wildcard mode).
    topology : TopologyConfig
        ``wildcard_match`` and the ``storm.zookeeper.*`` timings.
    reader : RegistryReader, optional
        Registry access; by default a kazoo client is started on
        ``hosts.broker_zk_str`` and stopped by :meth:`close`.
    listener_name : str, optional
        Registered listener to fetch from (default: top-level host/port, else
        a PLAINTEXT endpoint, else the first one).
    """

    def __init__(self, hosts: ZkHosts, spout: SpoutConfig, topology: TopologyConfig, *,
                 reader: Optional[RegistryReader] = None,
                 listener_name: Optional[str] = None) -> None:
        self.refresh_freq_ms = hosts.refresh_freq_secs * 1000
        self.hosts = hosts
        self.topic = spout.topic
        self.wildcard = topology.wildcard_match
        self.listener_name = listener_name
        self._client: Any = None
        if reader is None:
            self._client = connect_kazoo(hosts, topology)
            reader = KazooRegistryReader(
                self._client, timeout_s=topology.zookeeper_session_timeout_ms / 1000.0)
        self.reader = reader

    def discover(self) -> List[PartitionInfo]:
        """Read the partition list from the registry (see :func:`read_partitions`)."""
        return read_partitions(self.reader, self.hosts.broker_zk_path, self.topic,
                               wildcard=self.wildcard, listener_name=self.listener_name)

    def close(self) -> None:
        """Stop the kazoo client this object started."""
        if self._client is not None:
            self._client.stop()
            self._client.close()
            self._client = None
