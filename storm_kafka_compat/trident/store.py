"""The offset store of a topology moved from Trident's Kafka spouts.

``OpaqueTridentKafkaSpout``/``TransactionalTridentKafkaSpout`` keep their progress
under Trident's transactional state (:mod:`storm_kafka_compat.trident.state`), not
under ``zkRoot/id``. :class:`TridentStateStore` is the ZooKeeper store with one
difference: a partition without a storm-kafka document at ``zkRoot/id/partition_N``
reads as the document the Trident emitter would resume from (``offset`` =
``nextOffset`` of the highest txid below the coordinator's ``currtx``, ``topology.id``
= the Trident topology's id), so
``run``, ``offsets explain``/``show`` and the Structured Streaming source apply the
same start-up rules (``ignoreZkOffsets`` compares the topology id, as
``TridentKafkaEmitter.doEmitNewPartitionBatch`` does). Once the Spark job commits,
its own storm-kafka document is read first.

Enabled by ``topology.trident.txStateId`` (the ``newStream`` name); the root is
Storm's ``transactional.zookeeper.root`` (default ``/transactional``), in the same
ZooKeeper as the offset store.
"""

from __future__ import annotations

import logging
from typing import Dict, Iterable, Optional, Tuple

from storm_kafka_compat.config import SpoutConfig, TopologyConfig
from storm_kafka_compat.errors import ConfigError
from storm_kafka_compat.offsets.document import StoredDocument, encode_document, parse_document
from storm_kafka_compat.trident.state import (coordinator_path, last_batch, parse_current_tx,
                                              partition_dir)
from storm_kafka_compat.offsets.zkstore import ZkStateStore

logger = logging.getLogger(__name__)

__all__ = ["TridentStateStore"]


class TridentStateStore(ZkStateStore):
    """:class:`ZkStateStore` falling back to Trident's state per partition."""

    zk_root: str = ""
    spout_id: str = ""
    topic: str = ""
    wildcard: bool = False
    tx_state_id: str = ""
    transactional_root: str = "/transactional"
    trident_format: str = "storm-kafka"

    @classmethod
    def for_job(cls, spout: SpoutConfig, topology: TopologyConfig) -> "TridentStateStore":
        """The store of a job moved from Trident (``topology.trident.txStateId``): the
        ZooKeeper store :meth:`~ZkStateStore.from_config` builds, reading Trident's
        state where the job has no document yet."""
        if spout.zk_root is None or spout.id is None or topology.trident_tx_state_id is None:
            raise ConfigError("a job moved from Trident needs spout.zkRoot, spout.id and "
                              "topology.trident.txStateId", key="trident.txStateId",
                              value=topology.trident_tx_state_id)
        return cls.from_config(spout, topology).configure_trident(
            zk_root=spout.zk_root, spout_id=spout.id, topic=spout.topic,
            wildcard=topology.wildcard_match, tx_state_id=topology.trident_tx_state_id,
            transactional_root=topology.transactional_root)

    def configure_trident(self, *, zk_root: str, spout_id: str, topic: str, wildcard: bool,
                          tx_state_id: str, transactional_root: str) -> "TridentStateStore":
        self.zk_root, self.spout_id, self.topic = zk_root.rstrip("/"), spout_id, topic
        self.wildcard, self.tx_state_id = wildcard, tx_state_id
        self.transactional_root = transactional_root
        return self

    def _partition_of(self, path: str) -> Optional[Tuple[str, int]]:
        prefix = f"{self.zk_root}/{self.spout_id}/"
        if not path.startswith(prefix):
            return None
        rest = path[len(prefix):]
        topic, _, leaf = rest.rpartition("/")
        if not leaf.startswith("partition_") or not leaf[10:].isdigit():
            return None
        if bool(topic) != self.wildcard:
            return None
        return (topic or self.topic), int(leaf[10:])

    def trident_document(self, path: str) -> Optional[StoredDocument]:
        """The document the Trident emitter's state amounts to for ``path``, or None."""
        where = self._partition_of(path)
        if where is None:
            return None
        topic, partition = where
        tdir = partition_dir(self.transactional_root, self.tx_state_id, topic, partition,
                             wildcard=self.wildcard)
        names = self.children(tdir)
        if not names:
            return None
        cdoc = ZkStateStore.read(self, coordinator_path(self.transactional_root,
                                                        self.tx_state_id))
        current_tx = parse_current_tx(cdoc.data if cdoc is not None else None)
        txids = [n for n in names if n.isdigit() and (current_tx is None
                                                      or int(n) < current_tx)]
        if not txids:
            return None
        top = max(txids, key=int)
        doc = ZkStateStore.read(self, f"{tdir}/{top}")
        batch = last_batch({top: doc.data if doc is not None else None}, current_tx)
        if batch is None:
            logger.warning("Trident state at %s/%s cannot be resumed from: %r", tdir, top,
                           doc.data if doc is not None else None)
            return None
        broker = batch.broker or ("", 0)
        logger.info("%s/%s: no storm-kafka document; Trident state %s/%s says next offset %d",
                    topic, partition, tdir, top, batch.next_offset)
        return parse_document(encode_document(
            topology_id=batch.topology_id or "", topology_name=batch.topology_name or "",
            offset=batch.next_offset, partition=partition, broker_host=broker[0],
            broker_port=broker[1], topic=topic))

    def read(self, path: str) -> Optional[StoredDocument]:
        doc = super().read(path)
        return doc if doc is not None else self.trident_document(path)

    def read_many(self, paths: Iterable[str]) -> Dict[str, Optional[StoredDocument]]:
        docs = super().read_many(paths)
        return {p: (d if d is not None else self.trident_document(p)) for p, d in docs.items()}
