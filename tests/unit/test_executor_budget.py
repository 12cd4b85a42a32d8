"""The task budget: how long one Spark task fetches and processes new messages.

It bounds what a crash replays (issue 17) and, set as ``spark.triggerInterval``,
trades latency for throughput (issue 12). Time is a fake clock here: the scripted
processor advances it by a fixed cost per message.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, List

import pytest

from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.engine.driver import worker_job
from storm_kafka_compat.executor.process import process_batch
from storm_kafka_compat.executor.task import run_task
from storm_kafka_compat.executor.worker import TaskTools, WorkerJob, worker_parts
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.topology.schemes import load_scheme


def _job(*, interval_ms: int = 2000, commit_ms: int = 0, trigger_ms: int = 0) -> WorkerJob:
    """What the driver sends the workers for a job with these intervals."""
    config = job_config_from_dict({
        "spout": {"topic": "t", "zkRoot": "/r", "id": "i", "stateUpdateIntervalMs": interval_ms},
        "hosts": {"static": {0: "127.0.0.1:9092"}}, "topology": {"topology.name": "n"},
        "spark": {"triggerInterval": trigger_ms} if trigger_ms else {}, "bolt": "m:f"})
    return worker_job(config, _Spout(commit_ms), ("127.0.0.1:9092",), None)


class _Spout:
    """A spout's commit interval (storm-kafka-client's offsetCommitPeriodMs; 0: none)."""

    def __init__(self, commit_interval_ms: int) -> None:
        self.commit_interval_ms = commit_interval_ms

    def storm_conf(self) -> dict:
        return {}


@pytest.mark.parametrize("interval_ms,commit_ms,trigger_ms,budget_s", [
    (2000, 0, 0, 1.0),        # half the default stateUpdateIntervalMs
    (500, 0, 0, 0.25),
    (100, 0, 0, 0.1),         # never below 100 ms
    (60_000, 0, 0, 1.0),      # never above 1 s unless asked
    (2000, 600, 0, 0.3),      # storm-kafka-client's offsetCommitPeriodMs wins
    (2000, 0, 5000, 5.0),     # spark.triggerInterval: exactly what was asked
    (2000, 0, 20, 0.02),
])
def test_the_budget_follows_the_commit_interval_unless_a_trigger_interval_is_set(
        interval_ms: int, commit_ms: int, trigger_ms: int, budget_s: float) -> None:
    job = _job(interval_ms=interval_ms, commit_ms=commit_ms, trigger_ms=trigger_ms)
    assert job.budget_s == pytest.approx(budget_s)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _slow_processor(clock: _Clock, per_message_s: float) -> Any:
    scheme = load_scheme("raw")

    def proc(messages: List[Any], plan: FetchPlan) -> Any:
        clock.now += per_message_s * len(messages)
        return process_batch(messages, scheme=scheme, bolt=lambda t: None, plan_filter=plan)
    return proc


def _tools(job: WorkerJob, kafka: Any, proc: Any) -> TaskTools:
    """The job's task tools reading ``kafka`` and processing with ``proc``."""
    return replace(worker_parts(job).tools(kafka=kafka), processor=lambda: proc)


@pytest.mark.parametrize("trigger_ms", [0, 3000])
def test_a_slow_bolt_stops_at_the_budget_and_leaves_the_rest_untaken(trigger_ms: int) -> None:
    kafka = ScriptedKafka()
    kafka.append("t", 0, *[b"m%d" % i for i in range(5000)])
    clock = _Clock()
    job = _job(trigger_ms=trigger_ms)
    budget = job.budget_s
    result = run_task(FetchPlan("t", 0, 0, max_messages=100_000),
                      _tools(job, kafka, _slow_processor(clock, 0.010)), clock=clock)
    taken = sum(e - s for s, e in result.taken)
    # 10 ms a message: about budget / 10 ms taken, the first chunk (16) at least,
    # within one message of the deadline; the next batch fetches the rest again
    assert budget / 0.010 - 1 <= taken <= budget / 0.010 + 1
    assert result.taken == [(0, taken)] and result.acked == [(0, taken)]
    assert clock.now - 100.0 == pytest.approx(taken * 0.010)


