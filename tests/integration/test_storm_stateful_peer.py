"""Real Apache Storm 2.8.3 as the reference for stateful bolts: storm-starter's
WordCount shape and a per-key running maximum over storm-kafka-client's KafkaSpout
(tests/peers/storm_topologies.py) read a known input from a real Kafka 3.9 topic, and
their final state equals the truth computed in Python from that input
(tests/stateful_inputs.py). The project's stateful results are compared with the same
truth, and with these runs, elsewhere.
"""

from __future__ import annotations

import pytest

from tests.peers.fixtures import storm2_ready  # noqa: F401
from tests.peers.storm_topologies import run_stateful, storm_running_max
from tests.stateful_inputs import (as_messages, key_values, running_max, sentences,
                                   word_counts)

pytestmark = [pytest.mark.integration]

PARTITIONS = 4


def test_storm_word_count_equals_the_truth(tmp_path, kafka39, unique,
                                           storm2_ready):  # noqa: F811
    """2,000 sentences over 4 partitions: split (shuffle) -> count (fields grouping on
    "word", 4 tasks) ends with every word's count, each message taken exactly once."""
    lines = sentences(2000, seed=20240611)
    topic = unique("sentences")
    kafka39.create_topic(topic, PARTITIONS, 1)
    kafka39.produce(topic, as_messages(lines, PARTITIONS))

    run = run_stateful("wordcount", kafka39.bootstrap, topic, tmp_path / "wordcount",
                       messages=len(lines))
    assert run.replayed == []
    assert sorted(run.processed) == sorted(
        (p, o) for p in range(PARTITIONS) for o in range(len(lines) // PARTITIONS))
    assert run.result == word_counts(lines)
    print(f"Storm 2.8.3 word count: {len(lines)} sentences, {sum(run.result.values())} words, "
          f"{len(run.result)} distinct, {run.seconds:.1f} s")


def test_storm_running_max_equals_the_truth(tmp_path, kafka39, unique,
                                            storm2_ready):  # noqa: F811
    """1,000 "key,number" lines over 4 partitions: parse (shuffle) -> max (fields
    grouping on "key", 3 tasks) ends with every key's largest number."""
    lines = key_values(1000, seed=20240612)
    topic = unique("key-values")
    kafka39.create_topic(topic, PARTITIONS, 1)
    kafka39.produce(topic, as_messages(lines, PARTITIONS))

    end_offsets = {p: len(lines) // PARTITIONS for p in range(PARTITIONS)}
    assert storm_running_max(kafka39.bootstrap, topic, tmp_path / "runningmax",
                             end_offsets=end_offsets) == running_max(lines)
