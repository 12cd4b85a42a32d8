"""docs/migration-guide.md, run as written against real Storm 1.2.4.

A Storm topology (storm-kafka's KafkaSpout, Flux, a LocalCluster driven like a cluster
with the storm command's deactivate and kill) reads a topic while a producer keeps
writing to it. The guide's steps, in its order: convert the topology's Flux file and
edit what the guide says to edit, check it; note where the topology is; stop it;
explain; start the job; verify; stop the job; check the documents; resubmit the
topology unchanged. Every value is ``"<partition>-<offset>"``: at the end every offset
produced was processed by Storm or the job, and what was processed twice is exactly
what the guide says may be.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import yaml

from storm_kafka_compat.workshop.servers.kafka_clients import produce
from tests.bolts import read_records
from tests.integration.kafka09_jobs import CLI, KAFKA_09, REPO, cli, get, storm_document
from tests.peers.fixtures import storm1, storm1_ready  # noqa: F401
from tests.peers.storm import FluxTopology, read_lines, storm_kafka_spout

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
MESSAGE_TIMEOUT_S = 5
STATE_UPDATE_MS = 2000
MAX_PENDING = 50


class Producer(threading.Thread):
    """Writes ``"<p>-<n>"`` to every partition, 10 a partition every 0.2 s, until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.next = dict.fromkeys(range(PARTITIONS), 0)
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.write(10)
            time.sleep(0.2)

    def write(self, n: int) -> None:
        batch = [(p, None, f"{p}-{o}".encode()) for p in range(PARTITIONS)
                 for o in range(self.next[p], self.next[p] + n)]
        produce(self.bootstrap, self.topic, batch)
        for p in range(PARTITIONS):
            self.next[p] += n

    def stop(self) -> Dict[int, int]:
        self.halt.set()
        self.join(60)
        return dict(self.next)


def _show(config: Path) -> Dict[int, Dict[str, int]]:
    done = cli("offsets", "show", str(config), "--json")
    assert done.returncode == 0, done.stderr
    (lags,) = json.loads(done.stdout).values()
    return {int(p): v for p, v in lags.items()}


def _storm_seen(path: Path) -> List[Tuple[int, int]]:
    return [tuple(int(x) for x in values[0].split("-")) for values in read_lines(path)]


