"""Task -> partition assignment: L[i::T] (storm-kafka calculatePartitionsForTask)."""

import logging

import pytest

from storm_kafka_compat.spout.assignment import partitions_for_task
from storm_kafka_compat.errors import ConfigError

L = [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]


@pytest.mark.parametrize("task_index,total,expected", [
    (0, 1, L),
    (0, 2, [("a", 0), ("a", 2), ("b", 1)]),
    (1, 2, [("a", 1), ("b", 0)]),
    (0, 3, [("a", 0), ("b", 0)]),
    (2, 3, [("a", 2)]),
    (4, 5, [("b", 1)]),
])
def test_round_robin_over_the_flat_list(task_index, total, expected):
    assert partitions_for_task(L, task_index, total) == expected


def test_every_partition_has_exactly_one_owner():
    for total in range(1, 9):
        owned = [p for i in range(total) for p in partitions_for_task(L, i, total)]
        assert sorted(owned) == sorted(L)


def test_more_tasks_than_partitions_leaves_idle_tasks_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="storm_kafka_compat.spout.assignment"):
        assert partitions_for_task(L, 6, 7) == []
        assert partitions_for_task(L, 4, 7) == [("b", 1)]
    assert "more tasks than partitions (tasks: 7; partitions: 5)" in caplog.text


@pytest.mark.parametrize("task_index,total", [(2, 2), (5, 3), (-1, 3), (0, 0)])
def test_bad_task_index_is_a_config_error(task_index, total):
    with pytest.raises(ConfigError) as err:
        partitions_for_task(L, task_index, total)
    assert str(task_index) in str(err.value) or str(total) in str(err.value)


def test_empty_partition_list():
    assert partitions_for_task([], 0, 1) == []
