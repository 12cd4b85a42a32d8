"""ConfluentAccess: settings and error mapping (no server), then against tansu."""

import time

import pytest

from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, NO_OFFSET, SpoutConfig, ZkHosts
from storm_kafka_compat.errors import (ConfigError, FailedFetchError, KafkaAccessError,
                                       OffsetOutOfRangeError)

ck = pytest.importorskip(
    "confluent_kafka", reason="confluent-kafka is not installed (the `confluent` extra)")

from storm_kafka_compat.kafka import KafkaAccess  # noqa: E402
from storm_kafka_compat.kafka.confluent import ConfluentAccess  # noqa: E402
from storm_kafka_compat.kafka.confluent_records import map_error, to_messages  # noqa: E402
from storm_kafka_compat.kafka.confluent_settings import consumer_config  # noqa: E402
from storm_kafka_compat.workshop.servers.tansu import create_topic, produce_exact  # noqa: E402

E = ck.KafkaError


def spout(topic: str = "t", **kw) -> SpoutConfig:
    return SpoutConfig(hosts=ZkHosts("unused:2181"), topic=topic, zk_root="/r", id="i", **kw)


# --- without a server --------------------------------------------------------------------

def test_consumer_config_maps_storm_fields():
    cfg = consumer_config(["h:1", "h:2"], spout(fetch_size_bytes=1234, fetch_max_wait=0,
                                                 min_fetch_byte=0, buffer_size_bytes=4321,
                                                 socket_timeout_ms=7000, client_id=""),
                          {"security_protocol": "SSL", "ssl.ca.location": "/ca.pem"})
    assert cfg["bootstrap.servers"] == "h:1,h:2"
    assert cfg["auto.offset.reset"] == "error" and cfg["enable.auto.commit"] is False
    assert cfg["enable.partition.eof"] is True
    assert (cfg["max.partition.fetch.bytes"], cfg["fetch.max.bytes"]) == (1234, 1234)
    assert cfg["socket.receive.buffer.bytes"] == 4321
    assert (cfg["fetch.min.bytes"], cfg["fetch.wait.max.ms"]) == (1, 100)    # floored
    assert consumer_config("h:1", spout(fetch_max_wait=250))["fetch.wait.max.ms"] == 250
    assert cfg["socket.timeout.ms"] == 7000
    assert cfg["client.id"] == "storm-kafka-compat"
    assert cfg["security.protocol"] == "SSL" and cfg["ssl.ca.location"] == "/ca.pem"
    with pytest.raises(ConfigError, match="auto_offset_reset"):
        consumer_config("h:1", spout(), {"auto_offset_reset": "earliest"})
    with pytest.raises(ConfigError, match="group.id"):
        consumer_config("h:1", spout(), {"group.id": "g"})
    with pytest.raises(ConfigError, match="socketTimeoutMs"):
        consumer_config("h:1", spout(socket_timeout_ms=100, fetch_max_wait=100))


def test_unknown_librdkafka_setting_is_a_config_error_naming_it():
    a = ConfluentAccess("127.0.0.1:1", spout(), {"no.such.setting": 1})
    with pytest.raises(ConfigError, match="no.such.setting"):
        a.topics()


@pytest.mark.parametrize("code,kind", [
    (E.OFFSET_OUT_OF_RANGE, OffsetOutOfRangeError),
    (E._AUTO_OFFSET_RESET, OffsetOutOfRangeError),
    (E._TRANSPORT, FailedFetchError),
    (E._TIMED_OUT, FailedFetchError),
    (E.NOT_LEADER_FOR_PARTITION, FailedFetchError),
    (E.UNKNOWN_TOPIC_OR_PART, FailedFetchError),
    (E.TOPIC_AUTHORIZATION_FAILED, KafkaAccessError),
])
def test_error_mapping(code, kind):
    err = map_error(E(code), topic="t", partition=3, offset=17, what="fetch")
    assert type(err) is kind
    assert (err.topic, err.partition, err.offset) == ("t", 3, 17)
    assert "t/3" in str(err)


def test_records_become_messages_end_events_dropped_errors_raised():
    recs = [ck.Message(topic="t", partition=2, offset=5, key=b"k", value=b"v",
                       timestamp=(ck.TIMESTAMP_LOG_APPEND_TIME, 1_700_000_000_000),
                       headers=[("h", b"x")]),
            ck.Message(topic="t", partition=2, offset=6, error=E(E._PARTITION_EOF))]
    [m] = to_messages(recs, "t", 2)
    assert (m.offset, m.key, m.value, m.timestamp, m.timestamp_type, m.headers,
            m.topic, m.partition) == (5, b"k", b"v", 1_700_000_000_000, 1, (("h", b"x"),),
                                      "t", 2)
    with pytest.raises(OffsetOutOfRangeError):
        to_messages([ck.Message(topic="t", partition=2, offset=9,
                                error=E(E._AUTO_OFFSET_RESET))], "t", 2, 9)


