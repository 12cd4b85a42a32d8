"""storm-kafka-client's emitNullTuples through the executor."""

import pytest

from storm_kafka_compat.config import SpoutConfig, StaticHosts
from storm_kafka_compat.testing.scripted import ScriptedKafka
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.executor.task import run_task
from storm_kafka_compat.executor.worker import WorkerJob, worker_parts
from storm_kafka_compat.topology.schemes import EMIT_NULL_TUPLES_KEY
from tests import bolts


@pytest.mark.parametrize("emit,seen_values,skipped", [(False, ["a", "c"], 1),
                                                      (True, ["a", None, "c"], 0)])
def test_tombstone_is_skipped_or_emitted(emit, seen_values, skipped):
    bolts.SEEN.clear()
    kafka = ScriptedKafka()
    kafka.create_topic("t", 1)
    kafka.append("t", 0, b"a", None, b"c")
    spout = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="s", scheme="string")
    job = WorkerJob(f"null-tuples-{emit}", spout, ("k:9092",), bolt="tests.bolts:record",
                    storm_conf=((EMIT_NULL_TUPLES_KEY, emit),))
    result = run_task(FetchPlan("t", 0, 0), worker_parts(job).tools(kafka=kafka))
    assert [r["value"] for r in bolts.SEEN] == seen_values
    assert result.acked == [(0, 3)] and result.skipped == skipped


def test_a_new_data_plan_is_filled_by_several_fetches_up_to_max_messages():
    bolts.SEEN.clear()

    class SmallFetches(ScriptedKafka):
        """Answers at most 3 messages per fetch, like a small fetchSizeBytes."""
        def fetch(self, topic, partition, offset, *, max_messages=None, max_offset=None):
            n = 3 if max_messages is None else min(3, max_messages)
            return super().fetch(topic, partition, offset, max_messages=n, max_offset=max_offset)

    kafka = SmallFetches()
    kafka.create_topic("t", 1)
    kafka.append("t", 0, *[b"m"] * 20)
    spout = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="s", scheme="string")
    job = WorkerJob("filled", spout, ("k:9092",), bolt="tests.bolts:record")
    full = run_task(FetchPlan("t", 0, 0, max_messages=10), worker_parts(job).tools(kafka=kafka))
    assert full.taken == [(0, 10)]                      # 4 fetches, capped at the plan
    to_end = run_task(FetchPlan("t", 0, 10), worker_parts(job).tools(kafka=kafka))
    assert to_end.taken == [(10, 20)]                   # stopped by the empty answer at the end
    retry = run_task(FetchPlan("t", 0, 2, retry=True, reemit=(2, 9), max_messages=2),
                     worker_parts(job).tools(kafka=kafka))
    assert retry.taken == [(2, 3)]                      # a retry plan is one fetch
