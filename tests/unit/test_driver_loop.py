"""The driver loop without Spark: scripted Kafka, in-memory ZooKeeper, in-process tasks."""

import re

import pytest

from storm_kafka_compat.config.topology_spec import topology_spec_from_dict
from storm_kafka_compat.config import Broker, JobConfig, SpoutConfig, StaticHosts, TopologyConfig
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.offsets.document import encode_document, parse_document
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from tests import bolts


def job(partitions=2, bolt="tests.bolts:record", **spout_kw):
    hosts = StaticHosts({p: Broker("k1", 9092) for p in range(partitions)})
    spout = SpoutConfig(hosts=hosts, topic="orders", zk_root="/kafka", id="spout1",
                        scheme="string", **spout_kw)
    return JobConfig(spout=spout, topology=TopologyConfig(name="orders-topo", id="orders-topo-1-1"),
                     bolt=bolt)


def kafka_with(n_per_partition, partitions=2):
    k = ScriptedKafka()
    k.create_topic("orders", partitions)
    for p in range(partitions):
        k.append("orders", p, *[f"m{p}-{i}".encode() for i in range(n_per_partition)])
    return k


@pytest.fixture(autouse=True)
def clear_seen():
    bolts.SEEN.clear()


def run(j, kafka, store, **opts):
    pipe = Pipeline(j, runner=InProcessRunner(kafka), store=store,
                    kafka_factory=lambda boot: kafka, sleep=lambda s: None)
    return pipe.run(RunOptions(until_caught_up=True, max_messages_per_partition=7, **opts))


def test_every_message_reaches_the_bolt_and_documents_are_storm_bytes():
    kafka, store = kafka_with(20), MemoryStateStore()
    summary = run(job(), kafka, store)
    assert summary.stopped_by == "caught up"
    seen = sorted((r["partition"], r["offset"]) for r in bolts.SEEN)
    assert seen == [(p, o) for p in range(2) for o in range(20)]
    assert store.docs["/kafka/spout1/partition_1"] == (
        b'{"topology":{"id":"orders-topo-1-1","name":"orders-topo"},"offset":20,'
        b'"partition":1,"broker":{"host":"k1","port":9092},"topic":"orders"}')


def test_resumes_exactly_from_a_storm_written_document():
    kafka = kafka_with(30)
    storm_doc = encode_document(topology_id="orders-topo-7-1514764800", topology_name="orders-topo",
                                offset=12, partition=0, broker_host="k1", broker_port=9092,
                                topic="orders")
    store = MemoryStateStore({"/kafka/spout1/partition_0": storm_doc})
    summary = run(job(), kafka, store)
    first = {p.partition: p for p in summary.partitions}
    assert first[0].decision == "resume" and first[0].resumed_from == 12
    assert min(r["offset"] for r in bolts.SEEN if r["partition"] == 0) == 12
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 30


def test_failures_are_retried_then_given_up_and_counted():
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, b"ok-0", b"fail-1", b"ok-2")
    store = MemoryStateStore()
    summary = run(job(partitions=1, bolt="tests.bolts:fail_marked", retry_limit=2), kafka, store)
    attempts = [r["offset"] for r in bolts.SEEN if r["offset"] == 1]
    assert len(attempts) == 3                       # the first emit plus retryLimit re-emits
    assert summary.partitions[0].given_up == 1
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 3


def test_out_of_range_below_log_start_jumps_and_counts_lost():
    kafka = kafka_with(10, partitions=1)
    kafka.set_log_start("orders", 0, 6)
    store = MemoryStateStore({"/kafka/spout1/partition_0": encode_document(
        topology_id="x", topology_name="t", offset=2, partition=0, broker_host="k1",
        broker_port=9092, topic="orders")})
    summary = run(job(partitions=1), kafka, store)
    assert summary.partitions[0].lost == 4
    assert sorted(r["offset"] for r in bolts.SEEN) == [6, 7, 8, 9]


