"""The start-up decision, case by case (reference section 2.3 and section 11 cases 1-8, 30)."""

from dataclasses import dataclass
from typing import Any, Optional

import pytest

from storm_kafka_compat.config import LONG_MAX, NO_OFFSET, SpoutConfig, StaticHosts
from storm_kafka_compat.errors import CorruptStateError
from storm_kafka_compat.spout.startup import decide_start


@dataclass
class Stored:
    topology_id: Optional[str]
    offset: Optional[int]
    problem: Optional[str] = None
    data: bytes = b"{}"
    parsed: Any = None


def cfg(**kw):
    return SpoutConfig(hosts=StaticHosts({}), topic="t", zk_root="/r", id="s", **kw)


LOG = {-2: 100, -1: 5_000, 1_700_000_000_000: 2_500}   # earliest, latest, a timestamp


def kafka(time):
    return LOG.get(time, NO_OFFSET)


CASES = [
    # (name, stored, config overrides, expected decision, expected start)
    ("no node: earliest by default", None, {}, "no_state", 100),
    ("no node: latest", None, {"start_offset_time": -1}, "no_state", 5_000),
    ("no node: timestamp", None, {"start_offset_time": 1_700_000_000_000}, "no_state", 2_500),
    ("same id, ignoreZkOffsets: resume", Stored("me", 4_000), {"ignore_zk_offsets": True},
     "resume", 4_000),
    ("different id, ignoreZkOffsets: startOffsetTime", Stored("storm-1-2", 4_000),
     {"ignore_zk_offsets": True, "start_offset_time": -1}, "ignore_zk_offsets", 5_000),
    ("different id, no flag: resume (migration path)", Stored("storm-1-2", 4_000), {},
     "resume", 4_000),
    ("offset 0 is no state, LATEST skips the partition", Stored("me", 0),
     {"start_offset_time": -1}, "no_state", 5_000),
    ("offset 0 is no state, EARLIEST", Stored("me", 0), {}, "no_state", 100),
    ("negative offset is no state", Stored("me", -7), {}, "invalid_state", 100),
    ("malformed document under the storm policy", Stored(None, None, "invalid JSON", b"{x"),
     {}, "invalid_state", 100),
    ("EARLIEST: max behind fires only below earliest", Stored("me", 40),
     {"max_offset_behind": 50}, "max_offset_behind", 100),
    ("EARLIEST: within max behind below earliest is kept", Stored("me", 60),
     {"max_offset_behind": 50}, "resume", 60),
    ("EARLIEST: far behind latest does not fire", Stored("me", 200),
     {"max_offset_behind": 50}, "resume", 200),
    ("LATEST: jumps to the end, not end - maxOffsetBehind", Stored("me", 4_000),
     {"max_offset_behind": 500, "start_offset_time": -1}, "max_offset_behind", 5_000),
    ("LATEST: opt-in window reset", Stored("me", 4_000),
     {"max_offset_behind": 500, "start_offset_time": -1,
      "max_offset_behind_reset_to_window": True}, "max_offset_behind", 4_500),
    ("timestamp reference", Stored("me", 1_000),
     {"max_offset_behind": 1_000, "start_offset_time": 1_700_000_000_000},
     "max_offset_behind", 2_500),
    ("Long.MAX_VALUE default does not overflow", Stored("me", 1), {"max_offset_behind": LONG_MAX},
     "resume", 1),
    ("NO_OFFSET with no state flows through", None, {"start_offset_time": 42}, "no_state",
     NO_OFFSET),
    ("NO_OFFSET with stored state keeps the stored offset", Stored("me", 300),
     {"start_offset_time": 42}, "resume", 300),
]


@pytest.mark.parametrize("name,stored,overrides,decision,start", CASES, ids=[c[0] for c in CASES])
def test_decision(name, stored, overrides, decision, start):
    d = decide_start(stored, topology_id="me", config=cfg(**overrides), offset_for=kafka,
                     where="/r/s/partition_0")
    assert (d.decision, d.start_offset) == (decision, start), d.reason
    assert str(start) in d.reason


def test_corrupt_document_fails_under_the_fail_policy():
    with pytest.raises(CorruptStateError) as err:
        decide_start(Stored(None, None, "offset is not an integer (12.0)", b'{"offset":12.0}'),
                     topology_id="me", config=cfg(corrupt_state_policy="fail"),
                     offset_for=kafka, where="/r/s/partition_3")
    assert err.value.zk_path == "/r/s/partition_3" and b"12.0" in err.value.data
    assert "/r/s/partition_3" in str(err.value) and "corruptStatePolicy" in str(err.value)


