"""Operator tools without servers: lag JSON, partition lists, reset and migrate plans."""

from __future__ import annotations

import json
from typing import Dict, List, Optional, Tuple

import pytest

from storm_kafka_compat.config import Broker, StaticHosts, job_config_from_dict
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.offsets.document import encode_document, parse_document
from storm_kafka_compat.testing.memory_store import MemoryStateStore
from storm_kafka_compat.tools import ToolEnv, select_partitions
from storm_kafka_compat.tools.explain import explain
from storm_kafka_compat.tools.lag import LagRow, lag, monitor_json
from storm_kafka_compat.tools.migrate import (FROM_KAFKA, TO_KAFKA, commit_metadata,
                                              execute_migrate, metadata_topology_id,
                                              parse_kafka08_offset, plan_migrate)
from storm_kafka_compat.tools.reset import (ResetSpec, execute_reset, export_csv, parse_datetime,
                                            plan_reset)
from storm_kafka_compat.errors import ResetRefusedError

LEADER = Broker("k1", 9092)


class FakeKafka:
    """Log start/end per partition; a timestamp resolves to ``by_time``."""

    def __init__(self, logs: Dict[int, Tuple[int, int]], by_time: int = -5) -> None:
        self.logs = logs
        self.by_time = by_time

    def offset_for(self, topic: str, partition: int, time: int) -> int:
        start, end = self.logs[partition]
        return start if time == -2 else end if time == -1 else self.by_time

    def learn(self, broker: Broker) -> None:
        pass

    def close(self) -> None:
        pass


class FakeGroup:
    def __init__(self, offsets: Optional[Dict[Tuple[str, int], Tuple[int, str]]] = None,
                 members: Tuple[str, ...] = ()) -> None:
        self.offsets = dict(offsets or {})
        self.members = list(members)

    def read_many(self, keys):
        return {k: self.offsets.get(tuple(k)) for k in keys}

    def active_members(self) -> List[str]:
        return self.members

    def write_many(self, offsets) -> int:
        self.offsets.update(offsets)
        return 1


def env_for(docs: Dict[int, bytes], logs: Dict[int, Tuple[int, int]], *,
            spout: Optional[dict] = None, topology: Optional[dict] = None) -> ToolEnv:
    job = job_config_from_dict({
        "spout": {"topic": "clicks", "zkRoot": "/o", "id": "s", **(spout or {})},
        "hosts": {"static": {p: "k1:9092" for p in logs}},
        "topology": {"name": "clicks", **(topology or {})}})
    assert isinstance(job.spout.hosts, StaticHosts)
    store = MemoryStateStore({f"/o/s/partition_{p}": d for p, d in docs.items()})
    return ToolEnv(job, store=store, kafka=FakeKafka(logs))


def doc(offset: int, partition: int, tid: str = "clicks-1-1") -> bytes:
    return encode_document(topology_id=tid, topology_name="clicks", offset=offset,
                           partition=partition, broker_host="h", broker_port=1, topic="clicks")


# --- lag ------------------------------------------------------------------------------------

def test_lag_rows_and_monitor_json_conventions():
    env = env_for({0: doc(3, 0), 1: b"{bad"}, {0: (0, 10), 1: (2, 4), 2: (0, 0)})
    rows = lag(env)
    assert [(r.partition, r.committed, r.log_start, r.log_end, r.lag) for r in rows] == [
        (0, 3, 0, 10, 7), (1, None, 2, 4, None), (2, None, 0, 0, None)]
    assert rows[1].problem and rows[0].broker == "h:1"
    assert monitor_json(rows) == {"clicks": {
        "0": {"consumerCommittedOffset": 3, "logHeadOffset": 10, "lag": 7},
        "1": {"consumerCommittedOffset": -1, "logHeadOffset": 4, "lag": 5},
        "2": {"consumerCommittedOffset": -1, "logHeadOffset": 0, "lag": 1}}}


def test_lag_is_negative_beyond_the_log_end():
    row = LagRow("t", 0, "/p", committed=12, log_start=0, log_end=10, broker=None,
                 topology_id=None, problem=None)
    assert row.lag == -2 and monitor_json([row])["t"]["0"]["lag"] == -2


# --- partition lists ------------------------------------------------------------------------

