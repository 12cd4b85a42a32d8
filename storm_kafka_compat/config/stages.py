"""Which bolts of a topology share a Spark stage, from their groupings alone: read at
config time (the migration traps of ``config check``/``convert``) and by the driver's
stage layout (:mod:`storm_kafka_compat.executor.stage_tasks`).

This module is pure.
"""

from __future__ import annotations

from typing import AbstractSet, Dict, Mapping, Sequence, Tuple

__all__ = ["CROSSING_GROUPINGS", "SHUFFLES", "stage_levels"]


#: groupings that need the tuples of every partition in one place, or send a tuple
#: to a task picked by the emitter or by user code
CROSSING_GROUPINGS = ("fields", "global", "all", "partial_key", "direct", "custom")
#: the groupings routed as a shuffle: every task of a stage is local to the Spark task
SHUFFLES = ("shuffle", "local_or_shuffle", "none")


def stage_levels(order: Sequence[str], inputs: Mapping[str, Sequence[Tuple[str, str]]],
                 spout: str, hosted: AbstractSet[str] = frozenset()
                 ) -> Tuple[Dict[str, int], Dict[str, bool]]:
    """Each bolt's stage and whether it is fed across stages (its tasks then live in
    bolt hosts, one instance per task: :mod:`storm_kafka_compat.executor.hosts`).

    Parameters
    ----------
    order : sequence of str
        The bolts, each after the bolts it reads.
    inputs : mapping
        Bolt -> its ``(source, grouping kind)`` subscriptions.
    spout : str
        The spout's name.
    hosted : set of str
        Bolts that start a stage whatever their grouping (they take ticks or windows).

    Stage 0 holds the bolts reachable from the spout through shuffles only (they run in
    the fetching Spark task); a crossing grouping (:data:`CROSSING_GROUPINGS`) starts a
    new stage. Pure: the stage layout on the driver and the migration traps of ``config
    check``/``convert`` both read it.
    """
    level: Dict[str, int] = {}
    for name in order:
        lv = 0
        for source, kind in inputs.get(name, ()):
            src = 0 if source == spout else level.get(source, 0)
            lv = max(lv, src + (1 if kind in CROSSING_GROUPINGS or name in hosted else 0))
        level[name] = lv
    crossing = {name: level[name] > 0 and any(
        (0 if source == spout else level.get(source, 0)) < level[name]
        for source, _kind in inputs.get(name, ())) for name in order}
    return level, crossing
