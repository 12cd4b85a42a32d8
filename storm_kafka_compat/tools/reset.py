"""``offsets reset``: plan new offsets for the spout's documents, write them on request.

Targets (every offset is the next offset to read):

=================  =============================================================
``earliest``       Kafka's log start offset
``latest``         Kafka's log end offset
``offset N``       ``N`` for every selected partition
``datetime T``     the first message at or after ``T`` (epoch ms; ListOffsets by
                   timestamp); when no message is that recent, the log end
``shift N``        the stored offset + ``N`` (negative to go back); a partition
                   without a stored offset is refused
=================  =============================================================

Rules, chosen to match kafka-consumer-groups and Storm's read rules:

* a target outside ``[log start, log end]`` is **clamped** to the nearest end,
  with a notice in the plan (kafka-consumer-groups does the same);
* Storm reads an ``offset`` of 0 as "no state" and starts at
  ``startOffsetTime``. A target of 0 is therefore written only when
  ``startOffsetTime`` is ``-2`` (earliest; the log then starts at 0 so a start
  lands on 0 anyway) and refused otherwise;
* the document keeps the stored ``topology.id`` and ``topology.name`` (a
  Storm topology with ``ignoreZkOffsets=true`` would otherwise discard it)
  unless a topology id is given; a partition without a document gets that id,
  else ``topology.id`` from CONFIG, else the id a run would use;
* documents are written only with ``execute``, all in one batched write, and
  only when their bytes change; a plan with refused partitions is not
  executed at all.

The plan exports as the ``topic,partition,offset`` CSV (no header) that
``kafka-consumer-groups --reset-offsets --from-file`` reads.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Literal, Optional, Tuple, get_args

from storm_kafka_compat.config import EARLIEST_TIME, NO_OFFSET, Broker
from storm_kafka_compat.errors import ConfigError, ResetRefusedError
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.tools import PartitionState, ToolEnv, select_partitions

log = logging.getLogger(__name__)

#: what ``offsets reset`` moves to (``--to-earliest``, ``--to-latest``, ``--to-offset N``,
#: ``--to-datetime T``, ``--shift-by N``)
ResetMode = Literal["earliest", "latest", "offset", "datetime", "shift"]
MODES: Tuple[ResetMode, ...] = get_args(ResetMode)
PLAN_COLUMNS = ("TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "DIFFERENCE",
                "LOG-START-OFFSET", "LOG-END-OFFSET", "TOPOLOGY-ID", "NOTE")


@dataclass(frozen=True)
class ResetSpec:
    """What to reset to: ``mode`` in :data:`MODES`; ``value`` is the offset
    (``offset``), epoch milliseconds (``datetime``) or the shift (``shift``)."""

    mode: ResetMode
    value: Optional[int] = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"reset mode {self.mode!r} is unknown; use one of "
                              f"{', '.join(MODES)}", value=self.mode, allowed=MODES)
        if self.mode in ("offset", "datetime", "shift") and self.value is None:
            raise ConfigError(f"reset mode {self.mode!r} needs a value", value=self.mode)
        if self.mode == "offset" and self.value is not None and self.value < 0:
            raise ConfigError(f"--to-offset {self.value} is negative; give a next offset "
                              "to read >= 0", key="--to-offset", value=self.value)


@dataclass
class ResetEntry:
    """The plan for one partition."""

    topic: str
    partition: int
    zk_path: str
    current: Optional[int]
    target: Optional[int]
    log_start: Optional[int]
    log_end: Optional[int]
    topology_id: str
    notes: List[str] = field(default_factory=list)
    refused: Optional[str] = None
    document: Optional[bytes] = None
    changes: bool = False

    @property
    def difference(self) -> Optional[int]:
        if self.target is None or self.current is None:
            return None
        return self.target - self.current

    def as_dict(self) -> Dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "zk_path": self.zk_path,
                "current_offset": self.current, "new_offset": self.target,
                "difference": self.difference, "log_start_offset": self.log_start,
                "log_end_offset": self.log_end, "topology_id": self.topology_id,
                "notes": list(self.notes), "refused": self.refused,
                "changes": self.changes,
                "document": self.document.decode("utf-8") if self.document else None}

    def table_row(self) -> Dict[str, Any]:
        note = self.refused and f"REFUSED: {self.refused}" or "; ".join(self.notes)
        return {"TOPIC": self.topic, "PARTITION": self.partition,
                "CURRENT-OFFSET": self.current, "NEW-OFFSET": self.target,
                "DIFFERENCE": self.difference, "LOG-START-OFFSET": self.log_start,
                "LOG-END-OFFSET": self.log_end, "TOPOLOGY-ID": self.topology_id,
                "NOTE": note}


@dataclass
class ResetPlan:
    """Every partition's entry; ``executed``/``written`` after :func:`execute_reset`."""

    spec: ResetSpec
    entries: List[ResetEntry]
    executed: bool = False
    written: int = 0

    @property
    def refused(self) -> List[ResetEntry]:
        return [e for e in self.entries if e.refused]

    def as_dict(self) -> Dict[str, Any]:
        return {"mode": self.spec.mode, "value": self.spec.value, "executed": self.executed,
                "written": self.written, "partitions": [e.as_dict() for e in self.entries]}


