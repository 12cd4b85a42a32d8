"""KafkaGroupOffsets retries coordinator errors within its deadline (a fake admin
client, an injected clock and sleep: nothing waits for real)."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from kafka import TopicPartition
from kafka import errors as Errors
from kafka.structs import OffsetAndMetadata

from storm_kafka_compat.kafka.groups import (COORDINATOR_BACKOFF_MAX_S, KafkaGroupOffsets,
                                             is_retriable_coordinator_error)
from storm_kafka_compat.errors import GroupAccessError
from storm_kafka_compat.testing.clock import ManualClock


class FakeAdmin:
    """Answers from a script: each entry is an exception to raise or a value to
    return; the coordinator cache is a dict like kafka-python's."""

    def __init__(self, script: List[Any]) -> None:
        self.script = list(script)
        self.calls: List[str] = []
        self._manager = type("M", (), {})()
        self._manager.cluster = type("C", (), {})()
        self._manager.cluster._coordinators = {}

    def _next(self, name: str) -> Any:
        self.calls.append(name)
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        return step

    def list_group_offsets(self, specs: Dict[str, Any]) -> Any:
        return self._next("list_group_offsets")

    def describe_groups(self, ids: List[str]) -> Any:
        return self._next("describe_groups")

    def alter_group_offsets(self, group: str, offsets: Any) -> Any:
        return self._next("alter_group_offsets")

    def close(self) -> None:
        pass


def groups(script: List[Any], clock: ManualClock, timeout_ms: int = 5000) -> KafkaGroupOffsets:
    return KafkaGroupOffsets("127.0.0.1:9", "g", coordinator_timeout_ms=timeout_ms,
                             sleep=clock.sleep, clock=clock, admin=FakeAdmin(script))


@pytest.mark.parametrize("error, retriable", [
    (Errors.CoordinatorNotAvailableError("FindCoordinatorResponse error for GROUP/g"), True),
    (Errors.NotCoordinatorError(), True),
    (Errors.CoordinatorLoadInProgressError(), True),
    (Errors.CoordinatorNotAvailableError, True),          # a per-partition error class
    (Errors.NoError, False),
    (Errors.UnknownMemberIdError, False),
    (Errors.GroupAuthorizationFailedError(), False),
    (Errors.KafkaTimeoutError(), False),
    (OSError("connection refused"), False),
    ("[Error 16] NotCoordinatorError: ", True),           # DescribeGroups' error text
    ("[Error 30] GroupAuthorizationFailedError: ", False),
    (None, False),
])
def test_which_errors_are_retried(error, retriable):
    assert is_retriable_coordinator_error(error) is retriable


def test_committed_retries_coordinator_not_available_then_answers():
    clock = ManualClock(now=100.0)
    tp = TopicPartition("t", 0)
    g = groups([Errors.CoordinatorNotAvailableError("FindCoordinatorResponse error"),
                Errors.CoordinatorLoadInProgressError(),
                {"g": {tp: OffsetAndMetadata(7, '{"topologyId":"x"}', -1)}}], clock)
    g._admin._manager.cluster._coordinators[(0, "g")] = 1       # a stale cached coordinator
    assert g.read_many([("t", 0)]) == {("t", 0): (7, '{"topologyId":"x"}')}
    assert g._admin.calls == ["list_group_offsets"] * 3
    assert clock.sleeps == [0.2, 0.4]                          # doubling backoff
    assert g._admin._manager.cluster._coordinators == {}       # asked for again


def test_commit_retries_per_partition_coordinator_errors():
    clock = ManualClock(now=100.0)
    tp = TopicPartition("t", 0)
    empty = {"group_state": "Empty", "members": [], "error": None}
    g = groups([{"g": {"error": "[Error 15] CoordinatorNotAvailableError: "}},  # describe
                {"g": empty},
                {tp: Errors.NotCoordinatorError},                              # alter
                {tp: Errors.NoError}], clock)
    g.write_many({("t", 0): (3, "meta")})
    assert g._admin.calls == ["describe_groups", "describe_groups", "alter_group_offsets",
                              "alter_group_offsets"]
    assert clock.sleeps == [0.2, 0.2]


def test_gives_up_at_the_deadline_with_the_reason():
    clock = ManualClock(now=100.0)
    g = groups([Errors.CoordinatorNotAvailableError("FindCoordinatorResponse error")] * 50,
               clock, timeout_ms=5000)
    with pytest.raises(GroupAccessError) as info:
        g.read_many([("t", 0)])
    message = str(info.value)
    assert "'g'" in message and "CoordinatorNotAvailableError" in message
    assert "still not available after" in message and "5000 ms" in message
    assert sum(clock.sleeps) <= 5.0 and max(clock.sleeps) <= COORDINATOR_BACKOFF_MAX_S
    assert len(g._admin.calls) == len(clock.sleeps) + 1


def test_other_errors_fail_at_once():
    clock = ManualClock(now=100.0)
    g = groups([Errors.GroupAuthorizationFailedError("denied")], clock)
    with pytest.raises(GroupAccessError, match="group ACLs"):
        g.read_many([("t", 0)])
    assert clock.sleeps == []
    tp = TopicPartition("t", 0)
    g = groups([{"g": {"group_state": "Empty", "members": [], "error": None}},
                {tp: Errors.UnknownMemberIdError}], clock)
    with pytest.raises(GroupAccessError, match="UnknownMemberIdError"):
        g.write_many({("t", 0): (1, "")})
    assert clock.sleeps == []


def test_a_commit_still_refused_by_the_coordinator_names_the_partitions():
    clock = ManualClock(now=100.0)
    tp = TopicPartition("orders", 3)
    empty = {"g": {"group_state": "Empty", "members": [], "error": None}}
    g = groups([empty] + [{tp: Errors.NotCoordinatorError}] * 50, clock, timeout_ms=3000)
    with pytest.raises(GroupAccessError) as info:
        g.write_many({("orders", 3): (1, "")})
    message = str(info.value)
    assert "committing offsets" in message and "orders/3: NotCoordinatorError" in message
    assert "_Coordinator" not in message and "3000 ms" in message
