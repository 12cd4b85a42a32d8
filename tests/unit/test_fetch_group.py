"""One consumer per task for all its partitions (issue 33), without servers.

The pure parts: a fetch's interleaved records split by partition, what a group
consumer handed out and the task did not process (``HeldRecords``), and each plan
settled from its share of the group's records (``run_group``) as the single-partition
path settles it: the cap, the offset bound, the log end of the first answer, the idle
check, out of range, the deadline. The client is ``ScriptedGroupKafka``; time is a fake
clock the processor advances.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, List, Optional

import pytest

from storm_kafka_compat.batch import FailureKind, FetchPlan, PartitionResult
from storm_kafka_compat.config import job_config_from_dict
from storm_kafka_compat.engine.driver import worker_job
from storm_kafka_compat.errors import OffsetOutOfRangeError
from storm_kafka_compat.executor.group_task import run_group
from storm_kafka_compat.executor.process import process_batch
from storm_kafka_compat.executor.worker import WorkerJob, worker_parts
from storm_kafka_compat.kafka.client import RecordBatch
from storm_kafka_compat.kafka.fetch_group import HeldRecords, split_by_partition
from storm_kafka_compat.testing.scripted import ScriptedGroupKafka
from storm_kafka_compat.topology.schemes import load_scheme

# --- splitting a fetch by partition ---------------------------------------------------

@pytest.mark.parametrize("partitions,expected", [
    ([], []),
    ([0, 0, 0], [(0, ["r0", "r1", "r2"])]),
    ([1, 1, 0, 0, 2], [(1, ["r0", "r1"]), (0, ["r2", "r3"]), (2, ["r4"])]),
    # a partition met again later keeps its records in order
    ([0, 1, 0, 1, 1], [(0, ["r0", "r2"]), (1, ["r1", "r3", "r4"])]),
    ([("a", 0), ("b", 0), ("a", 0)], [(("a", 0), ["r0", "r2"]), (("b", 0), ["r1"])]),
])
def test_records_are_split_by_partition_in_order(partitions: List[Any],
                                                 expected: List[Any]) -> None:
    records = [f"r{i}" for i in range(len(partitions))]
    assert [(p, list(r)) for p, r in split_by_partition(partitions, records)] == expected


def _batch(partition: int, offsets: List[int]) -> RecordBatch:
    return RecordBatch("t", partition, list(offsets), [b"v%d" % o for o in offsets],
                       list(offsets))


# --- what a group consumer handed out across tasks -------------------------------------

def test_held_records_continue_where_the_client_stands_and_serve_what_was_kept() -> None:
    held = HeldRecords()
    key = ("t", 0)
    assert held.start(key, 10) is False            # new: the client is positioned at 10
    held.received(key, _batch(0, [10, 11, 12, 13]))
    held.keep(key, _batch(0, [12, 13]))            # the task processed 10 and 11
    assert held.start(key, 12) is True             # the next task starts at the kept ones
    assert held.take([key])[key].offsets == [12, 13]
    assert held.start(key, 14) is True             # nothing kept, the client is there
    assert held.start(key, 5) is False             # elsewhere: positioned again
    assert held.handed[key] == 5


def test_held_records_of_a_partition_no_longer_read_follow_the_unprocessed_ones() -> None:
    key = ("t", 1)
    held = HeldRecords()
    held.start(key, 0)
    held.received(key, _batch(1, [0, 1, 2, 3, 4]))
    held.add(key, _batch(1, [3, 4]))
    held.keep(key, _batch(1, [1, 2]))
    assert held.start(key, 1) is True
    assert held.take([key])[key].offsets == [1, 2, 3, 4]


# --- plans settled from one consumer's records ------------------------------------------

class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _job() -> WorkerJob:
    config = job_config_from_dict({
        "spout": {"topic": "t", "zkRoot": "/r", "id": "i"},
        "hosts": {"static": {0: "127.0.0.1:9092"}}, "topology": {"topology.name": "n"},
        "bolt": "m:f"})

    class _Spout:
        commit_interval_ms = 0

        def storm_conf(self) -> dict:
            return {}
    return worker_job(config, _Spout(), ("127.0.0.1:9092",), None)


def _processor(clock: _Clock, per_message_s: float = 0.0, fail_on: Optional[int] = None
               ) -> Any:
    scheme = load_scheme("raw")

    def bolt(t: Any) -> None:
        if fail_on is not None and t.values[0] == b"boom":
            raise ValueError("boom")

    def proc(messages: Any, plan: FetchPlan) -> Any:
        clock.now += per_message_s * len(messages)
        return process_batch(messages, scheme=scheme, bolt=bolt, plan_filter=plan)
    return proc


def _kafka(*sizes: int) -> ScriptedGroupKafka:
    kafka = ScriptedGroupKafka(per_poll=4)
    kafka.create_topic("t", len(sizes))
    for p, n in enumerate(sizes):
        if n:
            kafka.append("t", p, *[b"p%dm%d" % (p, i) for i in range(n)])
    return kafka


def _run(kafka: ScriptedGroupKafka, plans: List[FetchPlan], clock: _Clock,
         budget_s: float = 1.0, **proc: Any) -> List[PartitionResult]:
    process = _processor(clock, **proc)
    tools = replace(worker_parts(_job()).tools(kafka=kafka), processor=lambda: process)
    return list(run_group(plans, tools, deadline=clock() + budget_s, clock=clock))


def test_each_plan_is_settled_from_its_share_as_its_own_fetches_would_settle_it() -> None:
    kafka = _kafka(10, 7, 0, 5)
    clock = _Clock()
    plans = [FetchPlan("t", 0, 2, max_messages=5),        # capped at 5
             FetchPlan("t", 1, 0),                        # to its log end
             FetchPlan("t", 2, 0),                        # an empty partition
             FetchPlan("t", 3, 1, bound=4)]               # never at or past 4
    results = _run(kafka, plans, clock)
    assert [r.plan for r in results] == plans
    assert [r.taken for r in results] == [[(2, 7)], [(0, 7)], [], [(1, 4)]]
    assert [r.acked for r in results] == [[(2, 7)], [(0, 7)], [], [(1, 4)]]
    assert all(r.reached and r.failure is None for r in results)
    assert [c for c in kafka.calls if c[0] == "fetch_group"] == [
        ("fetch_group", ((("t", 0), 2), (("t", 1), 0), (("t", 2), 0), (("t", 3), 1)))]
    # one timing for the task, on its first result; each result says its worker
    assert results[0].timing is not None and results[0].timing.ended >= results[0].timing.started
    assert all(r.timing is not None and r.timing.worker for r in results)


def test_idle_plans_are_checked_in_one_lookup_and_those_at_their_end_not_fetched() -> None:
    kafka = _kafka(3, 3, 3)
    kafka.append("t", 1, b"new")
    clock = _Clock()
    plans = [FetchPlan("t", 0, 3, idle=True), FetchPlan("t", 1, 3, idle=True),
             FetchPlan("t", 2, 0)]
    results = _run(kafka, plans, clock)
    assert [c for c in kafka.calls if c[0] == "log_ends"] == [
        ("log_ends", (("t", 0), ("t", 1)))]
    assert [c for c in kafka.calls if c[0] == "fetch_group"] == [
        ("fetch_group", ((("t", 1), 3), (("t", 2), 0)))]
    assert [r.taken for r in results] == [[], [(3, 4)], [(0, 3)]]


def test_out_of_range_is_the_plans_failure_and_the_others_read_on() -> None:
    kafka = _kafka(4, 4)
    clock = _Clock()
    kafka.fail_next("t", 0, OffsetOutOfRangeError("out of range", topic="t", partition=0),
                    call="fetch")
    results = _run(kafka, [FetchPlan("t", 0, 0), FetchPlan("t", 1, 0)], clock)
    assert results[0].failure is not None and results[0].failure.kind is FailureKind.OUT_OF_RANGE
    assert results[0].taken == []
    assert results[1].failure is None and results[1].taken == [(0, 4)]


def test_the_deadline_ends_the_task_and_the_unprocessed_records_wait_for_the_next() -> None:
    kafka = _kafka(40, 40)
    clock = _Clock()
    plans = [FetchPlan("t", 0, 0), FetchPlan("t", 1, 0)]
    first = _run(kafka, plans, clock, budget_s=0.05, per_message_s=0.002)
    taken = [r.taken for r in first]
    assert all(r.reached for r in first)
    ends = [t[-1][1] if t else 0 for t in taken]
    assert 0 < sum(ends) < 80                      # the budget cut the reading
    # the next task starts where each plan stopped and gets every record once
    second = _run(kafka, [FetchPlan("t", 0, ends[0]), FetchPlan("t", 1, ends[1])], clock)
    assert [r.taken for r in second] == [[(ends[0], 40)], [(ends[1], 40)]]


def test_a_partition_without_an_answer_is_left_for_the_next_batch_unless_at_its_end() -> None:
    kafka = _kafka(400, 5, 0)
    kafka.per_poll = 400
    clock = _Clock()
    # the first poll's records of partition 0 spend the budget: 1 and 2 never answer
    results = _run(kafka, [FetchPlan("t", 0, 0), FetchPlan("t", 1, 0), FetchPlan("t", 2, 0)],
                   clock, budget_s=0.1, per_message_s=0.001)
    assert results[0].taken and results[0].reached
    assert results[1].reached is False and results[1].taken == []
    assert results[2].reached and results[2].failure is None and results[2].taken == []


def test_a_bolt_error_fails_its_plan_only() -> None:
    kafka = ScriptedGroupKafka(per_poll=4)
    kafka.create_topic("t", 2)
    kafka.append("t", 0, b"a", b"boom", b"c")
    kafka.append("t", 1, b"x", b"y")
    clock = _Clock()
    results = _run(kafka, [FetchPlan("t", 0, 0), FetchPlan("t", 1, 0)], clock, fail_on=1)
    assert results[1].failure is None and results[1].taken == [(0, 2)]
    assert results[0].failure is not None or results[0].errors


def test_an_end_counts_only_once_the_records_before_it_are_processed() -> None:
    from storm_kafka_compat.executor.group_task import GroupRead
    from storm_kafka_compat.kafka.fetch_group import GroupAnswer
    kafka = _kafka(6, 6)
    clock = _Clock()
    plans = [FetchPlan("t", 0, 0), FetchPlan("t", 1, 0)]
    state = GroupRead(plans, kafka, "scripted", clock)
    group = kafka.fetch_group(state.live())
    answer = GroupAnswer()
    answer.batches[("t", 0)] = kafka.fetch_batch("t", 0, 0)
    answer.batches[("t", 1)] = kafka.fetch_batch("t", 1, 0)
    answer.ended[("t", 0)] = 6
    answer.ended[("t", 1)] = 6
    # partition 0's records spend the deadline: partition 1's wait, so its end does not count
    spent = state.answer(group, answer, _processor(clock, per_message_s=1.0), clock() + 0.5)
    assert spent
    assert not state.readers[("t", 1)].done and ("t", 1) in state.unprocessed
    results = state.finished(0.0)
    assert results[1].reached is False and results[1].taken == []
    assert results[0].taken and results[0].reached


# --- librdkafka's log ends on brokers before 0.10.1 -----------------------------------

def test_brokers_pinned_below_0_10_1_are_asked_each_high_watermark_and_a_dead_one_left_out(
        ) -> None:
    """Kafka 0.9 has no ListOffsets v1 (``offsets_for_times`` timed out for every
    partition after a leader was killed): each partition's watermark is asked instead,
    the partitions whose lookups fail are left out, and all failing is the error."""
    from storm_kafka_compat.config import SpoutConfig, ZkHosts
    from storm_kafka_compat.config.kafka_settings import kafka_settings_from_dict
    from storm_kafka_compat.errors import KafkaAccessError
    from storm_kafka_compat.kafka.confluent import ConfluentAccess
    from storm_kafka_compat.kafka.confluent_settings import answers_list_offsets_v1

    pinned = kafka_settings_from_dict({"api_version": "0.9"}).for_backend("confluent")
    assert not answers_list_offsets_v1(pinned)
    assert answers_list_offsets_v1({})
    assert answers_list_offsets_v1({"api.version.request": False,
                                    "broker.version.fallback": "0.10.2"})

    class Consumer:
        dead = {1}
        asked: List[Any] = []

        def get_watermark_offsets(self, tp: Any, timeout: float, cached: bool) -> Any:
            self.asked.append((tp.partition, cached))
            if tp.partition in self.dead:
                from confluent_kafka import KafkaError, KafkaException
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
            return 0, 100 + tp.partition

        def offsets_for_times(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("ListOffsets v1 asked of a 0.9 broker")

    spout = SpoutConfig(hosts=ZkHosts("127.0.0.1:1"), topic="t", zk_root="/r", id="i")
    access = ConfluentAccess("127.0.0.1:1", spout, pinned, consumer_factory=lambda c: Consumer())
    assert not access.reads_groups()      # its tasks read partition by partition
    assert access.log_ends([("t", 0), ("t", 1), ("t", 2)]) == {("t", 0): 100, ("t", 2): 102}
    assert Consumer.asked == [(0, False), (1, False), (2, False)]
    with pytest.raises(KafkaAccessError):
        access.log_ends([("t", 1)])


def test_a_partition_the_budget_did_not_reach_is_served_first_in_the_next_task() -> None:
    """A slow bolt spends a task's budget on the first partition of a poll; the driver
    plans the one not reached first, and the next task processes the plans' order
    whatever order the client hands the records in (here partition 0's come first)."""
    kafka = _kafka(400, 400)
    kafka.per_poll = 400
    clock = _Clock()
    first = _run(kafka, [FetchPlan("t", 0, 0), FetchPlan("t", 1, 0)], clock,
                 budget_s=0.1, per_message_s=0.001)
    assert first[0].taken and first[1].reached is False
    end0 = first[0].taken[-1][1]
    second = _run(kafka, [FetchPlan("t", 1, 0), FetchPlan("t", 0, end0)], clock,
                  budget_s=0.1, per_message_s=0.001)
    assert second[0].taken and second[0].taken[0][0] == 0        # partition 1, at last
    assert second[1].reached is False


def test_a_partition_read_to_its_cap_is_not_paused_and_the_next_task_reads_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pause drops what the client prefetched (librdkafka purges the partition's
    queue), so neither a plan's end nor the task's pauses its partition: what the
    client hands out meanwhile is held, and the next task starts on it. Once a group
    holds HOLD_BEFORE_PAUSE such records, a partition handing out more is paused."""
    import storm_kafka_compat.kafka.fetch_group as fetch_group
    kafka = _kafka(30, 3)
    clock = _Clock()
    first = _run(kafka, [FetchPlan("t", 0, 0, max_messages=5), FetchPlan("t", 1, 0)], clock)
    assert [r.taken for r in first] == [[(0, 5)], [(0, 3)]]
    assert not [c for c in kafka.calls if c[0] == "pause"]
    assert len(kafka.held.kept[("t", 0)]) > 0                # fetched on after its cap
    kafka.calls.clear()
    second = _run(kafka, [FetchPlan("t", 0, 5)], clock)
    assert [r.taken for r in second] == [[(5, 30)]]
    # the held records came first: the client was not asked for offset 5 again
    assert ("fetch", "t", 0, 5) not in [c[:4] for c in kafka.calls]
    monkeypatch.setattr(fetch_group, "HOLD_BEFORE_PAUSE", 4)
    kafka.append("t", 0, *[b"more"] * 20)
    kafka.append("t", 1, *[b"more"] * 12)
    kafka.calls.clear()
    third = _run(kafka, [FetchPlan("t", 0, 30), FetchPlan("t", 1, 3, max_messages=1)], clock)
    assert [r.taken for r in third] == [[(30, 50)], [(3, 4)]]
    # partition 1 kept 3 records past its cap, then 4 more came from the next poll: paused
    assert [c for c in kafka.calls if c[0] == "pause"] == [("pause", ("t", 1))]
    assert len(kafka.held.kept[("t", 1)]) == 7