def test_out_of_range_whose_log_range_cannot_be_asked_is_retried_not_fatal():
    """Out of range during a leader change: the lookups of the log range fail once;
    the job refreshes, asks again at the next batch and then jumps."""
    from storm_kafka_compat.errors import FailedFetchError

    kafka = kafka_with(10, partitions=1)
    kafka.set_log_start("orders", 0, 6)
    store = MemoryStateStore({"/kafka/spout1/partition_0": encode_document(
        topology_id="x", topology_name="t", offset=2, partition=0, broker_host="k1",
        broker_port=9092, topic="orders")})
    real, failures = kafka.offset_for, [0]

    def offset_for(topic, partition, time):
        if time == -2 and failures[0] < 1 and bolts.SEEN == []:
            failures[0] += 1
            raise FailedFetchError("leader moving", topic=topic, partition=partition)
        return real(topic, partition, time)

    pipe = Pipeline(job(partitions=1), runner=InProcessRunner(kafka), store=store,
                    kafka_factory=lambda boot: kafka, sleep=lambda s: None)
    pipe.spout.maybe_refresh(0)
    kafka.offset_for = offset_for
    summary = pipe.run(RunOptions(until_caught_up=True, max_messages_per_partition=7))
    assert failures[0] == 1 and summary.fetch_failures == 1
    assert summary.partitions[0].lost == 4
    assert sorted(r["offset"] for r in bolts.SEEN) == [6, 7, 8, 9]


def test_commit_failure_keeps_going_and_commits_later():
    kafka, store = kafka_with(10, partitions=1), MemoryStateStore()
    store.fail_writes = 2
    summary = run(job(partitions=1), kafka, store)
    assert summary.commit_failures >= 1
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 10


# --- open tuple trees and the message timeout ----------------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.ms = 1_000

    def __call__(self) -> int:
        return self.ms

    def sleep(self, seconds: float) -> None:
        self.ms += int(seconds * 1000)


def topology_job(spec, partitions=1, timeout_s=2, **spout_kw):
    j = job(partitions=partitions, bolt=None, **spout_kw)
    return JobConfig(spout=j.spout, bolt=None, topology_spec=topology_spec_from_dict(spec),
                     topology=TopologyConfig(name="orders-topo", id="orders-topo-1-1",
                                             message_timeout_secs=timeout_s))


@pytest.fixture(autouse=True)
def clear_once():
    bolts._ONCE.clear()


def test_an_open_tree_holds_the_commit_until_the_message_timeout_then_replays():
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, b"ok-0", b"hold-1", b"ok-2")
    store, clock = MemoryStateStore(), FakeClock()
    pipe = Pipeline(topology_job(bolts.HOLD_SPEC), runner=InProcessRunner(kafka), store=store,
                    kafka_factory=lambda boot: kafka, clock=clock, sleep=clock.sleep)
    assert pipe.layout is None                       # shuffle only: single stage
    pipe.open()
    spout, cap = pipe.spout, RunOptions().max_messages_per_partition
    started = clock()
    result = pipe.runner.run(spout.plan(started, cap))
    spout.apply(result, started, max_task_errors=3)
    assert result.partitions[0].open_trees == [1] and result.partitions[0].failed == []
    pm = spout.managers()[("orders", 0)]
    assert pm.commit_offset() == 1                   # the open tree blocks the commit
    clock.ms = started + 1_999
    assert spout.expire_open_trees(clock()) == 0
    assert spout.plan(clock(), cap).fetches[0].retry is False    # nothing to retry yet
    clock.ms = started + 2_000
    assert spout.expire_open_trees(clock()) == 1
    plan = spout.plan(clock(), cap)
    assert plan.fetches[0].retry and plan.fetches[0].reemit == (1,)   # replayed from Kafka
    spout.apply(pipe.runner.run(plan), clock(), max_task_errors=3)
    assert pm.commit_offset() == 3 and spout.counts.timeouts == 1
    assert [r["offset"] for r in bolts.SEEN] == [0, 1, 2, 1]


def test_run_replays_a_never_acked_tuple_after_the_timeout_and_commits_past_it():
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 1)
    kafka.append("orders", 0, b"ok-0", b"hold-1", b"ok-2")
    store, clock = MemoryStateStore(), FakeClock()
    pipe = Pipeline(topology_job(bolts.HOLD_SPEC, timeout_s=3), runner=InProcessRunner(kafka),
                    store=store, kafka_factory=lambda boot: kafka, clock=clock, sleep=clock.sleep)
    start = clock()
    summary = pipe.run(RunOptions(until_caught_up=True, idle_sleep_ms=100))
    assert summary.stopped_by == "caught up" and summary.timeouts == 1
    assert clock() - start >= 3_000
    assert [r["offset"] for r in bolts.SEEN].count(1) == 2
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 3


