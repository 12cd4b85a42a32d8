"""Operator tools: lag, explain, reset, migrate.

Each tool is a function that takes a :class:`ToolEnv` (the job's
:class:`~storm_kafka_compat.runtime.Runtime`: offset store, Kafka access and
partition list, exactly as the pipeline has them)
and returns plain data; the CLI (``storm_kafka_compat.cli.offsets_cmd``) only
parses options, calls them and renders the result.

Two offset stores, as in the pipeline:

* ZooKeeper documents (the legacy spout; the default): partitions from the
  pipeline's discovery, one :class:`PartitionState` per partition;
* a Kafka consumer group (``kafkaSpout.offsetStore: kafka``, the
  storm-kafka-client spout): partitions from the
  :class:`~storm_kafka_compat.discovery.topics.TopicsDiscovery` the
  storm-kafka-client spout uses, the group's commits through
  :class:`~storm_kafka_compat.kafka.groups.KafkaGroupOffsets`, one
  :class:`GroupPartitionState` per partition (:meth:`ToolEnv.group_states`).

* :mod:`.lag` -- committed offset, log start/end and lag per partition
  (storm-kafka-monitor's JSON, kafka-consumer-groups' columns);
* :mod:`.explain` -- what a start would do, through the pipeline's own
  :func:`~storm_kafka_compat.spout.startup.decide_start`;
* :mod:`.reset` -- plan and write new offsets (dry run unless executed);
* :mod:`.migrate` -- ZooKeeper documents to and from Kafka consumer-group
  offsets, and the Kafka 0.8 ZooKeeper consumer layout.

Every offset is the next offset to read.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from storm_kafka_compat.spout.client.first_poll import CommitMetadata
from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.offsets.document import StoredDocument, document_fields
from storm_kafka_compat.runtime import Runtime
from storm_kafka_compat.structs import TopicPartition

log = logging.getLogger(__name__)



class _OnePartition:
    """``topic``, ``partition`` and ``key`` of a state holding a PartitionInfo ``info``."""

    info: PartitionInfo

    @property
    def topic(self) -> str:
        return self.info.topic

    @property
    def partition(self) -> int:
        return self.info.partition

    @property
    def key(self) -> TopicPartition:
        return self.info.key


@dataclass
class PartitionState(_OnePartition):
    """One partition as the tools see it.

    ``stored`` is the document read from ``zk_path`` (None: no node);
    ``log_start``/``log_end`` are Kafka's earliest and latest offsets (None
    when Kafka was not asked).
    """

    info: PartitionInfo
    zk_path: str
    stored: Optional[StoredDocument]
    log_start: Optional[int] = None
    log_end: Optional[int] = None

    @property
    def stored_offset(self) -> Optional[int]:
        """The document's ``offset`` when it is an integer (whatever else is wrong)."""
        return self.stored.offset if self.stored is not None else None

    @property
    def stored_topology_id(self) -> Optional[str]:
        return self.stored.topology_id if self.stored is not None else None

    @property
    def stored_fields(self) -> Dict[str, Any]:
        """``topic``, ``partition``, ``broker``, ``topology_name`` of the document."""
        return document_fields(self.stored.parsed if self.stored is not None else None)


@dataclass
class GroupPartitionState(_OnePartition):
    """One partition of a Kafka-store job as the tools see it.

    ``committed`` is what the group holds, as
    :meth:`~storm_kafka_compat.kafka.groups.KafkaGroupOffsets.committed`
    returns it: ``(offset, metadata)`` with ``offset`` the next offset to
    read, or None when the group has no commit for the partition.
    ``log_start``/``log_end`` are Kafka's earliest and latest offsets (None
    when Kafka was not asked).
    """

    info: PartitionInfo
    group: str
    committed: Optional[Tuple[int, str]]
    log_start: Optional[int] = None
    log_end: Optional[int] = None

    @property
    def committed_offset(self) -> Optional[int]:
        """The committed next offset to read, None without a commit."""
        return self.committed[0] if self.committed is not None else None

    @property
    def metadata(self) -> Optional[str]:
        """The commit's metadata string (``""`` when empty or dropped by the
        broker), None without a commit."""
        return self.committed[1] if self.committed is not None else None

    @property
    def commit_metadata(self) -> Optional[CommitMetadata]:
        """The metadata parsed as storm-kafka-client's, None when absent or not
        its JSON (a migration tool, a 1.1.1-and-earlier string, another consumer)."""
        return CommitMetadata.parse(self.metadata)

    @property
    def committed_topology_id(self) -> Optional[str]:
        """``topologyId`` of the commit metadata, None when absent or unparsable."""
        parsed = self.commit_metadata
        return parsed.topology_id if parsed is not None else None

    @property
    def location(self) -> str:
        """``<group>:<topic>-<partition>``, the location the spout gives the partition."""
        return f"{self.group}:{self.topic}-{self.partition}"


