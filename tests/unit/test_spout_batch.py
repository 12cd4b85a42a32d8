"""The batch contract and its two ends without Spark: what a task brings back
(values, picklable), the spout applying it, the job the workers get once, and the
one partition reader."""

from __future__ import annotations

import pickle

import pytest

from storm_kafka_compat.batch import (BatchPlan, BatchResult, FailureKind, FetchPlan,
                                      PartitionResult, TaskFailure)
from storm_kafka_compat.config import Broker, JobConfig, SpoutConfig, StaticHosts, TopologyConfig
from storm_kafka_compat.errors import FailedFetchError, OffsetOutOfRangeError, PipelineError
from storm_kafka_compat.executor import worker
from storm_kafka_compat.executor.reader import PartitionReader
from storm_kafka_compat.executor.worker import WorkerJob
from storm_kafka_compat.runtime import Runtime
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from storm_kafka_compat.testing.scripted import ScriptedKafka


def _spout(kafka: ScriptedKafka, partitions: int = 1, **spout_kw: object):
    hosts = StaticHosts({p: Broker("k1", 9092) for p in range(partitions)})
    job = JobConfig(spout=SpoutConfig(hosts=hosts, topic="t", zk_root="/r", id="s",
                                      **spout_kw),
                    topology=TopologyConfig(name="n", id="n-1-1"), bolt="tests.bolts:record")
    spout = Runtime(job, store=MemoryStateStore(), kafka_factory=lambda boot: kafka).spout()
    spout.maybe_refresh(0)
    return spout


def _kafka(n: int = 10) -> ScriptedKafka:
    kafka = ScriptedKafka()
    kafka.create_topic("t", 1)
    kafka.append("t", 0, *[b"x"] * n)
    return kafka


def _failed(plan: FetchPlan, kind: FailureKind, message: str = "boom") -> BatchResult:
    return BatchResult([PartitionResult(plan, failure=TaskFailure(kind, message, "tb"))])


def test_a_result_and_its_failure_survive_pickling_as_values() -> None:
    result = _failed(FetchPlan("t", 0, 5, max_messages=3), FailureKind.CLIENT_ERROR)
    back = pickle.loads(pickle.dumps(result))
    assert back == result and back.partitions[0].failure.kind is FailureKind.CLIENT_ERROR
    assert [k.task_error for k in FailureKind] == [False, False, True, True]


def test_task_errors_in_a_row_end_the_run_with_the_kinds_hint_and_a_good_batch_resets() -> None:
    spout = _spout(_kafka())
    plan = spout.plan(0, 4).fetches[0]
    spout.apply(_failed(plan, FailureKind.BOLT_ERROR), 0, max_task_errors=2)
    spout.apply(BatchResult([PartitionResult(plan)]), 0, max_task_errors=2)   # resets
    spout.apply(_failed(plan, FailureKind.CLIENT_ERROR), 0, max_task_errors=2)
    with pytest.raises(PipelineError, match="failed 2 batches in a row: boom; this is not your "
                                            "bolt: the Kafka client failed"):
        spout.apply(_failed(plan, FailureKind.CLIENT_ERROR), 0, max_task_errors=2)


def test_a_failed_fetch_is_counted_and_out_of_range_moves_by_the_log_range_kafka_gives() -> None:
    kafka = _kafka()
    spout = _spout(kafka)
    plan = spout.plan(0, 4).fetches[0]
    spout.apply(_failed(plan, FailureKind.FAILED_FETCH), 0, max_task_errors=3)
    assert spout.counts.fetch_failures == 1
    kafka.set_log_start("t", 0, 7)
    spout.apply(_failed(plan, FailureKind.OUT_OF_RANGE), 0, max_task_errors=3)
    pm = spout.managers()[("t", 0)]
    assert pm.emitted_to == 7 and pm.total_lost == 7 and spout.counts.fetch_failures == 1


def test_the_plan_stays_within_max_spout_pending() -> None:
    hosts = StaticHosts({0: Broker("k1", 9092)})
    job = JobConfig(spout=SpoutConfig(hosts=hosts, topic="t", zk_root="/r", id="s"),
                    topology=TopologyConfig(name="n", id="n-1-1", max_spout_pending=5),
                    bolt="tests.bolts:record")
    spout = Runtime(job, store=MemoryStateStore(), kafka_factory=lambda boot: _kafka()).spout()
    plan = spout.plan(0, 100)
    assert isinstance(plan, BatchPlan) and plan.fetches[0].max_messages == 5
    taken = [(0, 5)]
    spout.apply(BatchResult([PartitionResult(plan.fetches[0], taken=taken)]), 0,
                max_task_errors=3)
    assert len(spout.plan(0, 100)) == 0               # five pending: no room


