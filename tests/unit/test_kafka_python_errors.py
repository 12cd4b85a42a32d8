"""kafka-python adapter error handling without a broker (fake consumers)."""

import pytest

from storm_kafka_compat.config import BootstrapHosts, SpoutConfig
from storm_kafka_compat.errors import FailedFetchError, KafkaAccessError

kafka = pytest.importorskip("kafka", reason="kafka-python is a dependency of the package")


class FakeConsumer:
    def __init__(self, error=None):
        self.error = error
        self.closed = False

    def end_offsets(self, tps, timeout_ms=None):
        if self.error is not None:
            raise self.error
        return {tp: 7 for tp in tps}

    def close(self):
        self.closed = True


def access():
    from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
    spout = SpoutConfig(hosts=BootstrapHosts(("b:9092",)), topic="t", zk_root="/r", id="i")
    return KafkaPythonAccess(["b:9092"], spout, {"api_version": (0, 9)})


def test_a_timed_out_lookup_replaces_the_metadata_consumer():
    import kafka.errors as Errors
    a = access()
    wedged = FakeConsumer(Errors.KafkaTimeoutError("Failed to get offsets by timestamps"))
    a._consumer = wedged
    with pytest.raises(FailedFetchError):
        a.offset_for("t", 0, -1)
    assert wedged.closed and a._consumer is None      # the next lookup starts afresh
    a._consumer = FakeConsumer()
    assert a.offset_for("t", 0, -1) == 7


def test_a_non_retriable_error_keeps_the_metadata_consumer():
    import kafka.errors as Errors
    a = access()
    denied = FakeConsumer(Errors.TopicAuthorizationFailedError("denied"))
    a._consumer = denied
    with pytest.raises(KafkaAccessError) as err:
        a.offset_for("t", 0, -1)
    assert not isinstance(err.value, FailedFetchError)
    assert a._consumer is denied and not denied.closed


def test_records_become_kafka_messages_with_the_contracts_no_timestamp():
    from kafka.consumer.fetcher import ConsumerRecord

    from storm_kafka_compat.kafka.client import NO_TIMESTAMP, NO_TIMESTAMP_TYPE, KafkaMessage
    from storm_kafka_compat.kafka.kafka_python import _messages

    v0 = ConsumerRecord("t", 1, -1, 7, None, None, b"k", b"v", [], None, -1, 1, -1)
    v2 = ConsumerRecord("t", 1, 3, 8, 1234, 0, None, b"w", [("h", b"x")], None, -1, 1, 2)
    first, second = _messages([v0, v2])
    assert type(first) is KafkaMessage
    assert first == KafkaMessage(7, b"k", b"v", NO_TIMESTAMP, NO_TIMESTAMP_TYPE, (), "t", 1)
    assert second == KafkaMessage(8, None, b"w", 1234, 0, (("h", b"x"),), "t", 1)
    assert second.headers == (("h", b"x"),) and first.timestamp == -1


def test_every_built_in_scheme_reads_kafka_pythons_own_records():
    """The executor asks for raw records (no KafkaMessage per message): every
    built-in scheme must give from a ConsumerRecord what it gives from a KafkaMessage."""
    from kafka.consumer.fetcher import ConsumerRecord

    from storm_kafka_compat.kafka.kafka_python import _messages
    from storm_kafka_compat.topology.schemes import BUILTIN_SCHEMES, load_scheme

    records = [ConsumerRecord("t", 2, -1, 40, None, None, b"k", b"v1", [], None, -1, 2, -1),
               ConsumerRecord("t", 2, -1, 41, None, None, None, b"v2", [], None, -1, 2, -1),
               ConsumerRecord("t", 2, -1, 42, None, None, b"k", None, [], None, -1, 0, -1)]
    for name in BUILTIN_SCHEMES:
        scheme = load_scheme(name)
        for record, message in zip(records, _messages(records)):
            assert scheme.to_tuples(record) == scheme.to_tuples(message), (name, record.offset)
