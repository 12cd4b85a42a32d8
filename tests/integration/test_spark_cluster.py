"""The pipeline on a Spark standalone cluster: a master and two workers started from
pyspark's own jars on loopback (stopped by PID), real Apache Kafka 0.9.0.1.

What a team moving off one machine meets: a bolt module that exists only beside
the CONFIG (shipped with ``spark.pyFiles``), executors whose Python is not the
driver's (a packed virtual environment from ``storm-kafka-compat ship``, used via
``spark.archives`` and ``spark.pyspark.python``), ``spark-submit``, and stopping:
SIGTERM finishes the batch in flight and commits, under ``run`` and under
spark-submit (to its JVM, to the Python driver, or Ctrl-C to both); a second
SIGTERM stops at once and commits what is acknowledged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import yaml

from storm_kafka_compat.offsets.document import parse_document
from storm_kafka_compat.offsets.paths import partition_path
from tests.integration.kafka09_jobs import KAFKA_09
from tests.jvm import spark_java_options

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CLI = Path(sys.executable).with_name("storm-kafka-compat")
PARTITIONS = 4
#: a bolt module that only the driver's side has: it lives beside the CONFIG
BOLTS = '''
import json, os, sys, time

def record(t):
    """Record where each tuple was processed (and by which interpreter)."""
    time.sleep(float(os.environ.get("CLUSTER_BOLT_SLEEP_S", "0")))
    with open(os.environ["CLUSTER_TEST_RECORD"], "a") as out:
        out.write(json.dumps({"partition": t.partition, "offset": t.offset,
                              "pid": os.getpid(), "python": sys.executable}) + "\\n")
'''


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from storm_kafka_compat.workshop.servers.spark_cluster import SparkCluster
    with SparkCluster(workers=2, base_dir=tmp_path_factory.mktemp("spark")) as c:
        yield c


@pytest.fixture(scope="module")
def executor_env(tmp_path_factory) -> Dict[str, str]:
    """``storm-kafka-compat ship``'s archive and the spark.conf it prints."""
    out = tmp_path_factory.mktemp("ship")
    done = subprocess.run([str(CLI), "ship", "--out", str(out)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)["spark"]["conf"]


def _env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_LOCAL_IP")}
    env["PYSPARK_PYTHON"] = sys.executable
    return env


def _job(tmp: Path, kafka09, topic: str, master: str, record: Path,
         conf: Optional[Dict[str, str]] = None, sleep_s: float = 0.0,
         executors: int = 1) -> Path:
    """The job's CONFIG. ``executors``: how many of the cluster's one-core workers it
    takes (``spark.cores.max``); the stop and signal tests need one, which starts one
    executor JVM fewer per run."""
    (tmp / "clusterbolts.py").write_text(BOLTS)
    config = tmp / "job.yaml"
    config.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": "/cluster", "id": topic, "scheme": "string",
                  "stateUpdateIntervalMs": 500},
        "hosts": {"zk": kafka09.zk_connect},
        "topology": {"name": "cluster", "id": f"{topic}-1-1",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": kafka09.zookeeper.port},
        "spark": {"master": master, "pyFiles": ["clusterbolts.py"],
                  "conf": {"spark.executorEnv.CLUSTER_TEST_RECORD": str(record),
                           "spark.executorEnv.CLUSTER_BOLT_SLEEP_S": str(sleep_s),
                           "spark.executor.memory": "512m",
                           "spark.executor.extraJavaOptions": spark_java_options(),
                           "spark.cores.max": str(executors), **(conf or {})}},
        "bolt": "clusterbolts:record",
        "kafka": dict(KAFKA_09)}))
    return config


def _records(record: Path) -> List[dict]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def _committed(kafka09, topic: str) -> Dict[int, Optional[int]]:
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=kafka09.zookeeper.connect_string)
    zk.start(timeout=15)
    try:
        out: Dict[int, Optional[int]] = {}
        for p in range(PARTITIONS):
            path = partition_path("/cluster", topic, p)
            out[p] = parse_document(zk.get(path)[0]).offset if zk.exists(path) else None
        return out
    finally:
        zk.stop()
        zk.close()


