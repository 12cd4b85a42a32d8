"""Batches sized by time for executors that cannot stop a batch by themselves.

A single-stage task stops processing at its time budget (half a commit
interval; :func:`~storm_kafka_compat.executor.reader.task_budget_s`) and leaves
the rest for the next batch. A multi-stage batch cannot: the tuples routed to
later stages must all be processed, or their trees time out and replay. Nor can
the DataFrame mode, whose user function gets the batch whole. For those the
driver sizes the batch instead.

A batch of ``m`` messages takes ``overhead + cost x m``: the overhead is
Spark's per-job cost, which no batch size changes; the cost is the bolts' work
per message. The pacer estimates both from the last batches and sizes the next
one so that its processing, the overhead left out, lasts about one task budget.
What a killed driver replays then stays about one commit interval plus one
budget of processing, whatever the bolts' speed (docs/operations.md, "What a
crash replays").

Telling the two terms apart needs batches of at least two sizes; batches of one
size only bound their sum. Charging the whole time to the messages (as this
module once did) locks in: with an overhead above the budget each batch comes
out smaller than the last, down to one message per partition, and batches of
one size then confirm the estimate for ever. So:

* the first batch (Spark's and the workers' start-up, the JIT) gives no cost per
  message; when it took less than a budget the next batch is budget / its time as
  large (the bound below), else half of it;
* per batch size only the fastest batch counts (pauses make a batch slower,
  never faster);
* with two sizes or more, a least-squares line gives both terms; with one size,
  the overhead of the last good fit gives the cost;
* when the cost cannot be told (one size and no overhead known yet, or a cost
  lost in the noise) the next batch tries another size: half of it while that
  is more than one message per partition, else twice it;
* a batch never grows to more than twice the largest batch seen in the window,
  so one noisy estimate costs one batch of at most twice the known size, unless
  the whole time of a batch charged to its messages still allows more: that bound
  on the cost holds whatever the split, so a batch of that size keeps its
  processing within one budget. A batch mostly made of Spark's overhead (a small
  one at the start) then grows by the budget over its time, not by two: a word
  count's shape reaches its size in 8 batches instead of 12
  (tests/unit/test_pacing.py);
* where the runner measured a batch's work where it ran (the busiest Python worker's
  reading after its first fetch, processing and hand-over, then each bolt-host stage's
  slowest host: Spark's per-job cost and the first fetches left out), that work over
  the batch's messages is a cost per message with no overhead in it, and while the
  fit cannot tell the cost (the first batches) it sizes the next batch:
  ``budget / (cost x MEASURED_MARGIN)``, at most :data:`MEASURED_GROWTH` times the
  batch measured. A word count's second batch is then about its full size, where the
  bound above took five batches to get there (its first batch of 64 sentences lasts
  0.3 s with the workers' first fetches); the margin covers what the measure leaves
  out, the later batches' fit corrects the rest. And whatever the fit says, the next
  batch is never larger than one budget over the last measured work per message: that
  work is on the batch's critical path, so it bounds the cost from below, where a fit
  of a few noisy small batches can fall short (a 10 ms bolt's fit of 4.3 ms a message
  once sized a batch at 2.3 budgets).

Pure: time is passed in.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

#: new messages per partition in the first paced batch, before any cost is known
FIRST_CAP = 16
#: batches the estimate looks back on
WINDOW = 8
#: how much larger than the largest batch of the window the next one may be
GROWTH = 2.0
#: the measured work per message is taken as this much less than the whole cost (what
#: it leaves out: a first fetch's share, the results' way back)
MEASURED_MARGIN = 1.25
#: how much larger than the batch it measured a batch sized from measured work may be
#: (a first measure of a few messages off by a large factor stays a bounded mistake)
MEASURED_GROWTH = 4096


class BatchPacer:
    """The cap on new messages per partition for the next batch.

    Parameters
    ----------
    budget_ms : float
        How long a batch's processing should last (the task budget).
    """

    def __init__(self, budget_ms: float) -> None:
        self.budget_ms = float(budget_ms)
        #: (messages, ms) of the batches after the first, the last WINDOW of them
        self._seen: List[Tuple[int, float]] = []
        self._batches = 0
        #: messages of the next batch, over all partitions (None: FIRST_CAP each)
        self._next_total: Optional[float] = None
        #: the estimated cost of one message (ms), when it can be told
        self.cost_ms: Optional[float] = None
        #: the estimated cost of a batch whatever its size (ms), once known
        self.overhead_ms: Optional[float] = None

    def cap(self, partitions: int, limit: int) -> int:
        """New messages per partition for a batch over ``partitions`` partitions,
        never above ``limit`` nor below 1."""
        if self._next_total is None:
            return max(1, min(limit, FIRST_CAP))
        return max(1, min(limit, int(self._next_total / max(1, partitions))))

    def observe(self, messages: int, elapsed_ms: float, partitions: int = 1,
                work_ms: Optional[float] = None) -> None:
        """A batch over ``partitions`` partitions took ``messages`` in ``elapsed_ms``,
        ``work_ms`` of it measured where the work ran (None: not measured). A batch
        that took nothing (caught up, or all retries failed) says nothing about the
        cost."""
        if messages <= 0 or elapsed_ms <= 0:
            return
        self._batches += 1
        if self._batches == 1:
            # start-up: no cost per message, but its whole time charged to its messages
            # still bounds the cost from above (the start only makes it slower)
            bound = messages * self.budget_ms / elapsed_ms
            size = bound if bound > messages else _other_size(messages, partitions)
        else:
            size = self._from_window(messages, elapsed_ms, partitions)
        if work_ms and work_ms > 0:
            # while the cost cannot be told, the measured work sizes the batch (with its
            # margin, growth bounded); whatever the fit says, that work alone, on the
            # batch's critical path, stays within one budget
            if self.cost_ms is None:
                size = max(size, min(self.budget_ms * messages / (work_ms * MEASURED_MARGIN),
                                     float(MEASURED_GROWTH * messages)))
            size = min(size, self.budget_ms * messages / work_ms)
        self._next_total = size

    def _from_window(self, messages: int, elapsed_ms: float, partitions: int) -> float:
        """The next batch's messages from the batches of the window (this one added),
        the fit's cost and overhead updated."""
        self._seen = (self._seen + [(messages, float(elapsed_ms))])[-WINDOW:]
        points = _fastest(self._seen)
        largest = max(m for m, _ in points)
        if len(points) >= 2:
            fitted = fit(points)
            if fitted is not None:
                self.cost_ms, self.overhead_ms = fitted
            else:                       # the cost is lost in the noise: mostly overhead
                self.cost_ms, self.overhead_ms = None, min(t for _, t in points)
        else:
            m0, t0 = points[0]
            known = self.overhead_ms is not None and t0 > self.overhead_ms
            self.cost_ms = (t0 - self.overhead_ms) / m0 if known and \
                self.overhead_ms is not None else None
        # the whole time charged to the messages bounds the cost from above: a batch of
        # this size takes at most one budget of processing, however the time splits
        bound = max(m * self.budget_ms / t for m, t in points)
        if self.cost_ms is not None:
            return min(self.budget_ms / self.cost_ms, max(GROWTH * largest, bound))
        if len(points) >= 2 or self.overhead_ms is not None:
            return max(GROWTH * largest, bound)
        if bound > largest:             # faster than a budget: grow, which is another size
            return bound
        return _other_size(points[0][0], partitions)


