"""``offsets show``: committed offset, log start and end, and lag per partition.

The committed offset is the ``offset`` of the partition's ZooKeeper document
(the next offset to process) when it is a JSON integer, read as
storm-kafka-monitor reads it (its ``--old-spout`` mode reads only ``offset``).

Two renderings:

* :func:`monitor_json`: exactly storm-kafka-monitor's document,
  ``{topic: {"<partition>": {"consumerCommittedOffset", "logHeadOffset",
  "lag"}}}``; a partition without a committed offset gets
  ``consumerCommittedOffset`` -1 and therefore ``lag`` = head + 1, as the
  monitor prints it (reference edge case 49);
* :data:`TABLE_COLUMNS` rows: kafka-consumer-groups column names, ``-`` for
  a missing value, the lag left empty when nothing is committed.

The lag is ``log end - committed`` (:func:`storm_kafka_compat.structs.lag`, the one
definition ``status`` and the progress line use too); it is negative when the stored
offset is beyond the log end (topic re-created or truncated).

For a Kafka-store job (``kafkaSpout.offsetStore: kafka``) the committed offset
is the consumer group's (what storm-kafka-monitor reads for the
storm-kafka-client spout) and ``TOPOLOGY-ID`` is the ``topologyId`` of the
commit metadata (``-`` when absent or not storm-kafka-client's JSON); the
table has :data:`GROUP_TABLE_COLUMNS`, the JSON is the same document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from storm_kafka_compat.spout.startup import BELOW_START, OutsideLog, outside_log
from storm_kafka_compat.structs import lag as offset_lag
from storm_kafka_compat.tools import GroupPartitionState, PartitionState, ToolEnv, describe_broker

#: table columns (kafka-consumer-groups names first, then ours)
TABLE_COLUMNS = ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-START-OFFSET", "LOG-END-OFFSET",
                 "LAG", "BROKER", "TOPOLOGY-ID", "ZK-PATH", "NOTE")
#: table columns of a Kafka-store job (kafka-consumer-groups' GROUP first)
GROUP_TABLE_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-START-OFFSET",
                       "LOG-END-OFFSET", "LAG", "TOPOLOGY-ID")
#: storm-kafka-monitor's value for "no committed offset"
NO_COMMIT = -1


@dataclass(frozen=True)
class LagRow:
    """Lag of one partition; offsets are next offsets to read.

    ``zk_path`` is None and ``group`` names the consumer group for a
    Kafka-store job; ``topology_id`` is then the commit metadata's.
    """

    topic: str
    partition: int
    zk_path: Optional[str]
    committed: Optional[int]
    log_start: Optional[int]
    log_end: Optional[int]
    broker: Optional[str]
    topology_id: Optional[str]
    problem: Optional[str]
    group: Optional[str] = None

    @property
    def outside(self) -> Optional[OutsideLog]:
        """Set when the committed offset is outside the log (a start would skip
        messages; see :func:`~storm_kafka_compat.spout.startup.outside_log`)."""
        return outside_log(self.committed, self.log_start, self.log_end)

    @property
    def note(self) -> Optional[str]:
        """The NOTE column: a committed offset outside the log, in a few words."""
        o = self.outside
        if o is None:
            return None
        if o.where == BELOW_START:
            return f"below log start: {o.skipped} deleted"
        return f"beyond log end: a start skips {o.skipped}"

    @property
    def lag(self) -> Optional[int]:
        """``log_end - committed``, None when either is unknown
        (:func:`storm_kafka_compat.structs.lag`)."""
        return offset_lag(self.log_end, self.committed)

    def table_row(self) -> Dict[str, Any]:
        return {"TOPIC": self.topic, "PARTITION": self.partition,
                "CURRENT-OFFSET": self.committed, "LOG-START-OFFSET": self.log_start,
                "LOG-END-OFFSET": self.log_end, "LAG": self.lag, "BROKER": self.broker,
                "TOPOLOGY-ID": self.topology_id, "ZK-PATH": self.zk_path, "NOTE": self.note}

    def group_table_row(self) -> Dict[str, Any]:
        """The row under :data:`GROUP_TABLE_COLUMNS`."""
        return {"GROUP": self.group, "TOPIC": self.topic, "PARTITION": self.partition,
                "CURRENT-OFFSET": self.committed, "LOG-START-OFFSET": self.log_start,
                "LOG-END-OFFSET": self.log_end, "LAG": self.lag,
                "TOPOLOGY-ID": self.topology_id}


def lag_row(state: PartitionState) -> LagRow:
    """The :class:`LagRow` of one partition state."""
    fields = state.stored_fields
    problem = state.stored.problem if state.stored is not None else None
    return LagRow(topic=state.topic, partition=state.partition, zk_path=state.zk_path,
                  committed=state.stored_offset, log_start=state.log_start,
                  log_end=state.log_end, broker=describe_broker(fields["broker"]),
                  topology_id=state.stored_topology_id, problem=problem)


def group_lag_row(state: GroupPartitionState) -> LagRow:
    """The :class:`LagRow` of one partition of a Kafka-store job."""
    return LagRow(topic=state.topic, partition=state.partition, zk_path=None,
                  committed=state.committed_offset, log_start=state.log_start,
                  log_end=state.log_end, broker=None,
                  topology_id=state.committed_topology_id, problem=None, group=state.group)


def total_row(rows: List[LagRow], columns: Sequence[str]) -> Dict[str, Any]:
    """The TOTAL row under ``columns`` (PARTITION ``all``): the lag summed over the
    partitions whose lag is known (how many are not is said)."""
    known = [r.lag for r in rows if r.lag is not None]
    unknown = len(rows) - len(known)
    out: Dict[str, Any] = {c: "" for c in columns}
    out["TOPIC"] = "TOTAL"
    out["PARTITION"] = "all"
    out["LAG"] = sum(known)
    if "NOTE" in out and unknown:
        out["NOTE"] = f"lag unknown for {unknown}"
    return out


def lag(env: ToolEnv) -> List[LagRow]:
    """Lag of every partition the spout reads, ordered by topic and partition:
    from the ZooKeeper documents, or the consumer group of a Kafka-store job."""
    if env.kafka_store:
        rows = [group_lag_row(s) for s in env.group_states()]
    else:
        rows = [lag_row(s) for s in env.states()]
    return sorted(rows, key=lambda r: (r.topic, r.partition))


def monitor_json(rows: List[LagRow]) -> Dict[str, Dict[str, Dict[str, int]]]:
    """storm-kafka-monitor's JSON document for ``rows``.

    Partition keys are strings; a partition with no committed offset reports
    ``consumerCommittedOffset`` -1 and ``lag`` = ``logHeadOffset + 1``.
    """
    out: Dict[str, Dict[str, Dict[str, int]]] = {}
    for r in rows:
        committed = NO_COMMIT if r.committed is None else r.committed
        head = r.log_end if r.log_end is not None else NO_COMMIT
        out.setdefault(r.topic, {})[str(r.partition)] = {
            "consumerCommittedOffset": committed,
            "logHeadOffset": head,
            "lag": head - committed,       # the monitor's -1 convention, not an unknown
        }
    return out
