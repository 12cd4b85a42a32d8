"""The start-up decision of storm-kafka 1.2.x ``PartitionManager``.

One function, :func:`decide_start`, used by the pipeline and by
``offsets explain``: given the stored document (or None), this job's topology id,
the SpoutConfig and a way to ask Kafka for an offset, it returns where the
partition starts and why.

Storm's rules (reference section 2.3):

1. No usable document (no node, or ``topology.id`` not a string, or ``offset``
   not an integer or negative) -> start at the ``startOffsetTime`` offset.
2. Stored id differs from ours and ``ignoreZkOffsets`` -> the ``startOffsetTime``
   offset. A different id without the flag is resumed (the migration path).
3. Otherwise the stored offset.
4. Then, if ``reference - start > maxOffsetBehind`` or ``start <= 0``, the start
   becomes the reference offset itself (not ``latest - maxOffsetBehind``, unless
   the opt-in ``max_offset_behind_reset_to_window`` is set). A stored offset of 0
   is "no state" (``no_state``), not a damaged document.

What Storm takes silently is said here: an unusable document (``invalid_state``,
or an error under ``corruptStatePolicy: fail``), a negative offset, and a
document whose ``topic``/``partition`` fields name another partition (resumed
from, as Storm does, with a warning; refused under ``fail``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, Final, Literal, Optional, Protocol, Tuple, get_args

from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, NO_OFFSET, SpoutConfig
from storm_kafka_compat.errors import CorruptStateError
from storm_kafka_compat.offsets.document import document_fields

log = logging.getLogger(__name__)

#: storm-kafka's start-up decisions (``offsets explain`` names them)
StartKind = Literal["resume", "no_state", "ignore_zk_offsets", "max_offset_behind",
                    "invalid_state"]
RESUME: Final = "resume"
NO_STATE: Final = "no_state"
IGNORE_ZK_OFFSETS: Final = "ignore_zk_offsets"
MAX_OFFSET_BEHIND: Final = "max_offset_behind"
INVALID_STATE: Final = "invalid_state"
DECISIONS: Tuple[StartKind, ...] = get_args(StartKind)


class StoredState(Protocol):
    """What the decision reads from a stored document
    (:class:`~storm_kafka_compat.offsets.document.StoredDocument`)."""

    @property
    def data(self) -> bytes: ...

    @property
    def topology_id(self) -> Optional[str]: ...

    @property
    def offset(self) -> Optional[int]: ...

    @property
    def problem(self) -> Optional[str]: ...

    @property
    def parsed(self) -> Any: ...


@dataclass(frozen=True)
class StartDecision:
    """Where a partition starts, and why.

    ``start_offset`` is the next offset to read. ``reference_offset`` is the
    ``startOffsetTime`` offset Kafka gave.
    """

    decision: StartKind
    start_offset: int
    reason: str
    reference_offset: int
    stored_offset: Optional[int] = None
    stored_topology_id: Optional[str] = None


def describe_time(start_offset_time: int) -> str:
    if start_offset_time == EARLIEST_TIME:
        return "startOffsetTime -2 (earliest)"
    if start_offset_time == LATEST_TIME:
        return "startOffsetTime -1 (latest)"
    return f"startOffsetTime {start_offset_time} (epoch ms)"


def decide_start(stored: Optional[StoredState], *, topology_id: str, config: SpoutConfig,
                 offset_for: Callable[[int], int], where: str = "",
                 topic: Optional[str] = None, partition: Optional[int] = None) -> StartDecision:
    """Decide the start offset of one partition exactly as storm-kafka 1.2.x does.

    Parameters
    ----------
    stored : StoredState or None
        The parsed document at the partition's path; None when there is no node.
    topology_id : str
        This job's topology id (compared with the stored one for ``ignoreZkOffsets``).
    config : SpoutConfig
    offset_for : callable(int) -> int
        Kafka's offset for a time: -2 earliest, -1 latest, else epoch ms; returns
        ``NO_OFFSET`` (-5) when Kafka has none.
    where : str
        Partition description for messages, e.g. the ZooKeeper path.
    topic, partition : optional
        The partition the document is read for: a document whose ``topic`` or
        ``partition`` field names another one (copied from another path) is
        resumed from as Storm does, with a warning, or refused under
        ``corruptStatePolicy: fail``.

    Raises
    ------
    CorruptStateError
        The document is unusable (or names another partition, or holds a negative
        offset) and ``corrupt_state_policy`` is ``"fail"``.
    """
    time_name = describe_time(config.start_offset_time)
    reference = offset_for(config.start_offset_time)
    stored_offset = stored.offset if stored is not None else None
    stored_id = stored.topology_id if stored is not None else None
    where = where or "the partition path"
    problem = stored.problem if stored is not None else None
    if problem is None and stored_offset is not None and stored_offset < 0:
        problem = f"offset {stored_offset} is negative"
    elsewhere = _names_another_partition(stored, topic, partition)

    decision: StartKind
    if stored is None:
        decision, start = NO_STATE, reference
        reason = f"no document; starting at the {time_name} offset {reference}"
    elif problem is not None:
        _refuse_under_fail(config, stored, where, problem)
        log.warning("stored document at %s is unusable (%s), bytes %r; starting at the %s "
                    "offset %d as Storm does (corruptStatePolicy: storm), so the partition is "
                    "read again from there. To stop instead set corruptStatePolicy: fail; to "
                    "resume elsewhere write the offset with `storm-kafka-compat offsets reset "
                    "CONFIG --to-offset N --execute`", where, problem, stored.data[:200],
                    time_name, reference)
        decision, start = INVALID_STATE, reference
        reason = (f"stored document rejected ({problem}); Storm treats it as no state: "
                  f"starting at the {time_name} offset {reference}")
    elif stored_id != topology_id and config.ignore_zk_offsets:
        decision, start = IGNORE_ZK_OFFSETS, offset_for(config.start_offset_time)
        reason = (f"stored topology id {stored_id!r} differs from ours {topology_id!r} and "
                  f"ignoreZkOffsets is true; starting at the {time_name} offset {start}")
    else:
        assert stored_offset is not None
        if elsewhere is not None:
            _refuse_under_fail(config, stored, where, elsewhere)
            log.warning("stored document at %s %s; resuming from its offset %d as Storm does "
                        "(Storm ignores these fields): check that it was not copied from "
                        "another partition's path, or set corruptStatePolicy: fail to refuse "
                        "such documents", where, elsewhere, stored_offset)
        decision, start = RESUME, stored_offset
        same = "our" if stored_id == topology_id else f"another topology's ({stored_id!r})"
        reason = f"resuming from {same} stored offset {stored_offset}"
        if elsewhere is not None:
            reason += f", although the document {elsewhere}"

    decision, start, reason = _sanity_reset(decision, start, reason, reference=reference,
                                            config=config, offset_for=offset_for,
                                            where=where, time_name=time_name)
    if start == NO_OFFSET:
        reason += " (Kafka returned no offset for this time: the first fetch will be out of range)"
    return StartDecision(decision=decision, start_offset=start, reason=reason,
                         reference_offset=reference, stored_offset=stored_offset,
                         stored_topology_id=stored_id)


def _sanity_reset(decision: StartKind, start: int, reason: str, *, reference: int,
                  config: SpoutConfig, offset_for: Callable[[int], int], where: str,
                  time_name: str) -> tuple[StartKind, int, str]:
    """Storm's checks after the first decision: too far behind, or at offset 0 or below.

    Returns the decision, start offset and reason, changed where a check applies.
    """
    # Storm's sanity reset, 64-bit semantics (Python ints do not overflow).
    if reference - start > config.max_offset_behind:
        if config.max_offset_behind_reset_to_window:
            latest = offset_for(LATEST_TIME)
            target = max(latest - config.max_offset_behind, 0)
            how = f"latest {latest} - maxOffsetBehind (opt-in deviation 6)"
        else:
            target, how = reference, f"the {time_name} offset"
        reason = (f"start {start} is {reference - start} behind the {time_name} offset "
                  f"{reference}, more than maxOffsetBehind {config.max_offset_behind}; "
                  f"resetting to {how} = {target}")
        decision, start = MAX_OFFSET_BEHIND, target
    elif start <= 0:
        if decision == RESUME:
            # offset 0 is what `offsets reset --to-earliest` writes for a log that starts
            # at 0: "no state" to Storm, not a damaged document
            decision = NO_STATE
            reason = (f"stored offset 0 counts as no state in Storm (a reset to the start of "
                      f"a log that begins at 0 writes it); starting at the {time_name} offset "
                      f"{reference}")
            if reference > 0 and config.start_offset_time != EARLIEST_TIME:
                log.warning("%s holds offset 0, which Storm reads as no state: starting at the "
                            "%s offset %d, so offsets 0-%d are not read; write the offset "
                            "you mean with `offsets reset` (or use startOffsetTime -2)", where,
                            time_name, reference, reference - 1)
        start = reference
    return decision, start, reason


def _refuse_under_fail(config: SpoutConfig, stored: StoredState, where: str,
                       problem: str) -> None:
    """Raise the CorruptStateError of ``corruptStatePolicy: fail`` for ``stored``."""
    if config.corrupt_state_policy != "fail":
        return
    raise CorruptStateError(
        f"stored document at {where} is unusable ({problem}): {stored.data[:200]!r}; fix or "
        "delete the node (or write an offset with `offsets reset`), or set "
        "corruptStatePolicy: storm to fall back as Storm does",
        zk_path=where, data=stored.data, reason=problem)


def _names_another_partition(stored: Optional[StoredState], topic: Optional[str],
                             partition: Optional[int]) -> Optional[str]:
    """"names partition 7 (topic 'x')" when the document's informational fields name
    another partition or topic than the one it is read for, else None."""
    if stored is None:
        return None
    fields = document_fields(stored.parsed)
    other = []
    if partition is not None and fields["partition"] is not None and \
            fields["partition"] != partition:
        other.append(f"partition {fields['partition']} (this is partition {partition})")
    if topic is not None and fields["topic"] is not None and fields["topic"] != topic:
        other.append(f"topic {fields['topic']!r} (this is {topic!r})")
    return "names " + " and ".join(other) if other else None


def stored_summary(stored: Optional[StoredState]) -> Any:
    """The parsed document for display, or None."""
    return getattr(stored, "parsed", None) if stored is not None else None


#: ``OutsideLog.where`` values
Outside = Literal["below_start", "beyond_end"]
BELOW_START: Final = "below_start"
BEYOND_END: Final = "beyond_end"


@dataclass(frozen=True)
class OutsideLog:
    """What a start at an offset outside the log ``[earliest, latest)`` would do.

    ``skipped`` is how many messages the start passes over: deleted by retention
    (below the log start), or in the log but never read (beyond the log end: the
    start moves to the log end, deviation 1). ``moves_to`` is where the first
    fetch lands, None when ``useStartOffsetTimeIfOffsetOutOfRange`` is false and
    the partition would fail every fetch instead (Storm's behaviour).
    """

    where: Outside
    offset: int
    earliest: int
    latest: int
    skipped: int
    moves_to: Optional[int]

    @property
    def note(self) -> str:
        """One sentence for an operator."""
        if self.where == BELOW_START:
            what = (f"offset {self.offset} is below the log start {self.earliest} (retention "
                    f"deleted {self.skipped} messages it had not processed)")
        else:
            what = (f"offset {self.offset} is beyond the log end {self.latest} (topic "
                    "re-created or log truncated)")
        if self.moves_to is None:
            return (f"{what}; useStartOffsetTimeIfOffsetOutOfRange is false, so every fetch "
                    "fails: move it with `offsets reset`")
        if self.where == BELOW_START:
            return f"{what}; a start moves to {self.moves_to}, counting them as lost"
        return (f"{what}; a start moves to {self.moves_to} and never reads the {self.skipped} "
                f"messages in [{self.earliest}, {self.latest}): `offsets reset --to-earliest` "
                "reads them")

    def as_dict(self) -> Dict[str, Any]:
        return {"where": self.where, "skipped": self.skipped, "moves_to": self.moves_to,
                "note": self.note}


def outside_log(offset: Optional[int], earliest: Optional[int], latest: Optional[int], *,
                use_start_offset_time: bool = True) -> Optional[OutsideLog]:
    """The :class:`OutsideLog` of a start at ``offset`` (the next offset to read),
    or None when it is inside ``[earliest, latest]`` or something is unknown.

    What a start does there is :meth:`PartitionManager.out_of_range
    <storm_kafka_compat.spout.manager.PartitionManager.out_of_range>`: below
    the start it moves to the log start, beyond the end to the log end.
    """
    if offset is None or earliest is None or latest is None or offset < 0:
        return None
    if offset < earliest:
        return OutsideLog(BELOW_START, offset, earliest, latest, earliest - offset,
                          earliest if use_start_offset_time else None)
    if offset > latest:
        return OutsideLog(BEYOND_END, offset, earliest, latest, max(0, latest - earliest),
                          latest if use_start_offset_time else None)
    return None