def test_the_workers_build_a_jobs_things_once_and_keep_the_latest_jobs() -> None:
    job = WorkerJob("job-a", SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r",
                                         id="s"), ("k:1",))
    built = []
    first = worker.worker_parts(job).get("thing", lambda: built.append(1) or object())
    later = job.with_bootstrap(("k:2",))
    parts = worker.worker_parts(later)
    assert parts.get("thing", object) is first                                   # same job
    assert parts.job.bootstrap == ("k:2",)           # its client from the brokers learned since
    assert pickle.loads(pickle.dumps(job)) == job and built == [1]
    for i in range(worker.KEPT_JOBS):
        worker.worker_parts(WorkerJob(f"job-{i}", job.spout, ())).get("thing", object)
    assert worker.worker_parts(job).get("thing", object) is not first            # forgotten


def test_the_reader_stops_at_the_log_end_of_its_first_fetch_and_a_later_error_ends_it() -> None:
    kafka = ScriptedKafka(fetch_size_bytes=3)        # three one-byte messages a fetch
    kafka.create_topic("t", 1)
    kafka.append("t", 0, *[b"x"] * 5)
    reader = PartitionReader(kafka, "t", 0, 0)
    assert [m.offset for m in reader.fetch()] == [0, 1, 2] and reader.log_end == 5
    kafka.append("t", 0, b"late")
    assert [m.offset for m in reader.fetch()] == [3, 4]
    assert reader.fetch() == [] and reader.done       # the log end it saw, not the new one
    failing = PartitionReader(kafka, "t", 0, 0, max_messages=4)
    failing.fetch()
    kafka.fail_next("t", 0, FailedFetchError("down"))
    assert failing.fetch_more() == [] and failing.done


@pytest.mark.parametrize("exc,kind", [(OffsetOutOfRangeError("gone"), FailureKind.OUT_OF_RANGE),
                                      (FailedFetchError("down"), FailureKind.FAILED_FETCH),
                                      (TypeError("bug"), FailureKind.CLIENT_ERROR)])
def test_a_first_fetch_that_fails_is_a_value(exc: Exception, kind: FailureKind) -> None:
    kafka = _kafka()
    kafka.fail_next("t", 0, exc)
    messages, failure = PartitionReader(kafka, "t", 0, 0, client="confluent").first_fetch()
    assert messages == [] and failure is not None and failure.kind is kind
    assert (kind is not FailureKind.CLIENT_ERROR) or (
        "inside the confluent client (TypeError: bug)" in failure.message and failure.traceback)


def test_a_plan_the_task_did_not_reach_changes_nothing_and_is_planned_first_next() -> None:
    kafka = ScriptedKafka()
    kafka.create_topic("t", 3)
    for p in range(3):
        kafka.append("t", p, *[b"x"] * 10)
    spout = _spout(kafka, 3)
    first = spout.plan(0, 4).fetches
    assert [p.partition for p in first] == [0, 1, 2]           # discovery order at first
    # partition 0 was read; the task's budget ran out before partitions 1 and 2
    spout.apply(BatchResult([PartitionResult(first[0], taken=[(0, 4)], acked=[(0, 4)]),
                             PartitionResult(first[1], reached=False),
                             PartitionResult(first[2], reached=False)]), 0, max_task_errors=2)
    managers = spout.managers()
    assert [pm.emitted_to for pm in managers.values()] == [4, 0, 0]
    again = spout.plan(0, 4).fetches
    assert [(p.partition, p.offset) for p in again] == [(1, 0), (2, 0), (0, 4)]
    # a partition never reached is not caught up, even when every reached one is; one
    # whose last fetch brought nothing stays so while the budget does not reach it
    spout.apply(BatchResult([PartitionResult(again[0], reached=False),
                             PartitionResult(again[1]), PartitionResult(again[2])]), 0,
                max_task_errors=2)
    assert not spout.caught_up()
    spout.apply(BatchResult([PartitionResult(again[0])]), 0, max_task_errors=2)
    assert spout.caught_up()
    spout.apply(BatchResult([PartitionResult(again[0], reached=False)]), 0, max_task_errors=2)
    assert spout.caught_up()
    # least recently reached first; ties in discovery order
    assert [p.partition for p in spout.plan(0, 4).fetches] == [0, 2, 1]


