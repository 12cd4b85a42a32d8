"""``offsets migrate``: ZooKeeper offsets to and from Kafka consumer-group offsets.

What storm-kafka-migration did (ZooKeeper documents to a Kafka group), in both
directions and without its gaps (reference section C.5):

* a dry run unless executed, with a per-partition report: moved, unchanged
  (the target already holds the offset) or skipped, and why;
* a group with active members is refused (their commits would race ours);
* a range check against the log: an offset below the log start (deleted) or
  beyond the log end (topic re-created) is skipped, never copied blindly;
* Kafka commits carry storm-kafka-client's metadata
  ``{"topologyId":..,"taskId":..,"threadName":..}`` instead of an empty string;
* only the partitions the spout reads are moved (the coordinator's list), not
  whatever children sit under ``zkRoot/id``.

Both sides hold the next offset to read, so numbers are copied unchanged.

The ZooKeeper side has two layouts (``layout``):

``storm``
    storm-kafka's documents at the spout's paths. Written documents keep the
    stored ``topology.id`` (else the id in the Kafka commit metadata, else the
    configured or run id) so Storm resumes from them.
``kafka08``
    the Kafka 0.8 high-level consumer's ``/consumers/<group>/offsets/<topic>/<p>``
    (plain decimal text). It lives in Kafka's ZooKeeper: ``hosts.zk`` for
    ZkHosts, else the offset store's servers. With ``owners`` the persistent
    ``/consumers/<group>/owners/<topic>`` node is created too: ConsumerOffsetChecker
    and ``kafka-consumer-groups --zookeeper`` list a group's topics from it. The
    per-partition owner entries are ephemeral nodes of live consumers in Kafka;
    they are not written (a node left behind would block a real consumer's claim).

Storm reads a document offset of 0 as "no state" (start at ``startOffsetTime``):
such a move into the ``storm`` layout is done only with ``startOffsetTime`` -2,
otherwise skipped.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from storm_kafka_compat.config import EARLIEST_TIME, JobConfig, ZkHosts
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.errors import ActiveGroupError
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.store import DocumentStore, GroupStore
from storm_kafka_compat.structs import Committed
from storm_kafka_compat.structs import TopicPartition
from storm_kafka_compat.tools import PartitionState, ToolEnv, select_partitions

log = logging.getLogger(__name__)

LAYOUTS = ("storm", "kafka08")
TO_KAFKA = "to-kafka"
FROM_KAFKA = "from-kafka"
#: ``threadName`` of the commit metadata written by this tool
THREAD_NAME = "storm-kafka-compat-migrate"
REPORT_COLUMNS = ("TOPIC", "PARTITION", "SOURCE", "TARGET", "SOURCE-OFFSET",
                  "TARGET-OFFSET", "LOG-START-OFFSET", "LOG-END-OFFSET", "ACTION", "REASON")

MOVE, UNCHANGED, SKIP = "move", "unchanged", "skip"


def kafka08_offsets_path(group: str, topic: str, partition: int) -> str:
    """``/consumers/<group>/offsets/<topic>/<partition>``."""
    return f"/consumers/{group}/offsets/{topic}/{partition}"


def kafka08_owners_path(group: str, topic: str) -> str:
    """``/consumers/<group>/owners/<topic>`` (the topic list lag tools read)."""
    return f"/consumers/{group}/owners/{topic}"


def parse_kafka08_offset(data: bytes) -> Optional[int]:
    """The offset of a Kafka 0.8 offsets znode (plain decimal), None if malformed."""
    text = data.decode("utf-8", errors="replace").strip()
    return int(text) if re.fullmatch(r"\d+", text) else None


def commit_metadata(topology_id: str, task_id: int = 0, thread_name: str = THREAD_NAME) -> str:
    """storm-kafka-client's commit metadata JSON (its key order, compact)."""
    return json.dumps({"topologyId": topology_id, "taskId": task_id, "threadName": thread_name},
                      separators=(",", ":"))


def metadata_topology_id(metadata: Optional[str]) -> Optional[str]:
    """``topologyId`` of storm-kafka-client commit metadata, None if absent."""
    try:
        value = json.loads(metadata or "")
    except ValueError:
        return None
    tid = value.get("topologyId") if isinstance(value, dict) else None
    return tid if isinstance(tid, str) and tid else None


