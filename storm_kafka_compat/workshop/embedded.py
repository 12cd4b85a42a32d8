"""The servers and in-memory doubles the ``demo`` and ``bench`` commands run on.

The one product module that reaches :mod:`storm_kafka_compat.workshop.servers` (servers
started on loopback for the demo, the benchmark and the tests) and
:mod:`storm_kafka_compat.testing` (the in-memory doubles the planning benchmark
drives the real spout with). Nothing under engine/, spout/, offsets/, kafka/,
discovery/, topology/ or streaming/ imports either; the commands import this.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from storm_kafka_compat.config import Broker, JobConfig

if TYPE_CHECKING:
    from storm_kafka_compat.workshop.servers.kafka import KafkaCluster
    from storm_kafka_compat.workshop.servers.spark_cluster import SparkCluster
    from storm_kafka_compat.workshop.servers.tansu import EmbeddedTansu
    from storm_kafka_compat.workshop.servers.zookeeper import EmbeddedZooKeeper
    from storm_kafka_compat.spout.spout import Spout

#: the brokers the commands can start: a real Apache Kafka 3.9 (ZooKeeper mode, from
#: Maven Central) or 0.9.0.1 (from npm), or tansu (fast, in memory; its defects are
#: listed in docs/testing.md)
BROKERS = ("kafka39", "kafka09", "tansu")

#: (partition, key, value) as the producers take them
Message = Tuple[int, Optional[bytes], Optional[bytes]]


def missing_kafka09() -> Optional[str]:
    """Why the Apache Kafka 0.9.0.1 broker cannot start here (no Java, no npm and
    nothing cached), or None."""
    from storm_kafka_compat.workshop.servers.kafka_package import missing_prerequisite
    return missing_prerequisite()


def missing_broker(broker: str) -> Optional[str]:
    """Why ``broker`` (one of :data:`BROKERS`) cannot start here, or None."""
    if broker == "kafka09":
        return missing_kafka09()
    if broker == "kafka39":
        from storm_kafka_compat.workshop.servers.kafka_versions import KAFKA_39
        return KAFKA_39.missing_prerequisite()
    return None


def spark_kafka_jars(pyspark_version: str) -> Tuple[str, List[str]]:
    """Spark's own Kafka source (``spark-sql-kafka-0-10_2.13`` and its dependencies)
    from Maven Central for ``pyspark_version``, or for the newest earlier release that
    Maven Central serves; returns (the version resolved, the jars for ``spark.jars``).

    Raises
    ------
    EmbeddedServerError
        ``mvn`` is missing or no version near ``pyspark_version`` resolves.
    """
    from storm_kafka_compat.workshop.servers.maven import (Artifact, MavenBundle,
                                                           MavenUnavailableError)
    from storm_kafka_compat.workshop.servers.maven import resolve
    spark_provided = ("org.apache.spark:spark-core_2.13", "org.apache.spark:spark-sql_2.13",
                      "org.apache.spark:spark-catalyst_2.13", "org.apache.spark:spark-tags_2.13",
                      "org.apache.hadoop:hadoop-client-api",
                      "org.apache.hadoop:hadoop-client-runtime", "org.slf4j:slf4j-api",
                      "org.scala-lang:scala-library")
    errors = []
    for version in _spark_versions_from(pyspark_version):
        bundle = MavenBundle(f"spark-sql-kafka-{version}", (
            Artifact(f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"),),
            exclusions=spark_provided)
        try:
            return version, sorted(str(p) for p in resolve(bundle).glob("*.jar"))
        except MavenUnavailableError as exc:
            errors.append(f"{version}: {exc}")
    raise MavenUnavailableError("Spark's Kafka source did not resolve: " + "; ".join(errors))


def _spark_versions_from(version: str) -> List[str]:
    """``version`` then the x.y.0 releases before it, newest first (4.3.0 -> 4.3.0,
    4.2.0, 4.1.0, 4.0.0)."""
    major, minor = (int(x) for x in version.split(".")[:2])
    return [version] + [f"{major}.{m}.0" for m in range(minor - 1, -1, -1)
                        if f"{major}.{m}.0" != version]


class EmbeddedServers:
    """ZooKeeper and one broker on loopback, stopped by their PIDs on exit.

    Parameters
    ----------
    broker : str
        ``kafka39`` or ``kafka09`` (a real Apache Kafka 3.9 or 0.9.0.1 broker with its own
        ZooKeeper) or ``tansu``.
    base_dir : path
        Where the servers keep their data and logs.
    """

    def __init__(self, broker: str, base_dir: "os.PathLike[str] | str") -> None:
        if broker not in BROKERS:
            raise ValueError(f"broker {broker!r} is not one of {', '.join(BROKERS)}")
        self.name = broker
        base = Path(base_dir)
        self._cluster: Optional["KafkaCluster"] = None
        self._tansu: Optional["EmbeddedTansu"] = None
        #: the ``kafka`` mapping every client of the broker needs
        self.kafka: Dict[str, Any] = {}
        if broker in ("kafka09", "kafka39"):
            from storm_kafka_compat.workshop.servers.kafka import KafkaCluster
            from storm_kafka_compat.workshop.servers.kafka_versions import KAFKA_09, KAFKA_39
            self._cluster = KafkaCluster(1, base, distribution=KAFKA_09 if broker == "kafka09"
                                         else KAFKA_39)
            zookeeper = self._cluster.zookeeper
            assert zookeeper is not None      # a ZooKeeper-mode cluster has its ZooKeeper
            self.zk: "EmbeddedZooKeeper" = zookeeper
            if broker == "kafka09":
                self.kafka = {"api_version": "0.9"}
        else:
            from storm_kafka_compat.workshop.servers.tansu import EmbeddedTansu
            from storm_kafka_compat.workshop.servers.zookeeper import EmbeddedZooKeeper
            self.zk = EmbeddedZooKeeper(base_dir=base / "zookeeper")
            self._tansu = EmbeddedTansu(log_path=base / "tansu.log")

    def start(self) -> "EmbeddedServers":
        if self._cluster is not None:
            self._cluster.start()
        else:
            assert self._tansu is not None
            self.zk.start()
            self._tansu.start()
        return self

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
        else:
            assert self._tansu is not None
            self._tansu.close()
            self.zk.cleanup()

    def detach(self) -> None:
        """Leave the servers running after this process (``demo --keep``)."""
        self.zk.detach()
        if self._cluster is not None:
            for b in self._cluster.brokers:
                b.detach()
        else:
            assert self._tansu is not None
            self._tansu.detach()

    def __enter__(self) -> "EmbeddedServers":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def bootstrap(self) -> str:
        if self._cluster is not None:
            return str(self._cluster.bootstrap)
        assert self._tansu is not None
        return self._tansu.bootstrap

    @property
    def broker(self) -> Broker:
        """The broker's address (for documents and Kafka's registry)."""
        host, _, port = self.bootstrap.split(",")[0].rpartition(":")
        return Broker(host, int(port))

    @property
    def broker_pid(self) -> Optional[int]:
        if self._cluster is not None:
            return self._cluster.brokers[0].pid
        assert self._tansu is not None
        return self._tansu.pid

    def describe(self) -> str:
        kind = (f"Apache Kafka {self._cluster.distribution.version}"
                if self._cluster is not None else "tansu")
        return (f"ZooKeeper {self.zk.connect_string} (pid {self.zk.pid}), {kind} "
                f"{self.bootstrap} (pid {self.broker_pid})")

    def create(self, topic: str, partitions: int, *, config: Mapping[str, Any] = {}) -> None:
        """Create ``topic``; ``config`` holds topic-level settings (Kafka only: tansu
        takes none)."""
        if self._cluster is not None:
            self._cluster.create_topic(topic, partitions, config=config)
        else:
            from storm_kafka_compat.workshop.servers.tansu import create_topic
            create_topic(self.bootstrap, topic, partitions)

    def produce(self, topic: str, messages: Iterable[Message], *,
                max_message_bytes: Optional[int] = None) -> int:
        """A batching producer on Kafka (librdkafka's when confluent-kafka is
        installed, else kafka-python's); one record per batch on tansu (its high
        watermark is wrong otherwise). ``max_message_bytes`` raises the producer's
        limit on a record (the topic's ``max.message.bytes`` must allow it too)."""
        if self._cluster is not None:
            try:
                import confluent_kafka  # noqa: F401
            except ImportError:
                extra = {} if max_message_bytes is None else {
                    "max_request_size": max_message_bytes}
                return int(self._cluster.produce(topic, messages, **extra))
            from storm_kafka_compat.workshop.servers.kafka_clients import produce_librdkafka
            settings = dict(self._cluster.distribution.librdkafka_settings)
            if max_message_bytes is not None:
                settings["message.max.bytes"] = max_message_bytes
            return produce_librdkafka(self.bootstrap, topic, messages, settings=settings)
        from storm_kafka_compat.workshop.servers.tansu import produce_exact
        return int(produce_exact(self.bootstrap, topic, messages))

    def write_registry(self, client: Any, topic: str, partitions: int) -> None:
        """Kafka's broker registry for ``topic``, as a ZooKeeper-mode Kafka writes it
        (the real broker writes its own)."""
        if self._cluster is not None:
            return
        from storm_kafka_compat.workshop.servers.registry import write_broker_registry
        b = self.broker
        write_broker_registry(client, brokers={1: (b.host, b.port)},
                              topics={topic: {p: 1 for p in range(partitions)}})


def register_topic(zk_connect: str, bootstrap: str, topic: str, partitions: int, *,
                   messages: Callable[[int], Iterable[Message]] = lambda _n: ()
                   ) -> Tuple[int, bool]:
    """A topic ZkHosts can see on the tansu servers a ``demo --keep`` left running (tansu
    writes no broker registry; the demo writes one for its topic): ``topic`` is created
    with ``partitions`` and ``messages(partitions)`` produced into it unless the broker
    has it already (then its own partitions count and nothing is produced), and Kafka's
    broker registry for it is written under ``/brokers`` as a ZooKeeper-mode Kafka would.
    Returns the topic's partitions and whether it was created here."""
    from kafka import KafkaConsumer
    from kazoo.client import KazooClient

    from storm_kafka_compat.workshop.servers.registry import write_broker_registry
    from storm_kafka_compat.workshop.servers.tansu import create_topic, produce_exact
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="skc-demo-topics",
                             allow_auto_create_topics=False)
    try:
        existing = consumer.partitions_for_topic(topic)
    finally:
        consumer.close()
    created = not existing
    if created:
        create_topic(bootstrap, topic, partitions)
        produce_exact(bootstrap, topic, messages(partitions))
    else:
        partitions = len(existing or ())
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    try:
        write_broker_registry(client, brokers={1: (host, int(port))},
                              topics={topic: {p: 1 for p in range(partitions)}})
    finally:
        client.stop()
        client.close()
    return partitions, created


def spark_cluster(workers: int) -> "SparkCluster":
    """A standalone Spark cluster of ``workers`` one-core workers on loopback."""
    from storm_kafka_compat.workshop.servers.spark_cluster import SparkCluster
    return SparkCluster(workers)


def simulated_spout(job: JobConfig, partitions: int) -> "Spout":
    """The real spout of ``job`` over a simulated broker whose ``job.spout.topic``
    has ``partitions`` empty partitions, and an in-memory document store (no I/O:
    what the planning benchmark measures)."""
    from storm_kafka_compat.runtime import Runtime
    from storm_kafka_compat.testing.memory_store import MemoryStateStore
    from storm_kafka_compat.testing.scripted import ScriptedKafka

    kafka = ScriptedKafka()
    kafka.create_topic(job.spout.topic, partitions)
    return Runtime(job, store=MemoryStateStore(), kafka_factory=lambda boot: kafka).spout()
