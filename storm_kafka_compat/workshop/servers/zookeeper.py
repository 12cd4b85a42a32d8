"""A real ZooKeeper server on loopback, run from the jars pyspark ships.

Used by the tests, ``storm-kafka-compat demo`` and ``bench``::

    with EmbeddedZooKeeper() as zk:
        store = ZkStateStore(zk.connect_string)

The server is ``org.apache.zookeeper.server.ZooKeeperServerMain`` started with
``java -cp "<pyspark>/jars/*"`` (Debian's ``/usr/share/java/zookeeper.jar`` when
pyspark is absent) and a private ``zoo.cfg``: ``clientPortAddress=127.0.0.1``, a
free port, no admin server, ``ruok``/``srvr`` four-letter words, and a short
``tickTime`` so session-expiry tests run in seconds. Its log goes to
:attr:`EmbeddedZooKeeper.log_path`. The data directory survives
:meth:`~EmbeddedZooKeeper.restart`, so sessions and nodes survive too.

Manual use: ``python -m storm_kafka_compat.workshop.servers.zookeeper [--port N]`` prints
the connect string and runs until SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import List, Optional

from storm_kafka_compat.errors import EmbeddedServerError
from storm_kafka_compat.workshop.servers.process import ServerProcess

logger = logging.getLogger(__name__)

#: Debian's ZooKeeper jar (its manifest Class-Path brings the dependencies)
DEBIAN_ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
_DEBIAN_LOGGING_JARS = ("/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar")


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 1.0) -> str:
    """Send a ZooKeeper four-letter word (``ruok``, ``srvr``) and return the answer."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(word.encode("ascii"))
        chunks: List[bytes] = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def _pyspark_jars() -> Optional[str]:
    try:
        import pyspark
    except ImportError:
        return None
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    return jars if os.path.isdir(jars) else None


def zookeeper_classpath() -> str:
    """The class path of a ZooKeeper server: pyspark's jars, else Debian's package.

    Raises
    ------
    EmbeddedServerError
        When neither is installed.
    """
    jars = _pyspark_jars()
    if jars and any(name.startswith("zookeeper-") for name in os.listdir(jars)):
        return os.path.join(jars, "*")
    if os.path.exists(DEBIAN_ZOOKEEPER_JAR):
        extra = [j for j in _DEBIAN_LOGGING_JARS if os.path.exists(j)]
        return os.pathsep.join([DEBIAN_ZOOKEEPER_JAR, *extra])
    raise EmbeddedServerError(
        "no ZooKeeper jars found: install pyspark (it ships zookeeper-*.jar in pyspark/jars) "
        f"or Debian's 'zookeeper' package ({DEBIAN_ZOOKEEPER_JAR})")


def java_binary() -> str:
    """The ``java`` that runs the embedded servers (:func:`jdk_tool`)."""
    return jdk_tool("java", "to run the embedded servers")


def jdk_tool(name: str, why: str) -> str:
    """The path of a JDK command (``java``, ``keytool``): ``$JAVA_HOME/bin`` first,
    then ``PATH``; ``why`` ends the error when there is none."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", name), os.X_OK):
        return os.path.join(java_home, "bin", name)
    found = shutil.which(name)
    if not found:
        raise EmbeddedServerError(f"no '{name}' on PATH and JAVA_HOME is unset; install a "
                                  f"JDK (17 or later) {why}")
    return found


_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
"""

_LOG4J1 = """\
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} - %-5p [%t:%C{1}@%L] - %m%n
"""


