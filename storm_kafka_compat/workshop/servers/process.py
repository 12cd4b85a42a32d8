"""The lifecycle every embedded Java server shares: one process, started and stopped
by its own PID, output appended to a log file.

:class:`ServerProcess` is the base of
:class:`~storm_kafka_compat.workshop.servers.zookeeper.EmbeddedZooKeeper` and
:class:`~storm_kafka_compat.workshop.servers.kafka.EmbeddedKafka`; a subclass gives the
command line and how to tell that the server is ready.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Dict, IO, List, Optional

from storm_kafka_compat.workshop.servers import class_archives

logger = logging.getLogger(__name__)


class ServerProcess:
    """A server process in ``base_dir`` whose output goes to ``log_path``.

    Subclasses set ``name`` (for messages) and implement :meth:`command`; they
    call :meth:`_launch` and :meth:`_wait_ready` from their ``start``.
    """

    #: what the server is, in messages ("ZooKeeper", "Kafka broker 1")
    name = "server"

    def __init__(self, base_dir: Path, log_path: Path) -> None:
        self.base_dir = Path(base_dir)
        self.log_path = Path(log_path)
        self._process: Optional["subprocess.Popen[bytes]"] = None
        self._log_file: Optional[IO[bytes]] = None
        self._lock = threading.Lock()
        #: where this process's class archive goes, until it is written once it is ready
        self._archive_writing: Optional[class_archives.Writing] = None
        atexit.register(self._atexit)

    # --- state ----------------------------------------------------------------------------

    @property
    def pid(self) -> Optional[int]:
        """PID of the process, or None when not running."""
        return self._process.pid if self._process is not None and self.running else None

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self._process is not None and self._process.poll() is None

    def command(self) -> List[str]:
        """The command line that starts the server."""
        raise NotImplementedError

    def environment(self) -> Optional[Dict[str, str]]:
        """The environment of the process; None inherits this process's.

        Given to ``Popen`` as it is: servers are started from several threads at
        once, so ``os.environ`` is never changed to pass them settings.
        """
        return None

    def log_tail(self, n: int = 50) -> str:
        """The last ``n`` lines of the log (empty when there is none)."""
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                handle.seek(max(0, handle.tell() - 256 * 1024))
                lines = handle.read().decode("utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    # --- lifecycle ------------------------------------------------------------------------

    def _launch(self, header: str) -> None:
        """Start :meth:`command` (caller holds ``_lock``), output to the log after
        ``header``, in a session of its own so signals to the test do not reach it."""
        self._log_file = open(self.log_path, "ab")
        self._log_file.write(f"--- {header} at {time.strftime('%Y-%m-%dT%H:%M:%S')} ---\n"
                             .encode())
        self._log_file.flush()
        self._ended()
        command, self._archive_writing = class_archives.with_archive(self.command())
        self._process = subprocess.Popen(
            command, stdout=self._log_file, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, cwd=str(self.base_dir), env=self.environment(),
            start_new_session=True)

    def _wait_ready(self, ready: Callable[[], bool], timeout_s: float, what: str,
                    error: Callable[[str], Exception]) -> None:
        """Poll ``ready`` until it is true; raise ``error(message)`` (with the log
        tail) when the process exits or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.running:
                code = self._process.returncode if self._process else None
                self._ended()
                self._close_log()
                raise error(f"{self.name} exited with code {code} during start-up; log "
                            f"{self.log_path} ends with:\n{self.log_tail(30)}")
            if ready():
                self._archive_when_ready()
                return
            time.sleep(0.1)
        self.kill()
        raise error(f"{self.name} did not {what} within {timeout_s} s (port taken or machine "
                    f"overloaded?); log {self.log_path} ends with:\n{self.log_tail(30)}")

    def _signal_and_wait(self, sig: int, timeout_s: float) -> bool:
        process = self._process
        if process is None or process.poll() is not None:
            self._ended()
            return True
        try:
            os.kill(process.pid, sig)
        except ProcessLookupError:
            process.wait()
            self._ended()
            return True
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        self._ended()
        return True

    def _ended(self) -> None:
        """Once the process has ended: a class archive it did not write let go."""
        process, writing = self._process, self._archive_writing
        if writing is not None and process is not None and process.poll() is not None:
            self._archive_writing = None
            class_archives.release(writing)

    def _archive_when_ready(self) -> None:
        """Once the server is ready, the first time: the classes it loaded written to
        its class archive for the next starts, when it is the start that writes it
        (:mod:`~storm_kafka_compat.workshop.servers.class_archives`)."""
        writing, pid = self._archive_writing, self.pid
        if writing is not None and pid is not None:
            self._archive_writing = None
            class_archives.dump(writing, pid)

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM (after resuming a paused process), SIGKILL after ``timeout_s``."""
        with self._lock:
            self.resume()
            if not self._signal_and_wait(signal.SIGTERM, timeout_s):
                logger.warning("%s pid %s ignored SIGTERM; killing it", self.name,
                               self._process.pid if self._process else None)
                self._signal_and_wait(signal.SIGKILL, 10.0)
            self._close_log()

    def kill(self) -> None:
        """SIGKILL (a crash) and wait for the process to exit."""
        with self._lock:
            self.resume()
            self._signal_and_wait(signal.SIGKILL, 10.0)
            self._close_log()

    def pause(self) -> None:
        """SIGSTOP: connections stay open but nothing answers."""
        if self.running and self._process is not None:
            os.kill(self._process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after :meth:`pause`."""
        if self.running and self._process is not None:
            os.kill(self._process.pid, signal.SIGCONT)

    def detach(self) -> None:
        """Leave the server running after this process exits (``demo --keep``): no
        kill at exit; the caller reports the PID so that the operator can stop it."""
        atexit.unregister(self._atexit)
        self._close_log()

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _atexit(self) -> None:
        if self.running:
            self._signal_and_wait(signal.SIGKILL, 5.0)
