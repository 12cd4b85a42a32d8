"""Operator tools against a real ZooKeeper and the tansu broker.

Sections: the Kafka consumer-group adapter; the ``offsets`` commands through
the installed console script.
"""

from __future__ import annotations

import time
from typing import Callable

import pytest

from storm_kafka_compat.errors import ConfigError, KafkaAccessError
from storm_kafka_compat.kafka.groups import (ActiveGroupError, GroupAccessError,
                                             KafkaGroupOffsets)

pytestmark = pytest.mark.integration

# --- KafkaGroupOffsets on tansu -------------------------------------------------------


def test_group_commit_then_committed_round_trips_offsets(tansu, kafka_topic, unique):
    topic = kafka_topic(partitions=3, messages=[(0, None, b"a")] * 5 + [(1, None, b"b")] * 2)
    group = unique("group")
    with KafkaGroupOffsets(tansu.bootstrap, group) as g:
        keys = [(topic, 0), (topic, 1), (topic, 2)]
        assert g.committed(keys) == {k: None for k in keys}
        assert g.active_members() == []
        g.commit({(topic, 0): (4, '{"topologyId":"t-1"}'), (topic, 1): (0, "")})
        got = g.committed(keys)
    # tansu 0.6 drops the metadata string (module docstring), offsets are exact
    assert {k: (v[0] if v else None) for k, v in got.items()} == {
        (topic, 0): 4, (topic, 1): 0, (topic, 2): None}
    assert all(isinstance(v[1], str) for v in got.values() if v)


def test_group_commit_refuses_a_group_with_live_members(tansu, kafka_topic, unique):
    from kafka import KafkaConsumer
    topic = kafka_topic(partitions=1, messages=[(0, None, b"a")] * 3)
    group = unique("group")
    consumer = KafkaConsumer(topic, bootstrap_servers=tansu.bootstrap, group_id=group,
                             session_timeout_ms=2000, heartbeat_interval_ms=500,
                             enable_auto_commit=False)
    try:
        deadline = time.monotonic() + 15
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        assert consumer.assignment(), "the consumer never joined its group"
        with KafkaGroupOffsets(tansu.bootstrap, group) as g:
            members = g.active_members()
            assert len(members) == 1
            with pytest.raises(ActiveGroupError) as info:
                g.commit({(topic, 0): (1, "m")})
            assert group in str(info.value) and "stop its consumers" in str(info.value)
            assert info.value.members == tuple(members)
    finally:
        consumer.close()


def test_group_rejects_negative_offsets_and_empty_group_id(tansu, unique):
    with pytest.raises(ConfigError):
        KafkaGroupOffsets(tansu.bootstrap, "")
    with KafkaGroupOffsets(tansu.bootstrap, unique("group")) as g:
        with pytest.raises(GroupAccessError, match="-3"):
            g.commit({("t", 0): (-3, "")})


def test_group_unreachable_broker_is_a_kafka_access_error(unique):
    from storm_kafka_compat.testing.broker import free_port
    addr = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(KafkaAccessError) as info:
        KafkaGroupOffsets(addr, unique("group"), {"bootstrap_timeout_ms": 1500})
    assert addr in str(info.value) and "broker answers" in str(info.value)
    assert time.monotonic() - started < 10