# --- multi-stage topologies ----------------------------------------------------------------

def test_fields_grouping_runs_as_stages_and_a_failure_two_stages_down_replays_the_root():
    lines = {0: [b"a b", b"c boom a", b"b"], 1: [b"boom", b"a a c", b""]}
    kafka = ScriptedKafka()
    kafka.create_topic("orders", 2)
    for p, values in lines.items():
        kafka.append("orders", p, *values)
    store = MemoryStateStore()
    pipe = Pipeline(topology_job(bolts.WORD_COUNT_SPEC, partitions=2),
                    runner=InProcessRunner(kafka), store=store,
                    kafka_factory=lambda boot: kafka, sleep=lambda s: None)
    layout = pipe.layout
    assert layout.stages == (("split",), ("count",), ("report",))
    assert layout.slots == ((), (("count", 0), ("count", 1)), (("report", 0),))
    summary = pipe.run(RunOptions(until_caught_up=True))
    assert summary.stopped_by == "caught up"
    counted = [r for r in bolts.SEEN if r["kind"] == "count"]
    tasks = {}
    for r in counted:
        tasks.setdefault(r["word"], set()).add(r["task"])
    assert all(len(t) == 1 for t in tasks.values())          # fields grouping holds
    boom_roots = {(0, 1), (1, 0)}
    replays = {}
    for r in counted:
        replays[(r["partition"], r["offset"], r["word"])] = replays.get(
            (r["partition"], r["offset"], r["word"]), 0) + 1
    for (p, o, w), n in replays.items():
        expected = lines[p][o].decode().split().count(w) * (2 if (p, o) in boom_roots else 1)
        assert n == expected, (p, o, w)
    by_p = {s.partition: s for s in summary.partitions}
    assert by_p[0].failed == 1 and by_p[1].failed == 1
    for p in (0, 1):
        assert parse_document(store.docs[f"/kafka/spout1/partition_{p}"]).offset == 3


def test_forcing_single_stage_keeps_the_per_partition_path():
    pipe = Pipeline(topology_job(bolts.WORD_COUNT_SPEC), runner=InProcessRunner(),
                    store=MemoryStateStore(), kafka_factory=lambda boot: kafka_with(1, 1),
                    stages=False)
    assert pipe.layout is None


# --- Storm semantics of the loop: commit timing, metrics, progress -------------------------

class StepClock(FakeClock):
    """Advances ``step`` ms at every read (each loop iteration reads it a few times)."""

    def __init__(self, step: int) -> None:
        super().__init__()
        self.step = step

    def __call__(self) -> int:
        self.ms += self.step
        return self.ms


def test_commit_timing_first_check_then_strictly_more_than_the_interval():
    kafka, store, clock = kafka_with(0, partitions=1), MemoryStateStore(), FakeClock()
    pipe = Pipeline(job(partitions=1, state_update_interval_ms=1_000),
                    runner=InProcessRunner(kafka), store=store,
                    kafka_factory=lambda boot: kafka, clock=clock, sleep=clock.sleep)
    pipe.open()

    def batch_then_check(at_ms):
        kafka.append("orders", 0, b"x")
        clock.ms = at_ms
        plan = pipe.spout.plan(at_ms, 100)
        pipe.spout.apply(pipe.runner.run(plan), at_ms, max_task_errors=3)
        before = store.writes
        pipe.spout.maybe_commit(at_ms)
        return store.writes - before

    assert batch_then_check(5_000) == 1        # the first check commits at once
    assert batch_then_check(5_500) == 0
    assert batch_then_check(6_000) == 0        # exactly the interval: not yet
    assert batch_then_check(6_001) == 1        # strictly more
    assert batch_then_check(6_002) == 0
    assert batch_then_check(6_000) == 1        # the clock went backwards: commit
    assert parse_document(store.docs["/kafka/spout1/partition_0"]).offset == 6


