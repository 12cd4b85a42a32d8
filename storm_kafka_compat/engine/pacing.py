"""Batches sized by time for executors that cannot stop a batch by themselves.

A single-stage task stops processing at its time budget (half a commit
interval; :func:`~storm_kafka_compat.engine.reader.task_budget_s`) and leaves
the rest for the next batch. A multi-stage batch cannot: the tuples routed to
later stages must all be processed, or their trees time out and replay. Nor can
the DataFrame mode, whose user function gets the batch whole. For those the
driver sizes the batch instead. From the last batches (messages taken, time
taken) it fits ``time = overhead + cost x messages`` -- the overhead being
Spark's per-job cost, which no batch size changes -- and caps the next batch's
new messages per partition so that its processing, the overhead left out, lasts
about one task budget. What a killed driver replays then stays about one commit
interval plus one budget of processing, whatever the bolts' speed
(docs/operations.md, "What a crash replays").

Pure: time is passed in.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

#: new messages per partition in the first paced batch, before any cost is known
FIRST_CAP = 16
#: batches the fit looks back on
WINDOW = 8


class BatchPacer:
    """The cap on new messages per partition for the next batch.

    Parameters
    ----------
    budget_ms : float
        How long a batch's processing should last (the task budget).
    """

    def __init__(self, budget_ms: float) -> None:
        self.budget_ms = float(budget_ms)
        self._seen: List[Tuple[int, float]] = []
        #: the fitted cost of one message (ms), once a batch was seen
        self.cost_ms: Optional[float] = None
        #: the fitted cost of a batch whatever its size (ms)
        self.overhead_ms: float = 0.0

    def cap(self, partitions: int, limit: int) -> int:
        """New messages per partition for a batch over ``partitions`` partitions,
        never above ``limit`` nor below 1."""
        if self.cost_ms is None:
            return max(1, min(limit, FIRST_CAP))
        share = self.budget_ms / self.cost_ms / max(1, partitions)
        return max(1, min(limit, int(share)))

    def observe(self, messages: int, elapsed_ms: float) -> None:
        """A batch took ``messages`` in ``elapsed_ms``. A batch that took nothing
        (caught up, or all retries failed) says nothing about the cost."""
        if messages <= 0 or elapsed_ms <= 0:
            return
        self._seen = (self._seen + [(messages, float(elapsed_ms))])[-WINDOW:]
        self.cost_ms, self.overhead_ms = fit(self._seen)


def fit(seen: List[Tuple[int, float]]) -> Tuple[float, float]:
    """Least squares of ``time = overhead + cost x messages`` over ``(messages,
    time)`` pairs, both terms kept >= 0. With one batch size only, or a fit
    outside the model, the whole time counts as cost (which errs towards smaller
    batches)."""
    n = len(seen)
    mx = sum(m for m, _ in seen) / n
    my = sum(t for _, t in seen) / n
    var = sum((m - mx) ** 2 for m, _ in seen)
    if var > 0:
        cost = sum((m - mx) * (t - my) for m, t in seen) / var
        overhead = my - cost * mx
        if cost > 0 and overhead >= 0:
            return cost, overhead
    return sum(t for _, t in seen) / sum(m for m, _ in seen), 0.0
