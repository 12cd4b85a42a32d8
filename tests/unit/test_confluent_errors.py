"""librdkafka error codes mapped onto this project's errors (no broker)."""

import pytest

from storm_kafka_compat.errors import FailedFetchError, KafkaAccessError, OffsetOutOfRangeError

ck = pytest.importorskip("confluent_kafka", reason="the confluent backend is optional")


def mapped(code):
    from storm_kafka_compat.kafka.confluent_records import map_error
    return map_error(ck.KafkaError(code), topic="t", partition=0, offset=5, what="fetch")


@pytest.mark.parametrize("name", ["_DESTROY_BROKER", "NOT_LEADER_FOR_PARTITION",
                                  "LEADER_NOT_AVAILABLE", "_TRANSPORT", "UNKNOWN_TOPIC_OR_PART"])
def test_leader_loss_codes_are_retriable_fetch_failures(name):
    """A killed leader (Kafka 0.9: its broker handle destroyed under a watermark query)
    is a fetch failure the coordinator refreshes for, not a client error that ends
    the job after three batches."""
    err = mapped(getattr(ck.KafkaError, name))
    assert type(err) is FailedFetchError and (err.topic, err.partition) == ("t", 0)


def test_out_of_range_and_authorization_are_not_retried():
    assert type(mapped(ck.KafkaError.OFFSET_OUT_OF_RANGE)) is OffsetOutOfRangeError
    assert type(mapped(ck.KafkaError.TOPIC_AUTHORIZATION_FAILED)) is KafkaAccessError
