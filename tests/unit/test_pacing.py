"""Batches sized by time on the driver (engine.pacing): the pacer's arithmetic, and
which pipelines are paced."""

from storm_kafka_compat.config.topology_spec import topology_spec_from_dict
from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from typing import Any, List

from storm_kafka_compat.engine.pacing import (FIRST_CAP, MEASURED_GROWTH, MEASURED_MARGIN,
                                              WINDOW, BatchPacer, fit)
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from tests import bolts
from tests.unit.test_driver_loop import job, kafka_with


def test_the_first_batch_is_small_and_says_nothing_of_the_cost() -> None:
    pacer = BatchPacer(budget_ms=250)
    assert pacer.cap(4, 100_000) == FIRST_CAP
    assert pacer.cap(4, 5) == 5                       # never above the caller's limit
    pacer.observe(64, 20_000, 4)                      # Spark's start: not a cost
    assert pacer.cost_ms is None
    assert pacer.cap(4, 100_000) == 8                  # another size: half
    pacer.observe(0, 300, 4)                           # nothing taken: no news
    assert pacer.cap(4, 100_000) == 8


def test_spark_overhead_is_fitted_apart_from_the_cost_per_message() -> None:
    # 1 s of overhead per batch, 10 ms a message
    pacer = BatchPacer(budget_ms=250)
    pacer.observe(64, 9_000, 4)                        # start-up
    pacer.observe(64, 1640, 4)
    assert pacer.cost_ms is None                       # one size: the split is unknown
    assert pacer.cap(4, 1000) == 8                     # so the next batch is half as large
    pacer.observe(32, 1320, 4)
    assert pacer.cost_ms is not None and pacer.overhead_ms is not None
    assert abs(pacer.cost_ms - 10.0) < 1e-9 and abs(pacer.overhead_ms - 1000.0) < 1e-6
    assert pacer.cap(4, 1000) == 6                     # 250 ms of processing over 4 partitions
    # with batches of that one size, the known overhead still gives the cost
    for _ in range(WINDOW + 1):
        pacer.observe(24, 1240, 4)
    assert abs(pacer.cost_ms - 10.0) < 1e-9 and pacer.cap(4, 1000) == 6


def test_fit_keeps_both_terms_non_negative() -> None:
    assert fit([(10, 5.0), (20, 4.0)]) is None         # time falls with size: no cost known
    assert fit([(10, 5.0), (10, 7.0)]) is None         # one size
    cost, overhead = fit([(10, 1.0), (20, 3.0)])       # overhead fitted below 0: through 0
    assert overhead == 0.0 and abs(cost - 0.14) < 1e-9


def _simulate(pacer: BatchPacer, batches: int, *, overhead_ms: float, cost_ms: float,
              partitions: int, first_extra_ms: float = 0.0,
              limit: int = 100_000, measured: float = 0.0) -> List[int]:
    """Run ``batches`` batches of a topic that always has data through ``pacer``: a
    batch of m messages takes overhead + cost x m (the first one longer by
    ``first_extra_ms``), ``measured`` of the cost measured where it ran (0: nothing
    measured); return the per-partition caps used."""
    caps = []
    for n in range(batches):
        cap = pacer.cap(partitions, limit)
        caps.append(cap)
        taken = cap * partitions
        elapsed = overhead_ms + cost_ms * taken + (first_extra_ms if n == 0 else 0.0)
        pacer.observe(taken, elapsed, partitions,
                      work_ms=measured * cost_ms * taken if measured else None)
    return caps


def test_equal_batches_with_a_spark_overhead_above_the_budget_do_not_lock_at_one() -> None:
    # the fault round: a fields-grouping topology, stateUpdateIntervalMs 500 (a 250 ms
    # budget), Spark's per-job cost of the two stages 900 ms, 0.25 ms a message, 4
    # partitions, and a slow first batch; the right cap is 250 ms / 0.25 ms / 4 = 250
    pacer = BatchPacer(budget_ms=250)
    caps = _simulate(pacer, 40, overhead_ms=900, cost_ms=0.25, partitions=4,
                     first_extra_ms=6_000)
    assert 1 not in caps[1:], caps
    assert all(200 <= c <= 260 for c in caps[20:]), caps
    # the batches' processing stays near the budget once the cost is known
    assert pacer.cost_ms is not None and abs(pacer.cost_ms - 0.25) < 0.01
    assert abs(pacer.overhead_ms - 900) < 5


