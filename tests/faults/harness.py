"""Helpers for fault-injection tests: the job as a subprocess, deliveries, documents.

The fault suite runs ``storm-kafka-compat run CONFIG`` exactly as an operator
would (the installed console script, Spark local), kills or signals it, breaks
the servers under it, and then checks what reached the bolt (a bolt that
appends one JSON line per delivery to a file) and what ZooKeeper holds::

    config = job_config(topic=t, zk_root=root, spout_id="s", zk_port=zk.port,
                        static={0: broker.bootstrap}, bolt="tests.bolts:record")
    path = write_config(tmp_path / "job.yaml", config)
    job = JobProcess(path, record_path=tmp_path / "seen.jsonl", workdir=tmp_path,
                     args=["--until-caught-up"]).start()
    job.wait(timeout_s=120)
    offsets = delivered_offsets(read_deliveries(tmp_path / "seen.jsonl"))

Nothing here imports pyspark; kazoo is imported only by the ZooKeeper readers.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Counter, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import yaml

from storm_kafka_compat.offsets.document import StoredDocument, parse_document
from tests.jvm import spark_java_options

#: how long a test waits for a started job to process its first message: Spark's
#: start takes ~20 s on an idle 2-core machine and minutes on a loaded one
JOB_START_TIMEOUT_S = 300.0


#: the repository (``tests.bolts`` and the other test modules import from it)
REPO = str(Path(__file__).resolve().parents[2])

#: environment variable the test bolts (``tests.bolts``) append their records to
RECORD_ENV = "STORM_KAFKA_COMPAT_TEST_RECORD"

Key = Tuple[int, int]   # (partition, offset)


# --- CONFIG -------------------------------------------------------------------------------

def job_config(*, topic: str, zk_root: str, spout_id: str, zk_port: int,
               zk_host: str = "127.0.0.1", static: Optional[Mapping[int, str]] = None,
               bootstrap: Optional[str] = None, bolt: str = "tests.bolts:record",
               spout: Optional[Mapping[str, Any]] = None,
               topology: Optional[Mapping[str, Any]] = None,
               spark: Optional[Mapping[str, Any]] = None,
               kafka: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """A CONFIG mapping for a job reading ``topic`` with offsets in ZooKeeper.

    Parameters
    ----------
    topic, zk_root, spout_id : str
        ``spout.topic``, ``spout.zkRoot``, ``spout.id``.
    zk_port : int
        Port of the offset store (``storm.zookeeper.port``); the host is ``zk_host``.
    static : mapping of int to str, optional
        Partition to ``host:port`` (StaticHosts).
    bootstrap : str, optional
        Bootstrap servers (the bootstrap coordinator) when ``static`` is not given.
    bolt : str
        ``module:callable`` of the bolt.
    spout, topology, spark : mapping, optional
        Extra fields merged over the defaults (Storm names).
    kafka : mapping, optional
        Kafka client settings (the CONFIG ``kafka`` section).
    """
    if (static is None) == (bootstrap is None):
        raise ValueError("give exactly one of static= or bootstrap=")
    hosts: Dict[str, Any] = ({"static": {int(p): a for p, a in static.items()}}
                             if static is not None else {"bootstrap": bootstrap})
    config: Dict[str, Any] = {
        "spout": {"topic": topic, "zkRoot": zk_root, "id": spout_id, "scheme": "string",
                  "stateUpdateIntervalMs": 1000, **dict(spout or {})},
        "hosts": hosts,
        "topology": {"topology.name": "faults", "storm.zookeeper.servers": [zk_host],
                     "storm.zookeeper.port": zk_port, **dict(topology or {})},
        "spark": {"master": "local[1]", "appName": "skc-faults",
                  "conf": {"spark.driver.extraJavaOptions": spark_java_options()},
                  **dict(spark or {})},
        "bolt": bolt,
    }
    if kafka:
        config["kafka"] = dict(kafka)
    return config


def write_config(path: os.PathLike, config: Mapping[str, Any]) -> Path:
    """Write ``config`` as YAML to ``path`` and return the path."""
    out = Path(path)
    out.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    return out


# --- the job as a subprocess ----------------------------------------------------------------

def console_script() -> List[str]:
    """The command that runs ``storm-kafka-compat``: the console script installed
    beside this interpreter, else ``python -m storm_kafka_compat.cli.main``."""
    script = Path(sys.executable).with_name("storm-kafka-compat")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "storm_kafka_compat.cli.main"]


def process_table() -> Dict[int, Tuple[int, bytes]]:
    """Every live process: pid -> (parent pid, command line with NUL separators)."""
    procs: Dict[int, Tuple[int, bytes]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        procs[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmd)
    return procs


def descendants(pid: int, table: Optional[Mapping[int, Tuple[int, bytes]]] = None) -> List[int]:
    """PIDs of every process below ``pid`` (children, their children, ...), whatever
    session they put themselves in: Spark's JVM runs in a session of its own and
    pyspark's daemon in a process group of its own, so killing the driver's group
    does not reach them."""
    procs = process_table() if table is None else table
    children: Dict[int, List[int]] = collections.defaultdict(list)
    for child, (parent, _) in procs.items():
        children[parent].append(child)
    out: List[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children.get(child, []))
    return out


def _sigkill(group: int, pids: Iterable[int]) -> None:
    """SIGKILL the process group ``group`` and each of ``pids`` (gone ones are fine)."""
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class JobProcess:
    """``storm-kafka-compat run CONFIG`` in its own process group.

    Parameters
    ----------
    config_path : path
        The CONFIG file.
    record_path : path
        File the recording bolt appends to (exported as ``STORM_KAFKA_COMPAT_TEST_RECORD``).
    workdir : path
        Working directory; stdout, stderr and the metrics file are written here
        with a per-start suffix (``run-<n>.stderr`` ...).
    args : sequence of str
        Extra arguments after ``run CONFIG`` (``--until-caught-up``, ``--max-messages N``).
    python_path : sequence of str
        Prepended to ``PYTHONPATH`` so executors import the bolt's module.
    env : mapping, optional
        Extra environment variables.
    verbose : int
        Number of ``-v`` flags (1 shows INFO logs on stderr).
    """

    def __init__(self, config_path: os.PathLike, *, record_path: os.PathLike,
                 workdir: os.PathLike, args: Sequence[str] = (),
                 python_path: Sequence[str] = (), env: Optional[Mapping[str, str]] = None,
                 verbose: int = 1) -> None:
        self.config_path = Path(config_path)
        self.record_path = Path(record_path)
        self.workdir = Path(workdir)
        self.args = list(args)
        self.python_path = list(python_path)
        self.extra_env = dict(env or {})
        self.verbose = verbose
        self.starts = 0
        self._proc: Optional[subprocess.Popen] = None
        self._files: List[Any] = []
        #: the driver's process tree, taken just before a kill (reaped after it)
        self._tree: List[int] = []

    # --- paths of the current (last) start ---------------------------------------------
    def _path(self, suffix: str, start: Optional[int] = None) -> Path:
        return self.workdir / f"run-{start if start is not None else self.starts}.{suffix}"

    @property
    def metrics_path(self) -> Path:
        return self._path("metrics.jsonl")

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    def command(self) -> List[str]:
        """The command line of the next start."""
        return [*console_script(), *(["-" + "v" * self.verbose] if self.verbose else []),
                "run", str(self.config_path), "--metrics-file", str(self.metrics_path),
                *self.args]

    def start(self) -> "JobProcess":
        """Start the job (again); each start gets fresh stdout/stderr/metrics files."""
        if self.running:
            raise RuntimeError(f"job pid {self.pid} is still running; kill or wait first")
        self._close_files()
        self.starts += 1
        env = dict(os.environ)
        env.update({RECORD_ENV: str(self.record_path), "PYSPARK_PYTHON": sys.executable,
                    "SPARK_LOCAL_IP": "127.0.0.1"})
        paths = [*self.python_path, env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        env.update(self.extra_env)
        out = open(self._path("stdout"), "wb")
        err = open(self._path("stderr"), "wb")
        self._files = [out, err]
        self._proc = subprocess.Popen(self.command(), stdout=out, stderr=err,
                                      stdin=subprocess.DEVNULL, cwd=str(self.workdir), env=env,
                                      start_new_session=True)
        return self

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> Optional[int]:
        return self._proc.poll() if self._proc is not None else None

    def wait(self, timeout_s: float) -> int:
        """Wait for the job to exit; on timeout kill its process group and raise
        ``TimeoutError`` with the stderr tail."""
        assert self._proc is not None, "job not started"
        try:
            code = self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill_group()
            raise TimeoutError(f"job did not exit within {timeout_s} s; stderr tail:\n"
                               f"{self.stderr_tail()}") from None
        self._reap_group()
        return code

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the driver process only."""
        if self.running and self._proc is not None:
            os.kill(self._proc.pid, sig)

    def kill_driver(self, timeout_s: float = 30.0) -> int:
        """SIGKILL the driver process (a crash), wait for it, then clean up what it
        left in its process group (Spark's JVM and Python workers)."""
        assert self._proc is not None, "job not started"
        self._tree = descendants(self._proc.pid)
        self.signal(signal.SIGKILL)
        code = self._proc.wait(timeout=timeout_s)
        self._reap_group()
        return code

    def kill_group(self) -> None:
        """SIGKILL the whole job: the driver's process group and every process below
        the driver (Spark's JVM and pyspark's workers have sessions and groups of their
        own)."""
        if self._proc is None:
            return
        tree = descendants(self._proc.pid) if self._proc.poll() is None else []
        _sigkill(self._proc.pid, tree)
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - the kernel is stuck
            pass

    def _reap_group(self) -> None:
        """Wait up to 10 s for what the driver started (its process group, Spark's JVM
        in its own session, pyspark's workers) to exit, then SIGKILL what is left: when
        this returns no process of the job can deliver another tuple."""
        if self._proc is None:
            return
        tree = set(self._tree)
        self._tree = []
        deadline = time.monotonic() + 10
        while True:
            table = process_table()
            for pid in list(tree):       # workers forked since, below a live parent
                tree.update(descendants(pid, table))
            alive = {pid for pid in tree if pid in table}
            try:
                os.killpg(self._proc.pid, 0)
                group = True
            except (ProcessLookupError, PermissionError):
                group = False
            if not alive and not group:
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        _sigkill(self._proc.pid, alive)
        gone = time.monotonic() + 10
        while any(pid in process_table() for pid in alive) and time.monotonic() < gone:
            time.sleep(0.05)

    def _close_files(self) -> None:
        for f in self._files:
            f.close()
        self._files = []

    def close(self) -> None:
        """Kill what is still running and close the output files."""
        if self.running:
            self.kill_group()
        self._reap_group()
        self._close_files()

    # --- output -----------------------------------------------------------------------------
    def stderr(self, start: Optional[int] = None) -> str:
        """The stderr of one start (default: the last)."""
        for f in self._files:
            f.flush()
        try:
            return self._path("stderr", start).read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stdout(self, start: Optional[int] = None) -> str:
        for f in self._files:
            f.flush()
        try:
            return self._path("stdout", start).read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stderr_tail(self, lines: int = 40) -> str:
        return "\n".join(self.stderr().splitlines()[-lines:])

    def metrics(self, start: Optional[int] = None) -> List[Dict[str, Any]]:
        """The metric records (JSON lines) of one start."""
        path = self._path("metrics.jsonl", start)
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:      # a line cut by a kill
                continue
        return out

    def __enter__(self) -> "JobProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_cli(args: Sequence[str], *, timeout_s: float = 120.0, cwd: Optional[os.PathLike] = None,
            env: Optional[Mapping[str, str]] = None) -> subprocess.CompletedProcess:
    """Run ``storm-kafka-compat ARGS`` to completion (text output captured); the
    repository is on ``PYTHONPATH`` (the test bolts are imported before a run)."""
    full_env = dict(os.environ)
    full_env.update({"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"})
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, full_env.get("PYTHONPATH", ""))
                                             if p)
    full_env.update(env or {})
    return subprocess.run([*console_script(), *args], capture_output=True, text=True,
                          timeout=timeout_s, cwd=None if cwd is None else str(cwd),
                          env=full_env, stdin=subprocess.DEVNULL)