@dataclass
class MigrateEntry:
    """One partition of a migration."""

    topic: str
    partition: int
    source: str
    target: str
    source_offset: Optional[int]
    target_offset: Optional[int]
    log_start: Optional[int]
    log_end: Optional[int]
    action: str = SKIP
    reason: str = ""
    metadata: Optional[str] = None
    payload: Optional[bytes] = None

    @property
    def key(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def as_dict(self) -> Dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "source": self.source,
                "target": self.target, "source_offset": self.source_offset,
                "target_offset": self.target_offset, "log_start_offset": self.log_start,
                "log_end_offset": self.log_end, "action": self.action, "reason": self.reason,
                "metadata": self.metadata}

    def table_row(self) -> Dict[str, Any]:
        return {"TOPIC": self.topic, "PARTITION": self.partition, "SOURCE": self.source,
                "TARGET": self.target, "SOURCE-OFFSET": self.source_offset,
                "TARGET-OFFSET": self.target_offset,
                "LOG-START-OFFSET": self.log_start, "LOG-END-OFFSET": self.log_end,
                "ACTION": self.action, "REASON": self.reason}


@dataclass
class MigratePlan:
    """A migration: direction, group, layout and every partition's entry."""

    direction: str
    group: str
    layout: str
    zk_group: Optional[str]
    entries: List[MigrateEntry]
    active_members: List[str] = field(default_factory=list)
    owners: bool = False
    executed: bool = False
    moved: int = 0

    @property
    def to_move(self) -> List[MigrateEntry]:
        return [e for e in self.entries if e.action == MOVE]

    def as_dict(self) -> Dict[str, Any]:
        return {"direction": self.direction, "group": self.group, "layout": self.layout,
                "zk_group": self.zk_group, "active_members": list(self.active_members),
                "executed": self.executed, "moved": self.moved,
                "partitions": [e.as_dict() for e in self.entries]}


def kafka08_store(env: ToolEnv) -> Tuple[DocumentStore, bool]:
    """The store holding the Kafka 0.8 layout and whether the caller must close it:
    Kafka's ZooKeeper (``hosts.zk``) for ZkHosts, else the offset store."""
    hosts = env.job.spout.hosts
    if not isinstance(hosts, ZkHosts):
        return env.store, False
    from storm_kafka_compat.offsets.zkstore import ZkStateStore
    t = env.job.topology
    store = ZkStateStore(hosts.broker_zk_str, session_timeout_ms=t.zookeeper_session_timeout_ms,
                         connection_timeout_ms=t.zookeeper_connection_timeout_ms,
                         retry_times=t.zookeeper_retry_times,
                         retry_interval_ms=t.zookeeper_retry_interval_ms,
                         auth=t.zookeeper_auth)
    return store, True


def _default_topology_id(job: JobConfig, override: Optional[str]) -> str:
    from storm_kafka_compat.runtime import topology_instance_id
    return override or job.topology.id or topology_instance_id(job)


def _range_problem(offset: int, s: PartitionState) -> Optional[str]:
    assert s.log_start is not None and s.log_end is not None
    if offset < s.log_start:
        return (f"offset {offset} is below the log start {s.log_start} (deleted by retention); "
                "reset the source first")
    if offset > s.log_end:
        return (f"offset {offset} is beyond the log end {s.log_end} (topic re-created or "
                "truncated?); reset the source first")
    return None


def plan_migrate(env: ToolEnv, *, direction: str, group: str, groups: GroupStore,
                 layout: str = "storm", zk_group: Optional[str] = None,
                 zk08: Optional[DocumentStore] = None, topology_id: Optional[str] = None,
                 partitions: Optional[str] = None, owners: bool = False) -> MigratePlan:
    """Plan a migration (nothing is written).

    Parameters
    ----------
    env : ToolEnv
    direction : ``"to-kafka"`` or ``"from-kafka"``
    group : str
        The Kafka consumer group.
    groups : GroupStore
        ``read_many``, ``write_many``, ``active_members`` of ``group``.
    layout : ``"storm"`` or ``"kafka08"``
        The ZooKeeper side's layout.
    zk_group : str, optional
        The Kafka 0.8 group name in ZooKeeper (``kafka08``); default ``group``.
    zk08 : store, optional
        Store holding the ``kafka08`` layout (see :func:`kafka08_store`).
    topology_id : str, optional
        ``topologyId`` of the commit metadata / ``topology.id`` of new documents.
    partitions : str, optional
        Restrict to these partitions (``--partitions`` syntax).
    owners : bool
        With ``kafka08`` as the target, also create ``/consumers/<g>/owners/<topic>``.
    """
    _check_migrate_options(direction, layout, owners)
    zk_group = (zk_group or group) if layout == "kafka08" else None
    states = env.states(select_partitions(env.partitions(), partitions))
    if zk_group is None:
        zk_side = _storm_side(states)
    else:
        zk_side = _kafka08_side(states, zk_group, zk08 if zk08 is not None else env.store)
    committed = groups.read_many([s.key for s in states])
    active = list(groups.active_members()) if direction == TO_KAFKA else []
    entries = [_migrate_entry(env.job, s, direction, group, layout, zk_side[s.key],
                              committed.get(s.key), topology_id) for s in states]
    return MigratePlan(direction=direction, group=group, layout=layout, zk_group=zk_group,
                       entries=entries, active_members=active, owners=owners)


