"""The driver is SIGKILLed at random points three times during a run and restarted
each time: every message reaches the bolt at least once, the replays after each
kill are bounded by what was processed since the last commit, and the final
documents equal the log end."""

from __future__ import annotations

import random
import time

import pytest

from tests.faults.harness import (
    JOB_START_TIMEOUT_S,
    committed_offsets, delivered_offsets, duplicates, job_config, missing_offsets,
    read_deliveries, wait_until, write_config)

pytestmark = [pytest.mark.fault, pytest.mark.integration]

PARTITIONS = 3
PER_PARTITION = 3500
INTERVAL_MS = 1000          # stateUpdateIntervalMs
MAX_MESSAGES = 20           # --max-messages: new messages per partition per batch
#: time one batch may take on a loaded 2-core runner (the commit follows the batch)
BATCH_SLACK_S = 5.0
#: the kill comes this many seconds after the run's first delivery, plus 0-3 s at
#: random: long enough for the replay bound below to apply to most of the run
KILL_AFTER_S = INTERVAL_MS / 1000.0 + BATCH_SLACK_S + 1.0


@pytest.mark.hard_timeout(1200)
def test_sigkill_three_times_loses_nothing(zk_server_factory, tansu_factory, seed, job_factory,
                                           tmp_path, unique):
    rng_seed = int(time.time())
    rng = random.Random(rng_seed)
    zk, broker = zk_server_factory(), tansu_factory()
    topic, root = unique("kill"), "/skc-faults/kill"
    log_end = seed(broker, topic, PARTITIONS, PER_PARTITION)
    config = job_config(topic=topic, zk_root=root, spout_id="spout", zk_port=zk.port,
                        static={p: broker.bootstrap for p in range(PARTITIONS)},
                        spout={"stateUpdateIntervalMs": INTERVAL_MS},
                        topology={"topology.id": "faults-kill-1"},
                        # 5 ms per tuple: at most ~400 messages/s on 2 cores, so the
                        # 10,500 messages outlast three ~10 s runs on any machine
                        bolt="tests.bolts:record_slowly")
    path = write_config(tmp_path / "job.yaml", config)
    record = tmp_path / "deliveries.jsonl"
    job = job_factory(path, ("--max-messages", str(MAX_MESSAGES)), record_path=record)
    where = f"(random seed {rng_seed})"

    committed = {p: None for p in range(PARTITIONS)}
    run_start = 0                      # index of the first record of the current run
    replayed_total = 0
    for kill in range(1, 4):
        job.start()
        wait_until(lambda run_start=run_start: len(read_deliveries(record)) > run_start,
                   timeout_s=JOB_START_TIMEOUT_S, what=f"run {kill} processing",
                   on_timeout=job.stderr_tail)
        time.sleep(KILL_AFTER_S + rng.uniform(0.0, 3.0))
        kill_time = time.time()
        job.kill_driver()
        records = read_deliveries(record)
        run = records[run_start:]
        stored = committed_offsets(zk.connect_string, root, "spout", range(PARTITIONS))

        # the run resumed exactly where the previous one had committed
        for p in range(PARTITIONS):
            offsets = [r["offset"] for r in run if r["partition"] == p]
            assert offsets, f"run {kill} delivered nothing on partition {p} {where}"
            assert min(offsets) == (committed[p] or 0), \
                f"run {kill} partition {p} resumed at {min(offsets)}, stored {committed[p]} {where}"

        before = delivered_offsets(records)
        for p in range(PARTITIONS):
            top = max(o for (q, o) in before if q == p) + 1
            stored_p = stored[p] or 0
            # nothing committed that the bolt had not seen (no loss) ...
            assert stored_p <= top, f"kill {kill}: partition {p} committed {stored_p} > {top}"
            # ... and what will be replayed was processed in the last commit interval
            # plus the batch in flight
            replay = [r for r in run if r["partition"] == p and r["offset"] >= stored_p]
            early = [r for r in replay
                     if r["time"] < kill_time - INTERVAL_MS / 1000.0 - BATCH_SLACK_S]
            shown = [r["offset"] for r in early][:5]
            assert not early, (f"kill {kill}: partition {p} offsets {shown} were processed "
                               f"long before the kill but not committed {where}")
            replayed_total += len({r["offset"] for r in replay})
        committed = stored
        run_start = len(records)

    job.args.append("--until-caught-up")
    job.start()
    assert job.wait(timeout_s=200) == 0, job.stderr_tail()
    records = read_deliveries(record)
    counts = delivered_offsets(records)
    assert missing_offsets(counts, log_end) == [], where
    # duplicates are exactly the replays after the three kills
    assert duplicates(counts) <= replayed_total, where
    assert committed_offsets(zk.connect_string, root, "spout", range(PARTITIONS)) == log_end
    last = records[run_start:]
    for p in range(PARTITIONS):
        resumed = [r["offset"] for r in last if r["partition"] == p]
        if (committed[p] or 0) == log_end[p]:
            assert resumed == [], where       # finished before the last restart
        else:
            assert min(resumed) == (committed[p] or 0), where