def _seed(kafka09_topic, per_partition: int) -> str:
    return kafka09_topic(PARTITIONS, [(p, None, f"m-{p}-{i}".encode())
                                      for i in range(per_partition) for p in range(PARTITIONS)])


def test_shipped_bolt_module_and_interpreter_on_two_workers(
        cluster, executor_env, kafka09, kafka09_topic, tmp_path) -> None:
    topic = _seed(kafka09_topic, 200)
    record = tmp_path / "record.jsonl"
    config = _job(tmp_path, kafka09, topic, cluster.master_url, record, conf=executor_env,
                  executors=2)
    done = subprocess.run([str(CLI), "run", str(config), "--until-caught-up"], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    seen = _records(record)
    assert {(r["partition"], r["offset"]) for r in seen} == {
        (p, o) for p in range(PARTITIONS) for o in range(200)}
    # the executors' Python is the shipped environment's, not the driver's
    assert {Path(r["python"]).parts[-3:] for r in seen} == {("environment", "bin", "python")}
    assert all(not r["python"].startswith(str(Path(sys.executable).parent)) for r in seen)
    assert len({r["pid"] for r in seen}) >= 2          # tasks ran on both executors
    assert _committed(kafka09, topic) == {p: 200 for p in range(PARTITIONS)}


def test_under_spark_submit(cluster, kafka09, kafka09_topic, tmp_path) -> None:
    import pyspark

    import storm_kafka_compat.cli.main as cli_main
    topic = _seed(kafka09_topic, 100)
    record = tmp_path / "record.jsonl"
    config = _job(tmp_path, kafka09, topic, "local[1]", record)     # --master wins
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    # spark-submit's --conf wins over the CONFIG's setting of the same key
    submitted_record = tmp_path / "submitted.jsonl"
    done = subprocess.run([str(submit), "--master", cluster.master_url, "--conf",
                           f"spark.executorEnv.CLUSTER_TEST_RECORD={submitted_record}",
                           cli_main.__file__, "run", str(config), "--until-caught-up"],
                          cwd=tmp_path,
                          env=dict(_env(), PYSPARK_DRIVER_PYTHON=sys.executable),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    # spark-submit's PythonRunner merges the Python driver's stderr into its stdout
    assert "SIGTERM or Ctrl-C to spark-submit, or SIGTERM to this pid" in done.stdout
    assert not record.exists() and len(_records(submitted_record)) >= PARTITIONS * 100
    assert _committed(kafka09, topic) == {p: 100 for p in range(PARTITIONS)}


def _start_slow(tmp_path, kafka09, topic, master, record, sleep_s=0.02):
    """``run`` mid-batch, in a session of its own (as a terminal's foreground job)."""
    config = _job(tmp_path, kafka09, topic, master, record, sleep_s=sleep_s)
    job = subprocess.Popen([str(CLI), "run", str(config)], cwd=tmp_path, env=_env(),
                           start_new_session=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while len(_records(record)) < 8 and time.monotonic() < deadline:
        if job.poll() is not None:
            raise AssertionError(job.stderr.read()[-4000:])
        time.sleep(0.2)
    return config, job


def _finish(config: Path, tmp_path: Path) -> None:
    """Run to the end with a fast bolt (the same topic, spout id and record), on a local
    master: what is checked is what the stopped run left in ZooKeeper, and a local run
    reads it as a cluster run does without starting two more executors."""
    text = config.read_text()
    config.write_text(yaml.safe_dump({**yaml.safe_load(text), "spark": {
        **yaml.safe_load(text)["spark"], "master": "local[2]", "conf": {
            **yaml.safe_load(text)["spark"]["conf"],
            "spark.executorEnv.CLUSTER_BOLT_SLEEP_S": "0"}}}))
    done = subprocess.run([str(CLI), "run", str(config), "--until-caught-up"], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]


def _finished_the_batch_and_lost_nothing(output: str, kafka09, topic: str, record: Path,
                                         config: Path, tmp_path: Path,
                                         stopping: str = "SIGTERM received: finishing the "
                                                         "batch in flight") -> None:
    """After a graceful stop of a 300-per-partition job: the batch in flight finished
    and was committed, and a run to the end leaves nothing unprocessed."""
    assert stopping in output
    assert "Spark job failed" not in output                # the batch in flight finished
    assert "received again" not in output                 # nothing was cancelled
    committed = _committed(kafka09, topic)
    processed = {(r["partition"], r["offset"]) for r in _records(record)}
    # the batch in flight was committed: what was processed is exactly what the
    # documents hold as done. A partition its task's budget did not reach (a slow
    # bolt spends a 250 ms budget on one partition's first chunk) has no document
    # yet and nothing processed; the next run plans it first.
    assert any(c for c in committed.values()), committed
    assert processed == {(p, o) for p, c in committed.items() for o in range(c or 0)}, (
        committed, sorted(processed))
    _finish(config, tmp_path)
    assert {(r["partition"], r["offset"]) for r in _records(record)} == {
        (p, o) for p in range(PARTITIONS) for o in range(300)}          # 0 lost


def test_sigterm_mid_batch_finishes_the_batch_and_commits(
        cluster, kafka09, kafka09_topic, tmp_path) -> None:
    topic = _seed(kafka09_topic, 300)
    record = tmp_path / "record.jsonl"
    config, job = _start_slow(tmp_path, kafka09, topic, cluster.master_url, record)
    job.send_signal(signal.SIGTERM)
    _, err = job.communicate(timeout=300)
    assert job.returncode == 0, err[-4000:]
    _finished_the_batch_and_lost_nothing(err, kafka09, topic, record, config, tmp_path)


def test_ctrl_c_under_run_on_a_local_master_finishes_the_batch(
        kafka09, kafka09_topic, tmp_path) -> None:
    """Ctrl-C reaches ``run``'s whole process group: the Python driver, the JVM it
    started and, on a local master, the JVM's Python workers. Only the driver acts on
    it: the batch in flight finishes on the workers and commits, exit 0."""
    topic = _seed(kafka09_topic, 300)
    record = tmp_path / "record.jsonl"
    config, job = _start_slow(tmp_path, kafka09, topic, "local[2]", record)
    os.killpg(job.pid, signal.SIGINT)
    _, err = job.communicate(timeout=300)
    assert job.returncode == 0, err[-4000:]
    _finished_the_batch_and_lost_nothing(err, kafka09, topic, record, config, tmp_path,
                                         stopping="SIGINT received: finishing the batch")


def test_a_second_sigterm_stops_at_once_and_keeps_what_was_acknowledged(
        cluster, kafka09, kafka09_topic, tmp_path) -> None:
    topic = _seed(kafka09_topic, 300)
    record = tmp_path / "record.jsonl"
    # 0.25 s a tuple: a task's first chunk (16 tuples) takes 4 s, so both signals land
    # inside one batch
    config, job = _start_slow(tmp_path, kafka09, topic, cluster.master_url, record,
                              sleep_s=0.25)
    job.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    job.send_signal(signal.SIGTERM)
    _, err = job.communicate(timeout=120)
    assert job.returncode == 0, err[-4000:]
    assert "received again: cancelling the batch in flight" in err
    _finish(config, tmp_path)
    assert {(r["partition"], r["offset"]) for r in _records(record)} == {
        (p, o) for p in range(PARTITIONS) for o in range(300)}          # 0 lost
    assert _committed(kafka09, topic) == {p: 300 for p in range(PARTITIONS)}


class _Submitted:
    """``run`` under spark-submit on the cluster, mid-batch: the spark-submit process
    (which is its JVM) in a session of its own, as a terminal's foreground job is,
    with the Python driver's PID that ``run`` prints."""

    def __init__(self, cluster, kafka09, topic: str, tmp_path: Path,
                 sleep_s: float = 0.02, submit_args: tuple = ()) -> None:
        import re
        import threading

        import pyspark

        import storm_kafka_compat.cli.main as cli_main
        self.record = tmp_path / "record.jsonl"
        self.config = _job(tmp_path, kafka09, topic, cluster.master_url, self.record,
                           sleep_s=sleep_s)
        submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
        self.job = subprocess.Popen(
            [str(submit), "--master", cluster.master_url, *submit_args, cli_main.__file__,
             "run", str(self.config)], cwd=tmp_path,
            env=dict(_env(), PYSPARK_DRIVER_PYTHON=sys.executable), start_new_session=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: List[str] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.job.stdout),
                                        daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 240
        self.driver_pid = None
        while time.monotonic() < deadline and self.job.poll() is None:
            found = [m for m in (re.search(r"driver pid (\d+): ", x) for x in self.lines) if m]
            if found and len(_records(self.record)) >= 8:
                self.driver_pid = int(found[0].group(1))
                break
            time.sleep(0.2)
        if self.driver_pid is None:
            self.job.kill()
            raise AssertionError(self.output[-4000:])

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def exit_status(self) -> int:
        try:
            status = self.job.wait(timeout=300)
        finally:
            if self.job.poll() is None:
                self.job.kill()
        self._reader.join(timeout=10)
        return status


def test_under_spark_submit_a_sigterm_to_spark_submit_finishes_the_batch(
        cluster, kafka09, kafka09_topic, tmp_path) -> None:
    """A SIGTERM to spark-submit (its JVM) mid-batch is handed to the Python driver:
    the batch in flight finishes and commits, spark-submit exits 0 (not the 143 of a
    JVM ended by SIGTERM)."""
    topic = _seed(kafka09_topic, 300)
    submitted = _Submitted(cluster, kafka09, topic, tmp_path)
    submitted.job.send_signal(signal.SIGTERM)
    assert submitted.exit_status() == 0, submitted.output[-4000:]
    _finished_the_batch_and_lost_nothing(
        submitted.output, kafka09, topic, submitted.record, submitted.config, tmp_path,
        stopping="SIGTERM to spark-submit received: finishing the batch in flight")


def test_under_spark_submit_a_second_sigterm_to_spark_submit_stops_at_once(
        cluster, kafka09, kafka09_topic, tmp_path) -> None:
    topic = _seed(kafka09_topic, 300)
    # 0.25 s a tuple: a task's first chunk takes 4 s, so both signals land in one batch
    submitted = _Submitted(cluster, kafka09, topic, tmp_path, sleep_s=0.25)
    submitted.job.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    submitted.job.send_signal(signal.SIGTERM)
    assert submitted.exit_status() == 0, submitted.output[-4000:]
    assert "SIGTERM to spark-submit received again: cancelling the batch" in submitted.output
    _finish(submitted.config, tmp_path)
    assert {(r["partition"], r["offset"]) for r in _records(submitted.record)} == {
        (p, o) for p in range(PARTITIONS) for o in range(300)}          # 0 lost


def test_under_spark_submit_ctrl_c_finishes_the_batch(
        cluster, kafka09, kafka09_topic, tmp_path) -> None:
    """Ctrl-C in a terminal: SIGINT to spark-submit's process group, its JVM and the
    Python driver together, is one request: the JVM's shutdown hook (before Spark's
    own) waits for the batch, which finishes and commits; exit 0, not 130. The wait
    is spark-submit's spark.shutdown.timeout less 10 s."""
    topic = _seed(kafka09_topic, 300)
    submitted = _Submitted(cluster, kafka09, topic, tmp_path,
                           submit_args=("--conf", "spark.shutdown.timeout=45s"))
    os.killpg(submitted.job.pid, signal.SIGINT)
    assert submitted.exit_status() == 0, submitted.output[-4000:]
    assert "spark-submit is shutting down" in submitted.output
    assert "up to 35 s" in submitted.output
    _finished_the_batch_and_lost_nothing(
        submitted.output, kafka09, topic, submitted.record, submitted.config, tmp_path,
        stopping="finishing the batch in flight")


def test_under_spark_submit_a_second_ctrl_c_stops_at_once(
        cluster, kafka09, kafka09_topic, tmp_path) -> None:
    """A second Ctrl-C cancels the batch in flight (the JVM, already shutting down,
    waits for the Python driver), commits what is acknowledged, exit 0, nothing lost."""
    topic = _seed(kafka09_topic, 300)
    # 0.25 s a tuple: a task's first chunk takes 4 s, so both signals land in one batch
    submitted = _Submitted(cluster, kafka09, topic, tmp_path, sleep_s=0.25)
    os.killpg(submitted.job.pid, signal.SIGINT)
    time.sleep(0.5)
    os.killpg(submitted.job.pid, signal.SIGINT)
    assert submitted.exit_status() == 0, submitted.output[-4000:]
    assert "SIGINT received again: cancelling the batch in flight" in submitted.output
    _finish(submitted.config, tmp_path)
    assert {(r["partition"], r["offset"]) for r in _records(submitted.record)} == {
        (p, o) for p in range(PARTITIONS) for o in range(300)}          # 0 lost
    assert _committed(kafka09, topic) == {p: 300 for p in range(PARTITIONS)}


def test_under_spark_submit_a_sigterm_to_the_python_driver_finishes_the_batch(
        cluster, kafka09, kafka09_topic, tmp_path) -> None:
    """A SIGTERM to the Python driver (the PID ``run`` prints) mid-batch finishes the
    batch in flight, commits and exits 0, and spark-submit exits 0 with it."""
    topic = _seed(kafka09_topic, 300)
    submitted = _Submitted(cluster, kafka09, topic, tmp_path)
    os.kill(submitted.driver_pid, signal.SIGTERM)
    assert submitted.exit_status() == 0, submitted.output[-4000:]
    _finished_the_batch_and_lost_nothing(submitted.output, kafka09, topic, submitted.record,
                                         submitted.config, tmp_path)


# --- bolt-task state on the cluster (issue 31) ---------------------------------------------

#: storm-starter's WordCount shape beside the CONFIG (shipped with spark.pyFiles): the
#: split runs on the executors, the count tasks in the driver's bolt hosts
WORD_COUNT_BOLTS = '''
import json, os, time

class Split:
    def declare_output_fields(self):
        return ("word",)
    def execute(self, t, collector):
        time.sleep(float(os.environ.get("CLUSTER_BOLT_SLEEP_S", "0")))
        for word in t.values[0].split():
            collector.emit([word])

class Count:
    def prepare(self, conf, context):
        self.counts = {}
    def declare_output_fields(self):
        return ("word", "count")
    def execute(self, t, collector):
        word = t["word"]
        self.counts[word] = self.counts.get(word, 0) + 1
        collector.emit([word, self.counts[word]])

class Report:
    def execute(self, t, collector):
        with open(os.environ["CLUSTER_TEST_RECORD"], "a") as out:
            out.write(json.dumps({"word": t.values[0], "count": t.values[1],
                                  "pid": os.getpid()}) + "\\n")
'''


def _word_count_job(tmp: Path, kafka09, topic: str, master: str, record: Path,
                    sleep_s: float) -> Path:
    (tmp / "wcbolts.py").write_text(WORD_COUNT_BOLTS)
    config = tmp / "job.yaml"
    bolts = [
        {"name": "split", "bolt": "wcbolts:Split", "kind": "basic", "parallelism": 2,
         "inputs": [{"from": "spout", "grouping": "shuffle"}]},
        {"name": "count", "bolt": "wcbolts:Count", "kind": "basic", "parallelism": 4,
         "inputs": [{"from": "split", "grouping": "fields", "fields": ["word"]}]},
        {"name": "report", "bolt": "wcbolts:Report", "kind": "basic",
         "inputs": [{"from": "count", "grouping": "shuffle"}]}]
    config.write_text(yaml.safe_dump({
        "spout": {"topic": topic, "zkRoot": "/cluster", "id": topic, "scheme": "string",
                  "stateUpdateIntervalMs": 500},
        "hosts": {"zk": kafka09.zk_connect},
        "topology": {"name": "cluster", "id": f"{topic}-1-1",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": kafka09.zookeeper.port,
                     "topology.state.dir": str(tmp / "state"), "bolts": bolts},
        "spark": {"master": master, "pyFiles": ["wcbolts.py"],
                  "conf": {"spark.executorEnv.CLUSTER_BOLT_SLEEP_S": str(sleep_s),
                           "spark.executor.memory": "512m",
                           "spark.executor.extraJavaOptions": spark_java_options()}},
        "kafka": dict(KAFKA_09)}))
    return config


def _final_counts(record: Path) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for r in _records(record):
        out[r["word"]] = max(out.get(r["word"], 0), r["count"])
    return out


@pytest.mark.parametrize("kill_executor", [False, True], ids=["nothing-killed",
                                                              "executor-killed"])
def test_word_count_on_the_cluster_counts_every_word_exactly(
        cluster, kafka09, kafka09_topic, tmp_path, kill_executor) -> None:
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    from tests.faults.harness import process_table
    from tests.stateful_inputs import as_messages, sentences, word_counts
    lines = sentences(600, seed=36)
    topic = kafka09_topic(PARTITIONS, [])
    produce(kafka09.bootstrap, topic, as_messages(lines, PARTITIONS))
    record = tmp_path / "record.jsonl"
    config = _word_count_job(tmp_path, kafka09, topic, cluster.master_url, record,
                             0.004 if kill_executor else 0.0)
    job = subprocess.Popen([str(CLI), "run", str(config), "--until-caught-up"], cwd=tmp_path,
                           env=dict(_env(), CLUSTER_TEST_RECORD=str(record)),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if kill_executor:
        deadline = time.monotonic() + 240
        while len(_records(record)) < 800 and time.monotonic() < deadline:
            time.sleep(0.2)
        executors = [pid for pid, (_, cmd) in process_table().items()
                     if b"CoarseGrainedExecutorBackend" in cmd]
        assert executors, "no executor found"
        os.kill(executors[0], signal.SIGKILL)
    out, err = job.communicate(timeout=600)
    assert job.returncode == 0, err[-4000:]
    assert _final_counts(record) == word_counts(lines)
    assert len(_records(record)) >= sum(word_counts(lines).values())


def test_the_streamparse_quickstart_on_the_cluster_counts_every_word(
        cluster, kafka09, kafka09_topic, tmp_path) -> None:
    """Issue 36 on the standalone cluster: streamparse's quickstart project (``sparse
    quickstart``) converted by ``config convert``, its bolts package shipped with
    spark.pyFiles, its WordCountBolt unmodified in the driver's bolt hosts; every word's
    count is the truth (``dog`` counts 10 in that bolt)."""
    pytest.importorskip("streamparse")
    from storm_kafka_compat.flux.convert import convert_file
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    from tests.python_storm_support import quickstart_counts
    from tests.stateful_inputs import VOCABULARY, as_messages, sentences
    env = {**_env(), "LEIN_ROOT": "1"}
    sparse = Path(sys.executable).with_name("sparse")
    subprocess.run([str(sparse), "quickstart", "wordcount"], cwd=tmp_path, env=env,
                   check=True, capture_output=True, timeout=120)
    project = tmp_path / "wordcount"
    flt = tmp_path / "kafka.properties"
    flt.write_text("spout.topic=set-below\nhosts.zk=set-below\nspout.zkRoot=/wc\n"
                   "spout.id=wordcount\nspout.scheme=wordscheme:word\n")
    # the executors get the bolts package and a one-word-a-message scheme beside it
    (project / "src" / "wordscheme.py").write_text(
        "def word(value):\n    return [value.decode('utf-8')]\n\nword.fields = ('word',)\n")
    # a report bolt reads the counts the quickstart's bolt emits (added to the CONFIG;
    # every bolt module is importable on the executors too)
    (project / "src" / "wcreport.py").write_text(WORD_COUNT_BOLTS)
    conv = convert_file(str(project / "topologies" / "wordcount.py"), filter_path=str(flt))
    config = conv.config
    config["topology"]["bolts"].append(
        {"name": "report", "bolt": "wcreport:Report", "kind": "basic",
         "inputs": [{"from": "count_bolt", "grouping": "shuffle"}]})
    words = [w for line in sentences(150, seed=37, vocabulary=VOCABULARY[:20] + ("dog",))
             for w in line.split()]
    topic = kafka09_topic(PARTITIONS, [])
    produce(kafka09.bootstrap, topic, as_messages(words, PARTITIONS))
    config["spout"] = {**config["spout"], "topic": topic, "zkRoot": "/cluster-sparse",
                       "stateUpdateIntervalMs": 500}
    config["hosts"] = {"bootstrap": kafka09.bootstrap}
    config["topology"] = {**config["topology"], "topology.id": f"{topic}-py",
                          "storm.zookeeper.servers": ["127.0.0.1"],
                          "storm.zookeeper.port": kafka09.zookeeper.port,
                          "topology.state.dir": str(tmp_path / "state")}
    config["spark"] = {"master": cluster.master_url,
                       "pyFiles": [str(project / "src" / "bolts"),
                                   str(project / "src" / "wordscheme.py"),
                                   str(project / "src" / "wcreport.py")],
                       "conf": {"spark.executor.memory": "512m",
                                "spark.executor.extraJavaOptions": spark_java_options()}}
    config["kafka"] = dict(KAFKA_09)
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(config))
    record = tmp_path / "records.jsonl"
    done = subprocess.run(
        [str(CLI), "run", str(job), "--until-caught-up"], cwd=tmp_path,
        env={**_env(), "CLUSTER_TEST_RECORD": str(record),
             "PYTHONPATH": str(project / "src")},
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert _final_counts(record) == quickstart_counts(words)


def test_a_pyleus_topology_on_the_cluster_counts_every_word(
        cluster, kafka09, kafka09_topic, tmp_path) -> None:
    """Issue 36 on the standalone cluster: a Pyleus topology YAML (a storm.py module bolt
    as a multilang subprocess per task, a streamparse module bolt behind a fields
    grouping), converted by ``config convert``, its package shipped with spark.pyFiles;
    every word's count is the truth."""
    pytest.importorskip("streamparse")
    import shutil

    from storm_kafka_compat.flux.convert import convert_file
    from storm_kafka_compat.workshop.servers.kafka_clients import produce
    from tests.peers import multilang
    from tests.stateful_inputs import as_messages, sentences, word_counts
    why = multilang.why_not()
    if why is not None:
        pytest.skip(f"Storm's storm.py (multilang-python 2.8.3) cannot be had: {why}")
    data = Path(__file__).resolve().parents[1] / "data" / "python_storm" / "pyleus"
    project = tmp_path / "pyleus"
    shutil.copytree(data, project, ignore=shutil.ignore_patterns("__pycache__"))
    multilang.storm_py_into(project)
    (project / "wcreport.py").write_text(WORD_COUNT_BOLTS)
    lines = sentences(300, seed=39)
    topic = kafka09_topic(PARTITIONS, [])
    produce(kafka09.bootstrap, topic, as_messages(lines, PARTITIONS))
    conv = convert_file(str(project / "pyleus_topology.yaml"))
    config = conv.config
    config["topology"]["bolts"].append(
        {"name": "report", "bolt": "wcreport:Report", "kind": "basic",
         "inputs": [{"from": "count-words", "grouping": "shuffle"}]})
    config["spout"] = {**config["spout"], "topic": topic, "zkRoot": "/cluster-pyleus",
                       "stateUpdateIntervalMs": 500}
    config["hosts"] = {"bootstrap": kafka09.bootstrap}
    config["topology"] = {**config["topology"], "topology.id": f"{topic}-py",
                          "storm.zookeeper.servers": ["127.0.0.1"],
                          "storm.zookeeper.port": kafka09.zookeeper.port,
                          "topology.state.dir": str(tmp_path / "state")}
    config["spark"] = {"master": cluster.master_url,
                       "pyFiles": [str(project / "word_count"), str(project / "wcreport.py")],
                       "conf": {"spark.executor.memory": "512m",
                                "spark.executor.extraJavaOptions": spark_java_options()}}
    config["kafka"] = dict(KAFKA_09)
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(config))
    record = tmp_path / "records.jsonl"
    done = subprocess.run(
        [str(CLI), "run", str(job), "--until-caught-up"], cwd=project,
        env={**_env(), "CLUSTER_TEST_RECORD": str(record), "PYTHONPATH": str(project)},
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert _final_counts(record) == word_counts(lines)
