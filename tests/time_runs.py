"""Running the topologies on time on Spark and Kafka (integration tests of issue 35):
a job for a topic, a driver run until its results are in, and a driver "killed" (its
bolt hosts and broadcast gone, no final commit, no final save).

The tests run their pipelines with ``pace=False`` and a 300 s message timeout (as the
Storm peers do): on a loaded machine the pacer shrinks batches to a message or two, event
time then crawls, a window's tuples outlive a 60 s timeout and are replayed (seen once at
load 12 on 2 cores: 42 timeouts, 44 of 90 messages read in 150 s)."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, Mapping

from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.engine.driver import Pipeline, RunOptions


def make_job(topic: str, zk_server: Any, zk_root: str, bootstrap: str,
             spec: Mapping[str, Any], state_dir: Any, **topology: Any):
    return job_config_from_dict({
        "spout": {"topic": topic, "zkRoot": f"{zk_root}/offsets", "id": "timed",
                  "scheme": "string", "stateUpdateIntervalMs": 300},
        "hosts": {"bootstrap": bootstrap},
        "topology": {"topology.name": "timed", "topology.id": "timed-py",
                     "storm.zookeeper.servers": ["127.0.0.1"],
                     "storm.zookeeper.port": zk_server.port,
                     "topology.message.timeout.secs": 300,
                     "topology.state.dir": str(state_dir), **topology, **spec},
        "spark": {"master": "local[2]"}})


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout_s} s")
        time.sleep(0.2)


def drive_then_kill(pipe: Pipeline, condition: Callable[[], bool], timeout_s: float) -> None:
    """Run batches (committing when due) until ``condition``, then end the driver as a
    kill would: no final commit and no final save; its bolt hosts and broadcast go."""
    pipe.open()
    options = RunOptions(idle_sleep_ms=50)
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the first driver did not get there in {timeout_s} s: "
                f"{list(pipe.spout.managers().values())}, {pipe.summary.batches} batches, "
                f"{pipe.summary.messages} messages, commit failures "
                f"{pipe.spout.counts.commit_failures}, timeouts {pipe.spout.counts.timeouts}")
        if pipe.batch(options) == 0:
            time.sleep(0.05)
        pipe.spout.maybe_commit(pipe.clock())
    if pipe.bolt_state is not None:
        pipe.bolt_state.close()
    pipe.runner.close()


def run_until(pipe: Pipeline, condition: Callable[[], bool], timeout_s: float,
              settle_s: float = 3.0) -> Dict[str, Any]:
    """Run ``pipe`` in a thread until ``condition`` (then ``settle_s`` more, so a result
    given twice would show), stop it and return its summary."""
    out: Dict[str, Any] = {}

    def body() -> None:
        try:
            out["summary"] = pipe.run(RunOptions(idle_sleep_ms=50))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    try:
        wait_for(lambda: condition() or "error" in out, "results", timeout_s)
        time.sleep(settle_s)
    finally:
        pipe.stop("the test has its results")
        thread.join(60)
    if "error" in out:
        raise out["error"]
    return out