def test_cut_over_and_roll_back_as_the_guide_says(tmp_path, kafka09, unique, zk_root,
                                                  storm1):  # noqa: F811
    topic = unique("clicks")
    kafka09.create_topic(topic, PARTITIONS, 1)
    zk = kafka09.zk()
    producer = Producer(kafka09.bootstrap, topic)
    producer.write(100)
    producer.start()

    # the Storm topology, as its team wrote it (Flux)
    flux = FluxTopology("clicks", config={"topology.workers": 1,
                                          "topology.message.timeout.secs": MESSAGE_TIMEOUT_S,
                                          "topology.max.spout.pending": MAX_PENDING})
    storm_kafka_spout(flux, "kafka-spout", topic=topic, zk_root=zk_root, spout_id="clicks-spout",
                      zk_hosts=kafka09.zk_connect, state_zk=("127.0.0.1", kafka09.zookeeper.port),
                      startOffsetTime=-2, stateUpdateIntervalMs=STATE_UPDATE_MS)
    storm_record = tmp_path / "storm-1.txt"
    # 10 ms a tuple: slower than the producer, so tuples are in flight at any moment
    flux.recorder("count", "kafka-spout", storm_record, delay_ms=10)
    flux_file = tmp_path / "clicks.yaml"
    flux_file.write_text(flux.yaml())
    storm = storm1(flux)
    root = f"{zk_root}/clicks-spout"
    storm.wait_for(lambda: all(get(zk, f"{root}/partition_{p}") for p in range(PARTITIONS)),
                   "Storm's first commit of every partition")

    # Before you start, 1: convert the topology's own file, then check it
    converted = cli("config", "convert", str(flux_file))
    assert converted.returncode == 0, converted.stderr
    assert "port the bolt to Python" in converted.stderr
    job = yaml.safe_load(converted.stdout)
    assert (job["spout"]["zkRoot"], job["spout"]["id"], job["hosts"]["zk"]) == (
        zk_root, "clicks-spout", kafka09.zk_connect)
    job["bolt"] = "tests.bolts:record"                   # 4. the bolt, ported
    job["topology"]["id"] = "clicks-compat"              # 5. a fixed topology.id
    job["kafka"] = dict(KAFKA_09)                        # 7. a Kafka 0.9 cluster
    job["spark"] = {"master": "local[2]"}
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump(job))
    checked = cli("config", "check", str(config))
    assert checked.returncode == 0, checked.stderr

    # Cut-over 1: note where the topology is, while it runs
    noted = _show(config)
    assert all(v["consumerCommittedOffset"] > 0 for v in noted.values())

    # 2: stop it: deactivate, wait the message timeout and a commit interval, kill -w 0
    storm.storm("deactivate")
    time.sleep(MESSAGE_TIMEOUT_S + STATE_UPDATE_MS / 1000)
    storm.storm("kill", "0")
    stopped = {p: v["consumerCommittedOffset"] for p, v in _show(config).items()}
    time.sleep(3)
    assert {p: v["consumerCommittedOffset"] for p, v in _show(config).items()} == stopped
    assert all(stopped[p] >= noted[p]["consumerCommittedOffset"] for p in stopped)
    storm.storm("shutdown")
    storm_1 = _storm_seen(storm_record)

    # 3: check what the job would do
    explained = cli("offsets", "explain", str(config), "--json")
    assert explained.returncode == 0, explained.stderr
    assert {e["partition"]: (e["decision"], e["start_offset"])
            for e in json.loads(explained.stdout)} == {p: ("resume", o)
                                                       for p, o in stopped.items()}

    # 4: start the job
    record = tmp_path / "ours.jsonl"
    env = dict(os.environ, STORM_KAFKA_COMPAT_TEST_RECORD=str(record),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    metrics = tmp_path / "metrics.jsonl"
    job_proc = subprocess.Popen([str(CLI), "run", str(config), "--metrics-file", str(metrics)],
                                cwd=REPO, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        # 5: verify: the committed offsets move on from step 2 and the lag falls
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            now = _show(config)
            if all(now[p]["consumerCommittedOffset"] > stopped[p] for p in now):
                break
            assert job_proc.poll() is None, job_proc.communicate()[1][-3000:]
            time.sleep(1)
        else:
            pytest.fail(f"the job's commits did not move on from {stopped}: {now}")
        produced_to = producer.stop()
        deadline = time.monotonic() + 180
        while _show(config) != {p: {"consumerCommittedOffset": n, "logHeadOffset": n, "lag": 0}
                                for p, n in produced_to.items()}:
            assert time.monotonic() < deadline, f"the job did not catch up: {_show(config)}"
            assert job_proc.poll() is None, job_proc.communicate()[1][-3000:]
            time.sleep(1)
    finally:
        producer.halt.set()
        # Roll-back 1: stop the job gracefully
        job_proc.send_signal(signal.SIGTERM)
        out, err = job_proc.communicate(timeout=120)
    assert job_proc.returncode == 0, err[-3000:]
    first_lines = err.splitlines()[:10]
    for p in range(PARTITIONS):
        assert any(f"{topic}/{p} at {root}/partition_{p}: resuming from another topology's"
                   in line and f"stored offset {stopped[p]}" in line for line in first_lines), (
            f"no start line for partition {p} in:\n" + "\n".join(first_lines))
    records = read_records(str(record))
    assert all(r["value"] == f"{r['partition']}-{r['offset']}" for r in records)
    ours = [(int(r["partition"]), int(r["offset"])) for r in records]
    ours_metrics = [json.loads(line) for line in metrics.read_text().splitlines()
                    if '"stormKafkaCompat"' in line]
    assert ours_metrics, "no stormKafkaCompat record in the metrics file"
    assert ours_metrics[-1]["value"]["commitFailures"] == 0
    assert ours_metrics[-1]["value"]["fetchFailures"] == 0

    # Roll-back 2: the documents, in storm-kafka's bytes, name this job
    broker = ("127.0.0.1", kafka09.brokers[0].port)
    for p, n in produced_to.items():
        assert get(zk, f"{root}/partition_{p}") == storm_document(
            topic, p, n, broker=broker, topology_id="clicks-compat", name="clicks")

    # Roll-back 3: resubmit the topology unchanged; it resumes at the job's offsets
    producer.next = dict(produced_to)
    producer.write(20)
    storm_record_2 = tmp_path / "storm-2.txt"
    flux.bolts[0]["constructorArgs"][0] = str(storm_record_2)   # the same topology, a new file
    storm = storm1(flux)
    storm.wait_for(lambda: len(read_lines(storm_record_2)) >= 20 * PARTITIONS,
                   "the 20 new messages of each partition")
    storm.kill()
    storm_2 = _storm_seen(storm_record_2)
    assert sorted(storm_2) == [(p, o) for p in range(PARTITIONS)
                               for o in range(produced_to[p], produced_to[p] + 20)]

    # every offset processed; twice only what Storm had processed beyond its last commit
    everything = {(p, o) for p in range(PARTITIONS) for o in range(produced_to[p] + 20)}
    assert set(storm_1) | set(ours) | set(storm_2) == everything
    assert len(ours) == len(set(ours)) and not set(ours) & set(storm_2)
    # deactivate committed what was acked then; the tuples in flight finished during the
    # wait but Storm commits nothing more (not while deactivated, not at kill)
    beyond_commit = {(p, o) for p, o in storm_1 if o >= stopped[p]}
    assert 0 < len(beyond_commit) <= MAX_PENDING, "in flight at deactivate: 1 to max pending"
    assert set(storm_1) & set(ours) == beyond_commit
    print("migration guide against Storm 1.2.4:", {
        "produced": len(everything), "storm_before": len(storm_1), "ours": len(ours),
        "storm_after": len(storm_2), "processed_twice": len(beyond_commit),
        "storm_committed_at_kill": stopped})