def test_the_old_rule_locked_in_and_the_new_one_recovers_from_a_cap_of_one() -> None:
    # one size only, whole time charged to the messages: what the old pacer did
    cap = FIRST_CAP
    for _ in range(20):
        taken = cap * 4
        cap = max(1, int(250 / ((900 + 0.25 * taken) / taken) / 4))
    assert cap == 1
    # the new pacer, brought to a cap of 1 by a slow bolt that then becomes fast
    pacer = BatchPacer(budget_ms=250)
    slow = _simulate(pacer, 12, overhead_ms=900, cost_ms=400.0, partitions=4)
    assert slow[-1] == 1
    fast = _simulate(pacer, 25, overhead_ms=900, cost_ms=0.25, partitions=4)
    assert fast[-1] >= 200 and max(fast) <= 260, fast
    # growth is at most twice the largest batch of the window per batch
    assert all(b <= 2 * a for a, b in zip(fast, fast[1:])), fast


def test_a_real_cost_per_message_is_never_outgrown() -> None:
    # no overhead, 50 ms a message: 5 messages fill the budget (250 ms)
    pacer = BatchPacer(budget_ms=250)
    caps = _simulate(pacer, 30, overhead_ms=0, cost_ms=50.0, partitions=1)
    assert max(caps[1:]) <= FIRST_CAP and caps[-1] == 5, caps
    # a slow batch now and then (GC) does not shrink the batches: the fastest counts
    pacer.observe(5, 5_000, 1)
    assert pacer.cap(1, 1000) == 5


def _word_count_job() -> JobConfig:
    j = job(partitions=2, bolt=None)
    return JobConfig(spout=j.spout, topology=j.topology,
                     topology_spec=topology_spec_from_dict(bolts.WORD_COUNT_SPEC))


def test_a_multi_stage_topology_is_paced_and_a_single_stage_one_is_not() -> None:
    kafka = kafka_with(40)
    single = Pipeline(job(), runner=InProcessRunner(kafka), store=MemoryStateStore(),
                      kafka_factory=lambda boot: kafka)
    single.open()
    assert single.pacer is None
    staged = Pipeline(_word_count_job(), runner=InProcessRunner(kafka), store=MemoryStateStore(),
                      kafka_factory=lambda boot: kafka, sleep=lambda s: None)
    staged.open()
    assert staged.layout is not None and staged.pacer is not None
    first = staged.spout.plan(0, staged.pacer.cap(2, RunOptions().max_messages_per_partition))
    assert [p.max_messages for p in first] == [FIRST_CAP, FIRST_CAP]
    summary = staged.run(RunOptions(until_caught_up=True))
    assert summary.messages == 80 and summary.stopped_by == "caught up"
    forced = Pipeline(job(), runner=InProcessRunner(kafka), store=MemoryStateStore(), pace=True,
                      kafka_factory=lambda boot: kafka)
    forced.open()
    assert forced.pacer is not None


def test_the_dataframe_mode_is_paced() -> None:
    from storm_kafka_compat.engine.dataframe import DataFrameRunner
    from storm_kafka_compat.engine.driver import runner_for

    dataframe = JobConfig(spout=job().spout, topology=job().topology, bolt=None,
                          dataframe="tests.bolts:record")
    runner = runner_for(dataframe, lambda: None, staged=False)
    assert isinstance(runner, DataFrameRunner) and runner.whole_batches