INFOS = [PartitionInfo(t, p, LEADER, path_topic=t) for t in ("a", "b") for p in range(4)]


@pytest.mark.parametrize("spec,want", [
    (None, [(t, p) for t in "ab" for p in range(4)]),
    ("1", [("a", 1), ("b", 1)]),
    ("0,2-3", [("a", 0), ("a", 2), ("a", 3), ("b", 0), ("b", 2), ("b", 3)]),
    ("b:1-2, a:0", [("a", 0), ("b", 1), ("b", 2)]),
])
def test_select_partitions(spec, want):
    assert [i.key for i in select_partitions(INFOS, spec)] == want


@pytest.mark.parametrize("spec,fragment", [("x", "not N"), ("3-1", "empty"), ("9", "names 9"),
                                           ("c:0", "names c:0")])
def test_select_partitions_errors_name_the_item(spec, fragment):
    with pytest.raises(ConfigError, match=fragment):
        select_partitions(INFOS, spec)


# --- reset ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,ms", [
    ("1700000000000", 1700000000000),
    ("2023-11-14T22:13:20", 1700000000000),
    ("2023-11-14T22:13:20Z", 1700000000000),
    ("2023-11-15T00:13:20+02:00", 1700000000000),
    ("2023-11-14T22:13:20.5", 1700000000500),
])
def test_parse_datetime(text, ms):
    assert parse_datetime(text) == ms


def test_parse_datetime_error_names_the_value():
    with pytest.raises(ConfigError, match="'yesterday'"):
        parse_datetime("yesterday")


def test_reset_plan_clamps_keeps_ids_and_exports():
    env = env_for({0: doc(3, 0, tid="old-id")}, {0: (2, 10), 1: (0, 8)})
    plan = plan_reset(env, ResetSpec("offset", 9))
    e0, e1 = plan.entries
    assert (e0.current, e0.target, e0.difference, e0.topology_id) == (3, 9, 6, "old-id")
    assert e1.target == 8 and "clamped to 8" in e1.notes[0]
    assert parse_document(e0.document).topology_id == "old-id"
    assert export_csv(plan) == "clicks,0,9\nclicks,1,8\n"
    assert env.store.read("/o/s/partition_1") is None          # a plan writes nothing
    execute_reset(env, plan)
    assert plan.written == 2 and parse_document(env.store.read("/o/s/partition_1").data).offset == 8


def test_reset_to_zero_refused_unless_start_offset_time_is_earliest():
    latest = env_for({}, {0: (0, 5)}, spout={"startOffsetTime": -1})
    plan = plan_reset(latest, ResetSpec("earliest"))
    assert plan.entries[0].refused and "startOffsetTime -1" in plan.entries[0].refused
    with pytest.raises(ResetRefusedError):
        execute_reset(latest, plan)
    earliest = env_for({}, {0: (0, 5)})
    entry = plan_reset(earliest, ResetSpec("earliest")).entries[0]
    assert entry.target == 0 and not entry.refused and "no state" in entry.notes[0]


def test_reset_datetime_without_message_goes_to_log_end_and_shift_needs_an_offset():
    env = env_for({0: doc(4, 0)}, {0: (0, 7), 1: (0, 7)})
    plan = plan_reset(env, ResetSpec("datetime", 1))          # FakeKafka: no offset
    assert [e.target for e in plan.entries] == [7, 7]
    plan = plan_reset(env, ResetSpec("shift", -3))
    assert plan.entries[0].target == 1 and plan.entries[1].refused


def test_reset_unchanged_document_is_not_rewritten():
    env = env_for({0: doc(4, 0)}, {0: (0, 7)})
    plan = execute_reset(env, plan_reset(env, ResetSpec("offset", 4)))
    assert plan.written == 0 and plan.entries[0].changes is False


# --- explain ------------------------------------------------------------------------------------

def test_explain_uses_the_pipeline_decision_and_configured_id():
    env = env_for({0: doc(4, 0, tid="t-1"), 1: doc(0, 1)}, {0: (0, 9), 1: (3, 9), 2: (0, 9)},
                  spout={"ignoreZkOffsets": True}, topology={"id": "t-1"})
    got = {e.partition: (e.decision, e.start_offset) for e in explain(env)}
    assert got == {0: ("resume", 4), 1: ("ignore_zk_offsets", 3), 2: ("no_state", 0)}