def test_a_negative_offset_is_refused_under_fail_and_warned_about_under_storm(caplog):
    doc = Stored("me", -5, data=b'{"topology":{"id":"me"},"offset":-5}')
    with pytest.raises(CorruptStateError) as err:
        decide_start(doc, topology_id="me", config=cfg(corrupt_state_policy="fail"),
                     offset_for=kafka, where="/r/s/partition_1")
    assert err.value.reason == "offset -5 is negative" and "/r/s/partition_1" in str(err.value)
    d = decide_start(doc, topology_id="me", config=cfg(), offset_for=kafka,
                     where="/r/s/partition_1")
    assert (d.decision, d.start_offset) == ("invalid_state", 100)
    assert "offset -5 is negative" in d.reason
    assert "/r/s/partition_1 is unusable (offset -5 is negative)" in caplog.text
    assert "corruptStatePolicy: fail" in caplog.text


def test_offset_0_is_no_state_and_says_why(caplog):
    d = decide_start(Stored("me", 0), topology_id="me", config=cfg(), offset_for=kafka,
                     where="/r/s/partition_0")
    assert d.decision == "no_state" and "stored offset 0 counts as no state" in d.reason
    assert "WARNING" not in caplog.text and caplog.text.count("offsets 0-") == 0
    # from a later startOffsetTime the partition's first offsets are skipped: said so
    decide_start(Stored("me", 0), topology_id="me", config=cfg(start_offset_time=-1),
                 offset_for=kafka, where="/r/s/partition_0")
    assert "offsets 0-4999 are not read" in caplog.text


@pytest.mark.parametrize("parsed, said", [
    ({"partition": 7, "topic": "t"}, "names partition 7 (this is partition 3)"),
    ({"partition": 3, "topic": "other"}, "names topic 'other' (this is 't')"),
])
def test_a_document_naming_another_partition_is_said_or_refused(caplog, parsed, said):
    doc = Stored("me", 30, parsed={"topology": {"id": "me"}, "offset": 30, **parsed})
    d = decide_start(doc, topology_id="me", config=cfg(), offset_for=kafka,
                     where="/r/s/partition_3", topic="t", partition=3)
    assert (d.decision, d.start_offset) == ("resume", 30)     # as Storm does
    assert said in d.reason and said in caplog.text
    with pytest.raises(CorruptStateError) as err:
        decide_start(doc, topology_id="me", config=cfg(corrupt_state_policy="fail"),
                     offset_for=kafka, where="/r/s/partition_3", topic="t", partition=3)
    assert said in str(err.value)
    # its own partition and topic: nothing to say
    caplog.clear()
    own = Stored("me", 30, parsed={"topology": {"id": "me"}, "offset": 30, "partition": 3,
                                   "topic": "t"})
    d = decide_start(own, topology_id="me", config=cfg(corrupt_state_policy="fail"),
                     offset_for=kafka, where="/r/s/partition_3", topic="t", partition=3)
    assert d.reason == "resuming from our stored offset 30" and not caplog.text


def test_corrupt_document_is_logged_with_path_and_bytes(caplog):
    decide_start(Stored(None, None, "root is not an object", b"[1]"), topology_id="me",
                 config=cfg(), offset_for=kafka, where="/r/s/partition_9")
    assert "/r/s/partition_9" in caplog.text and "b'[1]'" in caplog.text


# --- a start offset outside the log (offsets explain/show, issue 10) ---------------------

@pytest.mark.parametrize("offset, earliest, latest, use, expected", [
    (50, 0, 100, True, None),                           # inside
    (100, 0, 100, True, None),                          # at the log end: nothing to skip
    (0, 0, 0, True, None),                              # empty log
    (41, 57, 100, True, ("below_start", 16, 57)),       # retention deleted 41-56
    (9999, 500, 600, True, ("beyond_end", 100, 600)),   # a re-created topic: 500-599 unread
    (41, 57, 100, False, ("below_start", 16, None)),    # Storm: every fetch fails
    (9999, 600, 600, True, ("beyond_end", 0, 600)),     # beyond an empty log: nothing skipped
    (None, 0, 10, True, None), (5, None, 10, True, None), (-5, 0, 10, True, None),
])
def test_outside_log_table(offset, earliest, latest, use, expected):
    from storm_kafka_compat.spout.startup import outside_log
    got = outside_log(offset, earliest, latest, use_start_offset_time=use)
    assert (None if got is None else (got.where, got.skipped, got.moves_to)) == expected


def test_outside_log_notes_say_what_a_start_skips_and_the_fix():
    from storm_kafka_compat.spout.startup import outside_log
    beyond = outside_log(9999, 500, 600).note
    assert "beyond the log end 600" in beyond and "never reads the 100 messages" in beyond
    assert "offsets reset --to-earliest" in beyond
    below = outside_log(41, 57, 100).note
    assert "below the log start 57" in below and "deleted 16" in below
    stuck = outside_log(41, 57, 100, use_start_offset_time=False).note
    assert "every fetch fails" in stuck and "offsets reset" in stuck
