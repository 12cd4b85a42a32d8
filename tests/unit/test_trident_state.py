"""Trident Kafka spout state layout and documents (Storm's TransactionalState,
RotatingTransactionalState, TridentKafkaEmitter; storm-kafka-client's
KafkaTridentSpoutBatchMetadata), without servers."""

from __future__ import annotations

import json

import pytest

from storm_kafka_compat.trident.state import (TridentBatch, encode_batch, java_hashmap_order,
                                              last_batch, parse_batch, partition_dir)


@pytest.mark.parametrize("kwargs, path", [
    ({}, "/transactional/clicks-stream/user/partition_3"),
    ({"wildcard": True}, "/transactional/clicks-stream/user/clicks/partition_3"),
    ({"fmt": "storm-kafka-client"}, "/transactional/clicks-stream/user/clicks@3"),
])
def test_partition_dir(kwargs: dict, path: str) -> None:
    assert partition_dir("/transactional/", "clicks-stream", "clicks", 3, **kwargs) == path


def test_java_hashmap_order_matches_java() -> None:
    # java: new HashMap with these 7 keys iterates in this order (String.hashCode buckets)
    keys = ("offset", "nextOffset", "instanceId", "partition", "broker", "topic", "topology")
    assert java_hashmap_order(keys) == ("instanceId", "partition", "offset", "topology",
                                        "topic", "nextOffset", "broker")


def test_encode_then_parse_storm_kafka_batch() -> None:
    data = encode_batch(offset=100, next_offset=150, topology_id="clicks-3-1690000000",
                        topology_name="clicks", partition=3, broker=("k1", 9092), topic="c")
    assert json.loads(data)["nextOffset"] == 150
    assert b" " not in data
    assert parse_batch(7, data) == TridentBatch(7, 100, 150, "clicks-3-1690000000", "clicks",
                                                "c", 3, ("k1", 9092))


def test_parse_storm_kafka_client_batch() -> None:
    data = b'{"firstOffset":10,"lastOffset":19,"topologyId":"t-1-1"}'
    assert parse_batch(4, data) == TridentBatch(4, 10, 20, "t-1-1", fmt="storm-kafka-client")


@pytest.mark.parametrize("data", [b"not json", b"7", b'{"offset":1}',
                                  b'{"offset":"1","nextOffset":2}',
                                  b'{"nextOffset":1.5,"offset":1}'])
def test_unusable_documents_give_no_batch(data: bytes) -> None:
    assert parse_batch(1, data) is None


def test_last_batch_is_the_highest_txid() -> None:
    def doc(o: int) -> bytes:
        return encode_batch(offset=o, next_offset=o + 10, topology_id="t", topology_name="t",
                            partition=0, broker=("h", 1), topic="x")
    children = {"9": doc(90), "10": doc(100), "8": doc(80), "junk": b"x"}
    assert last_batch(children).next_offset == 110 and last_batch(children).txid == 10
    assert last_batch({}) is None
    assert last_batch({"3": doc(30), "4": b"bad"}) is None  # Storm's last state is null


def test_topology_config_takes_the_trident_keys() -> None:
    from storm_kafka_compat.config import topology_config_from_dict
    from storm_kafka_compat.errors import ConfigError
    t = topology_config_from_dict({"name": "c", "trident.txStateId": "clicks-stream"})
    assert (t.trident_tx_state_id, t.transactional_root) == ("clicks-stream", "/transactional")
    with pytest.raises(ConfigError, match="trident.txStateId"):
        topology_config_from_dict({"name": "c", "trident.txStateId": 5})


@pytest.mark.parametrize("wildcard, path, where", [
    (False, "/r/s/partition_3", ("clicks", 3)),
    (False, "/r/s/other/partition_3", None),
    (False, "/x/s/partition_3", None),
    (True, "/r/s/orders/partition_2", ("orders", 2)),
    (True, "/r/s/partition_2", None),
])
def test_trident_store_maps_storm_kafka_paths_to_partitions(wildcard: bool, path: str,
                                                            where: object) -> None:
    from storm_kafka_compat.trident.store import TridentStateStore
    store = TridentStateStore.__new__(TridentStateStore)  # no connection needed
    store.configure_trident(zk_root="/r", spout_id="s", topic="clicks", wildcard=wildcard,
                            tx_state_id="t", transactional_root="/transactional")
    assert store._partition_of(path) == where


def test_last_batch_ignores_txids_the_coordinator_has_not_committed() -> None:
    from storm_kafka_compat.trident.state import parse_current_tx

    def doc(o: int) -> bytes:
        return encode_batch(offset=o, next_offset=o + 10, topology_id="t", topology_name="t",
                            partition=0, broker=("h", 1), topic="x")
    # TransactionalTridentKafkaSpout wrote txid 43 when it emitted it; currtx is still 43
    children = {"42": doc(420), "43": doc(430)}
    assert last_batch(children, parse_current_tx(b"43")).next_offset == 430
    assert last_batch(children, None).next_offset == 440
    assert last_batch(children, 42) is None
    assert parse_current_tx(b"x") is None and parse_current_tx(None) is None


@pytest.mark.parametrize("names, current_tx, expected", [
    # the spout wrote 43 (emitted, or committed by the spout alone); the coordinator
    # restarts at 43: the position goes to 42, and 43 must go, else Trident resumes there
    (["41", "42", "43"], 43, (42, [43])),
    (["42", "43", "44"], 43, (42, [43, 44])),
    # every txid committed: the position overwrites the last one
    (["41", "42"], 43, (42, [])),
    # nothing committed yet: the position sits just below currtx
    (["43"], 43, (42, [43])),
    ([], 43, (42, [])),
    # no currtx: Trident starts at INIT_TXID (1); nothing it wrote was committed
    (["1", "2"], None, (0, [1, 2])),
    (["x", "2"], None, (0, [2])),
])
def test_rollback_goes_to_the_last_committed_txid(names: list, current_tx: object,
                                                 expected: tuple) -> None:
    from storm_kafka_compat.trident.state import INIT_TXID, rollback_txids
    assert INIT_TXID == 1
    assert rollback_txids(names, current_tx) == expected  # type: ignore[arg-type]
