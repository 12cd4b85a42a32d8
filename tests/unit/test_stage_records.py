"""The multi-stage engine's Spark records (executor/stage_records.py, settled by
engine/stages.py): one record per bolt task and per acker bucket, folded root by root,
only unresolved roots sent back; no Spark."""

from __future__ import annotations

import random
from typing import Dict, List

from hypothesis import given, settings
from hypothesis import strategies as st

from storm_kafka_compat.batch import FetchPlan, PartitionResult
from storm_kafka_compat.engine.stages import settle
from storm_kafka_compat.topology.tuples import StormTuple, TupleBatch
from storm_kafka_compat.executor.stage_records import (ACK_BUCKETS, Outbox, fold_acker,
                                                       fold_records, unresolved_roots)


def test_an_outbox_writes_one_record_per_plan_and_bolt_task_and_one_per_bucket():
    box = Outbox()
    def word(w):
        return StormTuple([w], ("word",), source_component="split")
    box.route({("count", 0): TupleBatch([word("a")]), ("count", 1): TupleBatch([word("b")])})
    box.route({("count", 0): TupleBatch([word("c")]), ("sink", 0): TupleBatch([word("d")]),
               ("sink", 1): TupleBatch()})                 # empty: no record
    box.ack(4, (7, False, ("t", 0, 10)))
    box.ack(4, (7, False, None))                      # the same root again: folded
    box.ack(5, (3, True, None))
    records = list(box.records())
    sent: dict = {}
    for k, v in records:
        if k[0] == "t":                               # each plan's batch as it came
            assert isinstance(v, TupleBatch)
            sent.setdefault(k, []).extend(t.values[0] for t in v)
    assert sent[("t", "count", 0)] == ["a", "c"]                     # in their order
    assert sent[("t", "count", 1)] == ["b"] and sent[("t", "sink", 0)] == ["d"]
    buckets = dict(r for r in records if r[0][0] == "a")
    assert buckets[("a", 4 % ACK_BUCKETS)][4] == (0, False, ("t", 0, 10))
    assert buckets[("a", 5 % ACK_BUCKETS)][5] == (3, True, None)
    assert len(records) == 4 + len({4 % ACK_BUCKETS, 5 % ACK_BUCKETS})
    assert list(Outbox().records()) == []             # nothing to send: no record


def test_only_roots_that_did_not_complete_come_back():
    bucket = {1: (0, False, ("t", 0, 1)),            # complete: stays on the executors
              2: (9, False, ("t", 0, 2)),            # an open tree
              3: (0, True, ("t", 1, 3)),             # failed
              4: (5, True, None),                    # no spout-stage origin in this batch:
              6: (7, False, None),                   # late acks and fails of earlier trees
              8: (0, False, None)}                   # nothing to say
    result = PartitionResult(FetchPlan("t", 0, 0))
    out = list(unresolved_roots((("a", 0), bucket))) + list(
        unresolved_roots((("r", "t", 0), result)))
    assert out == [(("a", 2), bucket[2]), (("a", 3), bucket[3]), (("l", 4), (5, True)),
                   (("l", 6), (7, False)), (("r", "t", 0), result)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 2 ** 64 - 1), st.booleans(),
                          st.booleans()), max_size=60),
       st.integers(1, 5), st.randoms(use_true_random=False))
def test_folding_buckets_equals_folding_each_root(messages, tasks, rnd: random.Random):
    """Acker messages spread over several Spark tasks' outboxes, folded bucket by bucket
    in any order, give each root what folding its messages one by one gives."""
    by_root: Dict[int, tuple] = {}
    boxes = [Outbox() for _ in range(tasks)]
    for root, xor, failed, from_spout in messages:
        value = (xor, failed, ("t", 0, root) if from_spout else None)
        by_root[root] = value if root not in by_root else fold_acker(by_root[root], value)
        rnd.choice(boxes).ack(root, value)
    records: List = [r for box in boxes for r in box.records()]
    rnd.shuffle(records)
    folded: Dict = {}
    for key, value in records:
        folded[key] = fold_records(folded[key], value) if key in folded else value
    merged = {root: v for bucket in folded.values() for root, v in bucket.items()}
    assert merged == by_root


def test_settle_turns_unresolved_roots_into_failed_and_open_offsets():
    r = PartitionResult(FetchPlan("t", 0, 0), taken=[(0, 5)])
    records = [(("r", "t", 0), r), (("a", 11), (0, True, ("t", 0, 1))),
               (("a", 12), (6, False, ("t", 0, 3)))]
    (out,) = settle(records)
    assert (out.failed, out.open_trees, out.acked) == ([1], [3], [(0, 1), (2, 3), (4, 5)])
