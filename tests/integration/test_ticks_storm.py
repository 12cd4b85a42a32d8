"""Tick tuples against real Storm (issue 35), on Spark local[2] and a Kafka 3.9 topic: a
rolling count emitting closed event-time buckets on its ticks gives the same
(bucket, word, count) as Storm 2.8.3's LocalCluster running the same bolt in Java, and
the truth, with the project's driver killed mid-run; a sink that buffers and writes on
each tick writes every input across a driver kill (at-least-once: what it wrote after
the last commit is written again)."""

from __future__ import annotations

import collections
import os
import random
import time

import pytest

from storm_kafka_compat.engine.driver import Pipeline
from tests import windowed_bolts
from tests.integration.conftest_spark import spark, spark_records  # noqa: F401
from tests.peers.fixtures import storm2_ready  # noqa: F401
from tests.peers.storm_windows import storm_window_results
from tests.time_runs import drive_then_kill, make_job, run_until
from tests.windowed_bolts import rolling_truth

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def word_lines(n, seed):
    """``"<ms> w1 w2 w3"``, 250 ms apart with up to 1.5 s of disorder (under the lag)."""
    rng = random.Random(seed)
    return [f"{i * 250 + rng.randrange(0, 1500)} {' '.join(rng.choices('abcdef', k=3))}"
            for i in range(n)]


def counts(records):
    return [(r["bucket"], r["word"], r["count"]) for r in records if r.get("kind") == "rolling"]


def test_a_rolling_count_on_ticks_matches_storm_with_the_driver_killed(
        spark, spark_records, zk_server, zk_root, kafka39, unique, tmp_path,  # noqa: F811
        storm2_ready):  # noqa: F811
    lines = word_lines(200, seed=351)
    truth = rolling_truth(lines)
    topic = unique("rolling")
    kafka39.create_topic(topic, 1, 1)
    kafka39.produce(topic, [(0, None, line.encode()) for line in lines[:120]])
    os.environ["SKC_TEST_RUN"] = topic          # the unanchored counts' topic, in the hosts
    job = make_job(topic, zk_server, zk_root, kafka39.bootstrap,
                   windowed_bolts.rolling_spec(2), tmp_path / "state")
    first = Pipeline(job, spark=spark, pace=False)
    assert first.layout.tick_periods() == {"rolling": 1.0}

    def mid_run():
        pm = first.spout.managers().get((topic, 0)) if first.spout.managers() else None
        return len(counts(spark_records(topic))) >= 6 and pm is not None and pm.committed_to > 0

    started = time.monotonic()
    drive_then_kill(first, mid_run, timeout_s=150)
    killed = time.monotonic()
    kafka39.produce(topic, [(0, None, line.encode()) for line in lines[120:]])
    second = Pipeline(job, spark=spark, take_over=True, pace=False)
    try:
        run_until(second, lambda: len(set(counts(spark_records(topic)))) >= len(truth),
                  timeout_s=150)
    finally:
        got = counts(spark_records(topic))
        diff = sorted(set(got) ^ {(b, w, c) for (b, w), c in truth.items()})
        print(f"rolling: {len(got)} counts given ({len(set(got))} distinct), truth "
              f"{len(truth)}; differing {diff}; restored from version "
              f"{getattr(second.bolt_state, 'restored_from', None)}")
    # a count given before the kill and after its last save is given again, the same
    assert {(b, w): c for b, w, c in got} == truth and len(set(got)) == len(truth), diff
    resumed = time.monotonic()
    storm = storm_window_results("rolling", kafka39.bootstrap, topic, tmp_path / "storm",
                                 expected={"rolling": len(truth)}, parallelism=2)
    print(f"rolling: first driver {killed - started:.0f} s, second {resumed - killed:.0f} s, "
          f"Storm {time.monotonic() - resumed:.0f} s")
    assert sorted((int(b), w, int(c)) for b, w, c in storm["rolling"]) == sorted(set(got))


def test_a_sink_writing_on_ticks_loses_nothing_across_a_driver_kill(
        spark, spark_records, zk_server, zk_root, kafka39, unique, tmp_path):  # noqa: F811
    topic = unique("ticksink")
    kafka39.create_topic(topic, 4, 1)
    first_half = [(i % 4, None, f"v{i}".encode()) for i in range(200)]
    kafka39.produce(topic, first_half)
    job = make_job(topic, zk_server, zk_root, kafka39.bootstrap, windowed_bolts.SINK_SPEC,
                   tmp_path / "state")
    first = Pipeline(job, spark=spark, pace=False)
    assert first.layout.stages == ((), ("sink",))

    def written():
        return [r for r in spark_records(topic) if r.get("kind") == "sink"]

    def mid_run():
        managers = first.spout.managers()
        return (len(written()) >= 50 and bool(managers)
                and any(pm.committed_to > 0 for pm in managers.values()))

    drive_then_kill(first, mid_run, timeout_s=150)
    committed = {tp.partition: pm.committed_to for tp, pm in first.spout.managers().items()}
    kafka39.produce(topic, [(i % 4, None, f"v{i}".encode()) for i in range(200, 400)])
    second = Pipeline(job, spark=spark, take_over=True, pace=False)
    run_until(second, lambda: {r["value"] for r in written()} >= {f"v{i}" for i in range(400)},
              timeout_s=150, settle_s=2.5)
    times = collections.Counter((r["partition"], r["offset"]) for r in written())
    assert {f"v{i}" for i in range(400)} == {r["value"] for r in written()}   # nothing lost
    again = [m for m, n in times.items() if n > 1]
    # written twice only where the kill came between a write and the commit after it
    assert all(offset >= committed[p] for p, offset in again), (again, committed)
    print(f"sink: {len(times)} inputs written, {len(again)} twice (written after the last "
          f"commit before the kill), {max(r['flush'] for r in written())} flushes at most")
    assert all(n <= 2 for n in times.values())