def test_metrics_every_bucket_with_storm_names_and_a_progress_line():
    kafka, store, clock = kafka_with(40, partitions=2), MemoryStateStore(), StepClock(150)
    records, lines = [], []
    pipe = Pipeline(job(metrics_time_bucket_size_in_secs=1), runner=InProcessRunner(kafka),
                    store=store, kafka_factory=lambda boot: kafka, clock=clock, sleep=clock.sleep,
                    metrics=lambda r: records.append((clock.ms, r)),
                    progress=lines.append)
    summary = pipe.run(RunOptions(until_caught_up=True, max_messages_per_partition=2,
                                  progress_every_s=1.0))
    assert summary.messages == 80
    partition_reports = [(t, r) for t, r in records if r["name"] == "kafkaPartition"]
    assert len(partition_reports) >= 3
    times = [t for t, _ in partition_reports]
    # one per bucket, and one more at shutdown (the last interval's figures)
    assert all(b - a >= 1_000 for a, b in zip(times[:-1], times[1:-1]))
    assert times[-1] >= times[-2]
    calls = sum(r["value"]["partition_0/fetchAPICallCount"] for _, r in partition_reports)
    assert 0 < calls <= summary.batches          # reset at each report, never double counted
    offsets = [r["value"] for _, r in records if r["name"] == "kafkaOffset"]
    assert offsets and "orders/partition_1/latestCompletedOffset" in offsets[-1]
    assert "orders/totalSpoutLag" in offsets[-1]
    assert lines and all(
        re.fullmatch(r"batch \d+: [\d,]+ msg/s, lag [\d,]+( \(spoutLag [\d,]+\))?, "
                     r"pending [\d,]+, retries [\d,]+", line)
        for line in lines)


def test_no_kafka_offset_data_point_when_storm_reports_null():
    kafka, store = kafka_with(3, partitions=1), MemoryStateStore()
    records = []
    pipe = Pipeline(job(partitions=1), runner=InProcessRunner(kafka), store=store,
                    kafka_factory=lambda boot: kafka, metrics=records.append)
    pipe.spout.maybe_refresh(0)
    pipe.reporter.offset_samples = lambda: []         # no partition has offset data
    pipe.reporter.emit_metrics()
    assert [r["name"] for r in records] == ["kafkaPartition", "stormKafkaCompat"]


def test_stage_layout_runs_shuffles_locally_and_cuts_at_crossing_groupings():
    from storm_kafka_compat.executor.stage_tasks import needs_stages, stage_layout
    from storm_kafka_compat.topology.spec import from_spec

    spec = {"bolts": [
        {"name": "split", "bolt": "tests.bolts:SplitWords", "parallelism": 2},
        {"name": "count", "bolt": "tests.bolts:CountWords", "parallelism": 3,
         "inputs": [{"from": "split", "grouping": "fields", "fields": ["word"]}]},
        {"name": "after", "bolt": "tests.bolts:CountWords", "parallelism": 2,
         "inputs": [{"from": "count", "grouping": "shuffle"}]},
        {"name": "late", "bolt": "tests.bolts:ReportOnce",
         "inputs": [{"from": "split", "grouping": "shuffle"},
                    {"from": "after", "grouping": "shuffle"}]},
    ]}
    topo = from_spec(spec)
    assert needs_stages(topo)
    layout = stage_layout(topo)
    # "after" runs where "count" runs; "late" is fed from stage 0 and stage 1: it gets slots
    assert layout.stages == (("split",), ("count", "after", "late"))
    assert layout.slots == ((), (("count", 0), ("count", 1), ("count", 2), ("late", 0)))
    assert not needs_stages(from_spec(bolts.HOLD_SPEC))


def test_a_failed_spark_job_reports_the_python_error_line():
    from storm_kafka_compat.engine.runner import spark_job_error as _job_error

    text = ("An error occurred while calling o51.collectAndServe.\n"
            "org.apache.spark.SparkException: Job aborted due to stage failure: ...\n"
            "  File \"/x/worker.py\", line 3, in main\n"
            "ModuleNotFoundError: No module named 'mybolts'\n"
            "\tat org.apache.spark.api.python.BasePythonRunner...\n")
    assert _job_error(RuntimeError(text)) == "ModuleNotFoundError: No module named 'mybolts'"
    assert _job_error(RuntimeError("plain")) == "plain"


