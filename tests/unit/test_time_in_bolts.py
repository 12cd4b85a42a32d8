"""Ticks and windows through the whole engine without Spark or servers (issue 35): the
driver loop over scripted Kafka, the stages in this process, the bolt tasks in one
in-process bolt host whose ticks run on the test's clock. A buffering sink writes every
input on its ticks, idle or not; a windowed bolt's tuples hold the commit until they
leave the window (late acks); a driver killed mid-window resumes with the window whole,
and every window fires once."""

from __future__ import annotations

import random
from typing import Dict

import pytest

from storm_kafka_compat.config.topology_spec import topology_spec_from_dict
from storm_kafka_compat.config import Broker, JobConfig, SpoutConfig, StaticHosts, TopologyConfig
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.testing.hosts import InProcessBoltState, MemoryStates
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from storm_kafka_compat.testing.scripted import ScriptedKafka
from tests import bolts, windowed_bolts
from tests.windowed_bolts import rolling_truth, tumbling_truth


class Clock:
    """ms for the driver, s for the bolt host; moves only when slept on."""

    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms

    def seconds(self) -> float:
        return self.ms / 1000.0

    def sleep(self, s: float) -> None:
        self.ms += int(s * 1000)


@pytest.fixture(autouse=True)
def clear_seen():
    bolts.SEEN.clear()


def make_job(spec, partitions=1, timeout_s=60):
    hosts = StaticHosts({p: Broker("k1", 9092) for p in range(partitions)})
    spout = SpoutConfig(hosts=hosts, topic="events", zk_root="/kafka", id="timed",
                        scheme="string", state_update_interval_ms=200)
    return JobConfig(spout=spout, bolt=None, topology_spec=topology_spec_from_dict(spec),
                     topology=TopologyConfig(name="timed", id="timed-1-1",
                                             message_timeout_secs=timeout_s))


def pipeline(job, kafka, store, states, clock, take_over=False):
    return Pipeline(job, runner=InProcessRunner(kafka), store=store, take_over=take_over,
                    kafka_factory=lambda boot: kafka, clock=clock, sleep=clock.sleep,
                    bolt_tasks=InProcessBoltState.factory(states, clock=clock.seconds))


def drive(pipe, clock, steps, step_s=0.1, cap=50):
    """The driver loop by hand (a killed driver makes no final commit): batch, commit
    when due, time moves on."""
    pipe.open()
    options = RunOptions(max_messages_per_partition=cap)
    for _ in range(steps):
        pipe.batch(options)
        pipe.spout.maybe_commit(clock())
        clock.sleep(step_s)