def _check_migrate_options(direction: str, layout: str, owners: bool) -> None:
    if direction not in (TO_KAFKA, FROM_KAFKA):
        raise ConfigError(f"direction {direction!r} must be {TO_KAFKA} or {FROM_KAFKA}",
                          value=direction)
    if layout not in LAYOUTS:
        raise ConfigError(f"--layout {layout!r} is unknown; use storm or kafka08",
                          key="--layout", value=layout, allowed=LAYOUTS)
    if owners and not (layout == "kafka08" and direction == FROM_KAFKA):
        raise ConfigError("--owners applies only to --from-kafka-group with --layout kafka08",
                          key="--owners", value=True)


@dataclass(frozen=True)
class _ZkPosition:
    """The ZooKeeper side of a partition: where its offset lives, the offset (None
    when there is none), and why not."""

    path: str
    offset: Optional[int]
    problem: Optional[str] = None


def _storm_side(states: List[PartitionState]) -> Dict[TopicPartition, _ZkPosition]:
    """storm-kafka's documents, as the tools read them."""
    out = {}
    for s in states:
        if s.stored is None:
            out[s.key] = _ZkPosition(s.zk_path, None, "no document")
        elif s.stored.problem is not None:
            out[s.key] = _ZkPosition(s.zk_path, None,
                                     f"document rejected ({s.stored.problem})")
        else:
            out[s.key] = _ZkPosition(s.zk_path, s.stored_offset)
    return out


def _kafka08_side(states: List[PartitionState], zk_group: str, zk08: DocumentStore
                  ) -> Dict[TopicPartition, _ZkPosition]:
    """The Kafka 0.8 consumer's offsets nodes (plain decimal text), one pipelined read."""
    paths = {s.key: kafka08_offsets_path(zk_group, s.topic, s.partition) for s in states}
    raw = zk08.read_many(list(paths.values())) if paths else {}
    out = {}
    for key, path in paths.items():
        doc = raw.get(path)
        if doc is None:
            out[key] = _ZkPosition(path, None, "no offsets node")
            continue
        offset = parse_kafka08_offset(doc.data)
        out[key] = _ZkPosition(path, offset, None if offset is not None else
                               f"offsets node holds {doc.text[:40]!r}, not a decimal")
    return out


def _migrate_entry(job: JobConfig, s: PartitionState, direction: str, group: str, layout: str,
                   zk: _ZkPosition, kafka_now: Optional[Committed],
                   topology_id: Optional[str]) -> MigrateEntry:
    """One partition's entry: what moves where, or why not."""
    kafka_side = f"kafka:{group}"
    kafka_offset = kafka_now[0] if kafka_now else None
    if direction == TO_KAFKA:
        e = MigrateEntry(s.topic, s.partition, zk.path, kafka_side, zk.offset, kafka_offset,
                         s.log_start, s.log_end)
    else:
        e = MigrateEntry(s.topic, s.partition, kafka_side, zk.path, kafka_offset, zk.offset,
                         s.log_start, s.log_end)
    src = e.source_offset
    if src is None:
        e.reason = ((zk.problem or "no offset") if direction == TO_KAFKA
                    else f"group {group!r} has no commit for it")
        return e
    problem = _range_problem(src, s)
    if problem:
        e.reason = problem
    elif direction == TO_KAFKA:
        _plan_commit(e, src, kafka_now, topology_id or s.stored_topology_id
                     or _default_topology_id(job, None))
    elif layout == "kafka08":
        _plan_offsets_node(e, src)
    else:
        _plan_document(e, job, s, src, kafka_now, topology_id)
    return e