class EmbeddedZooKeeper(ServerProcess):
    """A standalone ZooKeeper server process on 127.0.0.1.

    Parameters
    ----------
    port : int, optional
        Client port; a free one is picked when omitted. It is kept across restarts.
    base_dir : str or Path, optional
        Where ``zoo.cfg``, ``data/`` and ``zookeeper.log`` live; a temporary
        directory (removed by :meth:`cleanup`) when omitted.
    tick_time_ms : int
        ZooKeeper's ``tickTime``; sessions are checked for expiry once per tick.
    min_session_timeout_ms, max_session_timeout_ms : int
        Bounds the server imposes on the session timeouts clients ask for.
    start_timeout_s : float
        How long :meth:`start` waits for ``ruok`` to answer ``imok``.
    heap_mb : int
        Maximum JVM heap.
    """

    def __init__(self, port: Optional[int] = None, base_dir: Optional["os.PathLike[str]"] = None, *,
                 tick_time_ms: int = 500, min_session_timeout_ms: int = 1000,
                 max_session_timeout_ms: int = 60000, start_timeout_s: float = 30.0,
                 heap_mb: int = 256) -> None:
        self._owns_dir = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else Path(
            tempfile.mkdtemp(prefix="skc-zookeeper-"))
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.port = port if port is not None else free_port()
        self.host = "127.0.0.1"
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.start_timeout_s = start_timeout_s
        self.heap_mb = heap_mb
        self.data_dir = self.base_dir / "data"
        self.config_path = self.base_dir / "zoo.cfg"
        super().__init__(self.base_dir, self.base_dir / "zookeeper.log")
        self.name = f"ZooKeeper on {self.connect_string}"

    # --- properties -------------------------------------------------------------------

    @property
    def connect_string(self) -> str:
        """``127.0.0.1:<port>``, for kazoo or a ``ZkHosts`` string."""
        return f"{self.host}:{self.port}"

    # --- files ------------------------------------------------------------------------

    def _write_config(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(
            f"tickTime={self.tick_time_ms}\n"
            f"minSessionTimeout={self.min_session_timeout_ms}\n"
            f"maxSessionTimeout={self.max_session_timeout_ms}\n"
            f"dataDir={self.data_dir}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            "maxClientCnxns=0\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr\n")
        (self.base_dir / "log4j2.properties").write_text(_LOG4J2)
        (self.base_dir / "log4j.properties").write_text(_LOG4J1)

    def command(self) -> List[str]:
        return [
            java_binary(),
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.4lw.commands.whitelist=ruok,srvr",
            f"-Dzookeeper.log.dir={self.base_dir}",
            f"-Dlog4j2.configurationFile={self.base_dir / 'log4j2.properties'}",
            f"-Dlog4j.configuration=file:{self.base_dir / 'log4j.properties'}",
            "-cp", zookeeper_classpath(),
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(self.config_path),
        ]

    # --- lifecycle --------------------------------------------------------------------

    def is_ready(self) -> bool:
        """True when the server answers ``ruok`` with ``imok``."""
        try:
            return four_letter_word(self.host, self.port, "ruok", timeout_s=0.5) == "imok"
        except OSError:
            return False

    def start(self) -> "EmbeddedZooKeeper":
        """Start the server and wait until it answers ``imok``.

        Raises
        ------
        EmbeddedServerError
            When it exits or does not answer within ``start_timeout_s``; the
            message holds the log tail.
        """
        with self._lock:
            if self.running:
                return self
            self._write_config()
            self._launch(f"starting ZooKeeper on {self.connect_string}")
            logger.info("ZooKeeper starting on %s (pid %s, log %s)",
                        self.connect_string, self.pid, self.log_path)
        self._wait_ready(self.is_ready, self.start_timeout_s, "answer 'ruok'",
                         EmbeddedServerError)
        return self

    def restart(self) -> "EmbeddedZooKeeper":
        """Stop and start again on the same port with the same data directory."""
        self.stop()
        return self.start()

    def cleanup(self) -> None:
        """Stop the server and remove its directory when this object created it."""
        self.stop()
        if self._owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> "EmbeddedZooKeeper":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        return f"EmbeddedZooKeeper({self.connect_string}, pid={self.pid}, dir={self.base_dir})"


def main(argv: Optional[List[str]] = None) -> int:
    """Run a ZooKeeper until SIGTERM/SIGINT; print its connect string on stdout."""
    parser = argparse.ArgumentParser(
        prog="python -m storm_kafka_compat.workshop.servers.zookeeper",
        description="Run a ZooKeeper server on 127.0.0.1 from pyspark's jars.")
    parser.add_argument("--port", type=int, default=None, help="client port (default: a free one)")
    parser.add_argument("--dir", default=None,
                        help="config/data/log directory (default: temporary)")
    args = parser.parse_args(argv)
    server = EmbeddedZooKeeper(port=args.port, base_dir=args.dir)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server.start()
    except EmbeddedServerError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(server.connect_string, flush=True)
    print(f"pid {server.pid}, log {server.log_path}", file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.5):
            if not server.running:
                print(f"Error: ZooKeeper exited; log {server.log_path}", file=sys.stderr)
                return 1
    finally:
        if args.dir is None:
            server.cleanup()
        else:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