def test_a_client_crash_is_not_reported_as_a_bolt_error_and_keeps_its_traceback():
    """A defect in the Kafka client (e.g. the None timestamp of 0.9 records) is named
    as such, with the traceback the driver logs under -v."""
    from storm_kafka_compat.config import SpoutConfig, StaticHosts
    from storm_kafka_compat.executor.task import run_task
    from storm_kafka_compat.executor.worker import WorkerJob, worker_parts
    from storm_kafka_compat.batch import FailureKind, FetchPlan

    class Crashing:
        def fetch_batch(self, *a, **k):
            return int(None)                       # TypeError, as kafka-python gave

    job = WorkerJob("crash", SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="i"),
                    ("127.0.0.1:9092",), "kafka-python", bolt="m:f")
    result = run_task(FetchPlan("t", 0, 5, max_messages=10),
                      worker_parts(job).tools(kafka=Crashing()))
    assert result.taken == [] and result.failure.kind is FailureKind.CLIENT_ERROR
    assert "inside the kafka-python client (TypeError" in result.failure.message
    assert "int(None)" in result.failure.traceback


def test_offset_samples_stop_asking_after_the_first_failed_lookup():
    """During a leader election each lookup costs socketTimeoutMs: one failure per
    report, every partition reported unknown, the loop goes on."""
    from storm_kafka_compat.errors import FailedFetchError

    kafka, store = kafka_with(3, partitions=3), MemoryStateStore()
    pipe = Pipeline(job(partitions=3), runner=InProcessRunner(kafka), store=store,
                    kafka_factory=lambda boot: kafka)
    pipe.spout.maybe_refresh(0)
    asked = []

    def offset_for(topic, partition, time):
        asked.append((partition, time))
        if partition == 1:
            raise FailedFetchError("timed out", topic=topic, partition=partition)
        return 0 if time == -2 else 3

    kafka.offset_for = offset_for
    samples = pipe.reporter.offset_samples()
    assert [(s.partition, s.earliest, s.latest) for s in samples] == [
        (0, None, None), (1, None, None), (2, None, None)]
    assert [p for p, _ in asked] == [0, 0, 1]


def test_offset_samples_ask_a_group_client_for_all_partitions_at_once():
    """A client that asks many partitions in one request (both shipped adapters) is
    asked twice a report, whatever the partitions: 512 asked one by one cost the
    driver 2.5 s a report."""
    from storm_kafka_compat.testing.scripted import ScriptedGroupKafka

    kafka = ScriptedGroupKafka()
    kafka.create_topic("orders", 3)
    for p in range(3):
        kafka.append("orders", p, *[b"m"] * (p + 2))
    pipe = Pipeline(job(partitions=3), runner=InProcessRunner(kafka), store=MemoryStateStore(),
                    kafka_factory=lambda boot: kafka)
    pipe.spout.maybe_refresh(0)
    kafka.calls.clear()
    samples = pipe.reporter.offset_samples()
    assert [(s.partition, s.earliest, s.latest) for s in samples] == [
        (0, 0, 2), (1, 0, 3), (2, 0, 4)]
    keys = (("orders", 0), ("orders", 1), ("orders", 2))
    assert [c for c in kafka.calls if c[0] != "offset_for"] == [("log_starts", keys),
                                                                ("log_ends", keys)]


