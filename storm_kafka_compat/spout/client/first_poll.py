"""Where a newly assigned partition starts: storm-kafka-client's ``doSeek``.

The rule since STORM-2844 (1.0.6, 1.1.2, 1.2.0 and 2.x):

* no committed offset: ``EARLIEST``/``UNCOMMITTED_EARLIEST`` start at the log
  start, ``LATEST``/``UNCOMMITTED_LATEST`` at the log end;
* a committed offset written by *this* topology (its commit metadata names
  this topology id, or this spout already committed the partition under
  AT_LEAST_ONCE): resume there, whatever the strategy;
* a committed offset written by anyone else (another topology id, metadata
  that is not storm-kafka-client's JSON, a migration tool's empty metadata):
  ``EARLIEST``/``LATEST`` override it, the ``UNCOMMITTED_*`` strategies resume
  there.

A resumed offset outside the log (deleted by retention, or beyond the end) is
resolved by the consumer's ``auto.offset.reset`` (``earliest`` unless set).

This module is pure.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Final, Literal, Mapping, Optional, Tuple

from storm_kafka_compat.config.kafka_spout import (EARLIEST, LATEST, STRATEGIES,
                                                 UNCOMMITTED_EARLIEST, FirstPollStrategy,
                                                 OffsetReset)
from storm_kafka_compat.errors import NoOffsetResetError

log = logging.getLogger(__name__)

#: the strategies of a (non-Trident) KafkaSpout are read at config time
#: (:mod:`storm_kafka_compat.config.kafka_spout`)

#: the decision names (``offsets explain``-style)
Decision = Literal["resume", "resume_foreign", "first_poll_strategy", "no_commit",
                   "out_of_range"]
RESUME: Final = "resume"                  # our own commit
RESUME_FOREIGN: Final = "resume_foreign"  # someone else's commit, UNCOMMITTED_* strategy
STRATEGY: Final = "first_poll_strategy"   # EARLIEST/LATEST over someone else's commit
NO_COMMIT: Final = "no_commit"            # nothing committed for the group
OUT_OF_RANGE: Final = "out_of_range"      # committed offset outside the log: auto.offset.reset


@dataclass(frozen=True)
class CommitMetadata:
    """storm-kafka-client's ``CommitMetadata``: who made a commit."""

    topology_id: str
    task_id: int
    thread_name: str

    def to_json(self) -> str:
        """Compact JSON with the keys in Jackson's order (the Java spout reads it)."""
        return json.dumps({"topologyId": self.topology_id, "taskId": self.task_id,
                           "threadName": self.thread_name}, separators=(",", ":"))

    @classmethod
    def parse(cls, text: Optional[str]) -> Optional["CommitMetadata"]:
        """Parse commit metadata; None when it is not storm-kafka-client's JSON
        (empty, a 1.1.1-and-earlier string, another tool's metadata)."""
        if not text:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, Mapping):
            return None
        tid = data.get("topologyId")
        task = data.get("taskId")
        if not isinstance(tid, str) or isinstance(task, bool) or not isinstance(task, int):
            return None
        thread = data.get("threadName")
        return cls(tid, task, thread if isinstance(thread, str) else "")


@dataclass(frozen=True)
class FirstPollDecision:
    """The start of one partition: ``start_offset`` is the next offset to read."""

    decision: Decision
    start_offset: int
    reason: str
    committed: Optional[int] = None
    metadata: Optional[str] = None


def committed_by_this_topology(metadata: Optional[str], topology_id: str, *,
                               already_committed: bool = False) -> bool:
    """storm-kafka-client's ``isOffsetCommittedByThisTopology``."""
    if already_committed:
        return True
    parsed = CommitMetadata.parse(metadata)
    return parsed is not None and parsed.topology_id == topology_id


def decide_first_poll(strategy: FirstPollStrategy,
                      committed: Optional[Tuple[int, Optional[str]]], *,
                      topology_id: str, earliest: int, latest: int,
                      auto_offset_reset: OffsetReset = "earliest", already_committed: bool = False,
                      where: str = "") -> FirstPollDecision:
    """The start offset of a newly assigned partition.

    Parameters
    ----------
    strategy : FirstPollStrategy
        One of :data:`STRATEGIES`.
    committed : (offset, metadata) or None
        The group's committed offset (next offset to read) and metadata.
    topology_id : str
        This topology's id (compared with the metadata's ``topologyId``).
    earliest, latest : int
        Log start and end offsets.
    auto_offset_reset : OffsetReset
        ``earliest``, ``latest`` or ``none``: what a committed offset outside
        ``[earliest, latest]`` becomes.
    already_committed : bool
        This spout instance already committed the partition (AT_LEAST_ONCE).
    where : str
        The partition, for messages.

    Raises
    ------
    NoOffsetResetError
        The committed offset is outside the log and ``auto_offset_reset`` is ``none``.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown firstPollOffsetStrategy {strategy!r}")
    if committed is None:
        if strategy in (EARLIEST, UNCOMMITTED_EARLIEST):
            return FirstPollDecision(NO_COMMIT, earliest,
                                     f"no committed offset; {strategy}: log start {earliest}")
        return FirstPollDecision(NO_COMMIT, latest,
                                 f"no committed offset; {strategy}: log end {latest}")
    offset, metadata = committed
    ours = committed_by_this_topology(metadata, topology_id, already_committed=already_committed)
    if not ours:
        if CommitMetadata.parse(metadata) is None:
            log.warning("%s: commit metadata %r is not storm-kafka-client's JSON (expected once "
                        "per partition after an older spout, a migration tool or another "
                        "consumer committed); treating the commit as another writer's",
                        where, metadata)
        if strategy == EARLIEST:
            return FirstPollDecision(STRATEGY, earliest,
                                     f"offset {offset} committed by another writer; EARLIEST: "
                                     f"log start {earliest}", offset, metadata)
        if strategy == LATEST:
            return FirstPollDecision(STRATEGY, latest,
                                     f"offset {offset} committed by another writer; LATEST: "
                                     f"log end {latest}", offset, metadata)
    who = "this topology" if ours else "another writer"
    if offset < earliest or offset > latest:
        policy = auto_offset_reset
        if policy == "none":
            raise NoOffsetResetError(
                f"{where}: committed offset {offset} is outside the log [{earliest}, {latest}] "
                "and auto.offset.reset is none; set auto.offset.reset to earliest or latest, "
                "or reset the group's offset", offset=offset)
        target = latest if policy == "latest" else earliest
        return FirstPollDecision(OUT_OF_RANGE, target,
                                 f"offset {offset} committed by {who} is outside the log "
                                 f"[{earliest}, {latest}]; auto.offset.reset={policy}: {target}",
                                 offset, metadata)
    decision: Decision = RESUME if ours else RESUME_FOREIGN
    return FirstPollDecision(decision, offset,
                             f"resuming at offset {offset} committed by {who}"
                             + ("" if ours else f" ({strategy})"), offset, metadata)
