"""KafkaBolt (storm-kafka / storm-kafka-client ``org.apache.storm.kafka.bolt.KafkaBolt``):
Storm's mappers, selectors and defaults, and acks that wait for the broker (fake producer)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pytest

from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.kafka import producer as producer_mod
from storm_kafka_compat.kafka.client import KafkaMessage
from storm_kafka_compat.kafka.producer import producer_config
from storm_kafka_compat.topology.kafka_bolt import KafkaBolt, kafka_bolt_from_properties
from storm_kafka_compat.topology.kafka_mapping import (DefaultTopicSelector,
                                                       FieldIndexTopicSelector,
                                                       FieldNameBasedTupleToKafkaMapper,
                                                       FieldNameTopicSelector)
from storm_kafka_compat.kafka.producer import serializer_for
from storm_kafka_compat.executor.process import process_batch
from storm_kafka_compat.batch import FetchPlan
from storm_kafka_compat.topology.schemes import load_scheme
from storm_kafka_compat.topology.builder import TopologyBuilder
from storm_kafka_compat.topology.spec import from_spec
from storm_kafka_compat.errors import TopologyError
from storm_kafka_compat.topology.tuples import StormTuple

STRING = load_scheme("string")
KAFKA_BOLT = "org.apache.storm.kafka.bolt.KafkaBolt"


def tup(values: List[Any], fields: Tuple[str, ...]) -> StormTuple:
    return StormTuple(values, fields)


def msgs(offsets: range) -> List[KafkaMessage]:
    return [KafkaMessage(o, None, f"m{o}".encode(), 0, 0, (), "in", 0) for o in offsets]


# --- mappers and selectors (FieldNameBasedTupleToKafkaMapper, *TopicSelector) -----------

def test_field_name_mapper_defaults_are_storms_key_and_message() -> None:
    m = FieldNameBasedTupleToKafkaMapper()
    assert (m.bolt_key_field, m.bolt_message_field) == ("key", "message")
    t = tup(["k", "v"], ("key", "message"))
    assert (m.get_key_from_tuple(t), m.get_message_from_tuple(t)) == ("k", "v")


def test_field_name_mapper_missing_key_is_none_missing_message_is_an_error() -> None:
    m = FieldNameBasedTupleToKafkaMapper()
    t = tup(["v"], ("message",))
    assert m.get_key_from_tuple(t) is None
    with pytest.raises(KeyError, match="message"):
        m.get_message_from_tuple(tup(["x"], ("str",)))


@pytest.mark.parametrize("selector, values, fields, topic", [
    (DefaultTopicSelector("out"), ["a"], ("x",), "out"),
    (FieldIndexTopicSelector(1, "dflt"), ["a", "t1"], ("x", "y"), "t1"),
    (FieldIndexTopicSelector(5, "dflt"), ["a", "t1"], ("x", "y"), "dflt"),
    (FieldIndexTopicSelector(5), ["a"], ("x",), None),
    (FieldNameTopicSelector("y", "dflt"), ["a", "t2"], ("x", "y"), "t2"),
    (FieldNameTopicSelector("z", "dflt"), ["a", "t2"], ("x", "y"), "dflt"),
])
def test_topic_selectors(selector: Any, values: List[Any], fields: Tuple[str, ...],
                         topic: Optional[str]) -> None:
    assert selector.get_topic(tup(values, fields)) == topic


@pytest.mark.parametrize("cls, value, wire", [
    ("org.apache.kafka.common.serialization.StringSerializer", "é", "é".encode()),
    ("org.apache.kafka.common.serialization.StringSerializer", None, None),
    ("org.apache.kafka.common.serialization.ByteArraySerializer", b"\x00\x01", b"\x00\x01"),
    ("org.apache.kafka.common.serialization.IntegerSerializer", 258, b"\x00\x00\x01\x02"),
    ("org.apache.kafka.common.serialization.LongSerializer", -1, b"\xff" * 8),
    (None, b"raw", b"raw"),
    (None, "text", b"text"),
])
def test_serializers_write_the_java_bytes(cls: Optional[str], value: Any, wire: Any) -> None:
    assert serializer_for(cls, "k")(value) == wire


def test_unknown_serializer_names_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="StringSerializer"):
        serializer_for("com.example.AvroSerializer", "value.serializer")


# --- producer properties -----------------------------------------------------------------

def test_producer_config_translates_java_properties() -> None:
    cfg = producer_config({"bootstrap.servers": "a:1, b:2", "acks": "-1", "retries": "3",
                           "linger.ms": "5"}, {"api_version": (0, 9), "fetch_max_wait_ms": 7})
    assert cfg["bootstrap_servers"] == ["a:1", "b:2"]
    assert (cfg["acks"], cfg["retries"], cfg["linger_ms"]) == ("all", 3, 5)
    assert cfg["api_version"] == (0, 9) and "fetch_max_wait_ms" not in cfg
    assert cfg["enable_idempotence"] is False   # kafka-python 3 defaults it on; Storm's clients off


def test_idempotence_refused_on_a_0_9_broker_and_passed_on_0_11() -> None:
    props = {"bootstrap.servers": "a:1", "enable.idempotence": "true"}
    with pytest.raises(ConfigError, match="0.11"):
        producer_config(props, {"api_version": (0, 9)})
    cfg = producer_config(props, {"api_version": (2, 0)})
    assert cfg["enable_idempotence"] is True and cfg["acks"] == "all"


@pytest.mark.parametrize("props, match", [
    ({"bootstrap.servers": "a:1", "no.such.setting": 1}, "no.such.setting"),
    ({"acks": "1"}, "bootstrap.servers"),
])
def test_producer_config_errors(props: Dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        producer_config(props)


# --- the bolt, with a producer that answers only on flush --------------------------------

class FakeFuture:
    def __init__(self) -> None:
        self.is_done = False
        self.exception: Optional[BaseException] = None

    def failed(self) -> bool:
        return self.is_done and self.exception is not None

    def get(self, timeout: float) -> None:
        self.is_done = True
        if self.exception is not None:
            raise self.exception


class FakeProducer:
    """Delivers on flush; a value containing ``bad`` is refused by the 'broker'."""

    def __init__(self) -> None:
        self.in_flight: List[Tuple[str, Any, Any, FakeFuture]] = []
        self.written: List[Tuple[str, Any, Any]] = []
        self.flushes = 0

    def send(self, topic: str, key: Any = None, value: Any = None) -> FakeFuture:
        f = FakeFuture()
        if value is not None and "bad" in str(value):
            f.exception = RuntimeError("NotEnoughReplicas")
        self.in_flight.append((topic, key, value, f))
        return f

    def flush(self, timeout: float) -> None:
        self.flushes += 1
        for topic, key, value, f in self.in_flight:
            f.is_done = True
            if f.exception is None:
                self.written.append((topic, key, value))
        self.in_flight = []


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeProducer:
    p = FakeProducer()
    monkeypatch.setattr(producer_mod, "shared_producer", lambda config: p)
    return p


def to_record(t: StormTuple) -> List[List[Any]]:
    return [[str(t.offset), t["str"]]]


to_record.fields = ("key", "message")  # type: ignore[attr-defined]


def topology(bolt: Any) -> Any:
    b = TopologyBuilder().set_spout("spout", ("str",))
    b.set_bolt("map", to_record).shuffle_grouping("spout")
    b.set_bolt("kafka", bolt).shuffle_grouping("map")
    return b.build()


def test_inputs_are_acked_only_after_the_broker_acknowledged(fake: FakeProducer) -> None:
    bolt = KafkaBolt({"bootstrap.servers": "x:1"}, DefaultTopicSelector("out"))
    batch = msgs(range(10, 15))
    batch[2] = KafkaMessage(12, None, b"bad", 0, 0, (), "in", 0)
    out = process_batch(batch, scheme=STRING, topology=topology(bolt), plan_filter=FetchPlan.at(10))
    assert fake.flushes == 1 and not fake.in_flight
    assert out.acked == [(10, 12), (13, 15)] and out.failed == [12] and out.incomplete == []
    assert fake.written == [("out", str(o), f"m{o}") for o in (10, 11, 13, 14)]


def test_without_the_flush_nothing_would_be_acked(fake: FakeProducer) -> None:
    class NoFlush(KafkaBolt):
        finish_batch = None  # type: ignore[assignment]

    out = process_batch(msgs(range(3)), scheme=STRING,
                        topology=topology(NoFlush({"bootstrap.servers": "x:1"}, "out")
                                          .with_topic_selector("out")),
                        plan_filter=FetchPlan.at(0))
    assert out.acked == [] and out.incomplete == [0, 1, 2]


def test_fire_and_forget_acks_at_once_even_a_refused_write(fake: FakeProducer) -> None:
    bolt = KafkaBolt({"bootstrap.servers": "x:1"}, DefaultTopicSelector("out"),
                     fire_and_forget=True)
    batch = [KafkaMessage(0, None, b"bad", 0, 0, (), "in", 0)]
    out = process_batch(batch, scheme=STRING, topology=topology(bolt), plan_filter=FetchPlan.at(0))
    assert out.acked == [(0, 1)] and out.failed == []


def test_sync_mode_waits_for_each_record(fake: FakeProducer) -> None:
    bolt = KafkaBolt({"bootstrap.servers": "x:1"}, DefaultTopicSelector("out"), async_=False)
    batch = msgs(range(2)) + [KafkaMessage(2, None, b"bad", 0, 0, (), "in", 0)]
    out = process_batch(batch, scheme=STRING, topology=topology(bolt), plan_filter=FetchPlan.at(0))
    assert out.acked == [(0, 2)] and out.failed == [2] and fake.flushes == 0


def test_selector_returning_none_acks_without_writing(fake: FakeProducer) -> None:
    bolt = KafkaBolt({"bootstrap.servers": "x:1"}, FieldIndexTopicSelector(9))
    out = process_batch(msgs(range(2)), scheme=STRING, topology=topology(bolt),
                        plan_filter=FetchPlan.at(0))
    assert out.acked == [(0, 2)] and fake.written == [] and fake.in_flight == []


def test_mapper_error_fails_the_input(fake: FakeProducer) -> None:
    b = TopologyBuilder().set_spout("spout", ("str",))
    b.set_bolt("kafka", KafkaBolt({"bootstrap.servers": "x:1"}, DefaultTopicSelector("o")))\
        .shuffle_grouping("spout")
    out = process_batch(msgs(range(2)), scheme=STRING, topology=b.build(),
                        plan_filter=FetchPlan.at(0))
    assert out.failed == [0, 1] and out.acked == []


def test_topic_from_the_topology_config_or_an_error(fake: FakeProducer) -> None:
    bolt = KafkaBolt({"bootstrap.servers": "x:1"})
    out = process_batch(msgs(range(1)), scheme=STRING, topology=topology(bolt),
                        plan_filter=FetchPlan.at(0), conf={"topic": "fromconf"})
    assert out.acked == [(0, 1)] and fake.written == [("fromconf", "0", "m0")]
    with pytest.raises(ConfigError, match="topic"):
        process_batch(msgs(range(1)), scheme=STRING,
                      topology=topology(KafkaBolt({"bootstrap.servers": "x:1"})),
                      plan_filter=FetchPlan.at(0))


# --- CONFIG form by Storm class name ------------------------------------------------------

def test_properties_give_storms_defaults() -> None:
    bolt = kafka_bolt_from_properties({"producerProperties": {"bootstrap.servers": "x:1"},
                                       "topic": "out"})
    assert bolt.async_ is True and bolt.fire_and_forget is False
    assert bolt.mapper == FieldNameBasedTupleToKafkaMapper("key", "message")
    assert bolt.topic_selector == DefaultTopicSelector("out")
    bolt = kafka_bolt_from_properties({"topicSelector":
                                       "org.apache.storm.kafka.bolt.selector."
                                       "FieldIndexTopicSelector", "fieldIndex": 2,
                                       "defaultTopicName": "d", "fireAndForget": "true",
                                       "async": False, "boltMessageField": "str"})
    assert bolt.topic_selector == FieldIndexTopicSelector(2, "d")
    assert bolt.fire_and_forget is True and bolt.async_ is False
    assert bolt.mapper.bolt_message_field == "str"


@pytest.mark.parametrize("props, match", [
    ({"topik": "x"}, "topik"),
    ({"topicSelector": "FieldIndexTopicSelector"}, "fieldIndex"),
    ({"topicSelector": "com.x.MySelector"}, "MySelector"),
    ({"topicSelector": "DefaultTopicSelector"}, "topic"),
])
def test_property_errors(props: Dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        kafka_bolt_from_properties(props)


def test_from_spec_accepts_the_storm_class_name(fake: FakeProducer) -> None:
    spec = {"bolts": [
        {"name": "map", "bolt": "tests.unit.test_kafka_bolt:to_record"},
        {"name": "out", "bolt": KAFKA_BOLT, "inputs": [{"from": "map"}],
         "properties": {"producerProperties": {"bootstrap.servers": "x:1"}, "topic": "o"}}]}
    topo = from_spec(spec)
    out = process_batch(msgs(range(3)), scheme=STRING, topology=topo, plan_filter=FetchPlan.at(0))
    assert out.acked == [(0, 3)] and [w[0] for w in fake.written] == ["o"] * 3
    bad = {"bolts": [{"name": "b", "bolt": "tests.unit.test_kafka_bolt:to_record",
                      "properties": {"topic": "o"}}]}
    with pytest.raises(TopologyError, match="properties"):
        from_spec(bad)
    bad = {"bolts": [{"name": "b", "bolt": KAFKA_BOLT, "properties": {"nope": 1}}]}
    with pytest.raises(ConfigError, match="nope"):
        from_spec(bad)


def test_job_config_accepts_a_kafka_bolt_in_topology_bolts() -> None:
    from storm_kafka_compat.config import job_config_from_dict
    job = job_config_from_dict({
        "spout": {"topic": "in", "zkRoot": "/r", "id": "s"},
        "hosts": {"static": {0: "127.0.0.1:9092"}},
        "topology": {"name": "t", "bolts": [
            {"name": "map", "bolt": "tests.unit.test_kafka_bolt:to_record"},
            {"name": "out", "bolt": KAFKA_BOLT, "inputs": [{"from": "map"}],
             "properties": {"topic": "o",
                            "producerProperties": {"bootstrap.servers": "x:1"}}}]}})
    assert job.topology_spec is not None
    assert job.topology_spec.bolts[1].bolt == KAFKA_BOLT


# --- Flux conversion --------------------------------------------------------------------

def test_flux_kafka_bolt_converts_to_a_kafka_bolt_entry() -> None:
    from pathlib import Path

    from storm_kafka_compat.flux import convert_file
    data = Path(__file__).resolve().parent.parent / "data" / "flux"
    result = convert_file(str(data / "kafka_spout_to_kafka_bolt.yaml"))
    bolts = result.config["topology"]["bolts"]
    assert bolts[1] == {
        "name": "kafka-bolt", "bolt": KAFKA_BOLT, "parallelism": 2,
        "inputs": [{"from": "enrich", "grouping": "shuffle"}],
        "properties": {
            "producerProperties": {
                "bootstrap.servers": "kafka1.example.com:9092", "acks": "all",
                "key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
                "value.serializer": "org.apache.kafka.common.serialization.StringSerializer"},
            "topicSelector": "DefaultTopicSelector", "topic": "clicks-enriched",
            "boltKeyField": "key", "boltMessageField": "message", "fireAndForget": False}}
    assert not any("kafkaProducerProps" in u or "topicSelector" in u for u in result.unmapped)
    assert any("bolts[enrich]" in u and "port the bolt" in u for u in result.unmapped)
    bolt = kafka_bolt_from_properties(bolts[1]["properties"])
    assert bolt.topic_selector == DefaultTopicSelector("clicks-enriched")


def test_kafka_bolt_inherits_the_jobs_kafka_section_unless_it_has_its_own() -> None:
    from storm_kafka_compat.config import job_config_from_dict

    def job(props: Dict[str, Any]) -> Any:
        return job_config_from_dict({
            "spout": {"topic": "in", "zkRoot": "/r", "id": "s"},
            "hosts": {"static": {0: "127.0.0.1:9092"}},
            "kafka": {"api_version": "0.9"},
            "topology": {"name": "t", "bolts": [
                {"name": "out", "bolt": KAFKA_BOLT, "properties": props}]}})
    base = {"topic": "o", "producerProperties": {"bootstrap.servers": "x:1"}}
    inherited = job(base).topology_spec.bolts[0].properties
    assert inherited["kafka"] == {"api_version": "0.9"}
    assert kafka_bolt_from_properties(inherited).producer_config()["api_version"] == (0, 9)
    own = job({**base, "kafka": {"api_version": "0.10"}}).topology_spec.bolts[0]
    assert own.properties is not None and own.properties["kafka"] == {"api_version": "0.10"}
