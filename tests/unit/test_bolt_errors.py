"""The driver's view of bolt errors: the first of a kind with its traceback, then a
count a minute; stuck partitions named with the offset, the bolt and the error."""

from __future__ import annotations

import logging
from typing import Any, List

from storm_kafka_compat.engine.errors import REMINDER_MS, STUCK_BATCHES, BoltErrors
from storm_kafka_compat.engine.report import progress_line
from storm_kafka_compat.batch import BatchResult, FetchPlan, PartitionResult
from storm_kafka_compat.structs import BoltError, ErrorTally


def _error(n: int = 1, offset: int = 7) -> BoltError:
    tally = ErrorTally()
    for _ in range(n):
        try:
            {}["word"]
        except KeyError as exc:
            tally.record("count", exc, "clicks", 3, offset)
    [error] = tally.take()
    return error


def _result(failed: List[int], acked: int = 0, errors: Any = ()) -> BatchResult:
    r = PartitionResult(FetchPlan("clicks", 3, 0), taken=[(0, 10)],
                        acked=[(0, acked)] if acked else [], failed=failed,
                        errors=list(errors))
    return BatchResult([r])


def test_the_first_error_of_a_kind_is_logged_with_its_traceback_then_counted(caplog: Any
                                                                             ) -> None:
    errors = BoltErrors()
    with caplog.at_level(logging.WARNING):
        errors.observe(_result([7], acked=5, errors=[_error(3)]), 0)
        errors.observe(_result([7], acked=5, errors=[_error(2)]), 1_000)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "bolt 'count' raised KeyError on clicks/3@7: 'word'" in warnings[0]
    assert "Traceback (most recent call last)" in warnings[0]
    assert errors.by_bolt() == {"count": {"KeyError": 5}}
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        errors.observe(_result([7], acked=5, errors=[_error(1)]), REMINDER_MS + 1)
    assert [r.getMessage() for r in caplog.records] == [
        "bolt 'count' raised KeyError 5 more times in the last 60 s (6 in all)"]


def test_a_partition_failing_and_acking_nothing_is_stuck_until_it_moves(caplog: Any) -> None:
    errors = BoltErrors()
    with caplog.at_level(logging.WARNING):
        for i in range(STUCK_BATCHES - 1):
            errors.observe(_result([7, 8], errors=[_error()]), i)
        assert errors.stuck == {}
        errors.observe(_result([7, 8]), 10)
    [stuck] = errors.stuck.values()
    assert (stuck.offset, stuck.batches, stuck.error.component) == (7, STUCK_BATCHES, "count")
    said = caplog.records[-1].getMessage()
    assert said.startswith("clicks/3 is stuck at offset 7: its offsets failed in 3 batches")
    assert "bolt 'count' KeyError: 'word'" in said
    status = errors.status()
    assert status["stuck"] == [{"topic": "clicks", "partition": 3, "offset": 7, "batches": 3,
                                "bolt": "count", "error": "KeyError: 'word'"}]
    line = progress_line({"batches": 4, "rate": 10.0, "lag": 0, "pending": 2, "retries": 2,
                          **status})
    assert "bolt errors 2" in line and "STUCK clicks/3 at offset 7 (3 batches, bolt 'count'" \
        in line
    errors.observe(_result([], acked=10), 11)
    assert errors.stuck == {}
    assert "clicks/3 moves again" in caplog.records[-1].getMessage()


def test_progress_is_not_stuck_while_some_offsets_are_acked() -> None:
    errors = BoltErrors()
    for i in range(2 * STUCK_BATCHES):
        errors.observe(_result([7], acked=5, errors=[_error()]), i)
    assert errors.stuck == {}
    assert errors.total == 2 * STUCK_BATCHES
