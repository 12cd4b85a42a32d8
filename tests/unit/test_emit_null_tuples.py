"""storm-kafka-client's emitNullTuples through the executor."""

import pytest

from storm_kafka_compat.config import SpoutConfig, StaticHosts
from storm_kafka_compat.kafka.scripted import ScriptedKafka
from storm_kafka_compat.partition.manager import FetchPlan
from storm_kafka_compat.pipeline.executor import TaskSpec, run_task
from storm_kafka_compat.pipeline.schemes import EMIT_NULL_TUPLES_KEY
from tests import bolts


@pytest.mark.parametrize("emit,seen_values,skipped", [(False, ["a", "c"], 1),
                                                      (True, ["a", None, "c"], 0)])
def test_tombstone_is_skipped_or_emitted(emit, seen_values, skipped):
    bolts.SEEN.clear()
    kafka = ScriptedKafka()
    kafka.create_topic("t", 1)
    kafka.append("t", 0, b"a", None, b"c")
    spout = SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="s", scheme="string")
    spec = TaskSpec(FetchPlan("t", 0, 0), ("k:9092",), spout, "tests.bolts:record",
                    storm_conf=((EMIT_NULL_TUPLES_KEY, emit),))
    result = run_task(spec, kafka=kafka)
    assert [r["value"] for r in bolts.SEEN] == seen_values
    assert result.acked == [(0, 3)] and result.skipped == skipped