def _small_fetches() -> ScriptedKafka:
    """A Kafka answering 100 five-byte messages a fetch, like a small fetchSizeBytes."""
    return ScriptedKafka(fetch_size_bytes=500)


def test_a_task_fetches_again_after_processing_each_fetch_up_to_the_plans_cap() -> None:
    kafka = _small_fetches()
    kafka.append("t", 0, *[b"%05d" % i for i in range(3000)])
    clock = _Clock()
    result = run_task(FetchPlan("t", 0, 0, max_messages=2050),
                      _tools(_job(), kafka, _slow_processor(clock, 1e-6)), clock=clock)
    assert result.taken == [(0, 2050)] and result.scanned_to == 2050
    fetches = [c for c in kafka.calls if c[0] == "fetch"]
    assert [c[3] for c in fetches] == list(range(0, 2050, 100))   # one after another


def test_a_task_that_reaches_the_log_end_stops_there() -> None:
    kafka = _small_fetches()
    kafka.append("t", 0, *[b"%05d" % i for i in range(250)])
    clock = _Clock()
    result = run_task(FetchPlan("t", 0, 0, max_messages=100_000),
                      _tools(_job(), kafka, _slow_processor(clock, 1e-6)), clock=clock)
    assert result.taken == [(0, 250)]


def test_the_driver_sends_the_trigger_interval_with_the_job_once() -> None:
    from storm_kafka_compat.engine.driver import Pipeline, RunOptions
    from storm_kafka_compat.testing.inprocess import InProcessRunner
    from storm_kafka_compat.testing.memory_store import MemoryStateStore

    kafka = ScriptedKafka()
    kafka.create_topic("t", 2)
    for p in range(2):
        kafka.append("t", p, b"a", b"b")
    job = job_config_from_dict({
        "spout": {"topic": "t", "zkRoot": "/r", "id": "i"},
        "hosts": {"static": {0: "127.0.0.1:9092", 1: "127.0.0.1:9092"}},
        "topology": {"topology.name": "n", "storm.zookeeper.servers": ["127.0.0.1"]},
        "spark": {"triggerInterval": "3 seconds"},
        "bolt": "tests.bolts:record"})
    runner = InProcessRunner(kafka)
    pipe = Pipeline(job, runner=runner, store=MemoryStateStore(),
                    kafka_factory=lambda boot: kafka)
    pipe.open()
    assert runner.job is pipe.worker_job and runner.job.budget_s == 3.0
    plan = pipe.spout.plan(pipe.clock(), RunOptions().max_messages_per_partition)
    assert len(plan) == 2                     # the plans carry offsets only
    pipe.batch(RunOptions())
    assert runner.job is pipe.worker_job      # not sent again


def test_a_task_stops_at_the_log_end_its_first_fetch_saw_not_at_what_arrives_later() -> None:
    """Live traffic: messages keep arriving while the task runs. It takes what was
    in the log when it started (as a Spark micro-batch fixes its end offsets) and
    leaves the rest to the next batch, instead of running to its budget."""
    kafka = _small_fetches()
    kafka.append("t", 0, *[b"old.."] * 300)
    clock = _Clock()
    slow = _slow_processor(clock, 1e-4)

    def proc(messages, plan):
        kafka.append("t", 0, *[b"new.."] * 50)    # arrives while the task processes
        return slow(messages, plan)

    result = run_task(FetchPlan("t", 0, 0, max_messages=100_000), _tools(_job(), kafka, proc),
                      clock=clock)
    assert result.taken == [(0, 300)]
    assert kafka.fetched_log_end("t", 0) > 300


