"""KafkaBolt on a real Apache Kafka 0.9.0.1 broker (no Spark): Kafka -> bolt ->
KafkaBolt -> Kafka through the executor's batch processing; acks follow the
broker's answers (a record the broker refuses fails its input)."""

from __future__ import annotations

import pytest

from storm_kafka_compat.kafka.client import KafkaMessage
from storm_kafka_compat.kafka.producer import close_shared_producers
from storm_kafka_compat.executor.process import process_batch
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.topology.schemes import load_scheme
from storm_kafka_compat.topology.spec import from_spec
from tests.integration.kafka_bolt_checks import coverage, read_topic

pytestmark = pytest.mark.integration

KAFKA_BOLT = "org.apache.storm.kafka.bolt.KafkaBolt"


def spec(out_topic: str, bootstrap: str, **producer: object) -> dict:
    return {"bolts": [
        {"name": "map", "bolt": "tests.kafka_bolts:to_record"},
        {"name": "write", "bolt": KAFKA_BOLT, "inputs": [{"from": "map"}],
         "properties": {"topic": out_topic, "kafka": {"api_version": "0.9"},
                        "producerProperties": {"bootstrap.servers": bootstrap, "acks": "all",
                                               "key.serializer": "org.apache.kafka.common."
                                               "serialization.StringSerializer",
                                               "value.serializer": "org.apache.kafka.common."
                                               "serialization.StringSerializer",
                                               **producer}}}]}


@pytest.fixture(autouse=True)
def _close_producers():
    yield
    close_shared_producers()


def test_every_input_offset_is_written_and_acked(kafka09, kafka09_topic) -> None:
    n = 500
    src = kafka09_topic(1)
    out = kafka09_topic(1)
    batch = [KafkaMessage(o, None, f"v{o}".encode(), 0, 0, (), src, 0) for o in range(n)]
    result = process_batch(batch, scheme=load_scheme("string"),
                           topology=from_spec(spec(out, kafka09.bootstrap)),
                           plan_filter=FetchPlan.at(0))
    assert result.acked == [(0, n)] and result.failed == [] and result.incomplete == []
    records = read_topic(kafka09.bootstrap, out, 1)
    assert coverage(records, src, {0: n}) == (n, 0, 0)
    assert dict(records)[f"{src}/0/7"] == "v7"


def test_a_record_the_broker_refuses_fails_its_input(kafka09, kafka09_topic) -> None:
    # Kafka 0.9's message.max.bytes is 1,000,012: the broker answers MESSAGE_TOO_LARGE
    src = kafka09_topic(1)
    out = kafka09_topic(1)
    big = "x" * 1_500_000
    batch = [KafkaMessage(0, None, b"small", 0, 0, (), src, 0),
             KafkaMessage(1, None, big.encode(), 0, 0, (), src, 0),
             KafkaMessage(2, None, b"small", 0, 0, (), src, 0)]
    result = process_batch(batch, scheme=load_scheme("string"),
                           topology=from_spec(spec(out, kafka09.bootstrap,
                                                   **{"max.request.size": "4000000"})),
                           plan_filter=FetchPlan.at(0))
    assert result.failed == [1] and result.acked == [(0, 1), (2, 3)]
    keys = sorted(k for k, _ in read_topic(kafka09.bootstrap, out, 1))
    assert keys == [f"{src}/0/0", f"{src}/0/2"]