def _plan_commit(e: MigrateEntry, src: int, kafka_now: Optional[Committed],
                 topology_id: str) -> None:
    """Into the group: the offset with storm-kafka-client's commit metadata."""
    e.metadata = commit_metadata(topology_id)
    if kafka_now is not None and kafka_now == (src, e.metadata):
        e.action, e.reason = UNCHANGED, "the group already holds this offset"
    elif e.target_offset == src:
        # same offset, other metadata: the first-poll rule reads the metadata
        # (EARLIEST/LATEST resume only this topology's commits), so rewrite it
        e.action = MOVE
        e.reason = (f"the group holds this offset with metadata {kafka_now[1]!r} "
                    if kafka_now and kafka_now[1] else
                    "the group holds this offset without metadata ") + \
            "; rewritten with the document's topology id"
    else:
        e.action, e.reason = MOVE, "" if src > 0 else (
            "note: Storm itself reads a stored 0 as no state")


def _plan_offsets_node(e: MigrateEntry, src: int) -> None:
    """Into the Kafka 0.8 layout: the offset as decimal text."""
    e.payload = str(src).encode("ascii")
    if e.target_offset == src:
        e.action, e.reason = UNCHANGED, "the offsets node already holds this offset"
    else:
        e.action = MOVE


def _plan_document(e: MigrateEntry, job: JobConfig, s: PartitionState, src: int,
                   kafka_now: Optional[Committed], topology_id: Optional[str]) -> None:
    """Into storm-kafka's document, byte for byte as Storm writes it."""
    start_time = job.spout.start_offset_time
    if src <= 0 and start_time != EARLIEST_TIME:
        e.reason = (f"Storm reads offset {src} as no state and would start at "
                    f"startOffsetTime {start_time}; not written")
        return
    fields = s.stored_fields
    tid = (topology_id or s.stored_topology_id
           or metadata_topology_id(kafka_now[1] if kafka_now else None)
           or _default_topology_id(job, None))
    broker = fields["broker"]
    host, port = ((broker["host"], broker["port"]) if broker
                  else (s.info.leader.host, s.info.leader.port))
    e.payload = encode_document(
        topology_id=tid, topology_name=fields["topology_name"] or job.topology.name,
        offset=src, partition=s.partition, broker_host=host,
        broker_port=port if 0 <= port <= 65535 else 0, topic=s.topic)
    if s.stored is not None and s.stored.data == e.payload:
        e.action, e.reason = UNCHANGED, "the document already holds this offset"
    else:
        e.action = MOVE
        if src <= 0:
            e.reason = "note: Storm reads 0 as no state and starts at the log start"


def execute_migrate(env: ToolEnv, plan: MigratePlan, *, groups: GroupStore,
                    zk08: Optional[DocumentStore] = None) -> MigratePlan:
    """Carry out ``plan``'s moves.

    Raises
    ------
    ActiveGroupError
        ``to-kafka`` and the group has active members (nothing written).
    """
    moves = plan.to_move
    if plan.direction == TO_KAFKA:
        if plan.active_members:
            raise ActiveGroupError(
                f"Kafka consumer group {plan.group!r} has {len(plan.active_members)} active "
                "member(s); stop its consumers before migrating offsets into it",
                group_id=plan.group, members=plan.active_members)
        if moves:
            groups.write_many({e.key: (int(e.source_offset), e.metadata or "")  # type: ignore[arg-type]
                           for e in moves})
    else:
        store = zk08 if (plan.layout == "kafka08" and zk08 is not None) else env.store
        docs = {e.target: e.payload for e in moves if e.payload is not None}
        if plan.owners and plan.zk_group:
            for topic in sorted({e.topic for e in plan.entries}):
                path = kafka08_owners_path(plan.zk_group, topic)
                if store.children(path) is None:
                    docs[path] = b""
        if docs:
            store.write_many(docs)
    for e in moves:
        log.info("migrated %s/%d offset %s from %s to %s", e.topic, e.partition,
                 e.source_offset, e.source, e.target)
    plan.executed = True
    plan.moved = len(moves)
    return plan


GroupFactory = Callable[[List[str], str], Any]
