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
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from storm_kafka_compat.config import Broker
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.ownership import OwnershipGuard
from storm_kafka_compat.spout.manager import PartitionManager
from storm_kafka_compat.spout.spout import Spout
from storm_kafka_compat.spout.startup import StartDecision, decide_start

log = logging.getLogger(__name__)
#: one line per partition at start: where it resumes and why (shown by the CLI)
decisions = logging.getLogger("storm_kafka_compat.decisions")


class ZkDocuments:
    """The :class:`~storm_kafka_compat.spout.spout.OffsetPolicy` of storm-kafka's KafkaSpout."""

    store_name = "ZooKeeper"
    commits_on_revoke = True

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.job = runtime.job
        self.store = runtime.store
        self.commit_interval_ms = runtime.job.spout.state_update_interval_ms
        #: detects another job writing our documents: one pipelined read of the
        #: documents we wrote last, per commit
        self.ownership = OwnershipGuard(runtime.topology_id)

    @property
    def conflicts(self) -> int:
        return self.ownership.conflicts

    def start(self, spout: Spout, info: PartitionInfo) -> Tuple[StartDecision, PartitionManager]:
        path = self.runtime.location(info)
        stored = self.store.read(path)
        kafka = self.runtime.kafka
        decision = decide_start(
            stored, topology_id=self.runtime.topology_id, config=self.job.spout,
            offset_for=lambda t: kafka.offset_for(info.topic, info.partition, t), where=path)
        decisions.info("%s/%d at %s: %s", info.topic, info.partition, path, decision.reason)
        return decision, PartitionManager(
            info.topic, info.partition, decision.start_offset, config=self.job.spout,
            location=path, leader=info.leader, clock=spout.clock, storm_conf=spout.storm_conf())

    def document(self, pm: Any, offset: int) -> bytes:
        leader = pm.leader or Broker("", -1)
        return encode_document(topology_id=self.runtime.topology_id,
                               topology_name=self.job.topology.name, offset=offset,
                               partition=pm.partition, broker_host=leader.host,
                               broker_port=leader.port, topic=pm.topic)

    def write(self, due: Sequence[Tuple[Any, int]]) -> int:
        docs = {pm.location: self.document(pm, off) for pm, off in due}
        for conflict in self.ownership.check(self.store, docs):
            log.error("%s", conflict.message)
        trips = self.store.write_many(docs)
        self.ownership.wrote(docs)
        return int(trips)

    def storm_conf(self) -> Dict[str, Any]:
        return {}

    def kafka_offset_metric(self, spout: Spout, offset_for: Callable[[str, int, int], int]
                            ) -> Optional[Dict[str, int]]:
        return None

    def close(self) -> None:
        """Nothing of its own: the store is the runtime's."""


def legacy_spout(runtime: Any, *, clock: Optional[Callable[[], int]] = None,
                 task_index: int = 0, total_tasks: int = 1) -> Spout:
    """The spout of storm-kafka's KafkaSpout over ``runtime``."""
    return Spout(runtime, ZkDocuments(runtime), clock=clock, task_index=task_index,
                 total_tasks=total_tasks)
