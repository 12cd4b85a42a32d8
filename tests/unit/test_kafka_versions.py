"""What each Kafka generation of the harness writes into server.properties and passes
to its tools (no broker is started here; the integration suites start them)."""

from __future__ import annotations

import pytest

from storm_kafka_compat.workshop.servers.kafka import EmbeddedKafka, KafkaCluster
from storm_kafka_compat.workshop.servers.kafka_versions import (KAFKA_4, KAFKA_09, KAFKA_39,
                                                                _masked, new_cluster_id)


def _broker(distribution, tmp_path, **kwargs):
    return EmbeddedKafka(2, "127.0.0.1:2181/kafka", tmp_path, port=9092,
                         distribution=distribution, **kwargs)


def test_kafka39_registers_every_named_listener_with_its_protocol(tmp_path):
    broker = _broker(KAFKA_39, tmp_path, listeners={"SSL": "SSL", "SASL": "SASL_PLAINTEXT"},
                     settings={"broker.rack": "r1"})
    props = broker.properties()
    ssl, sasl = broker.listeners["SSL"][1], broker.listeners["SASL"][1]
    addresses = (f"PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:{ssl},"
                 f"SASL://127.0.0.1:{sasl}")
    assert props["listeners"] == props["advertised.listeners"] == addresses
    assert props["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL:SASL_PLAINTEXT")
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert (props["broker.id"], props["zookeeper.connect"], props["broker.rack"]) == (
        2, "127.0.0.1:2181/kafka", "r1")
    assert props["transaction.state.log.replication.factor"] == 1
    assert broker.address("SASL") == f"127.0.0.1:{sasl}"
    with pytest.raises(KeyError, match="has no listener 'SCRAM'"):
        broker.address("SCRAM")


def test_kraft_nodes_are_broker_and_controller_with_the_clusters_voters(tmp_path):
    cluster = KafkaCluster(3, tmp_path, distribution=KAFKA_4)
    assert cluster.zookeeper is None
    ids = {b.cluster_id for b in cluster.brokers}
    assert len(ids) == 1 and not ids.pop().startswith("-")
    first = cluster.brokers[0]
    props = first.properties()
    assert props["process.roles"] == "broker,controller" and props["node.id"] == 1
    assert props["controller.quorum.voters"] == ",".join(
        f"{b.broker_id}@127.0.0.1:{b.controller_port}" for b in cluster.brokers)
    assert props["listeners"].endswith(f",CONTROLLER://127.0.0.1:{first.controller_port}")
    assert "CONTROLLER" not in props["advertised.listeners"]
    assert props["listener.security.protocol.map"].endswith(",CONTROLLER:PLAINTEXT")
    assert "zookeeper.connect" not in props and "broker.id" not in props
    with pytest.raises(ValueError, match="has no ZooKeeper"):
        _ = cluster.zk_connect


def test_kafka09_keeps_its_old_listener_settings_and_refuses_others(tmp_path):
    props = _broker(KAFKA_09, tmp_path).properties()
    assert (props["advertised.host.name"], props["advertised.port"]) == ("127.0.0.1", 9092)
    assert "advertised.listeners" not in props and "transaction.state.log.min.isr" not in props
    with pytest.raises(ValueError, match="only a PLAINTEXT listener"):
        _broker(KAFKA_09, tmp_path, listeners={"SSL": "SSL"}).properties()
    assert KAFKA_09.kafka_python_api_version == (0, 9) and KAFKA_39.kafka_python_api_version is None


def test_cluster_ids_never_read_as_an_option_and_passwords_never_in_messages():
    assert all(not new_cluster_id().startswith("-") and len(new_cluster_id()) == 22
               for _ in range(200))
    assert _masked(["--add-scram", "SCRAM-SHA-256=[name=a,iterations=4096,password=s3cret]"]) == [
        "--add-scram", "SCRAM-SHA-256=[name=a,iterations=4096,password=***]"]
