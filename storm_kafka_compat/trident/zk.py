"""Reading (and, for a roll-back, writing) Trident Kafka spout state in ZooKeeper:
a thin kazoo adapter over :mod:`storm_kafka_compat.trident.state`."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from storm_kafka_compat.trident.state import (TridentBatch, coordinator_path, last_batch,
                                              parse_current_tx, partition_dir, rollback_txids)

__all__ = ["read_trident_partition", "write_trident_rollback"]

#: listings of a partition's txids tried while Trident deletes old ones under us
_LISTING_ATTEMPTS = 5


def read_trident_partition(zk: Any, root: str, tx_state_id: str, topic: str, partition: int,
                           *, fmt: str = "storm-kafka", wildcard: bool = False,
                           timeout_s: float = 10.0) -> Tuple[str, Optional[TridentBatch]]:
    """``(partition directory, last batch or None)`` for one partition.

    ``zk`` is a started ``KazooClient``; calls are bounded by ``timeout_s``.
    """
    from kazoo.exceptions import NoNodeError

    path = partition_dir(root, tx_state_id, topic, partition, fmt=fmt, wildcard=wildcard)
    cpath = coordinator_path(root, tx_state_id)
    # A running Trident deletes old txids (cleanupBefore) between our listing and our
    # reads: a txid gone since the listing is read again from a new listing.
    for attempt in range(_LISTING_ATTEMPTS):
        if not zk.exists_async(path).get(timeout=timeout_s):
            return path, None
        names = zk.get_children_async(path).get(timeout=timeout_s)
        current_tx = (parse_current_tx(zk.get_async(cpath).get(timeout=timeout_s)[0])
                      if zk.exists_async(cpath).get(timeout=timeout_s) else None)
        children: Dict[str, Optional[bytes]] = {}
        try:
            # only the highest txid below currtx matters (getLastState)
            for name in names:
                if name.isdigit() and (current_tx is None or int(name) < current_tx):
                    children[name] = zk.get_async(f"{path}/{name}").get(timeout=timeout_s)[0]
        except NoNodeError:
            if attempt + 1 == _LISTING_ATTEMPTS:
                raise
            continue
        return path, last_batch(children, current_tx)
    raise AssertionError("unreachable")


def write_trident_rollback(zk: Any, root: str, tx_state_id: str, topic: str, partition: int,
                           data: bytes, *, fmt: str = "storm-kafka", wildcard: bool = False,
                           timeout_s: float = 10.0, spout_root: Optional[str] = None,
                           force: bool = False) -> int:
    """Hand one partition back to Trident: ``data`` (``encode_batch`` of the
    position) becomes the last committed batch, so the emitter's next batch starts
    at its ``nextOffset``. Returns the txid written.

    Trident must be stopped. The document goes to the last committed txid and the
    txids at or above the coordinator's ``currtx`` are deleted
    (:func:`~storm_kafka_compat.trident.state.rollback_txids` says why). With
    ``spout_root`` (``zkRoot/id`` of the job moved from Trident) the roll-back is
    refused while that job runs (its ownership record,
    :mod:`storm_kafka_compat.offsets.ownership`), naming it, unless ``force``: the job
    would go on past the position handed back.

    Raises
    ------
    ResetRefusedError
        The job still runs; nothing was written.
    """
    from kazoo.exceptions import NoNodeError

    if spout_root is not None and not force:
        _refuse_while_the_job_runs(zk, spout_root, timeout_s)
    path = partition_dir(root, tx_state_id, topic, partition, fmt=fmt, wildcard=wildcard)
    cpath = coordinator_path(root, tx_state_id)
    current_tx = (parse_current_tx(zk.get_async(cpath).get(timeout=timeout_s)[0])
                  if zk.exists_async(cpath).get(timeout=timeout_s) else None)
    zk.ensure_path_async(path).get(timeout=timeout_s)
    txid, stale = rollback_txids(zk.get_children_async(path).get(timeout=timeout_s),
                                 current_tx)
    for old in stale:
        try:
            zk.delete_async(f"{path}/{old}").get(timeout=timeout_s)
        except NoNodeError:
            pass
    node = f"{path}/{txid}"
    if zk.exists_async(node).get(timeout=timeout_s):
        zk.set_async(node, data).get(timeout=timeout_s)
    else:
        zk.create_async(node, data).get(timeout=timeout_s)
    return txid


def _refuse_while_the_job_runs(zk: Any, spout_root: str, timeout_s: float) -> None:
    """Raise ResetRefusedError naming the job whose ownership record is under
    ``spout_root``."""
    from storm_kafka_compat.errors import ResetRefusedError
    from storm_kafka_compat.offsets.ownership import OwnerRecord, is_owner_node, owners_refusal
    names = (zk.get_children_async(spout_root).get(timeout=timeout_s)
             if zk.exists_async(spout_root).get(timeout=timeout_s) else [])
    owners = {}
    for name in (n for n in names if is_owner_node(n)):
        record = OwnerRecord.parse(zk.get_async(f"{spout_root}/{name}").get(
            timeout=timeout_s)[0])
        if record is not None:
            owners[f"{spout_root}/{name}"] = record
    refusal = owners_refusal(owners, "the Trident roll-back")
    if refusal is not None:
        raise ResetRefusedError(refusal)
