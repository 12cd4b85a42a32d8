"""The source's positions: Spark's offset maps, batch ends capped by the trigger
limits (pure), and :class:`ZkPositions`, the driver-side partitions, start
decisions and document writes over the job's runtime.
"""

from __future__ import annotations

import logging
import threading
from typing import Dict, Mapping, Optional, Sequence, Unpack

from storm_kafka_compat.config import EARLIEST_TIME, LATEST_TIME, JobConfig
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.spout.startup import StartDecision, decide_start, outside_log
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.runtime import Runtime, RuntimeParts
from storm_kafka_compat.spout.assignment import Assignment
from storm_kafka_compat.structs import TopicPartition


log = logging.getLogger(__name__)

#: Spark offsets of this source: ``{"topic": {"0": next offset, ...}}`` (Spark's
#: KafkaSourceOffset JSON form)
OffsetMap = Dict[str, Dict[str, int]]


# --- offset arithmetic (pure) ---------------------------------------------------------------

def to_offset_map(positions: Mapping[TopicPartition, int]) -> OffsetMap:
    """``{(topic, p): n}`` -> Spark's JSON form ``{"topic": {"p": n}}``."""
    out: OffsetMap = {}
    for (topic, partition), offset in sorted(positions.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def from_offset_map(offsets: Optional[Mapping[str, Mapping[str, int]]]
                    ) -> Dict[TopicPartition, int]:
    """Spark's JSON form -> ``{(topic, p): n}``."""
    return {TopicPartition(topic, int(p)): int(o) for topic, parts in (offsets or {}).items()
            for p, o in parts.items()}


def cap_ends(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int], *,
             max_rows: Optional[int] = None,
             per_partition: Optional[int] = None) -> Dict[TopicPartition, int]:
    """Batch end per partition: the log end, capped.

    ``per_partition`` caps each partition's share; ``max_rows`` caps the total,
    split over the partitions in proportion to their backlog as Spark's Kafka
    source does (a partition with a backlog gets at least one offset, so a
    small partition never starves; the total may then exceed ``max_rows`` by
    at most the number of partitions). Ends never go below starts.
    """
    out: Dict[TopicPartition, int] = {}
    backlog: Dict[TopicPartition, int] = {}
    for key, end in ends.items():
        start = starts.get(key, end)
        n = max(0, end - start)
        if per_partition is not None:
            n = min(n, per_partition)
        backlog[key] = n
    total = sum(backlog.values())
    for key, n in backlog.items():
        start = starts.get(key, ends[key])
        if max_rows is not None and total > max_rows and n > 0:
            n = max(1, int(n * max_rows / total))
        out[key] = start + n
    return out


def batch_positions(max_offsets: Mapping[TopicPartition, int]) -> Dict[TopicPartition, int]:
    """Highest offset read per partition -> the next offset to read (the document offset)."""
    return {key: int(o) + 1 for key, o in max_offsets.items()}


# --- ZooKeeper positions (driver side) -----------------------------------------------------

