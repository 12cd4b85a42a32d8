"""Kafka's broker-registry znodes, every version, written by servers.registry and
parsed by coordinators.registry; Java full-match regexes."""

import json

import pytest

from storm_kafka_compat.config import Broker
from storm_kafka_compat.discovery import registry as reg
from storm_kafka_compat.errors import BrokerRegistryError, ConfigError, NoLeaderError
from storm_kafka_compat.workshop.servers.registry import (broker_registration_json,
                                                          partition_state_json,
                                                          topic_assignment_json)

# documents as Kafka brokers wrote them (field sets of each version)
KAFKA_WRITTEN = {
    1: b'{"jmx_port":9999,"timestamp":"1428512949385","host":"kafka1","version":1,"port":9092}',
    2: b'{"jmx_port":-1,"timestamp":"1452068227537","endpoints":["PLAINTEXT://kafka1:9092"],'
       b'"host":"kafka1","version":2,"port":9092}',
    3: b'{"jmx_port":-1,"timestamp":"1479919339520","endpoints":["PLAINTEXT://kafka1:9092"],'
       b'"rack":"r1","host":"kafka1","version":3,"port":9092}',
    4: b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":'
       b'["PLAINTEXT://kafka1:9092"],"jmx_port":-1,"host":"kafka1","timestamp":'
       b'"1588000000000","port":9092,"version":4}',
    5: b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
       b'"endpoints":["PLAINTEXT://kafka1:9092"],"jmx_port":-1,"host":"kafka1",'
       b'"timestamp":"1617000000000","port":9092,"version":5}',
}


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_kafka_written_registrations_parse(version):
    r = reg.parse_broker_registration(KAFKA_WRITTEN[version], broker_id=1, zk_path="/brokers/ids/1")
    assert r.version == version
    assert r.address() == Broker("kafka1", 9092)
    if version >= 2:
        assert r.endpoints[0] == reg.Endpoint("PLAINTEXT", "PLAINTEXT", "kafka1", 9092)
    assert r.rack == ("r1" if version == 3 else None)


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_writer_round_trips_every_version(version):
    raw = broker_registration_json("10.0.0.7", 19092, version=version, rack="east",
                                   timestamp_ms=123)
    doc = json.loads(raw)
    expected_keys = {"version", "host", "port", "jmx_port", "timestamp"}
    if version >= 2:
        expected_keys.add("endpoints")
    if version >= 3:
        expected_keys.add("rack")
    if version >= 4:
        expected_keys.add("listener_security_protocol_map")
    if version == 5:
        expected_keys.add("features")
    assert set(doc) == expected_keys
    assert doc["timestamp"] == "123"          # a string, as Kafka writes it
    assert b" " not in raw                    # compact
    r = reg.parse_broker_registration(raw, broker_id=3)
    assert r.address() == Broker("10.0.0.7", 19092)


@pytest.mark.parametrize("version", [2, 3, 4, 5])
def test_no_plaintext_listener_uses_the_endpoint(version, caplog):
    raw = broker_registration_json("secure.host", 9093, version=version, plaintext=False)
    doc = json.loads(raw)
    assert doc["host"] is None and doc["port"] == -1
    assert doc["endpoints"] == ["SSL://secure.host:9093"]
    r = reg.parse_broker_registration(raw, broker_id=1)
    assert r.address() == Broker("secure.host", 9093)
    assert "no PLAINTEXT listener" in caplog.text


def test_null_host_prefers_a_plaintext_named_listener():
    raw = json.dumps({
        "listener_security_protocol_map": {"EXTERNAL": "SASL_SSL", "INTERNAL": "PLAINTEXT"},
        "endpoints": ["EXTERNAL://ext:9094", "INTERNAL://int:9092"],
        "jmx_port": -1, "host": None, "timestamp": "1", "port": -1, "version": 4}).encode()
    r = reg.parse_broker_registration(raw, broker_id=2)
    assert r.address() == Broker("int", 9092)
    assert r.address("EXTERNAL") == Broker("ext", 9094)
    with pytest.raises(BrokerRegistryError, match="no listener named 'OTHER'"):
        r.address("OTHER")


def test_named_listener_written_with_its_protocol():
    raw = broker_registration_json("h", 9095, version=5, plaintext=False,
                                   listener_name="CLIENT", security_protocol="SASL_PLAINTEXT")
    doc = json.loads(raw)
    assert doc["listener_security_protocol_map"] == {"CLIENT": "SASL_PLAINTEXT"}
    r = reg.parse_broker_registration(raw, broker_id=1)
    assert r.endpoints == (reg.Endpoint("CLIENT", "SASL_PLAINTEXT", "h", 9095),)