class ToolEnv(Runtime):
    """What every tool needs: the job's :class:`~storm_kafka_compat.runtime.Runtime`
    (the same store, Kafka access and discovery the pipeline builds) plus reads of
    every partition's stored position and log range.

    Built as a Runtime is (``ToolEnv(job, store=..., kafka=..., registry_reader=...,
    groups=...)``). The ZooKeeper store is built for every job (``offsets migrate``
    reads the documents of a Kafka-store CONFIG that also names them); it connects
    only when used.
    """

    def group_states(self, infos: Optional[List[PartitionInfo]] = None, *,
                     with_log: bool = True) -> List[GroupPartitionState]:
        """Read the group's committed offset of every partition (one OffsetFetch)
        and, with ``with_log``, Kafka's log start and end."""
        infos = self.partitions() if infos is None else infos
        group = self.group_id
        assert group is not None
        found = self.group_offsets().read_many([i.key for i in infos]) if infos else {}
        out = [GroupPartitionState(i, group, found.get(i.key)) for i in infos]
        if with_log:
            for s in out:
                s.log_start = self.offset_for(s.topic, s.partition, EARLIEST_TIME)
                s.log_end = self.offset_for(s.topic, s.partition, LATEST_TIME)
        return out

    def states(self, infos: Optional[List[PartitionInfo]] = None, *,
               with_log: bool = True) -> List[PartitionState]:
        """Read every partition's document (one pipelined read) and, with
        ``with_log``, Kafka's log start and end."""
        infos = self.partitions() if infos is None else infos
        paths = [self.zk_path(i) for i in infos]
        docs = self.store.read_many(paths) if paths else {}
        out = [PartitionState(i, p, docs.get(p)) for i, p in zip(infos, paths)]
        if with_log:
            for s in out:
                s.log_start = self.offset_for(s.topic, s.partition, EARLIEST_TIME)
                s.log_end = self.offset_for(s.topic, s.partition, LATEST_TIME)
        return out

    def refuse_if_owned(self, what: str, paths: List[str], *, watch_s: float,
                        sleep: Callable[[float], None] = time.sleep) -> None:
        """Before ``what`` writes ``paths``: refuse while a job owns the spout's documents
        (its ownership record, :mod:`storm_kafka_compat.offsets.ownership`) or while
        any of ``paths`` changes within a watch of ``watch_s`` seconds (a writer
        without a record: a Storm topology still committing).

        Raises
        ------
        ResetRefusedError
            Naming the job, or the documents that moved; nothing was written.
        """
        from storm_kafka_compat.errors import ResetRefusedError
        from storm_kafka_compat.offsets.ownership import owners_refusal, read_owners
        from storm_kafka_compat.offsets.paths import spout_root
        spout = self.job.spout
        if spout.zk_root is not None and spout.id is not None:
            refusal = owners_refusal(read_owners(self.store, spout_root(spout.zk_root,
                                                                        spout.id)), what)
            if refusal is not None:
                raise ResetRefusedError(refusal)
        if watch_s <= 0 or not paths:
            return
        before = document_versions(self.store, paths)
        sleep(watch_s)
        after = document_versions(self.store, paths)
        moved = [p for p in paths if before.get(p) != after.get(p)]
        if moved:
            shown = ", ".join(moved[:3]) + (f" and {len(moved) - 3} more" if len(moved) > 3
                                            else "")
            raise ResetRefusedError(
                f"{what} refused: {len(moved)} document(s) changed during a {watch_s:g} s "
                f"watch ({shown}): a writer is still at work (a Storm topology, or a job "
                "without an ownership record), and would write its own offsets over the new "
                "ones. Stop it first (storm deactivate, wait, storm kill), or add --force")

    def __enter__(self) -> "ToolEnv":
        return self


def document_versions(store: Any, paths: List[str]) -> Dict[str, Optional[int]]:
    """Each document's version (grows by one per write; None: no node), in one
    pipelined read: compare two readings to see whether someone writes."""
    found = store.read_many_stat(paths) if paths else {}
    return {p: (v[1].version if v is not None else None) for p, v in found.items()}


def select_partitions(infos: List[PartitionInfo], spec: Optional[str]) -> List[PartitionInfo]:
    """Keep the partitions named by ``spec``.

    Parameters
    ----------
    spec : str or None
        Comma-separated items, each ``N``, ``N-M`` (inclusive range) or
        ``TOPIC:N``/``TOPIC:N-M`` (wildcard subscriptions); None keeps all.

    Raises
    ------
    ConfigError
        An item is malformed or names a partition the spout does not read.
    """
    from storm_kafka_compat.errors import ConfigError
    if spec is None:
        return list(infos)
    known = {i.key for i in infos}
    topics = sorted({i.topic for i in infos})
    wanted: List[Tuple[Optional[str], int]] = []
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        topic: Optional[str] = None
        numbers = item
        if ":" in item:
            topic, numbers = item.rsplit(":", 1)
        try:
            if "-" in numbers:
                lo, hi = (int(x) for x in numbers.split("-", 1))
                rng = range(lo, hi + 1)
            else:
                rng = range(int(numbers), int(numbers) + 1)
        except ValueError:
            raise ConfigError(f"--partitions item {item!r} is not N, N-M or TOPIC:N; "
                              "give e.g. 0,2,5-7", key="--partitions", value=spec) from None
        if not rng:
            raise ConfigError(f"--partitions range {item!r} is empty; write the lower "
                              "number first", key="--partitions", value=spec)
        wanted.extend((topic, n) for n in rng)
    out: List[PartitionInfo] = []
    for topic, n in wanted:
        matches = [i for i in infos if i.partition == n and (topic is None or i.topic == topic)]
        if not matches:
            name = f"{topic}:{n}" if topic else str(n)
            raise ConfigError(
                f"--partitions names {name}, which the spout does not read (topics "
                f"{', '.join(topics) or 'none'}, partitions "
                f"{', '.join(f'{t}:{p}' for t, p in sorted(known)) or 'none'}); fix the list",
                key="--partitions", value=spec)
        for m in matches:
            if m not in out:
                out.append(m)
    return sorted(out, key=lambda i: (i.topic, i.partition))


def describe_broker(value: Any) -> Optional[str]:
    """``host:port`` of a broker dict or Broker, None when unknown."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return f"{value.get('host')}:{value.get('port')}"
    host, port = getattr(value, "host", None), getattr(value, "port", None)
    if not host or port is None or port < 0:
        return None
    return f"{host}:{port}"


Progress = Callable[[str], None]
