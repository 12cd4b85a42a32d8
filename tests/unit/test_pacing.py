"""Batches sized by time on the driver (engine.pacing): the pacer's arithmetic, and
which pipelines are paced."""

from storm_kafka_compat.config import JobConfig
from storm_kafka_compat.engine.driver import Pipeline, RunOptions
from storm_kafka_compat.engine.pacing import FIRST_CAP, BatchPacer, fit
from storm_kafka_compat.testing.inprocess import InProcessRunner
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from tests import bolts
from tests.unit.test_driver_loop import job, kafka_with


def test_the_first_batch_is_small_then_sized_to_the_budget() -> None:
    pacer = BatchPacer(budget_ms=250)
    assert pacer.cap(4, 100_000) == FIRST_CAP
    assert pacer.cap(4, 5) == 5                       # never above the caller's limit
    pacer.observe(1000, 500)                           # one size only: 0.5 ms a message
    assert pacer.cap(4, 100_000) == 125                # 250 ms / 0.5 ms over 4 partitions
    pacer.observe(0, 300)                              # nothing taken: no news
    assert pacer.cap(4, 100_000) == 125
    pacer.observe(1, 60_000)                           # a very slow batch
    assert pacer.cap(4, 100_000) == 1                  # never below one message


def test_spark_overhead_is_fitted_apart_from_the_cost_per_message() -> None:
    # 1 s of overhead per batch, 10 ms a message: 64 messages take 1.64 s, 8 take 1.08 s
    pacer = BatchPacer(budget_ms=250)
    pacer.observe(64, 1640)
    assert pacer.cap(4, 1000) == 2                     # overhead not known yet: small
    pacer.observe(8, 1080)
    assert abs(pacer.cost_ms - 10.0) < 1e-9 and abs(pacer.overhead_ms - 1000.0) < 1e-6
    assert pacer.cap(4, 1000) == 6                     # 250 ms of processing over 4 partitions
    assert fit([(10, 5.0), (20, 4.0)]) == (0.3, 0.0)   # outside the model: all cost


def _word_count_job() -> JobConfig:
    j = job(partitions=2, bolt=None)
    return JobConfig(spout=j.spout, topology=j.topology, topology_spec=bolts.WORD_COUNT_SPEC)


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
    assert staged.pacer.cost_ms is not None
    forced = Pipeline(job(), runner=InProcessRunner(kafka), store=MemoryStateStore(), pace=True,
                      kafka_factory=lambda boot: kafka)
    forced.open()
    assert forced.pacer is not None


def test_the_dataframe_mode_is_paced() -> None:
    from storm_kafka_compat.engine.dataframe import DataFrameRunner
    from storm_kafka_compat.engine.runner import runner_for

    dataframe = JobConfig(spout=job().spout, topology=job().topology, bolt=None,
                          dataframe="tests.bolts:record")
    runner = runner_for(dataframe, lambda: None, staged=False)
    assert isinstance(runner, DataFrameRunner) and runner.whole_batches
