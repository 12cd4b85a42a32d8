"""Trident's Kafka spout state in ZooKeeper: layout, documents, resume offset (pure).

Layout (Storm's ``TransactionalState``, ``RotatingTransactionalState`` and the
partitioned spout executors, identical in Storm 0.9.x, 0.10.x and 1.x)::

    <transactional.zookeeper.root>/<txStateId>/user/<partitionId>/<txid>

* ``transactional.zookeeper.root``: default ``/transactional`` (``conf/defaults.yaml``);
  the ZooKeeper is ``transactional.zookeeper.servers``/``port``, else Storm's own.
* ``txStateId``: the stream name given to ``TridentTopology.newStream(txId, spout)``
  (``TridentTopologyBuilder.setSpout(..., txStateId, ...)``).
* ``user``: ``TransactionalState.newUserState``, opened by the emitter of
  ``OpaquePartitionedTridentSpoutExecutor`` (``OpaqueTridentKafkaSpout``) and of
  ``PartitionedTridentSpoutExecutor`` (``TransactionalTridentKafkaSpout``); the
  coordinator's state is under ``coordinator`` (``newCoordinatorState``).
* ``partitionId``: storm-kafka's ``Partition.getId()``: ``partition_<N>``; in 1.x
  with wildcard topics ``<topic>/partition_<N>`` (two levels). storm-kafka-client
  2.x's Trident spout (``KafkaTridentSpoutTopicPartition.getId``): ``<topic>@<N>``.
* ``<txid>``: one child per transaction kept by ``RotatingTransactionalState``
  (``txPath``); ``cleanupBefore`` deletes the older ones after a commit, so the
  highest txid below the coordinator's ``currtx`` holds the last committed batch.

Document (``TransactionalState.setData``: json-simple ``JSONValue.toJSONString`` of
the map ``TridentKafkaEmitter.doEmitNewPartitionBatch`` builds, a ``HashMap``)::

    {"offset": first offset of the batch, "nextOffset": offset after it,
     "instanceId": topology id, "partition": N, "broker": {"host", "port"},
     "topic": t, "topology": {"name", "id"}}

storm-kafka-client 2.x (``KafkaTridentSpoutBatchMetadata.toMap``):
``{"firstOffset", "lastOffset", "topologyId"}`` (``lastOffset`` is the last offset
emitted, so the next one to read is ``lastOffset + 1``).

The emitter resumes a partition from ``nextOffset`` of the last state
(``RotatingTransactionalState.getLastState``); with ``ignoreZkOffsets`` it does so
only when ``topology.id`` equals the running topology's id, else it starts from
``startOffsetTime`` (``doEmitNewPartitionBatch``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, TypeGuard

from storm_kafka_compat.offsets.document import json_simple_dumps

__all__ = ["DEFAULT_TRANSACTIONAL_ROOT", "TRIDENT_FORMATS", "TridentBatch", "partition_id",
           "partition_dir", "coordinator_path", "parse_current_tx", "parse_batch", "last_batch",
           "encode_batch", "java_hashmap_order", "INIT_TXID", "rollback_txids"]

DEFAULT_TRANSACTIONAL_ROOT = "/transactional"
#: ``MasterBatchCoordinator.INIT_TXID``: the first txid when ``currtx`` is absent
INIT_TXID = 1
#: ``storm-kafka`` (0.9.x-1.x TridentKafkaEmitter) and ``storm-kafka-client`` (2.x)
TRIDENT_FORMATS = ("storm-kafka", "storm-kafka-client")


def partition_id(topic: str, partition: int, *, fmt: str = "storm-kafka",
                 wildcard: bool = False) -> str:
    """The emitter's partition id (the znode name under ``user``)."""
    if fmt == "storm-kafka-client":
        return f"{topic}@{partition}"
    return f"{topic}/partition_{partition}" if wildcard else f"partition_{partition}"


def partition_dir(root: str, tx_state_id: str, topic: str, partition: int, *,
                  fmt: str = "storm-kafka", wildcard: bool = False) -> str:
    """``<root>/<txStateId>/user/<partitionId>``: the parent of the per-txid documents."""
    return (f"{root.rstrip('/')}/{tx_state_id}/user/"
            f"{partition_id(topic, partition, fmt=fmt, wildcard=wildcard)}")


@dataclass(frozen=True)
class TridentBatch:
    """One partition's batch metadata at one txid.

    ``next_offset`` is the next offset to read after the batch (Storm's ``nextOffset``;
    ``lastOffset + 1`` for storm-kafka-client).
    """

    txid: int
    offset: int
    next_offset: int
    topology_id: Optional[str]
    topology_name: Optional[str] = None
    topic: Optional[str] = None
    partition: Optional[int] = None
    broker: Optional[Tuple[str, int]] = None
    fmt: str = "storm-kafka"