def parse_datetime(text: str) -> int:
    """Epoch milliseconds of ``text``: an integer (epoch ms) or an ISO 8601
    date-time (``2024-05-01T12:00:00``, ``...Z``, ``...+02:00``); a date-time
    without a zone is UTC.

    Raises
    ------
    ConfigError
        Naming the value and the accepted forms.
    """
    value = text.strip()
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    iso = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        parsed = datetime.fromisoformat(iso)
    except ValueError:
        raise ConfigError(f"--to-datetime {text!r} is not a date-time; use ISO 8601 such as "
                          "2024-05-01T12:00:00 (UTC), 2024-05-01T12:00:00+02:00, or epoch "
                          "milliseconds", key="--to-datetime", value=text) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


def _wanted(env: ToolEnv, spec: ResetSpec, state: PartitionState,
            entry: ResetEntry) -> Optional[int]:
    assert state.log_start is not None and state.log_end is not None
    if spec.mode == "earliest":
        return state.log_start
    if spec.mode == "latest":
        return state.log_end
    if spec.mode == "offset":
        return spec.value
    if spec.mode == "datetime":
        assert spec.value is not None
        found = env.offset_for(state.topic, state.partition, spec.value)
        if found == NO_OFFSET or found < 0:
            entry.notes.append("no message at or after the time: log end")
            return state.log_end
        return found
    # shift
    if state.stored_offset is None:
        entry.refused = "no stored offset to shift; use --to-offset or --to-earliest"
        return None
    assert spec.value is not None
    return state.stored_offset + spec.value


def plan_reset(env: ToolEnv, spec: ResetSpec, *, partitions: Optional[str] = None,
               topology_id: Optional[str] = None) -> ResetPlan:
    """Plan a reset (nothing is written).

    Parameters
    ----------
    env : ToolEnv
    spec : ResetSpec
    partitions : str, optional
        ``--partitions`` list (see :func:`~storm_kafka_compat.tools.select_partitions`).
    topology_id : str, optional
        Write this ``topology.id`` instead of keeping the stored one.
    """
    from storm_kafka_compat.runtime import topology_instance_id
    infos = select_partitions(env.partitions(), partitions)
    states = env.states(infos)
    default_id = topology_id or env.job.topology.id or topology_instance_id(env.job)
    start_time = env.job.spout.start_offset_time
    entries: List[ResetEntry] = []
    for s in states:
        tid = topology_id or s.stored_topology_id or default_id
        e = ResetEntry(topic=s.topic, partition=s.partition, zk_path=s.zk_path,
                       current=s.stored_offset, target=None, log_start=s.log_start,
                       log_end=s.log_end, topology_id=tid)
        entries.append(e)
        if s.stored is not None and s.stored.problem is not None:
            e.notes.append(f"stored document unusable ({s.stored.problem}); it is replaced")
        wanted = _wanted(env, spec, s, e)
        if wanted is None:
            continue
        assert s.log_start is not None and s.log_end is not None
        target = wanted
        if target < s.log_start:
            e.notes.append(f"{wanted} is below the log start: clamped to {s.log_start}")
            target = s.log_start
        elif target > s.log_end:
            e.notes.append(f"{wanted} is beyond the log end: clamped to {s.log_end}")
            target = s.log_end
        e.target = target
        if target <= 0:
            if start_time != EARLIEST_TIME:
                e.refused = (f"Storm reads offset {target} as no state and would start at "
                             f"startOffsetTime {start_time}; set startOffsetTime -2 or choose "
                             "a target >= 1")
                continue
            e.notes.append("offset 0 is 'no state' to Storm: a start uses startOffsetTime -2, "
                           "i.e. the log start")
        fields = s.stored_fields
        broker = fields["broker"]
        leader: Broker = s.info.leader
        host, port = (broker["host"], broker["port"]) if broker else (leader.host, leader.port)
        e.document = encode_document(
            topology_id=tid, topology_name=fields["topology_name"] or env.job.topology.name,
            offset=target, partition=s.partition, broker_host=host,
            broker_port=port if 0 <= port <= 65535 else 0, topic=s.topic)
        e.changes = s.stored is None or s.stored.data != e.document
    return ResetPlan(spec=spec, entries=entries)


def execute_reset(env: ToolEnv, plan: ResetPlan) -> ResetPlan:
    """Write the plan's changed documents in one batched write.

    Raises
    ------
    ResetRefusedError
        Some partitions are refused; nothing is written.
    """
    if plan.refused:
        names = ", ".join(f"{e.topic}/{e.partition} ({e.refused})" for e in plan.refused)
        raise ResetRefusedError(f"reset refused for {names}; nothing was written. Fix the "
                                "target or leave those partitions out with --partitions")
    docs = {e.zk_path: e.document for e in plan.entries if e.changes and e.document is not None}
    if docs:
        env.store.write_many(docs)
    for path in docs:
        log.info("reset wrote %s", path)
    plan.executed = True
    plan.written = len(docs)
    return plan


def export_csv(plan: ResetPlan) -> str:
    """The plan as ``topic,partition,offset`` lines (kafka-consumer-groups
    ``--from-file``); refused partitions are left out."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for e in plan.entries:
        if e.target is not None and not e.refused:
            writer.writerow([e.topic, e.partition, e.target])
    return buf.getvalue()

