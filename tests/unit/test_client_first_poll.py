"""First-poll decision (edge cases 1, 2, 3, 5, 35)."""

import json
import logging

import pytest

from storm_kafka_compat.spout.client.first_poll import (NO_COMMIT, OUT_OF_RANGE, RESUME,
                                                        RESUME_FOREIGN, STRATEGY, CommitMetadata,
                                                        committed_by_this_topology,
                                                        decide_first_poll)
from storm_kafka_compat.errors import NoOffsetResetError

OURS = CommitMetadata("topo-1-100", 1, "Thread-4-kafka-spout-executor[1 1]").to_json()
OTHER = CommitMetadata("topo-1-99", 1, "t").to_json()
E, L = 10, 50      # log start and end


@pytest.mark.parametrize("strategy, committed, decision, start", [
    # fresh group (edge 1)
    ("EARLIEST", None, NO_COMMIT, E),
    ("LATEST", None, NO_COMMIT, L),
    ("UNCOMMITTED_EARLIEST", None, NO_COMMIT, E),
    ("UNCOMMITTED_LATEST", None, NO_COMMIT, L),
    # committed by this topology: resume, whatever the strategy (edge 2)
    ("EARLIEST", (30, OURS), RESUME, 30),
    ("LATEST", (30, OURS), RESUME, 30),
    ("UNCOMMITTED_EARLIEST", (30, OURS), RESUME, 30),
    ("UNCOMMITTED_LATEST", (30, OURS), RESUME, 30),
    # committed by another writer (edge 3): another topology id ...
    ("EARLIEST", (30, OTHER), STRATEGY, E),
    ("LATEST", (30, OTHER), STRATEGY, L),
    ("UNCOMMITTED_EARLIEST", (30, OTHER), RESUME_FOREIGN, 30),
    ("UNCOMMITTED_LATEST", (30, OTHER), RESUME_FOREIGN, 30),
    # ... the migration tool's empty metadata, a <=1.1.1 string
    ("EARLIEST", (30, ""), STRATEGY, E),
    ("LATEST", (30, None), STRATEGY, L),
    ("UNCOMMITTED_EARLIEST", (30, ""), RESUME_FOREIGN, 30),
    ("EARLIEST", (30, "{topic-partition=t-0, offset=29, numFails=0, thread='x'}"), STRATEGY, E),
])
def test_decision_table(strategy, committed, decision, start):
    d = decide_first_poll(strategy, committed, topology_id="topo-1-100", earliest=E, latest=L)
    assert (d.decision, d.start_offset) == (decision, start)


@pytest.mark.parametrize("committed, reset, start", [
    ((3, OURS), "earliest", E),          # deleted by retention (edge 5)
    ((3, OURS), "latest", L),
    ((90, OTHER), "earliest", E),        # beyond the end
    ((50, OURS), "earliest", 50),        # == log end is in range
    ((10, OURS), "latest", 10),          # == log start is in range
])
def test_committed_offset_outside_the_log_uses_auto_offset_reset(committed, reset, start):
    d = decide_first_poll("UNCOMMITTED_EARLIEST", committed, topology_id="topo-1-100",
                          earliest=E, latest=L, auto_offset_reset=reset)
    assert d.start_offset == start
    assert d.decision == (OUT_OF_RANGE if start != committed[0] else RESUME)


def test_auto_offset_reset_none_raises_naming_the_offset():
    with pytest.raises(NoOffsetResetError, match="committed offset 3 is outside"):
        decide_first_poll("UNCOMMITTED_EARLIEST", (3, OURS), topology_id="topo-1-100",
                          earliest=E, latest=L, auto_offset_reset="none", where="t/0")


def test_already_committed_flag_counts_as_ours():
    assert committed_by_this_topology("", "x", already_committed=True)
    d = decide_first_poll("EARLIEST", (30, ""), topology_id="x", earliest=E, latest=L,
                          already_committed=True)
    assert d.decision == RESUME and d.start_offset == 30


def test_unparsable_metadata_warns_once_per_decision(caplog):
    with caplog.at_level(logging.WARNING):
        decide_first_poll("UNCOMMITTED_EARLIEST", (30, "not json"), topology_id="x",
                          earliest=E, latest=L, where="t/0")
    assert len([r for r in caplog.records if "not storm-kafka-client's JSON" in r.message]) == 1


def test_metadata_json_is_storm_kafka_clients_shape(edge=35):
    text = CommitMetadata("name-3-1700000000", 7, "Thread-4-kafka-spout-executor[7 7]").to_json()
    assert text == ('{"topologyId":"name-3-1700000000","taskId":7,'
                    '"threadName":"Thread-4-kafka-spout-executor[7 7]"}')
    assert CommitMetadata.parse(text) == CommitMetadata("name-3-1700000000", 7,
                                                        "Thread-4-kafka-spout-executor[7 7]")


@pytest.mark.parametrize("text", ["", None, "[]", '{"topologyId": 5, "taskId": 1}',
                                  '{"topologyId": "a", "taskId": "1"}', "{bad",
                                  json.dumps({"taskId": 1})])
def test_metadata_that_is_not_ours_parses_to_none(text):
    assert CommitMetadata.parse(text) is None


def test_unknown_strategy_is_rejected():
    with pytest.raises(ValueError):
        decide_first_poll("TIMESTAMP", None, topology_id="x", earliest=0, latest=0)