def test_batches_mostly_overhead_grow_by_the_budget_over_their_time() -> None:
    """A word count's shape: 300 ms of Spark a batch, 0.04 ms a message, a 1 s budget.
    Doubling took 12 batches to reach the size; charging a batch's whole time to its
    messages bounds the cost, so the next batch may be budget / time as large, and its
    processing still stays within one budget."""
    overhead, cost, budget = 300.0, 0.04, 1000.0
    pacer = BatchPacer(budget_ms=budget)
    caps = _simulate(pacer, 14, overhead_ms=overhead, cost_ms=cost, partitions=4,
                     first_extra_ms=3_000)
    right = budget / cost / 4                                     # 6,250 a partition
    reached = next(i for i, c in enumerate(caps) if c >= 0.9 * right)
    assert reached <= 8, caps
    assert all(cost * c * 4 <= budget * 1.001 for c in caps), caps   # never past a budget
    # the doubling rule alone gave 16, 8, 4, 16, 32, ... 4096, 6249: the size at batch 12
    assert all(b > 2.5 * a for a, b in zip(caps[2:5], caps[3:6])), caps


def test_a_first_batch_faster_than_a_budget_grows_by_the_budget_over_its_time() -> None:
    """The first batch says nothing of the cost, but its whole time bounds it: a word
    count's first batch (64 sentences, 454 ms with the workers' start) was followed by
    one half its size, 73 ms of Spark's overhead, before the batches could grow."""
    pacer = BatchPacer(budget_ms=1000)
    pacer.observe(64, 454, 4)
    assert pacer.cost_ms is None
    assert pacer.cap(4, 100_000) == int(64 * 1000 / 454 / 4)          # 35 a partition
    caps = _simulate(BatchPacer(budget_ms=1000), 6, overhead_ms=70, cost_ms=0.015,
                     partitions=4, first_extra_ms=300)
    assert caps[:4] == sorted(caps[:4]) and caps[3] > 4_000, caps     # halving: 1,471
    assert all(0.015 * c * 4 <= 1000 * 1.001 for c in caps), caps     # never past a budget


def test_measured_work_sizes_the_next_batch_while_the_cost_cannot_be_told() -> None:
    """A word count's first batch: 64 sentences in 300 ms, 0.64 ms of it their work
    where it ran (the rest Spark's job and the first fetches). The whole time bounds the
    cost at 4.7 ms a sentence (a next batch of 213); the work tells 10 us, and the next
    batch is sized from it, with a margin for what the measure leaves out."""
    pacer = BatchPacer(budget_ms=1000)
    pacer.observe(64, 300, 4, work_ms=0.64)
    assert pacer.cost_ms is None
    assert pacer.cap(4, 10**6) == int(1000 * 64 / (0.64 * MEASURED_MARGIN) / 4)   # 20,000
    unmeasured = BatchPacer(budget_ms=1000)
    unmeasured.observe(64, 300, 4, work_ms=0.0)                  # no measure: the bound
    assert unmeasured.cap(4, 10**6) == int(64 * 1000 / 300 / 4)
    absurd = BatchPacer(budget_ms=1000)
    absurd.observe(64, 300, 4, work_ms=1e-9)                     # a measure of nothing
    assert absurd.cap(4, 10**9) == MEASURED_GROWTH * 64 // 4


def test_a_word_count_reaches_its_size_at_the_second_batch_with_its_work_measured() -> None:
    """70 ms of Spark a batch, 10 us a message, a 1 s budget, a first batch 230 ms
    longer (the workers' first fetches); the measure sees 80 % of the cost. Without it
    the full size came at the sixth batch; with it at the second, and it stays there,
    never past 1.01 budgets."""
    overhead, cost, budget = 70.0, 0.01, 1000.0
    right = budget / cost / 4                                       # 25,000 a partition
    alone = _simulate(BatchPacer(budget_ms=budget), 8, overhead_ms=overhead, cost_ms=cost,
                      partitions=4, first_extra_ms=230)
    assert next(i for i, c in enumerate(alone) if c >= 0.75 * right) >= 4, alone
    pacer = BatchPacer(budget_ms=budget)
    caps = _simulate(pacer, 8, overhead_ms=overhead, cost_ms=cost, partitions=4,
                     first_extra_ms=230, measured=0.8)
    assert caps[0] == FIRST_CAP and all(c >= 0.75 * right for c in caps[1:]), caps
    assert all(cost * c * 4 <= budget * 1.01 for c in caps), caps