def test_ipv6_endpoint():
    assert reg.parse_endpoint("PLAINTEXT://[::1]:9092") == reg.Endpoint(
        "PLAINTEXT", "PLAINTEXT", "::1", 9092)


def test_version1_cannot_be_written_without_plaintext():
    with pytest.raises(ValueError):
        broker_registration_json("h", 1, version=1, plaintext=False)


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1,2]", b'{"host":"h","port":"x"}'])
def test_malformed_registration_names_the_path(raw):
    with pytest.raises(BrokerRegistryError) as err:
        reg.parse_broker_registration(raw, broker_id=1, zk_path="/brokers/ids/1")
    assert "/brokers/ids/1" in str(err.value)


def test_partition_state_kafka_example():
    raw = b'{"controller_epoch":4,"leader":1,"version":1,"leader_epoch":1,"isr":[1,0]}'
    s = reg.parse_partition_state(raw, topic="t", partition=0)
    assert (s.leader, s.leader_epoch, s.controller_epoch, s.isr) == (1, 1, 4, (1, 0))


def test_partition_state_writer_format():
    assert partition_state_json(2, leader_epoch=3, controller_epoch=5) == (
        b'{"controller_epoch":5,"leader":2,"version":1,"leader_epoch":3,"isr":[2]}')


def test_no_leader_names_topic_partition_and_fix():
    with pytest.raises(NoLeaderError) as err:
        reg.parse_partition_state(partition_state_json(-1), topic="orders", partition=3,
                                  zk_path="/brokers/topics/orders/partitions/3/state")
    e = err.value
    assert (e.topic, e.partition) == ("orders", 3)
    assert "No leader found for partition 3" in str(e) and "orders" in str(e)
    assert "leader election" in str(e)
    s = reg.parse_partition_state(partition_state_json(-1), topic="orders", partition=3,
                                  require_leader=False)
    assert s.leader == -1 and s.isr == ()


def test_leader_recovery_state_is_kept():
    raw = (b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":2,"isr":[1],'
           b'"leader_recovery_state":1}')
    assert reg.parse_partition_state(raw, topic="t", partition=0).leader_recovery_state == 1


@pytest.mark.parametrize("version", [1, 2, 3])
def test_topic_assignment_versions(version):
    raw = topic_assignment_json({0: [1, 2], 1: [2]}, version=version)
    doc = json.loads(raw)
    assert doc["version"] == version
    assert doc["partitions"] == {"0": [1, 2], "1": [2]}
    assert ("adding_replicas" in doc) == (version >= 2)
    assert ("topic_id" in doc) == (version == 3)
    t = reg.parse_topic_assignment(raw, topic="t")
    assert t.partitions == {0: (1, 2), 1: (2,)}
    assert (t.topic_id is not None) == (version == 3)


def test_paths():
    assert reg.broker_path("/kafka/brokers/", 3) == "/kafka/brokers/ids/3"
    assert reg.state_path("/brokers", "t", 2) == "/brokers/topics/t/partitions/2/state"
    assert reg.partitions_path("/brokers", "t") == "/brokers/topics/t/partitions"


@pytest.mark.parametrize("regex,name,matches", [
    ("orders-.*", "orders-eu", True),
    ("orders", "orders-eu", False),        # re.match would accept this prefix
    ("orders-.*", "xorders-eu", False),
    ("a|b", "ab", False),
    ("a|b", "b", True),
    (r"\Qa.b\E", "a.b", True),
    (r"\Qa.b\E", "axb", False),
    ("(?<env>prod|dev)-.*", "dev-x", True),
    ("x(?<=x)y", "xy", True),            # lookbehind is not a named group
    (r"t\d+\z", "t12", True),
    ("a*+b", "aab", True),                # possessive quantifier (Java and Python 3.11+)
])
def test_java_full_match(regex, name, matches):
    assert reg.java_full_match(regex, name) is matches


@pytest.mark.parametrize("regex", [r"\p{Alpha}+", "(unclosed"])
def test_java_regex_python_cannot_use_is_a_config_error(regex):
    with pytest.raises(ConfigError) as err:
        reg.java_full_match(regex, "x")
    assert err.value.key == "spout.topic"