class ZkPositions:
    """Partitions, start decisions and document writes for one job (driver side).

    Parameters
    ----------
    job : JobConfig
    runtime : Runtime, optional
        The job's store, Kafka access and discovery; built from ``job`` and
        ``parts`` (``store``, ``kafka_factory``, ``topology_id``,
        ``registry_reader``) when omitted, and then closed by :meth:`close`.
    """

    def __init__(self, job: JobConfig, *, runtime: Optional[Runtime] = None,
                 **parts: Unpack[RuntimeParts]) -> None:
        self.job = job
        self._owns_runtime = runtime is None
        self.runtime = runtime if runtime is not None else Runtime(job, **parts)
        self.store = self.runtime.store
        self.kafka = self.runtime.kafka
        self.topology_id = self.runtime.topology_id
        # the discovery's partitions, re-asked every refreshFreqSecs; no managers here
        self.assignment = Assignment(self.runtime.discovery(), manager_factory=self._learn)
        self.decisions: Dict[TopicPartition, StartDecision] = {}
        self._lock = threading.Lock()

    def _learn(self, info: PartitionInfo) -> PartitionInfo:
        self.kafka.learn(info.leader)
        return info

    def partitions(self, now_ms: Optional[int] = None) -> Dict[TopicPartition, PartitionInfo]:
        """The partitions the discovery finds (refreshed every ``refreshFreqSecs``)."""
        import time
        self.assignment.maybe_refresh(int(time.monotonic() * 1000) if now_ms is None else now_ms)
        return dict(self.assignment.managed())

    def path(self, info: PartitionInfo) -> str:
        return self.runtime.zk_path(info)

    def start_offset(self, info: PartitionInfo) -> int:
        """storm-kafka's start-up decision for ``info``, kept to the log's range.

        A start beyond the log end (topic re-created) moves to the end, one
        below the log start moves to the start; both are logged at WARN.
        """
        path = self.path(info)
        stored = self.store.read(path)
        decision = decide_start(
            stored, topology_id=self.topology_id, config=self.job.spout,
            offset_for=lambda t: self.kafka.offset_for(info.topic, info.partition, t), where=path,
            topic=info.topic, partition=info.partition)
        log.info("%s/%d at %s: %s", info.topic, info.partition, path, decision.reason)
        self.decisions[info.key] = decision
        start = decision.start_offset
        earliest = self.kafka.offset_for(info.topic, info.partition, EARLIEST_TIME)
        latest = self.kafka.offset_for(info.topic, info.partition, LATEST_TIME)
        # the spout meets such a start at its first fetch (OFFSET_OUT_OF_RANGE) and
        # moves as outside_log says; a Spark source must plan valid ranges, so the
        # same rule is applied here before the first batch
        outside = outside_log(start, earliest, latest)
        if outside is not None and outside.moves_to is not None:
            log.warning("%s/%d: %s", info.topic, info.partition, outside.note)
            start = outside.moves_to
        elif start < 0:
            start = latest
        return start

    def log_ends(self, infos: Sequence[PartitionInfo]) -> Dict[TopicPartition, int]:
        """Kafka's log end (high watermark) per partition, asked in one go."""
        ends = self.kafka.log_ends([i.key for i in infos])
        return {i.key: ends[i.key] for i in infos}

    def document(self, info: PartitionInfo, offset: int) -> bytes:
        return encode_document(topology_id=self.topology_id, topology_name=self.job.topology.name,
                               offset=offset, partition=info.partition,
                               broker_host=info.leader.host, broker_port=info.leader.port,
                               topic=info.topic)

    def write(self, positions: Mapping[TopicPartition, int]) -> Dict[TopicPartition, int]:
        """Write the documents for ``positions`` (next offsets to read).

        A document is written only when it changes, and a document this
        topology id wrote is never moved backwards (Spark's late ``commit()``
        must not undo a sink-side write). Returns what was written.
        """
        with self._lock:
            infos = self.partitions()
            paths = {key: self.path(infos[key]) for key in positions if key in infos}
            stored_docs = self.store.read_many(list(paths.values()))
            docs: Dict[str, bytes] = {}
            written: Dict[TopicPartition, int] = {}
            for key, offset in sorted(positions.items()):
                info = infos.get(key)
                if info is None:
                    log.warning("%s/%d is not assigned any more; its position %d is not "
                                "written", key[0], key[1], offset)
                    continue
                path = paths[key]
                stored = stored_docs.get(path)
                if stored is not None and stored.offset is not None and (
                        stored.offset == offset or (stored.offset > offset and
                                                    stored.topology_id == self.topology_id)):
                    continue
                docs[path] = self.document(info, offset)
                written[key] = offset
            if docs:
                self.store.write_many(docs)
                log.info("wrote %d documents: %s", len(docs), written)
            return written

    def close(self) -> None:
        self.assignment.release()
        if self._owns_runtime:
            self.runtime.close()