def test_measured_work_bounds_a_batch_a_noisy_fit_would_make_too_large() -> None:
    """The fault test's staged run (a 10 ms bolt behind a fields grouping, a 250 ms
    budget, 4 partitions), its first four batches as a fresh-clone run logged them:
    (messages, ms, work ms). The fit of those small batches put the cost at 4.3 ms a
    message and sized the fifth batch at 57 (0.57 s of work, 2.3 budgets), so a kill
    there replayed past the test's bound; the measured work, about 10.2 ms a message,
    keeps every batch within one budget of it."""
    seen = [(32, 620, 326.5), (8, 341, 82.0), (16, 210, 163.0), (32, 412, 326.3)]
    fit_alone = BatchPacer(budget_ms=250)
    for messages, ms, _work in seen:
        fit_alone.observe(messages, ms, 4)
    measured = BatchPacer(budget_ms=250)
    for messages, ms, work in seen:
        measured.observe(messages, ms, 4, work_ms=work)
        assert measured.cap(4, 10**6) * 4 * work / messages <= 250, (messages, work)
    assert fit_alone.cost_ms is not None and fit_alone.cost_ms < 5   # the noisy fit
    assert fit_alone.cap(4, 10**6) * 4 >= 56                          # 2.2 budgets and more
    assert measured.cap(4, 10**6) * 4 <= 250 * 32 / 326.3              # 24: one budget


def test_a_hosted_batch_measures_its_busiest_task_then_each_stages_slowest_host() -> None:
    """The work the pacer is given: stage 0's Spark tasks run side by side (the busiest
    counts), then each bolt-host stage, its hosts side by side (the slowest counts)."""
    from storm_kafka_compat.engine.hosted import run_hosted
    from storm_kafka_compat.executor.hosts.host import StageAnswer
    from storm_kafka_compat.executor.stage_tasks import StageLayout

    class Hosts:
        def __init__(self) -> None:
            self.asked: List[Any] = []

        def deposit(self, batch: int, source: Any, attempt: int, tuples: Any) -> None:
            raise AssertionError("nothing is sent on")

        def run_stage(self, batch: int, stage: int, sources: Any) -> List[StageAnswer]:
            self.asked.append((batch, stage, dict(sources)))
            answers = [StageAnswer(), StageAnswer()]
            answers[0].seconds, answers[1].seconds = {1: (0.2, 0.5), 2: (0.1, 0.05)}[stage]
            return answers

    layout = StageLayout(stages=(("split",), ("count",), ("report",)),
                         slots=((), (("count", 0), ("count", 1)), (("report", 0),)))
    hosts = Hosts()
    result = run_hosted([(("s", 0), (1, 0.3)), (("s", 1), (0, 0.7))], layout, 7, hosts)
    assert result.work_s is not None and abs(result.work_s - (0.7 + 0.5 + 0.1)) < 1e-9
    # the attempts the driver took, each stage once
    assert hosts.asked == [(7, 1, {("s", 0): 1, ("s", 1): 0}), (7, 2, {("s", 0): 1, ("s", 1): 0})]


def test_the_driver_gives_the_pacer_a_batchs_measured_work() -> None:
    """A staged pipeline's second batch is sized from the first one's measured work."""
    kafka = kafka_with(20_000)

    class Measured(InProcessRunner):
        def run(self, plan: Any) -> Any:
            result = super().run(plan)
            result.work_s = 0.000_01 * sum(r.taken_count for r in result)   # 10 us each
            return result

    from storm_kafka_compat.testing.hosts import InProcessBoltState, MemoryStates
    staged = Pipeline(_word_count_job(), runner=Measured(kafka), store=MemoryStateStore(),
                      kafka_factory=lambda boot: kafka, sleep=lambda s: None,
                      bolt_tasks=InProcessBoltState.factory(MemoryStates()))
    staged.open()
    assert staged.pacer is not None
    staged.batch(RunOptions())                                    # FIRST_CAP a partition
    budget = staged.pacer.budget_ms
    assert staged.pacer.cap(2, 10**6) == min(
        int(budget / (0.01 * MEASURED_MARGIN) / 2), MEASURED_GROWTH * FIRST_CAP)
