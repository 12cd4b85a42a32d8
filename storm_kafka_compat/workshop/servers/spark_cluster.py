"""A Spark standalone cluster on loopback, from the installed pyspark's own jars.

``spark-class org.apache.spark.deploy.master.Master`` and N
``org.apache.spark.deploy.worker.Worker`` processes, each started by its PID in
a session of its own and stopped by that PID::

    with SparkCluster(workers=2) as cluster:
        cluster.master_url            # spark://127.0.0.1:PORT

What the tests run the pipeline on (``tests/integration/test_spark_cluster.py``)
and what ``docs/scaling.md`` starts by hand: ``python -m
storm_kafka_compat.workshop.servers.spark_cluster --workers 2`` prints the master URL and
runs until SIGTERM/Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Dict, List, Optional

from storm_kafka_compat.errors import EmbeddedServerError
from storm_kafka_compat.workshop.servers.process import ServerProcess
from storm_kafka_compat.workshop.servers.zookeeper import free_port


def spark_class() -> str:
    """The ``spark-class`` script of the installed pyspark."""
    import pyspark
    path = Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"
    if not path.exists():
        raise EmbeddedServerError(f"{path} is missing: this pyspark has no launcher scripts; "
                                  "install pyspark from PyPI (pip install pyspark)")
    return str(path)


def _env() -> Dict[str, str]:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1")
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


class _SparkDaemon(ServerProcess):
    """One Spark master or worker JVM."""

    def environment(self) -> Dict[str, str]:  # the daemons want loopback, no daemonizing
        return _env()

    def _log_says(self, text: str) -> bool:
        return text in self.log_tail(200)


class SparkMaster(_SparkDaemon):
    """The standalone master on ``127.0.0.1:port``."""

    name = "Spark master"

    def __init__(self, base_dir: Path, port: Optional[int] = None) -> None:
        super().__init__(base_dir, Path(base_dir) / "master.log")
        self.port = port or free_port()
        self.ui_port = free_port()

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def command(self) -> List[str]:
        return [spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                "--port", str(self.port), "--webui-port", str(self.ui_port)]

    def start(self, timeout_s: float = 60.0) -> "SparkMaster":
        with self._lock:
            self._launch("Spark master")
        self._wait_ready(lambda: self._log_says("I have been elected leader"), timeout_s,
                         "become the leader", EmbeddedServerError)
        return self


class SparkWorker(_SparkDaemon):
    """A worker of ``master_url`` with ``cores`` cores and ``memory`` of memory."""

    def __init__(self, base_dir: Path, master_url: str, index: int, *, cores: int = 1,
                 memory: str = "1g") -> None:
        super().__init__(base_dir, Path(base_dir) / f"worker-{index}.log")
        self.name = f"Spark worker {index}"
        self.master_url = master_url
        self.cores = cores
        self.memory = memory
        self.work_dir = Path(base_dir) / f"work-{index}"

    def command(self) -> List[str]:
        return [spark_class(), "org.apache.spark.deploy.worker.Worker", self.master_url,
                "--cores", str(self.cores), "--memory", self.memory, "--host", "127.0.0.1",
                "--webui-port", str(free_port()), "--work-dir", str(self.work_dir)]

    def start(self, timeout_s: float = 60.0) -> "SparkWorker":
        self.work_dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._launch(self.name)
        self._wait_ready(lambda: self._log_says("Successfully registered with master"),
                         timeout_s, "register with the master", EmbeddedServerError)
        return self


class SparkCluster:
    """A master and ``workers`` workers (``cores`` each) under ``base_dir``."""

    def __init__(self, workers: int = 2, *, cores: int = 1, memory: str = "1g",
                 base_dir: Optional["os.PathLike[str]"] = None) -> None:
        self._tmp = None if base_dir else tempfile.TemporaryDirectory(prefix="skc-spark-")
        self.base_dir = Path(base_dir) if base_dir else Path(self._tmp.name)  # type: ignore
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.master = SparkMaster(self.base_dir)
        self.workers = [SparkWorker(self.base_dir, self.master.url, i, cores=cores,
                                    memory=memory) for i in range(workers)]

    @property
    def master_url(self) -> str:
        return self.master.url

    def start(self) -> "SparkCluster":
        self.master.start()
        # the workers register in parallel: each waits for its own log line
        errors: List[BaseException] = []

        def start(worker: SparkWorker) -> None:
            try:
                worker.start()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        threads = [threading.Thread(target=start, args=(w,)) for w in self.workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.stop()
            raise errors[0]
        return self

    def stop(self) -> None:
        for process in [*self.workers, self.master]:
            process.stop()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> "SparkCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()



def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores of each worker")
    parser.add_argument("--memory", default="1g", help="memory of each worker")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    with SparkCluster(args.workers, cores=args.cores, memory=args.memory) as cluster:
        print(f"master {cluster.master_url} (pid {cluster.master.pid}); workers pids "
              f"{' '.join(str(w.pid) for w in cluster.workers)}", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