def test_a_task_that_meets_only_invisible_entries_reports_where_the_fetch_stands() -> None:
    """The log ends in offsets no consumer receives (here compacted away, as
    transaction markers are): the task's scanned_to is the log end, so the
    partition's position and commit pass them."""
    kafka = ScriptedKafka()
    kafka.create_topic("t")
    kafka.append("t", 0, *[b"m"] * 8)
    kafka.compact("t", 0, [5, 6, 7])
    proc = lambda messages, plan: process_batch(messages, scheme=load_scheme("raw"),  # noqa: E731
                                                bolt=lambda t: None, plan_filter=plan)
    first = run_task(FetchPlan("t", 0, 0), _tools(_job(), kafka, proc))
    assert first.taken == [(0, 5)] and first.scanned_to == 8 and first.failure is None
    again = run_task(FetchPlan("t", 0, 8), _tools(_job(), kafka, proc))
    assert again.taken == [] and again.scanned_to is None     # at the end: nothing passed
    retry = run_task(FetchPlan("t", 0, 5, True, (5,), 1), _tools(_job(), kafka, proc))
    assert retry.scanned_to is None                           # retries never pass anything


# --- one budget for a task's plans -----------------------------------------------------

def _run_tasks(kafka: ScriptedKafka, plans: List[FetchPlan], clock: _Clock,
               per_message_s: float) -> List[Any]:
    """``run_tasks`` (the mapPartitions function) over ``plans`` on a scripted broker."""
    from storm_kafka_compat.executor import group_task
    tools = _tools(_job(), kafka, _slow_processor(clock, per_message_s))
    return list(group_task.run_tasks(plans, tools, clock=clock))


def _scripted(partitions: int, messages: int) -> ScriptedKafka:
    kafka = ScriptedKafka()
    kafka.create_topic("t", partitions)
    for p in range(partitions):
        kafka.append("t", p, *[b"m%d" % i for i in range(messages)])
    return kafka


def test_a_task_reads_its_plans_in_turn_and_leaves_the_rest_once_its_budget_is_spent() -> None:
    clock = _Clock()
    plans = [FetchPlan("t", p, 0, max_messages=1_000_000) for p in range(4)]
    results = _run_tasks(_scripted(4, 5000), plans, clock, 0.001)
    # 1 ms a message and a 1 s budget: the first plan reads about 1,000 and the task
    # ends there; the other three are not started (nothing fetched) and say so
    taken = [sum(e - s for s, e in r.taken) for r in results]
    assert abs(taken[0] - 1000) <= 17 and taken[1:] == [0, 0, 0], taken
    assert [r.reached for r in results] == [True, False, False, False]
    assert [r.scanned_to for r in results[1:]] == [None] * 3
    assert clock.now - 100.0 == pytest.approx(1.0, abs=0.02)


def test_plans_that_reach_their_end_early_leave_the_time_to_the_next() -> None:
    clock = _Clock()
    plans = [FetchPlan("t", p, 0, max_messages=1_000_000) for p in range(8)]
    results = _run_tasks(_scripted(8, 100), plans, clock, 0.001)
    # 8 partitions of 100 messages: 0.8 s in all, every plan to its log end
    assert [sum(e - s for s, e in r.taken) for r in results] == [100] * 8
    assert all(r.reached for r in results)
    assert clock.now - 100.0 == pytest.approx(0.8)


def test_the_first_plan_of_a_task_always_starts() -> None:
    from storm_kafka_compat.executor.reader import TaskBudget
    clock = _Clock()
    budget = TaskBudget(0.0, clock)
    assert budget.deadline() == 100.0          # however small the budget
    assert budget.deadline() is None


def test_a_plan_whose_fetch_held_on_leaves_the_rest_for_the_next_batch() -> None:
    from storm_kafka_compat.executor.reader import TaskBudget
    clock = _Clock()
    budget = TaskBudget(1.0, clock)
    assert budget.deadline() == 101.0
    clock.now += 0.4
    assert budget.deadline() == 101.0          # the task's end, not a share of it
    clock.now += 3.0                           # a first fetch that held on for 3 s
    assert budget.deadline() is None
