"""storm-kafka's offset policy: ZooKeeper documents and PartitionManager.

A partition starts where storm-kafka's start-up decision puts it
(:func:`~storm_kafka_compat.spout.startup.decide_start`, on the document at
``zkRoot/id/[topic/]partition_N``); commits write every changed document in
one batched write, after one pipelined read that detects another job writing
this job's documents (the ownership guard; Storm never checked). A partition
that goes away is committed first (Storm's ``close()``).
"""

from __future__ import annotations

import logging
from typing import Dict, Optional, Sequence, Tuple

from storm_kafka_compat.config import Broker, JobConfig
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.kafka.client import KafkaAccess
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.ownership import OwnershipGuard
from storm_kafka_compat.offsets.paths import document_path
from storm_kafka_compat.offsets.store import DocumentStore
from storm_kafka_compat.spout.manager import PartitionManager
from storm_kafka_compat.spout.spout import Spout
from storm_kafka_compat.spout.startup import StartDecision, decide_start
from storm_kafka_compat.spout.state import PartitionState
from storm_kafka_compat.structs import TopicPartition

log = logging.getLogger(__name__)
#: one line per partition at start: where it resumes and why (shown by the CLI)
decisions = logging.getLogger("storm_kafka_compat.decisions")


class ZkDocuments:
    """The :class:`~storm_kafka_compat.spout.spout.OffsetPolicy` of storm-kafka's KafkaSpout.

    Parameters
    ----------
    job : JobConfig
    store : DocumentStore
        Where the documents are read and written (the runtime's; not closed here).
    kafka : KafkaAccess
        Log offsets for the start-up decision.
    topology_id : str
        Written into every document.
    """

    store_name = "ZooKeeper"
    commits_on_revoke = True

    def __init__(self, job: JobConfig, store: DocumentStore, kafka: KafkaAccess,
                 topology_id: str) -> None:
        self.job = job
        self.store = store
        self.kafka = kafka
        self.topology_id = topology_id
        self.commit_interval_ms = job.spout.state_update_interval_ms
        #: detects another job writing our documents: one pipelined read of the
        #: documents we wrote last, per commit
        self.ownership = OwnershipGuard(topology_id)

    @property
    def conflicts(self) -> int:
        return self.ownership.conflicts

    def start(self, spout: Spout, info: PartitionInfo) -> Tuple[StartDecision, PartitionManager]:
        path = document_path(self.job.spout.zk_root, self.job.spout.id, info.partition,
                             info.path_topic)
        stored = self.store.read(path)
        kafka = self.kafka
        decision = decide_start(
            stored, topology_id=self.topology_id, config=self.job.spout,
            offset_for=lambda t: kafka.offset_for(info.topic, info.partition, t), where=path,
            topic=info.topic, partition=info.partition)
        decisions.info("%s/%d at %s: %s", info.topic, info.partition, path, decision.reason)
        return decision, PartitionManager(
            info.topic, info.partition, decision.start_offset, config=self.job.spout,
            location=path, leader=info.leader, clock=spout.clock, storm_conf=spout.storm_conf())

    def document(self, pm: PartitionState, offset: int) -> bytes:
        leader = pm.leader or Broker("", -1)
        return encode_document(topology_id=self.topology_id,
                               topology_name=self.job.topology.name, offset=offset,
                               partition=pm.partition, broker_host=leader.host,
                               broker_port=leader.port, topic=pm.topic)

    def write(self, due: Sequence[Tuple[PartitionState, int]]) -> int:
        docs = {pm.location: self.document(pm, off) for pm, off in due}
        for conflict in self.ownership.check(self.store, docs):
            log.error("%s", conflict.message)
        trips = self.store.write_many(docs)
        self.ownership.wrote(docs)
        return int(trips)

    def storm_conf(self) -> Dict[str, object]:
        return {}

    def kafka_offset_metric(self, managers: Dict[TopicPartition, PartitionState]
                            ) -> Optional[Dict[str, int]]:
        return None

    def close(self) -> None:
        """Nothing of its own: the store is the runtime's."""