def parse_batch(txid: int, data: bytes) -> Optional[TridentBatch]:
    """The batch in a ``<txid>`` node, or None for what the emitter cannot resume
    from (not JSON, not a map, no integer offsets; Storm's ``getData`` logs and
    returns null for undecodable data)."""
    try:
        doc = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    if "nextOffset" in doc:
        off, nxt = doc.get("offset"), doc.get("nextOffset")
        if not _is_int(off) or not _is_int(nxt):
            return None
        topo: Dict[str, Any] = doc["topology"] if isinstance(doc.get("topology"), dict) else {}
        broker = doc.get("broker") if isinstance(doc.get("broker"), dict) else None
        return TridentBatch(txid, off, nxt, topo.get("id") or doc.get("instanceId"),
                            topo.get("name"), doc.get("topic"), doc.get("partition"),
                            (broker["host"], broker["port"]) if broker else None)
    if "lastOffset" in doc:
        first, last = doc.get("firstOffset"), doc.get("lastOffset")
        if not _is_int(first) or not _is_int(last):
            return None
        return TridentBatch(txid, first, last + 1, doc.get("topologyId"),
                            fmt="storm-kafka-client")
    return None


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def coordinator_path(root: str, tx_state_id: str) -> str:
    """``MasterBatchCoordinator``'s ``currtx`` node: the first txid not yet committed
    (``TransactionalState.newCoordinatorState``, ``CURRENT_TX``)."""
    return f"{root.rstrip('/')}/{tx_state_id}/coordinator/currtx"


def parse_current_tx(data: Optional[bytes]) -> Optional[int]:
    """The ``currtx`` value (a JSON long), None when absent or unreadable."""
    try:
        value = json.loads(data.decode("utf-8")) if data is not None else None
    except ValueError:
        return None
    return value if _is_int(value) else None


def last_batch(children: Mapping[str, Optional[bytes]],
               current_tx: Optional[int] = None) -> Optional[TridentBatch]:
    """The state the emitter resumes from: the highest txid child
    (``RotatingTransactionalState.getLastState``) below ``current_tx`` when the
    coordinator's ``currtx`` is known.

    Why the bound: ``TransactionalTridentKafkaSpout``'s executor
    (``PartitionedTridentSpoutExecutor``) writes a txid's metadata when it *emits*
    the batch (``getStateOrCreate``), so the highest txid may be uncommitted and
    Trident re-emits it after a restart; the opaque executor writes at commit
    (``overrideState``), and a txid the coordinator had not marked committed is
    re-emitted from the txid below it. Either way Trident restarts after the last
    txid below ``currtx``.
    """
    txids = [(int(name), name) for name in children if name.isdigit()
             and (current_tx is None or int(name) < current_tx)]
    if not txids:
        return None
    txid, name = max(txids)
    data = children[name]
    # Storm's last state is this one even when it is null: then there is no resume
    return parse_batch(txid, data) if data is not None else None


def rollback_txids(names: Iterable[str], current_tx: Optional[int]) -> Tuple[int, List[int]]:
    """Where a roll-back writes a partition's position, and which txids it deletes.

    Trident restarts at ``currtx`` (``INIT_TXID`` when absent). Both executors
    derive a txid they have no document for from the highest txid below it; the
    opaque one also deletes the document of the txid it re-emits
    (``removeState``), and the transactional one replays a txid it has a document
    for exactly as written. So the position goes to the last committed txid (the
    highest below ``currtx``; ``currtx - 1`` when there is none), and every txid at
    or above ``currtx`` (emitted or committed by the spout, never marked committed
    by the coordinator) is deleted: left in place, it, not the roll-back, would be
    where Trident resumes.
    """
    restart = INIT_TXID if current_tx is None else current_tx
    txids = sorted(int(name) for name in names if name.isdigit())
    below = [t for t in txids if t < restart]
    return (below[-1] if below else restart - 1), [t for t in txids if t >= restart]


def _java_string_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def java_hashmap_order(keys: Tuple[str, ...]) -> Tuple[str, ...]:
    """The iteration order of a ``java.util.HashMap`` (default capacity 16, load
    0.75) filled with ``keys`` in this order: buckets by ``(h ^ h >>> 16) & (n - 1)``,
    insertion order within a bucket (few keys: no tree bins)."""
    n = 16
    while len(keys) > n * 0.75:
        n *= 2
    def bucket(k: str) -> int:
        h = _java_string_hash(k)
        return (h ^ (h >> 16)) & (n - 1)
    return tuple(sorted(keys, key=lambda k: (bucket(k), keys.index(k))))


def encode_batch(*, offset: int, next_offset: int, topology_id: str, topology_name: str,
                 partition: int, broker: Tuple[str, int], topic: str) -> bytes:
    """The bytes ``TridentKafkaEmitter`` (storm-kafka 1.x) has ``TransactionalState``
    write for one batch: json-simple of its ``HashMap`` in Java's iteration order."""
    values: Dict[str, Any] = {
        "offset": offset, "nextOffset": next_offset, "instanceId": topology_id,
        "partition": partition, "broker": {"host": broker[0], "port": broker[1]},
        "topic": topic, "topology": {"name": topology_name, "id": topology_id}}
    ordered = {k: values[k] for k in java_hashmap_order(tuple(values))}
    return json_simple_dumps(ordered).encode("utf-8")