# --- deliveries ---------------------------------------------------------------------------

def read_deliveries(path: os.PathLike) -> List[Dict[str, Any]]:
    """Every record the recording bolt wrote (a line cut by a kill is skipped)."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    for line in p.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def delivered_offsets(records: Iterable[Mapping[str, Any]]) -> Counter[Key]:
    """How many times each ``(partition, offset)`` reached the bolt."""
    return collections.Counter((int(r["partition"]), int(r["offset"])) for r in records)


def missing_offsets(counts: Mapping[Key, int], log_end: Mapping[int, int]) -> List[Key]:
    """``(partition, offset)`` below the log end that never reached the bolt."""
    return [(p, o) for p, end in sorted(log_end.items()) for o in range(end)
            if counts.get((p, o), 0) == 0]


def duplicates(counts: Mapping[Key, int]) -> int:
    """Deliveries beyond the first, summed."""
    return sum(n - 1 for n in counts.values() if n > 1)


def wait_until(predicate: Callable[[], Any], *, timeout_s: float, what: str,
               interval_s: float = 0.1, on_timeout: Optional[Callable[[], str]] = None) -> Any:
    """Poll ``predicate`` until it returns a true value (returned); raise
    ``TimeoutError`` naming ``what`` (and ``on_timeout()``'s text) otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            extra = f"\n{on_timeout()}" if on_timeout is not None else ""
            raise TimeoutError(f"{what} did not happen within {timeout_s} s{extra}")
        time.sleep(interval_s)


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler installed for ``signum`` (Linux's
    ``SigCgt`` mask in /proc): a signal sent before that kills it instead."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except FileNotFoundError:
        pass
    return False


def find_metric(records: Iterable[Mapping[str, Any]], name: str) -> List[Dict[str, Any]]:
    """The ``value`` of every metric record named ``name``, in order."""
    return [dict(r["value"]) for r in records if r.get("name") == name]


# --- ZooKeeper ------------------------------------------------------------------------------

def _client(connect: str, timeout_s: float) -> Any:
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry
    client = KazooClient(hosts=connect, timeout=10.0,
                         connection_retry=KazooRetry(max_tries=-1, max_delay=1.0))
    client.start(timeout=timeout_s)
    return client


def zk_tree(connect: str, root: str = "/", *, timeout_s: float = 15.0) -> Dict[str, bytes]:
    """Every znode under ``root`` (inclusive) with its data, ``/zookeeper`` excepted;
    compare two snapshots to prove that nothing was written."""
    client = _client(connect, timeout_s)
    out: Dict[str, bytes] = {}
    try:
        stack = [root]
        while stack:
            path = stack.pop()
            if path == "/zookeeper":
                continue
            try:
                data, _ = client.get_async(path).get(timeout=timeout_s)
                children = client.get_children_async(path).get(timeout=timeout_s)
            except Exception as exc:  # NoNodeError: the root does not exist
                if type(exc).__name__ == "NoNodeError":
                    continue
                raise
            out[path] = data
            stack.extend(f"{path.rstrip('/')}/{c}" for c in children)
    finally:
        client.stop()
        client.close()
    return out


def read_documents(connect: str, paths: Iterable[str], *,
                   timeout_s: float = 15.0) -> Dict[str, Optional[StoredDocument]]:
    """Parse the documents at ``paths`` (None where a node does not exist)."""
    client = _client(connect, timeout_s)
    out: Dict[str, Optional[StoredDocument]] = {}
    try:
        for path in paths:
            try:
                data, _ = client.get_async(path).get(timeout=timeout_s)
            except Exception as exc:
                if type(exc).__name__ == "NoNodeError":
                    out[path] = None
                    continue
                raise
            out[path] = parse_document(data)
    finally:
        client.stop()
        client.close()
    return out


def set_document(connect: str, path: str, data: bytes, *, timeout_s: float = 15.0) -> None:
    """Write raw bytes at ``path`` (created with parents when missing): a hand edit."""
    client = _client(connect, timeout_s)
    try:
        if client.exists_async(path).get(timeout=timeout_s) is None:
            client.ensure_path_async(path.rsplit("/", 1)[0] or "/").get(timeout=timeout_s)
            client.create_async(path, data).get(timeout=timeout_s)
        else:
            client.set_async(path, data).get(timeout=timeout_s)
    finally:
        client.stop()
        client.close()


def committed_offsets(connect: str, zk_root: str, spout_id: str, partitions: Iterable[int], *,
                      timeout_s: float = 15.0) -> Dict[int, Optional[int]]:
    """The stored offset (next offset to process) of each partition, None where
    there is no usable document (classic layout ``zkRoot/id/partition_N``)."""
    from storm_kafka_compat.offsets.paths import partition_path
    parts = list(partitions)
    paths = {p: partition_path(zk_root, spout_id, p) for p in parts}
    docs = read_documents(connect, paths.values(), timeout_s=timeout_s)
    return {p: (docs[paths[p]].offset if docs[paths[p]] is not None
                and docs[paths[p]].problem is None else None) for p in parts}


def produce_chunk(cluster: Any, topic: str, start: Dict[int, int], n: int) -> Dict[int, int]:
    """Produce ``n`` messages ``m-<partition>-<offset>`` to every partition of ``start``
    (partition -> its log end) on a real Kafka cluster; return the new log ends."""
    cluster.produce(topic, [(p, None, f"m-{p}-{start[p] + i}".encode())
                            for i in range(n) for p in start])
    return {p: start[p] + n for p in start}


def wait_full_isr(cluster: Any, topic: str, partitions: int, replicas: int,
                  timeout_s: float = 120.0) -> None:
    """Wait until every replica of every partition is in sync: a kill then loses
    nothing Kafka acknowledged."""
    wait_until(lambda: all(len((cluster.partition_state(topic, p) or {}).get("isr", []))
                           == replicas for p in range(partitions)),
               timeout_s=timeout_s, what=f"all {replicas} replicas in the ISR of every partition")