def test_explain_fail_policy_reports_a_refused_start():
    env = env_for({0: b"[]"}, {0: (0, 9)}, spout={"corruptStatePolicy": "fail"})
    [e] = explain(env)
    assert e.decision == "invalid_state" and e.start_offset is None
    assert "refuses to start" in e.reason and e.stored_bytes == "[]"


# --- migrate ------------------------------------------------------------------------------------

def test_commit_metadata_matches_storm_kafka_client_shape():
    text = commit_metadata("clicks-1-2", 3, "Thread-4")
    assert text == '{"topologyId":"clicks-1-2","taskId":3,"threadName":"Thread-4"}'
    assert metadata_topology_id(text) == "clicks-1-2"
    assert metadata_topology_id("") is None and metadata_topology_id("v1.1.1 string") is None


@pytest.mark.parametrize("data,offset", [(b"42", 42), (b" 7\n", 7), (b"", None), (b"-1", None),
                                         (b"{}", None)])
def test_parse_kafka08_offset(data, offset):
    assert parse_kafka08_offset(data) == offset


def test_migrate_to_kafka_range_check_and_active_members():
    env = env_for({0: doc(5, 0), 1: doc(50, 1), 2: doc(1, 2)}, {0: (0, 9), 1: (0, 9), 2: (3, 9)})
    group = FakeGroup(members=("m-1",))
    plan = plan_migrate(env, direction=TO_KAFKA, group="g", groups=group)
    acts = [(e.action, e.source_offset) for e in plan.entries]
    assert acts == [("move", 5), ("skip", 50), ("skip", 1)]
    assert "beyond the log end" in plan.entries[1].reason
    assert "below the log start" in plan.entries[2].reason
    assert json.loads(plan.entries[0].metadata)["topologyId"] == "clicks-1-1"
    from storm_kafka_compat.errors import ActiveGroupError
    with pytest.raises(ActiveGroupError):
        execute_migrate(env, plan, groups=group)
    assert group.offsets == {}


def test_migrate_to_kafka_same_offset_is_unchanged_only_with_the_same_metadata():
    """The first-poll rule reads the commit metadata: a group holding the document's
    offset under other (or no) metadata gets the migration's metadata written."""
    env = env_for({0: doc(5, 0), 1: doc(5, 1), 2: doc(5, 2)}, {p: (0, 9) for p in range(3)})
    ours = commit_metadata("clicks-1-1")
    group = FakeGroup({("clicks", 0): (5, ours), ("clicks", 1): (5, ""),
                       ("clicks", 2): (5, commit_metadata("other-2-2", 3, "t"))})
    plan = execute_migrate(env, plan_migrate(env, direction=TO_KAFKA, group="g",
                                             groups=group), groups=group)
    assert [e.action for e in plan.entries] == ["unchanged", "move", "move"]
    assert "without metadata" in plan.entries[1].reason
    assert "other-2-2" in plan.entries[2].reason
    assert plan.moved == 2
    assert group.offsets == {("clicks", p): (5, ours) for p in range(3)}


def test_migrate_from_kafka_takes_the_id_from_the_commit_metadata():
    env = env_for({}, {0: (0, 9), 1: (0, 9)})
    group = FakeGroup({("clicks", 0): (6, commit_metadata("from-meta-1"))})
    plan = execute_migrate(env, plan_migrate(env, direction=FROM_KAFKA, group="g",
                                             groups=group), groups=group)
    assert plan.moved == 1 and plan.entries[1].action == "skip"
    stored = parse_document(env.store.read("/o/s/partition_0").data)
    assert (stored.offset, stored.topology_id) == (6, "from-meta-1")


def test_migrate_option_errors():
    env = env_for({}, {0: (0, 9)})
    with pytest.raises(ConfigError, match="--layout"):
        plan_migrate(env, direction=TO_KAFKA, group="g", groups=FakeGroup(), layout="x")
    with pytest.raises(ConfigError, match="--owners"):
        plan_migrate(env, direction=TO_KAFKA, group="g", groups=FakeGroup(), owners=True)
