"""Real Apache Kafka brokers on loopback, for tests, the demo and the benchmark:
0.9.0.1, 3.9 (ZooKeeper mode) and 4.x (KRaft), one class over a
:class:`~.kafka_versions.KafkaDistribution` that knows each generation's jars,
properties, storage format and readiness.

:class:`KafkaCluster` runs one or several brokers, each ``java -cp <jars>
kafka.Kafka server.properties`` with its own port, ``broker.id`` and log directory,
and for ZooKeeper mode one ZooKeeper from pyspark's jars (:class:`EmbeddedZooKeeper`)
(:mod:`.kafka_clients` holds ``produce`` and ``log_range``)::

    with KafkaCluster(brokers=2) as cluster:                     # 0.9.0.1
        cluster.create_topic("orders", partitions=4, replication=2)
        cluster.produce("orders", [(p, None, b"x") for p in range(4)])
        leader = cluster.leader("orders", 0)
        cluster.broker(leader).kill()          # SIGKILL by PID

    with KafkaCluster(3, distribution=KAFKA_4) as cluster:       # KRaft, no ZooKeeper
        cluster.create_topic("orders", 4, 3, config={"cleanup.policy": "compact"})

What a real 0.9 broker gives that tansu does not: an exact high watermark with
batching producers, ``OFFSET_OUT_OF_RANGE``, retention (segments deleted by
``retention.ms``/``retention.bytes`` every ``log.retention.check.interval.ms``),
commit metadata kept by the group coordinator, leader election between replicas,
and the ``/brokers`` registry written by Kafka itself. Retention starts 30 s after
a broker starts (``LogManager``'s initial delay), then runs every
``log.retention.check.interval.ms``. What 0.9 lacks: message timestamps (0.9
message format), DeleteRecords, an admin API for topics (topics are created and
deleted here through ZooKeeper, as Kafka 0.9's ``AdminUtils`` does). 3.9 and 4.x
have them all (record batches v2, compression codecs, headers, transactions,
compaction, TLS and SASL listeners: ``listeners=``, ``scram_users=``); topics are
managed through the admin API there.

Clients of a 0.9 broker must pin the protocol: kafka-python ``api_version=(0, 9)``,
librdkafka ``api.version.request=false`` and ``broker.version.fallback=0.9.0.1``
(the distribution's ``kafka_python_api_version`` and ``librdkafka_settings``).

Manual use: ``python -m storm_kafka_compat.workshop.servers.kafka [--brokers N] [--version
0.9|3.9|4]`` prints the ZooKeeper connect string and the bootstrap servers, and
runs until SIGTERM/Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from storm_kafka_compat.workshop.servers.process import ServerProcess
from storm_kafka_compat.workshop.servers.zookeeper import EmbeddedZooKeeper, java_binary, free_port
from storm_kafka_compat.errors import KafkaUnavailableError
from storm_kafka_compat.workshop.servers.kafka_clients import Message, log_range, produce
from storm_kafka_compat.workshop.servers.kafka_versions import (DISTRIBUTIONS, KAFKA_09,
                                                                KafkaDistribution, new_cluster_id)


logger = logging.getLogger(__name__)

#: How long a new 0.9 topic may wait for its partitions' first state before the
#: harness takes Kafka's controller for stalled (create_topic)
CONTROLLER_NUDGE_S = 20.0

# --- one broker -----------------------------------------------------------------------


class EmbeddedKafka(ServerProcess):
    """One Apache Kafka broker process on 127.0.0.1, of any :mod:`.kafka_versions`
    generation.

    Parameters
    ----------
    broker_id : int
        ``broker.id`` (``node.id`` in KRaft).
    zookeeper_connect : str
        ``zookeeper.connect`` (a chroot such as ``127.0.0.1:2181/kafka`` is allowed;
        it must exist); unused in KRaft.
    base_dir : Path
        Holds ``server.properties``, ``logs/`` (the partition data) and ``kafka.log``.
    port : int, optional
        The PLAINTEXT listener's port; a free one when omitted; kept across restarts.
    settings : mapping
        Extra broker settings, e.g. ``{"log.retention.check.interval.ms": 500}``.
    distribution : KafkaDistribution
        Which Kafka (:data:`~.kafka_versions.KAFKA_09` by default).
    listeners : mapping
        Extra listeners, name -> security protocol (``{"SSL": "SSL", "SASL":
        "SASL_PLAINTEXT"}``), each on a free port kept across restarts; their
        security settings go in ``settings``. 0.11+ brokers only.
    """

    def __init__(self, broker_id: int, zookeeper_connect: str, base_dir: "os.PathLike[str]", *,
                 port: Optional[int] = None, settings: Mapping[str, Any] = {},
                 start_timeout_s: float = 60.0, heap_mb: int = 256,
                 distribution: KafkaDistribution = KAFKA_09,
                 listeners: Mapping[str, str] = {}) -> None:
        super().__init__(Path(base_dir), Path(base_dir) / "kafka.log")
        self.broker_id = broker_id
        self.zookeeper_connect = zookeeper_connect
        self.distribution = distribution
        self.host = "127.0.0.1"
        self.port = port or free_port()
        #: listener name -> (security protocol, port); PLAINTEXT first
        self.listeners: Dict[str, Tuple[str, int]] = {"PLAINTEXT": ("PLAINTEXT", self.port)}
        for name, protocol in listeners.items():
            self.listeners[name] = (protocol, free_port())
        self.name = f"Kafka {distribution.version} broker {broker_id} on {self.host}:{self.port}"
        self.settings = dict(settings)
        self.start_timeout_s = start_timeout_s
        self.heap_mb = heap_mb
        self.log_dir = self.base_dir / "logs"
        self.config_path = self.base_dir / "server.properties"
        #: KRaft: this node's controller port, the cluster's voters and id, and the
        #: SCRAM users formatted into its storage (set by KafkaCluster)
        self.controller_port = free_port() if not distribution.zookeeper_mode else 0
        self.quorum_voters = ""
        self.cluster_id = ""
        self.scram_users: Dict[str, str] = {}

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>`` of the PLAINTEXT listener."""
        return f"{self.host}:{self.port}"

    def address(self, listener: str) -> str:
        """``127.0.0.1:<port>`` of the named listener (``"SSL"``, ``"SASL"``...)."""
        try:
            return f"{self.host}:{self.listeners[listener][1]}"
        except KeyError:
            raise KeyError(f"{self.name} has no listener {listener!r}; it has "
                           f"{sorted(self.listeners)}") from None

    def properties(self) -> Dict[str, Any]:
        """The ``server.properties`` this broker runs with."""
        props: Dict[str, Any] = {
            **self.distribution.properties(self),
            "log.dirs": str(self.log_dir),
            "num.partitions": 1,
            "num.network.threads": 2,
            "num.io.threads": 2,
            "num.recovery.threads.per.data.dir": 1,
            "background.threads": 2,
            "auto.create.topics.enable": "false",
            "delete.topic.enable": "true",
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 4,
            "offsets.retention.minutes": 1440,
            "group.min.session.timeout.ms": 1000,
            "leader.imbalance.check.interval.seconds": 5,
            "replica.lag.time.max.ms": 5000,
            "replica.fetch.wait.max.ms": 100,
            "log.flush.interval.messages": 100000,
        }
        props.update(self.settings)
        return props

    def _write_config(self) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(
            "".join(f"{k}={v}\n" for k, v in self.properties().items()))
        self._logging_flags = self.distribution.logging(self.base_dir)

    def command(self) -> List[str]:
        """The command line :meth:`start` runs."""
        return [java_binary(), f"-Xmx{self.heap_mb}m", "-Xss512k", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
                *getattr(self, "_logging_flags", []),
                f"-Dkafka.logs.dir={self.base_dir}",
                "-cp", self.distribution.classpath(), "kafka.Kafka", str(self.config_path)]

    def start(self) -> "EmbeddedKafka":
        """Start the broker and wait until it registered under ``/brokers/ids`` and
        its port accepts connections.

        Raises
        ------
        KafkaUnavailableError
            It exited or did not come up in ``start_timeout_s``; the message holds
            the log tail.
        """
        with self._lock:
            if self.running:
                return self
            self._write_config()
            self.distribution.prepare(self)
            # the marker is looked for in what this start writes, not an earlier start's
            self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
            self._launch(f"starting {self.name}")
            logger.info("%s starting (pid %s, log %s)", self.name, self.pid, self.log_path)
        self._wait_ready(lambda: self._started_marker() and self._port_open(),
                         self.start_timeout_s, "register and listen", KafkaUnavailableError)
        return self

    def _started_marker(self) -> bool:
        marker = self.distribution.started_marker(self.broker_id)
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(getattr(self, "_log_start", 0))
                return marker.encode() in handle.read()
        except OSError:
            return False

    def _port_open(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM (a controlled shutdown: leadership moves first), SIGKILL after
        ``timeout_s``. Stop brokers before their ZooKeeper, or shutdown hangs."""
        super().stop(timeout_s)

    def restart(self) -> "EmbeddedKafka":
        """Start again after :meth:`stop` or :meth:`kill`: same id, port and data."""
        self.stop()
        return self.start()

    def __repr__(self) -> str:
        return f"EmbeddedKafka(id={self.broker_id}, {self.bootstrap}, pid={self.pid})"


# --- a cluster ------------------------------------------------------------------------


class KafkaCluster:
    """``brokers`` Apache Kafka brokers on loopback, and the ZooKeeper they need.

    Parameters
    ----------
    brokers : int
        How many brokers (ids 1..N).
    base_dir : Path, optional
        Where everything lives; a temporary directory (removed by :meth:`close`)
        when omitted.
    chroot : str
        Kafka's ZooKeeper chroot (``""`` for the root, or e.g. ``"/kafka"``).
    settings : mapping
        Extra settings for every broker (``log.retention.check.interval.ms`` ...).
    zookeeper : EmbeddedZooKeeper, optional
        An already running ZooKeeper to use (not stopped by :meth:`close`). A
        ZooKeeper-mode cluster starts its own when none is given; a KRaft cluster
        has none unless one is given (for the offset documents of a job).
    distribution : KafkaDistribution
        Which Kafka (:mod:`.kafka_versions`; 0.9.0.1 by default).
    listeners : mapping
        Extra listeners of every broker, name -> security protocol (see
        :class:`EmbeddedKafka`); 0.11+ only.
    scram_users : mapping
        SASL/SCRAM-SHA-256 users (name -> password) registered before the brokers
        start (in ZooKeeper for 3.9, at storage format time for KRaft).
    """

    def __init__(self, brokers: int = 1, base_dir: Optional["os.PathLike[str]"] = None, *,
                 chroot: str = "", settings: Mapping[str, Any] = {},
                 zookeeper: Optional[EmbeddedZooKeeper] = None,
                 distribution: KafkaDistribution = KAFKA_09,
                 listeners: Mapping[str, str] = {},
                 scram_users: Mapping[str, str] = {}) -> None:
        if brokers < 1:
            raise ValueError(f"brokers must be >= 1, got {brokers}")
        self.distribution = distribution
        self._owns_dir = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else Path(
            tempfile.mkdtemp(prefix="skc-kafka-"))
        self.chroot = chroot.rstrip("/")
        self._owns_zk = zookeeper is None and distribution.zookeeper_mode
        self.zookeeper: Optional[EmbeddedZooKeeper] = zookeeper or (
            EmbeddedZooKeeper(base_dir=self.base_dir / "zookeeper")
            if distribution.zookeeper_mode else None)
        self.settings = dict(settings)
        self.scram_users = dict(scram_users)
        self.brokers: List[EmbeddedKafka] = [
            EmbeddedKafka(i, "", self.base_dir / f"broker-{i}", settings=self.settings,
                          distribution=distribution, listeners=listeners)
            for i in range(1, brokers + 1)]
        if not distribution.zookeeper_mode:
            voters = ",".join(f"{b.broker_id}@{b.host}:{b.controller_port}"
                              for b in self.brokers)
            cluster_id = new_cluster_id()
            for b in self.brokers:
                b.quorum_voters, b.cluster_id = voters, cluster_id
                b.scram_users = self.scram_users
        self._zk: Any = None
        self._admin: Any = None

    # --- addresses ----------------------------------------------------------------------

    @property
    def zk_connect(self) -> str:
        """ZooKeeper connect string with Kafka's chroot (what ZkHosts takes); for a
        KRaft cluster the ZooKeeper it was given (it holds no Kafka metadata)."""
        if self.zookeeper is None:
            raise ValueError(f"this {self.distribution.name} cluster has no ZooKeeper; "
                             "pass zookeeper= to give it one")
        return self.zookeeper.connect_string + self.chroot

    @property
    def bootstrap(self) -> str:
        """Every broker's ``host:port``, comma-separated."""
        return ",".join(b.bootstrap for b in self.brokers)

    @property
    def live_bootstrap(self) -> str:
        """The running brokers' ``host:port`` (the first broker's when none runs): what
        the harness's own clients bootstrap from. kafka-python 3 picks its bootstrap
        server at random and waits out that server's backoff before it picks again, so
        with one of two servers dead its first metadata took longer than a producer's
        60 s ``max_block_ms`` in CI (six picks of the dead one, backoffs up to 33 s)."""
        live = [b.bootstrap for b in self.brokers if b.running] or [self.brokers[0].bootstrap]
        return ",".join(live)

    def addresses(self, listener: str) -> str:
        """Every broker's address on the named listener, comma-separated."""
        return ",".join(b.address(listener) for b in self.brokers)

    def broker(self, broker_id: int) -> EmbeddedKafka:
        """The broker with ``broker.id`` ``broker_id``."""
        for b in self.brokers:
            if b.broker_id == broker_id:
                return b
        raise KeyError(f"no broker {broker_id}; ids are {[b.broker_id for b in self.brokers]}")

    def client_settings(self) -> Dict[str, Any]:
        """What a kafka-python client needs for these brokers (``api_version`` for
        0.9; nothing for modern brokers, which answer the version probe)."""
        version = self.distribution.kafka_python_api_version
        return {} if version is None else {"api_version": version}

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> "KafkaCluster":
        """Start ZooKeeper (when owned) and every broker, the brokers in parallel."""
        self.distribution.classpath()         # fetch the jars once, before the threads
        if self._owns_zk and self.zookeeper is not None:
            self.zookeeper.start()
        if self.chroot:
            self.zk().ensure_path(self.chroot)
        if self.distribution.zookeeper_mode:
            for b in self.brokers:
                b.zookeeper_connect = self.zk_connect
            self.distribution.add_scram_credentials(self, self.scram_users)
        errors: List[BaseException] = []

        def start_one(b: EmbeddedKafka) -> None:
            try:
                b.start()
            except BaseException as exc:     # noqa: BLE001 - re-raised below
                errors.append(exc)

        threads = [threading.Thread(target=start_one, args=(b,)) for b in self.brokers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.close()
            raise errors[0]
        self.wait_for_brokers(len(self.brokers))
        return self

    def close(self) -> None:
        """Stop the brokers, then ZooKeeper (in that order), and remove the owned
        directory. KRaft brokers stopping together lose their quorum and wait for
        it in their controlled shutdown: they get 5 s before SIGKILL."""
        self._close_admin()
        timeout_s = 20.0 if self.distribution.zookeeper_mode else 5.0
        threads = [threading.Thread(target=b.stop, args=(timeout_s,)) for b in self.brokers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            except Exception:                 # noqa: BLE001 - best effort at teardown
                pass
            self._zk = None
        if self._owns_zk and self.zookeeper is not None:
            self.zookeeper.stop()
        if self._owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> "KafkaCluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- ZooKeeper views ------------------------------------------------------------------

    def zk(self) -> Any:
        """A kazoo client on the cluster's ZooKeeper (root, not chroot), bounded retries."""
        if self.zookeeper is None:
            raise ValueError(f"this {self.distribution.name} cluster has no ZooKeeper")
        if self._zk is None:
            from kazoo.client import KazooClient
            from kazoo.retry import KazooRetry
            client = KazooClient(hosts=self.zookeeper.connect_string, timeout=10.0,
                                 connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
                                 command_retry=KazooRetry(max_tries=5, delay=0.2, max_delay=1.0))
            client.start(timeout=15)
            self._zk = client
        return self._zk

    def _path(self, path: str) -> str:
        return self.chroot + path

    def _read_json(self, path: str) -> Optional[Dict[str, Any]]:
        from kazoo.exceptions import NoNodeError
        try:
            data, _ = self.zk().get(self._path(path))
        except NoNodeError:
            return None
        return json.loads(data.decode("utf-8")) if data else None

    def admin(self) -> Any:
        """A kafka-python ``KafkaAdminClient`` on the running brokers (0.11+)."""
        if self._admin is None:
            from kafka.admin import KafkaAdminClient
            self._admin = KafkaAdminClient(bootstrap_servers=self.live_bootstrap.split(","),
                                           request_timeout_ms=10000,
                                           client_id="skc-testing-admin")
        return self._admin

    def _close_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            try:
                admin.close()
            except Exception:                 # noqa: BLE001 - best effort
                pass

    def _ask(self, call: Any) -> Any:
        """``call(admin)``; the admin client is rebuilt once after a failure (a
        broker it used may have been killed)."""
        import kafka.errors as Errors
        try:
            return call(self.admin())
        except Exception as exc:             # noqa: BLE001 - one fresh attempt
            if not (isinstance(exc, (OSError, TimeoutError)) or (
                    isinstance(exc, Errors.KafkaError) and exc.retriable)):
                raise
            self._close_admin()
            return call(self.admin())

    def live_brokers(self) -> List[int]:
        """Broker ids registered right now (``/brokers/ids`` in ZooKeeper mode; the
        unfenced brokers of the metadata in KRaft)."""
        if self.distribution.zookeeper_mode:
            from kazoo.exceptions import NoNodeError
            try:
                return sorted(int(c) for c in self.zk().get_children(self._path("/brokers/ids")))
            except NoNodeError:
                return []
        try:
            described = self._ask(lambda a: a.describe_cluster())
        except Exception:                     # noqa: BLE001 - none answers: none live
            return []
        return sorted(int(b["broker_id"]) for b in described["brokers"]
                      if not b.get("is_fenced", False))

    def wait_for_brokers(self, count: int, timeout_s: float = 60.0) -> None:
        """Wait until ``count`` brokers are registered."""
        deadline = time.monotonic() + timeout_s
        while len(self.live_brokers()) < count:
            if time.monotonic() > deadline:
                raise KafkaUnavailableError(
                    f"only brokers {self.live_brokers()} registered in {timeout_s} s, "
                    f"expected {count}")
            time.sleep(0.1)

    def controller(self) -> Optional[int]:
        """The controller's broker id (``/controller``; the quorum leader in KRaft),
        or None."""
        if not self.distribution.zookeeper_mode:
            described = self._ask(lambda a: a.describe_cluster())
            controller = described.get("controller_id")
            return int(controller) if controller is not None and controller >= 0 else None
        doc = self._read_json("/controller")
        return int(doc["brokerid"]) if doc else None

    def partition_state(self, topic: str, partition: int) -> Optional[Dict[str, Any]]:
        """``{"leader": id, "isr": [...]}``: ZooKeeper's
        ``/brokers/topics/<t>/partitions/<p>/state`` for 0.9, the metadata of the
        brokers for 0.11+; None for an unknown partition."""
        if not self.distribution.admin_api:
            return self._read_json(f"/brokers/topics/{topic}/partitions/{partition}/state")
        return self._metadata_states(topic).get(partition)

    def _metadata_states(self, topic: str) -> Dict[int, Dict[str, Any]]:
        try:
            described = self._ask(lambda a: a.describe_topics([topic]))
        except Exception:                     # noqa: BLE001 - no answer: nothing known
            return {}
        out: Dict[int, Dict[str, Any]] = {}
        for t in described:
            if t.get("error_code", 0) != 0:
                continue
            for p in t["partitions"]:
                out[int(p["partition_index"])] = {"leader": int(p["leader_id"]),
                                                  "isr": list(p["isr_nodes"]),
                                                  "replicas": list(p["replica_nodes"])}
        return out

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader id (``-1`` while none)."""
        state = self.partition_state(topic, partition)
        return int(state["leader"]) if state else -1

    def leaders(self, topic: str) -> Dict[int, int]:
        """Partition -> leader id for every partition of ``topic``."""
        if self.distribution.admin_api:
            return {p: int(st["leader"]) for p, st in sorted(self._metadata_states(topic).items())}
        doc = self._read_json(f"/brokers/topics/{topic}") or {"partitions": {}}
        return {int(p): self.leader(topic, int(p)) for p in doc["partitions"]}

    # --- topics ---------------------------------------------------------------------------

    def create_topic(self, topic: str, partitions: int = 1, replication: int = 1, *,
                     config: Mapping[str, Any] = {}, timeout_s: float = 60.0) -> None:
        """Create ``topic`` and wait until every partition has a leader that answers
        metadata requests.

        0.9: through ZooKeeper as Kafka 0.9's ``AdminUtils.createTopic`` does (topic
        config first, then the replica assignment, replicas spread round-robin over
        the live brokers). 0.11+: the admin API (CreateTopics).

        ``config`` holds topic-level settings such as ``retention.ms``,
        ``retention.bytes``, ``segment.bytes``, ``segment.ms``, ``cleanup.policy``.
        """
        live = self.live_brokers()
        if replication > len(live):
            raise ValueError(f"replication {replication} > live brokers {live}")
        if self.distribution.admin_api:
            from kafka.admin import NewTopic
            self._ask(lambda a: a.create_topics([NewTopic(
                topic, partitions, replication,
                topic_configs={k: str(v) for k, v in config.items()})]))
            self.wait_for_leaders(topic, partitions, timeout_s=timeout_s)
            return
        zk = self.zk()
        zk.ensure_path(self._path("/config/topics"))
        zk.create(self._path(f"/config/topics/{topic}"), json.dumps(
            {"version": 1, "config": {k: str(v) for k, v in config.items()}}).encode())
        assignment = {str(p): [live[(p + r) % len(live)] for r in range(replication)]
                      for p in range(partitions)}
        zk.ensure_path(self._path("/brokers/topics"))
        zk.create(self._path(f"/brokers/topics/{topic}"),
                  json.dumps({"version": 1, "partitions": assignment}).encode())
        deadline = time.monotonic() + timeout_s
        try:
            self.wait_for_leaders(topic, partitions, timeout_s=min(CONTROLLER_NUDGE_S, timeout_s))
            return
        except KafkaUnavailableError:
            if any(self.partition_state(topic, p) for p in range(partitions)):
                raise                           # the controller acted: not the stall below
        # Kafka 0.9's controller can miss a new topic for good: seen on a loaded machine
        # after a broker's ZooKeeper session expired during its start-up, no partition of
        # the topic ever got a state node. A new controller reads every topic when it is
        # elected, so the harness moves the controller once (deleting /controller is the
        # operator's remedy for a stuck 0.9 controller) and waits out the rest.
        logger.warning("topic %r: no partition state after %.0f s, controller %s stalled; "
                    "moving the controller", topic, CONTROLLER_NUDGE_S, self.controller())
        from kazoo.exceptions import NoNodeError
        try:
            zk.delete(self._path("/controller"))
        except NoNodeError:
            pass
        self.wait_for_leaders(topic, partitions,
                              timeout_s=max(1.0, deadline - time.monotonic()))

    def set_topic_config(self, topic: str, config: Mapping[str, Any]) -> None:
        """Change topic-level settings (0.9: ``AdminUtils.changeTopicConfig``, the
        config node then a change notification the brokers watch; 0.11+:
        AlterConfigs). The given settings replace the topic's earlier ones."""
        if self.distribution.admin_api:
            from kafka.admin import ConfigResource, ConfigResourceType
            self._ask(lambda a: a.alter_configs([ConfigResource(
                ConfigResourceType.TOPIC, topic,
                configs={k: str(v) for k, v in config.items()})]))
            return
        zk = self.zk()
        zk.set(self._path(f"/config/topics/{topic}"), json.dumps(
            {"version": 1, "config": {k: str(v) for k, v in config.items()}}).encode())
        zk.ensure_path(self._path("/config/changes"))
        zk.create(self._path("/config/changes/config_change_"),
                  json.dumps({"version": 1, "entity_type": "topics",
                              "entity_name": topic}).encode(), sequence=True)

    def delete_topic(self, topic: str, timeout_s: float = 60.0) -> None:
        """Delete ``topic`` (0.9: ``/admin/delete_topics/<t>``; 0.11+: DeleteTopics)
        and wait until it is gone."""
        if self.distribution.admin_api:
            self._ask(lambda a: a.delete_topics([topic]))
        else:
            zk = self.zk()
            zk.ensure_path(self._path("/admin/delete_topics"))
            zk.create(self._path(f"/admin/delete_topics/{topic}"))

        def gone() -> bool:
            if self.distribution.admin_api:
                return not self._metadata_states(topic)
            return not self.zk().exists(self._path(f"/brokers/topics/{topic}"))
        deadline = time.monotonic() + timeout_s
        while not gone():
            if time.monotonic() > deadline:
                raise KafkaUnavailableError(f"topic {topic!r} still exists after {timeout_s} s")
            time.sleep(0.1)

    def delete_records(self, topic: str, before: Mapping[int, int]) -> Dict[int, int]:
        """DeleteRecords (0.11+): move each partition's log start up to the given
        offset; return partition -> the new log start the leader reports."""
        if not self.distribution.admin_api:
            raise ValueError(f"{self.distribution.name} has no DeleteRecords")
        from kafka import TopicPartition
        answer = self._ask(lambda a: a.delete_records(
            {TopicPartition(topic, p): o for p, o in before.items()}))
        return {tp.partition: int(v["low_watermark"]) for tp, v in answer.items()}

    def wait_for_leaders(self, topic: str, partitions: int, *, timeout_s: float = 60.0,
                         exclude: Sequence[int] = ()) -> Dict[int, int]:
        """Wait until each partition has a live leader not in ``exclude`` and the
        brokers' metadata agree; return partition -> leader."""
        deadline = time.monotonic() + timeout_s
        while True:
            known = self.leaders(topic) if self.distribution.admin_api else {}
            leaders = {p: known.get(p, -1) if self.distribution.admin_api
                       else self.leader(topic, p) for p in range(partitions)}
            live = set(self.live_brokers())
            if all(b in live and b not in exclude for b in leaders.values()) \
                    and self._metadata_agrees(topic, leaders):
                return leaders
            if time.monotonic() > deadline:
                raise KafkaUnavailableError(
                    f"topic {topic!r}: leaders {leaders} (live {sorted(live)}, excluded "
                    f"{list(exclude)}) not settled within {timeout_s} s")
            time.sleep(0.2)

    def _metadata_agrees(self, topic: str, leaders: Dict[int, int]) -> bool:
        """Every running broker's metadata names these leaders. Each broker is asked
        on its own, by a fresh client bootstrapped on it alone (the client's first
        metadata request goes to its bootstrap server): the controller updates the
        brokers' metadata caches one by one, and a client asking the cluster gets
        whichever broker answers first."""
        from kafka import KafkaConsumer, TopicPartition
        for broker in [b for b in self.brokers if b.running]:
            try:
                consumer = KafkaConsumer(bootstrap_servers=[broker.bootstrap],
                                         request_timeout_ms=5000, client_id="skc-testing-meta",
                                         **self.client_settings())
            except Exception:                 # noqa: BLE001 - not ready yet: ask again
                return False
            try:
                consumer.topics()               # the one metadata request, to ``broker``
                cluster = consumer._client.cluster
                if not all(cluster.leader_for_partition(TopicPartition(topic, p)) == leader
                           for p, leader in leaders.items()):
                    return False
            except Exception:                 # noqa: BLE001 - not ready yet: ask again
                return False
            finally:
                consumer.close()
        return True

    # --- offsets --------------------------------------------------------------------------

    def log_range(self, topic: str, partition: int) -> Tuple[int, int]:
        """``(earliest, latest)`` offsets of a partition, asked of its leader."""
        return log_range(self.live_bootstrap, topic, partition,
                         api_version=self.distribution.kafka_python_api_version)

    def produce(self, topic: str, messages: Iterable[Message], **kwargs: Any) -> int:
        """:func:`~.kafka_clients.produce` to this cluster (its protocol pinned)."""
        return produce(self.live_bootstrap, topic, messages,
                       api_version=self.distribution.kafka_python_api_version, **kwargs)


#: ``--version`` of :func:`main`
_BY_LINE = {"0.9": DISTRIBUTIONS[0], "3.9": DISTRIBUTIONS[1], "4": DISTRIBUTIONS[2]}


def main(argv: Optional[List[str]] = None) -> int:
    """Run a cluster until SIGTERM or Ctrl-C
    (``python -m storm_kafka_compat.workshop.servers.kafka``)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--dir", default=None, help="where data and logs go (kept)")
    parser.add_argument("--version", default="0.9", choices=sorted(_BY_LINE),
                        help="which Kafka: 0.9 (0.9.0.1), 3.9 (ZooKeeper mode), 4 (KRaft)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with KafkaCluster(args.brokers, args.dir, distribution=_BY_LINE[args.version]) as cluster:
        zk = cluster.zk_connect if cluster.zookeeper is not None else "none (KRaft)"
        print(f"zookeeper {zk}\nbootstrap {cluster.bootstrap}", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