class _OutOfRangeConsumer:
    """What librdkafka does with auto.offset.reset=error on a real Kafka."""

    made = []

    def __init__(self, config):
        self.assigned = []
        self.made.append(self)

    def assign(self, tps):
        self.assigned.append([(tp.topic, tp.partition, tp.offset) for tp in tps])

    def consume(self, n, timeout):
        return [ck.Message(topic="t", partition=0, offset=-1001, error=E(E._AUTO_OFFSET_RESET))]

    def close(self):
        pass


def test_out_of_range_answer_raises_and_the_next_fetch_seeks_again():
    a = ConfluentAccess("h:1", spout(), consumer_factory=_OutOfRangeConsumer)
    for _ in range(2):
        with pytest.raises(OffsetOutOfRangeError) as err:
            a.fetch("t", 0, 42)
        assert err.value.offset == 42
    [consumer] = _OutOfRangeConsumer.made
    assert consumer.assigned == [[("t", 0, 42)], [("t", 0, 42)]]


class _TimesConsumer:
    def __init__(self, config):
        pass

    def offsets_for_times(self, tps, timeout):
        return [ck.TopicPartition(tp.topic, tp.partition, 12 if tp.offset < 5000 else -1)
                for tp in tps]

    def close(self):
        pass


def test_a_timestamp_resolves_by_offsets_for_times_none_is_no_offset():
    """(tansu 0.6 answers the log start for every timestamp, so this uses a double)"""
    a = ConfluentAccess("h:1", spout(), consumer_factory=_TimesConsumer)
    assert a.offset_for("t", 0, 1000) == 12
    assert a.offset_for("t", 0, 9000) == NO_OFFSET


class _PrefetchingConsumer:
    """One partition's log (offsets 0..99); what is queued runs from the position to
    ``queued_to`` (librdkafka's prefetch). ``assign`` is a seek."""

    made = []

    def __init__(self, config, queued_to=60):
        self.assigned = []
        self.position = 0
        self.queued_to = queued_to
        self.made.append(self)

    def assign(self, tps):
        self.assigned.append(tps[0].offset)
        self.position = tps[0].offset
        self.queued_to = min(100, self.position + 60)

    def consume(self, n, timeout):
        end = min(self.queued_to, self.position + n)
        out = [ck.Message(topic="t", partition=0, offset=o, value=b"v%d" % o)
               for o in range(self.position, end)]
        self.position = end
        return out

    def get_watermark_offsets(self, tp, timeout, cached):
        return 0, 100

    def close(self):
        pass


def test_a_fetch_a_little_ahead_reads_on_through_the_prefetch_instead_of_seeking():
    """A Python worker that skipped a batch of this partition: its consumer stands
    behind and holds the records; it reads on through them, dropping those below, and
    seeks only when they do not reach the offset asked for or the offset is behind."""
    _PrefetchingConsumer.made.clear()
    a = ConfluentAccess("h:1", spout(), consumer_factory=_PrefetchingConsumer)
    assert [m.offset for m in a.fetch("t", 0, 0, max_messages=10)] == list(range(10))
    [c] = _PrefetchingConsumer.made
    assert c.assigned == [0]
    got = a.fetch("t", 0, 25, max_messages=10)            # 10..24 dropped from the queue
    assert [m.offset for m in got] == list(range(25, 35)) and c.assigned == [0]
    assert [m.value for m in got][:1] == [b"v25"]
    got = a.fetch("t", 0, 90, max_messages=5)             # beyond what is queued: a seek
    assert [m.offset for m in got] == list(range(90, 95)) and c.assigned == [0, 90]
    got = a.fetch("t", 0, 40, max_messages=5)             # behind: a seek
    assert [m.offset for m in got] == list(range(40, 45)) and c.assigned == [0, 90, 40]


# --- against tansu ------------------------------------------------------------------------

@pytest.fixture
def access(tansu):
    a = ConfluentAccess(tansu.bootstrap, spout(socket_timeout_ms=5000))
    yield a
    a.close()


@pytest.mark.integration
def test_is_a_kafka_access(access):
    assert isinstance(access, KafkaAccess)


@pytest.mark.integration
def test_earliest_and_latest_are_exact(access, kafka_topic):
    topic = kafka_topic(2, [(i % 2, None, b"v%d" % i) for i in range(41)])
    assert access.offset_for(topic, 0, EARLIEST_TIME) == 0
    assert access.offset_for(topic, 0, LATEST_TIME) == 21
    assert access.offset_for(topic, 1, LATEST_TIME) == 20


