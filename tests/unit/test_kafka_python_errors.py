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


def _dead_address() -> str:
    """``127.0.0.1:port`` where nothing listens (a port just freed)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _silent_server():
    """A socket that accepts connections and never answers (a paused broker)."""
    import socket
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    return server


@pytest.mark.parametrize("broker", ["dead", "silent"])
@pytest.mark.parametrize("call", ["leaders", "topics", "offset_for"])
def test_every_driver_call_has_a_deadline_with_api_version_set(broker, call):
    """Issue 26: with api_version set (0.9 brokers need it) and bootstrap hosts that do
    not answer, kafka-python's metadata wait had no deadline (run, offsets show and
    offsets explain hung for ever); each call now ends within socketTimeoutMs."""
    import time

    from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
    server = _silent_server() if broker == "silent" else None
    address = (f"127.0.0.1:{server.getsockname()[1]}" if server is not None
               else _dead_address())
    spout = SpoutConfig(hosts=BootstrapHosts((address,)), topic="t", zk_root="/r", id="i",
                        socket_timeout_ms=1500)
    a = KafkaPythonAccess([address], spout, {"api_version": (0, 9)})
    started = time.monotonic()
    try:
        with pytest.raises(FailedFetchError) as err:
            {"leaders": lambda: a.leaders("t"), "topics": a.topics,
             "offset_for": lambda: a.offset_for("t", 0, -1)}[call]()
    finally:
        a.close()
        if server is not None:
            server.close()
    assert time.monotonic() - started < 10, "no deadline"
    assert "check that the broker is up and reachable" in str(err.value)


@pytest.mark.parametrize("socket_ms, budget_s, wait_ms, expected", [
    (10_000, 1.0, 100, 3_000),       # the default: a moved leader costs 3 s, not 10
    (10_000, 5.0, 100, 5_000),       # a longer task budget
    (10_000, 1.0, 4_000, 5_000),     # a long fetchMaxWait and one second more
    (2_000, 1.0, 100, 2_000),        # never above socketTimeoutMs
])
def test_the_executors_fetch_deadline(socket_ms, budget_s, wait_ms, expected):
    from storm_kafka_compat.kafka.client import fetch_deadline_ms
    assert fetch_deadline_ms(socket_ms, budget_s, wait_ms) == expected


def test_one_partition_that_does_not_answer_costs_the_fetch_deadline_not_socket_timeout():
    """Fault round: after a controller kill, fetches of partitions whose leader moved
    waited out socketTimeoutMs (10 s) and held the whole batch."""
    import time

    from storm_kafka_compat.kafka.kafka_python import KafkaPythonAccess
    server = _silent_server()
    address = f"127.0.0.1:{server.getsockname()[1]}"
    spout = SpoutConfig(hosts=BootstrapHosts((address,)), topic="t", zk_root="/r", id="i",
                        socket_timeout_ms=8000)
    a = KafkaPythonAccess([address], spout, {"api_version": (0, 9)}, fetch_timeout_ms=1500)
    started = time.monotonic()
    try:
        with pytest.raises(FailedFetchError) as err:
            a.fetch("t", 0, 0)
    finally:
        a.close()
        server.close()
    assert time.monotonic() - started < 5
    assert "1500 ms" in str(err.value)