def test_partitions_starting_together_are_asked_their_documents_and_log_ranges_at_once():
    """The first refresh of 512 partitions read each document and each log start
    alone (about 3 s); now one pipelined read, two log requests, and the same decisions
    as when each partition asks alone (``startOffsetTime`` latest: a document resumes,
    the others start at the log end)."""
    from storm_kafka_compat.config import LATEST_TIME
    from storm_kafka_compat.testing.scripted import ScriptedGroupKafka

    kafka = ScriptedGroupKafka()
    kafka.create_topic("orders", 3)
    for p in range(3):
        kafka.append("orders", p, *[b"m"] * (p + 2))
    store = MemoryStateStore({"/kafka/spout1/partition_1": encode_document(
        topology_id="x", topology_name="t", offset=1, partition=1, broker_host="k1",
        broker_port=9092, topic="orders")})
    read_alone, read_many = [], []
    store.read = lambda path, _read=store.read: read_alone.append(path) or _read(path)
    store.read_many = lambda paths, _many=store.read_many: read_many.append(list(paths)) or \
        _many(read_many[-1])
    pipe = Pipeline(job(partitions=3, start_offset_time=LATEST_TIME),
                    runner=InProcessRunner(kafka), store=store, kafka_factory=lambda boot: kafka)
    pipe.spout.maybe_refresh(0)
    assert [(k.partition, d.start_offset) for k, d in sorted(pipe.spout.decisions.items())] == [
        (0, 2), (1, 1), (2, 4)]
    keys = (("orders", 0), ("orders", 1), ("orders", 2))
    # (the scripted group client answers log_starts/log_ends through its offset_for)
    assert [c for c in kafka.calls if c[0] in ("offset_for", "log_starts", "log_ends")] == [
        ("log_starts", keys), *[("offset_for", "orders", p, -2) for p in range(3)],
        ("log_ends", keys), *[("offset_for", "orders", p, -1) for p in range(3)]]
    assert read_many == [[f"/kafka/spout1/partition_{p}" for p in range(3)]]
    # read_many of this store reads each path through read: nothing else was read
    assert read_alone == read_many[0]


def test_failed_log_range_lookups_pause_with_a_doubling_backoff():
    from storm_kafka_compat.errors import FailedFetchError
    from storm_kafka_compat.engine.report import LOOKUP_PAUSE_MAX_MS, LOOKUP_PAUSE_MS

    kafka, store = kafka_with(3, partitions=2), MemoryStateStore()
    now = [0]
    pipe = Pipeline(job(partitions=2), runner=InProcessRunner(kafka), store=store,
                    kafka_factory=lambda boot: kafka, clock=lambda: now[0])
    pipe.spout.maybe_refresh(0)
    asked, broken = [], [True]

    def offset_for(topic, partition, time):
        asked.append(now[0])
        if broken[0]:
            raise FailedFetchError("timed out", topic=topic, partition=partition)
        return 3

    kafka.offset_for = offset_for
    pipe.reporter.offset_samples()                                 # fails: paused 5 s
    now[0] = LOOKUP_PAUSE_MS - 1
    assert all(s.latest is None for s in pipe.reporter.offset_samples()) and len(asked) == 1
    now[0] = LOOKUP_PAUSE_MS
    pipe.reporter.offset_samples()                                 # fails again: paused 10 s
    now[0] += 2 * LOOKUP_PAUSE_MS - 1
    pipe.reporter.offset_samples()
    assert len(asked) == 2
    for _ in range(10):                                   # the pause stops growing
        now[0] += LOOKUP_PAUSE_MAX_MS
        pipe.reporter.offset_samples()
    assert asked[-1] - asked[-2] == LOOKUP_PAUSE_MAX_MS
    broken[0] = False
    now[0] += LOOKUP_PAUSE_MAX_MS
    assert [s.latest for s in pipe.reporter.offset_samples()] == [3, 3]
    now[0] += 1                                           # a good round: no pause
    assert [s.latest for s in pipe.reporter.offset_samples()] == [3, 3]


def test_log_ends_are_asked_once_of_a_group_client_and_a_partition_at_a_time_else():
    """The Spark source's latestOffset asks every partition's log end each
    micro-batch: in one request where the client can."""
    from storm_kafka_compat.kafka.lazy import LazyKafka
    from storm_kafka_compat.testing.scripted import ScriptedGroupKafka

    keys = [("orders", 0), ("orders", 1)]
    group, plain = ScriptedGroupKafka(), ScriptedKafka()
    for kafka in (group, plain):
        kafka.create_topic("orders", 2)
        kafka.append("orders", 1, b"a", b"b")
        lazy = LazyKafka(job(), lambda boot, k=kafka: k)
        kafka.calls.clear()
        assert lazy.log_ends(keys) == {("orders", 0): 0, ("orders", 1): 2}
    # (the scripted group client answers its log_ends through its own offset_for)
    assert [c[0] for c in group.calls] == ["log_ends", "offset_for", "offset_for"]
    assert plain.calls == [("offset_for", "orders", p, -1) for p in (0, 1)]