# --- idle partitions: a log-end lookup instead of a fetch's wait at the end ---------------

def test_a_partition_whose_last_fetch_brought_nothing_is_planned_idle() -> None:
    kafka = _kafka(3)
    spout = _spout(kafka)
    first = spout.plan(0, 10).fetches[0]
    assert not first.idle                             # never fetched: a plain fetch
    spout.apply(BatchResult([PartitionResult(first, taken=[(0, 3)], acked=[(0, 3)],
                                             scanned_to=3)]), 0, max_task_errors=3)
    after_data = spout.plan(0, 10).fetches[0]
    assert not after_data.idle                        # it brought data: more may follow
    spout.apply(BatchResult([PartitionResult(after_data, scanned_to=3)]), 0,
                max_task_errors=3)
    idle = spout.plan(0, 10).fetches[0]
    assert idle.idle and idle.offset == 3
    # a plan the budget did not reach keeps the partition's flag as it was
    spout.apply(BatchResult([PartitionResult(idle, reached=False)]), 0, max_task_errors=3)
    assert spout.plan(0, 10).fetches[0].idle


def test_a_retry_plan_is_never_idle() -> None:
    spout = _spout(_kafka(3))
    plan = spout.plan(0, 10).fetches[0]
    # offset 2's tree stays open; the next fetch of new data brings nothing
    spout.apply(BatchResult([PartitionResult(plan, taken=[(0, 3)], acked=[(0, 2)],
                                             open_trees=[2], scanned_to=3)]), 0,
                max_task_errors=3)
    spout.apply(BatchResult([PartitionResult(spout.plan(0, 10).fetches[0], scanned_to=3)]), 0,
                max_task_errors=3)
    # the tree times out and fails: the caught-up partition's next plan is its retry
    retry = spout.plan(10**12, 10).fetches[0]
    assert retry.retry and retry.reemit == (2,) and not retry.idle
    assert not PartitionReader.for_plan(_kafka(3), FetchPlan("t", 0, 2, retry=True,
                                                             reemit=(2,), idle=True)).idle


def test_an_idle_reader_at_the_log_end_asks_the_end_and_does_not_fetch() -> None:
    kafka = _kafka(3)
    reader = PartitionReader.for_plan(kafka, FetchPlan("t", 0, 3, idle=True))
    messages, failure = reader.first_fetch()
    assert (list(messages), failure, reader.done, reader.log_end) == ([], None, True, 3)
    assert kafka.calls == [("offset_for", "t", 0, -1)]
    assert reader.latency_ms is None                  # no fetch: no fetch latency


def test_an_idle_reader_whose_log_grew_fetches_as_usual() -> None:
    kafka = _kafka(3)
    kafka.append("t", 0, b"y", b"z")
    reader = PartitionReader.for_plan(kafka, FetchPlan("t", 0, 3, idle=True), batch=False)
    messages, failure = reader.first_fetch()
    assert [m.offset for m in messages] == [3, 4] and failure is None
    assert [c[0] for c in kafka.calls] == ["offset_for", "fetch"]


def test_an_idle_reader_leaves_beyond_the_end_and_failed_lookups_to_the_fetch() -> None:
    from storm_kafka_compat.errors import KafkaAccessError
    kafka = _kafka(3)
    # past the end: the fetch's out-of-range answer decides, as for any plan
    messages, failure = PartitionReader.for_plan(kafka, FetchPlan("t", 0, 9, idle=True)
                                                 ).first_fetch()
    assert list(messages) == [] and failure is not None
    assert failure.kind is FailureKind.OUT_OF_RANGE
    # a lookup that fails: the fetch runs (and meets the broker itself)
    kafka.calls.clear()
    kafka.fail_next("t", 0, KafkaAccessError("leader moving"), call="offset_for")
    messages, failure = PartitionReader.for_plan(kafka, FetchPlan("t", 0, 3, idle=True)
                                                 ).first_fetch()
    assert list(messages) == [] and failure is None
    assert [c[0] for c in kafka.calls] == ["offset_for", "fetch"]