@pytest.mark.integration
def test_fetch_from_an_offset_with_bounds(access, kafka_topic):
    topic = kafka_topic(1, [(0, b"k%d" % i, b"v%d" % i) for i in range(30)])
    msgs = access.fetch(topic, 0, 7)
    assert [m.offset for m in msgs] == list(range(7, 30))
    m = msgs[0]
    assert (m.key, m.value, m.topic, m.partition) == (b"k7", b"v7", topic, 0)
    assert m.timestamp > 1_600_000_000_000
    assert [m.offset for m in access.fetch(topic, 0, 3, max_messages=4)] == [3, 4, 5, 6]
    # continuing where the consumer stands (no re-assign) and jumping back
    assert [m.offset for m in access.fetch(topic, 0, 7, max_offset=10)] == [7, 8, 9]
    assert [m.offset for m in access.fetch(topic, 0, 10, max_messages=2)] == [10, 11]
    assert [m.offset for m in access.fetch(topic, 0, 1, max_offset=3)] == [1, 2]
    assert access.fetch(topic, 0, 5, max_offset=5) == []


@pytest.mark.integration
def test_fetch_at_the_end_returns_nothing_quickly_then_new_data(access, tansu, kafka_topic):
    topic = kafka_topic(1, [(0, None, b"a"), (0, None, b"b")])
    started = time.monotonic()
    assert access.fetch(topic, 0, 2) == []
    assert access.fetch(topic, 0, 2) == []
    assert time.monotonic() - started < 3        # well inside socketTimeoutMs
    produce_exact(tansu.bootstrap, topic, [(0, None, b"c")])
    assert [m.value for m in access.fetch(topic, 0, 2)] == [b"c"]


@pytest.mark.integration
def test_tansu_answers_nothing_beyond_the_end(access, kafka_topic):
    """tansu defect (documented): no OFFSET_OUT_OF_RANGE beyond the log end."""
    topic = kafka_topic(1, [(0, None, b"a")])
    assert access.fetch(topic, 0, 50) == []


@pytest.mark.integration
def test_partitions_alternate_each_keeping_its_consumer(access, kafka_topic, monkeypatch):
    from storm_kafka_compat.kafka import confluent
    monkeypatch.setattr(confluent, "MAX_FETCH_CONSUMERS", 2)   # the third replaces the LRU
    topic = kafka_topic(3, [(p, None, b"%d-%d" % (p, i)) for i in range(5) for p in range(3)])
    closed = []
    for p in (2, 0, 1, 0, 2):
        before = {key: entry[0] for key, entry in access._fetchers.items()}
        assert [m.value for m in access.fetch(topic, p, 3)] == [b"%d-3" % p, b"%d-4" % p]
        after = {entry[0] for entry in access._fetchers.values()}
        closed += [key for key, c in before.items() if c not in after]
    # partition 2's consumer made way for 1's, then 1's for 2's (0's stayed in use)
    assert closed == [(topic, 2), (topic, 1)]
    assert [m.value for m in access.fetch(topic, 0, 0, max_messages=2)] == [b"0-0", b"0-1"]
    assert [m.value for m in access.fetch(topic, 0, 2, max_messages=1)] == [b"0-2"]
    assert len(access._fetchers) == 2


@pytest.mark.integration
def test_leaders_and_topics(access, tansu, kafka_topic):
    topic = kafka_topic(3)
    leaders = access.leaders(topic)
    assert sorted(leaders) == [0, 1, 2]
    assert {str(b) for b in leaders.values()} == {tansu.bootstrap}
    assert topic in access.topics()
    assert access.leaders(topic + "-missing") == {}


@pytest.mark.integration
def test_paused_broker_is_a_failed_fetch_then_recovers(tansu_factory):
    broker = tansu_factory()
    create_topic(broker.bootstrap, "p", 1)
    produce_exact(broker.bootstrap, "p", [(0, None, b"v%d" % i) for i in range(5)])
    a = ConfluentAccess(broker.bootstrap, spout(socket_timeout_ms=1500))
    try:
        assert len(a.fetch("p", 0, 0)) == 5
        broker.pause()
        started = time.monotonic()
        with pytest.raises(FailedFetchError) as err:
            a.fetch("p", 0, 1)
        elapsed = time.monotonic() - started
        assert 1.0 <= elapsed < 6, elapsed
        assert (err.value.topic, err.value.partition, err.value.offset) == ("p", 0, 1)
        broker.resume()
        deadline = time.monotonic() + 20
        while True:
            try:
                assert [m.offset for m in a.fetch("p", 0, 1)] == [1, 2, 3, 4]
                break
            except FailedFetchError:
                assert time.monotonic() < deadline, "no recovery 20 s after resume"
    finally:
        broker.resume()
        a.close()