def _other_size(messages: int, partitions: int) -> float:
    """A batch size that tells the overhead from the cost beside ``messages``: half,
    while that leaves more than one message per partition, else twice."""
    if messages / max(1, partitions) >= 2:
        return messages / 2.0
    return messages * GROWTH


def _fastest(seen: List[Tuple[int, float]]) -> List[Tuple[int, float]]:
    """The fastest batch of each size (a pause only ever makes a batch slower)."""
    best: Dict[int, float] = {}
    for m, t in seen:
        best[m] = min(t, best.get(m, t))
    return sorted(best.items())


def fit(points: List[Tuple[int, float]]) -> Optional[Tuple[float, float]]:
    """Least squares of ``time = overhead + cost x messages`` over ``(messages, time)``
    pairs of at least two sizes: ``(cost, overhead)``, both >= 0 (an overhead
    fitted below 0 is 0 and the line goes through the origin), or None when the
    time does not grow with the size (the cost cannot be told from the noise)."""
    n = len(points)
    mx = sum(m for m, _ in points) / n
    my = sum(t for _, t in points) / n
    var = sum((m - mx) ** 2 for m, _ in points)
    if var <= 0:
        return None
    cost = sum((m - mx) * (t - my) for m, t in points) / var
    if cost <= 0:
        return None
    overhead = my - cost * mx
    if overhead < 0:
        return sum(m * t for m, t in points) / sum(m * m for m, _ in points), 0.0
    return cost, overhead