def event_lines(n, seed, start=0):
    """Lines ``"<ms> <word>"`` in time order with up to 2 s of disorder (under the lag)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ts = start + i * 400 + rng.randrange(0, 2000)
        out.append(f"{ts} {rng.choice('abcde')}")
    return out


def windows(kind="window") -> Dict[int, int]:
    out: Dict[int, int] = {}
    for r in bolts.SEEN:
        if r.get("kind") == kind:
            assert r["end"] not in out, f"window {r['end']} fired twice"
            out[r["end"]] = r["count"]
    return out


def test_a_buffering_sink_writes_every_input_on_its_ticks_even_when_idle():
    kafka = ScriptedKafka()
    kafka.create_topic("events", 2)
    for p in range(2):
        kafka.append("events", p, *[f"v{p}-{i}".encode() for i in range(30)])
    store, states, clock = MemoryStateStore(), MemoryStates(), Clock()
    pipe = pipeline(make_job(windowed_bolts.SINK_SPEC, partitions=2), kafka, store, states,
                    clock)
    assert pipe.layout.stages == ((), ("sink",))        # a bolt on ticks lives in a host
    started = clock()
    summary = pipe.run(RunOptions(until_caught_up=True, idle_sleep_ms=100,
                                  max_messages_per_partition=10))
    written = [(r["partition"], r["offset"]) for r in bolts.SEEN if r["kind"] == "sink"]
    assert sorted(written) == [(p, o) for p in range(2) for o in range(30)]   # each once
    assert summary.stopped_by == "caught up" and summary.timeouts == 0
    # every write waited for a tick: at most one flush per second of the run per task
    elapsed_s = (clock() - started) / 1000
    assert max(r["flush"] for r in bolts.SEEN) <= elapsed_s + 1
    assert all(store.docs[f"/kafka/timed/partition_{p}"] for p in range(2))


def test_window_tuples_hold_the_commit_until_they_leave_the_window():
    lines = event_lines(60, seed=5)
    kafka = ScriptedKafka()
    kafka.create_topic("events", 1)
    kafka.append("events", 0, *[line.encode() for line in lines])
    store, states, clock = MemoryStateStore(), MemoryStates(), Clock()
    pipe = pipeline(make_job(windowed_bolts.window_spec("TumblingByTime")), kafka, store,
                    states, clock)
    drive(pipe, clock, steps=40)
    assert windows() == tumbling_truth(lines)
    # the tuples of windows that have not closed are not acked: the commit waits for the
    # first of them
    last_end = max(tumbling_truth(lines))
    first_open = min(i for i, line in enumerate(lines) if int(line.split()[0]) > last_end - 10_000)
    pm = pipe.spout.managers()[("events", 0)]
    assert pm.committed_to == first_open      # (the tuples of the last window fired leave
    # it when the next one fires)
    assert pipe.spout.counts.timeouts == 0


def test_a_driver_killed_mid_window_resumes_with_the_window_whole():
    lines = event_lines(110, seed=6)
    kafka = ScriptedKafka()
    kafka.create_topic("events", 1)
    kafka.append("events", 0, *[line.encode() for line in lines[:70]])
    store, states, clock = MemoryStateStore(), MemoryStates(), Clock()
    job = make_job(windowed_bolts.window_spec("TumblingByTime"))
    first = pipeline(job, kafka, store, states, clock)
    drive(first, clock, steps=20)
    fired_before = dict(windows())
    assert fired_before and states.versions                  # saved with a commit
    committed = first.spout.managers()[("events", 0)].committed_to
    assert 0 < committed < 70                                # a window was open
    # killed: no final commit; a new driver starts from the stored offsets and state
    kafka.append("events", 0, *[line.encode() for line in lines[70:]])
    second = pipeline(job, kafka, store, states, clock, take_over=True)   # same pid
    drive(second, clock, steps=30)
    assert windows() == tumbling_truth(lines)                # each window once, whole


def test_a_stateful_windowed_bolt_applies_each_window_once_across_a_crash():
    lines = event_lines(110, seed=8)
    kafka = ScriptedKafka()
    kafka.create_topic("events", 1)
    kafka.append("events", 0, *[line.encode() for line in lines[:75]])
    store, states, clock = MemoryStateStore(), MemoryStates(), Clock()
    job = make_job(windowed_bolts.window_spec("WindowTotals"))
    drive(pipeline(job, kafka, store, states, clock), clock, steps=20)
    kafka.append("events", 0, *[line.encode() for line in lines[75:]])
    drive(pipeline(job, kafka, store, states, clock, take_over=True), clock, steps=30)
    truth = tumbling_truth(lines)
    assert windows() == truth
    last = max((r for r in bolts.SEEN if r.get("kind") == "window"), key=lambda r: r["end"])
    assert (last["windows"], last["tuples"]) == (len(truth), sum(truth.values()))


def test_a_rolling_count_on_ticks_counts_every_word_once_per_bucket():
    rng = random.Random(7)
    lines = [f"{i * 300 + rng.randrange(0, 1500)} {' '.join(rng.choices('abcdef', k=3))}"
             for i in range(120)]
    kafka = ScriptedKafka()
    kafka.create_topic("events", 3)
    for i, line in enumerate(lines):
        kafka.append("events", i % 3, line.encode())
    store, states, clock = MemoryStateStore(), MemoryStates(), Clock()
    pipe = pipeline(make_job(windowed_bolts.rolling_spec(2), partitions=3), kafka, store,
                    states, clock)
    assert pipe.layout.tick_periods() == {"rolling": 1.0}
    drive(pipe, clock, steps=40, cap=5)
    got: Dict[tuple, int] = {}
    for r in bolts.SEEN:
        if r.get("kind") == "rolling":
            key = (r["bucket"], r["word"])
            assert key not in got
            got[key] = r["count"]
    assert got == rolling_truth(lines)

