"""Pending-tracking memory: :class:`OffsetRanges` against Storm's per-offset map.

storm-kafka keeps ``_pending`` as a ``TreeMap<Long offset, Long time>``; the
Python equivalent here is a ``sortedcontainers.SortedDict`` of offset ->
timestamp. Both structures see the same operations; memory is what
``tracemalloc`` traces while they run (the peak, so temporaries count), divided
by the number of offsets in flight.

Scenarios, each on a window of ``window`` offsets in flight:

``in_order``
    every offset taken, then acked one by one in offset order;
``random``
    every offset taken, then acked one by one in random order, except
    ``failure_rate`` of them (at random positions) which fail and stay pending;
``batches``
    what the pipeline does: offsets taken in batches, each batch's acks applied
    as ranges (the batch minus its ``failure_rate`` failures, which stay pending).
"""

from __future__ import annotations

import gc
import random
import tracemalloc
from typing import Any, Callable, Dict, List, Tuple

from storm_kafka_compat.offsets.ranges import OffsetRanges

#: first offset of the window (large, so no int object is shared with small-int caches)
BASE_OFFSET = 1_000_000_000
#: a timestamp in ms (Storm's map value)
BASE_TIME_MS = 1_700_000_000_000


def _traced(run: Callable[[], Any]) -> Tuple[int, int]:
    """(peak, retained) bytes allocated by ``run()``; the result is kept alive
    until the retained size has been read."""
    gc.collect()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        kept = run()
        after, peak = tracemalloc.get_traced_memory()
        del kept
        return peak - before, after - before
    finally:
        if started:
            tracemalloc.stop()


def _plan(scenario: str, window: int, failure_rate: float, batch: int,
          seed: int) -> Tuple[List[int], List[Tuple[int, int]], int]:
    """Ack order (random/in_order), batch ranges (batches) and the failure count."""
    rng = random.Random(seed)
    failures = int(round(window * failure_rate)) if scenario != "in_order" else 0
    failed = set(rng.sample(range(window), failures)) if failures else set()
    order: List[int] = [i for i in range(window) if i not in failed]
    if scenario == "random":
        rng.shuffle(order)
    return order, [(s, min(window, s + batch)) for s in range(0, window, batch)], failures


def _ranges_run(scenario: str, order: List[int], batches: List[Tuple[int, int]],
                failed: List[int], window: int) -> Callable[[], Any]:
    def run() -> Any:
        pending = OffsetRanges()
        if scenario == "batches":
            holes = iter(sorted(failed))
            hole = next(holes, None)
            for start, end in batches:
                pending.add_range(BASE_OFFSET + start, BASE_OFFSET + end)
                cur = start
                while hole is not None and hole < end:
                    pending.remove_range(BASE_OFFSET + cur, BASE_OFFSET + hole)
                    cur = hole + 1
                    hole = next(holes, None)
                pending.remove_range(BASE_OFFSET + cur, BASE_OFFSET + end)
        else:
            pending.add_range(BASE_OFFSET, BASE_OFFSET + window)
            remove = pending.remove
            for i in order:
                remove(BASE_OFFSET + i)
        return pending
    return run


def _map_run(scenario: str, order: List[int], batches: List[Tuple[int, int]],
             window: int) -> Callable[[], Any]:
    from sortedcontainers import SortedDict

    acked = set(order)

    def run() -> Any:
        pending = SortedDict()
        if scenario == "batches":
            for start, end in batches:
                for i in range(start, end):
                    pending[BASE_OFFSET + i] = BASE_TIME_MS + i
                for i in range(start, end):
                    if i in acked:
                        del pending[BASE_OFFSET + i]
        else:
            for i in range(window):
                pending[BASE_OFFSET + i] = BASE_TIME_MS + i
            for i in order:
                del pending[BASE_OFFSET + i]
        return pending
    return run


def pending_memory(scenario: str, *, window: int = 100_000, failure_rate: float = 0.01,
                   batch: int = 10_000, seed: int = 7) -> Dict[str, Any]:
    """Bytes per in-flight offset of both structures for one scenario.

    Returns
    -------
    dict
        ``window``, ``failures``, ``in_flight`` (most offsets pending at once:
        the window, or for ``batches`` one batch plus the failures waiting),
        ``ranges_peak_bytes``, ``map_peak_bytes``,
        ``ranges_bytes_per_offset``, ``map_bytes_per_offset`` (peak / in_flight),
        ``ranges_retained_bytes``/``map_retained_bytes`` (what is left holding the
        failed offsets) and ``map_over_ranges`` (ratio of the peaks).
    """
    if scenario not in ("in_order", "random", "batches"):
        raise ValueError(f"unknown scenario {scenario!r}; use in_order, random or batches")
    order, batches, failures = _plan(scenario, window, failure_rate, batch, seed)
    failed = sorted(set(range(window)) - set(order))
    if scenario == "batches":   # one batch in flight plus the failures waiting for retry
        in_flight = max((e - s) + sum(1 for f in failed if f < s) for s, e in batches)
    else:
        in_flight = window
    r_peak, r_kept = _traced(_ranges_run(scenario, order, batches, failed, window))
    m_peak, m_kept = _traced(_map_run(scenario, order, batches, window))
    return {
        "window": window, "failures": failures, "in_flight": in_flight,
        "ranges_peak_bytes": r_peak, "map_peak_bytes": m_peak,
        "ranges_retained_bytes": r_kept, "map_retained_bytes": m_kept,
        "ranges_bytes_per_offset": r_peak / in_flight,
        "map_bytes_per_offset": m_peak / in_flight,
        "map_over_ranges": m_peak / r_peak if r_peak else float("inf"),
    }
