"""Trident Kafka spout state on a real ZooKeeper, written as Storm 1.x's
OpaquePartitionedTridentSpoutExecutor leaves it (TransactionalState.newUserState,
RotatingTransactionalState per Partition.getId(), TridentKafkaEmitter's metadata,
cleanupBefore keeping the last txids), read back by the thin reader; a roll-back
write is read as the emitter's next start."""

from __future__ import annotations

import pytest

from storm_kafka_compat.trident.state import encode_batch
from storm_kafka_compat.trident.zk import read_trident_partition, write_trident_rollback

pytestmark = pytest.mark.integration


def storm_writes_batches(zk, root: str, tx_state_id: str, topic: str, partition: int,
                         batches: list) -> None:
    """What the emitter's RotatingTransactionalState leaves: ``mkdir(subdir)`` writes 7
    (``TransactionalState.mkdir``), one child per txid, older ones removed by
    ``cleanupBefore``."""
    user = f"{root}/{tx_state_id}/user"
    zk.ensure_path(user)
    pdir = f"{user}/partition_{partition}"
    if not zk.exists(pdir):
        zk.create(pdir, b"7")
    for txid, offset, next_offset in batches:
        zk.create(f"{pdir}/{txid}", encode_batch(
            offset=offset, next_offset=next_offset, topology_id="clicks-7-1690000000",
            topology_name="clicks", partition=partition, broker=("127.0.0.1", 9092),
            topic=topic))
    coord = f"{root}/{tx_state_id}/coordinator"
    zk.ensure_path(coord)
    currtx = str(batches[-1][0] + 1).encode()  # MasterBatchCoordinator's next txid
    if zk.exists(f"{coord}/currtx"):
        zk.set(f"{coord}/currtx", currtx)
    else:
        zk.create(f"{coord}/currtx", currtx)


def test_reader_resumes_from_the_last_txid_and_reads_a_rollback(zk_client, zk_root) -> None:
    root = f"{zk_root}/transactional"
    storm_writes_batches(zk_client, root, "clicks-stream", "clicks", 0,
                         [(41, 1000, 1200), (42, 1200, 1350)])
    storm_writes_batches(zk_client, root, "clicks-stream", "clicks", 1, [(42, 10, 20)])
    path, batch = read_trident_partition(zk_client, root, "clicks-stream", "clicks", 0)
    assert path == f"{root}/clicks-stream/user/partition_0"
    assert (batch.txid, batch.offset, batch.next_offset) == (42, 1200, 1350)
    assert (batch.topology_id, batch.topic, batch.partition) == ("clicks-7-1690000000",
                                                                "clicks", 0)
    assert read_trident_partition(zk_client, root, "clicks-stream", "clicks", 1)[1]\
        .next_offset == 20
    assert read_trident_partition(zk_client, root, "clicks-stream", "clicks", 2) == (
        f"{root}/clicks-stream/user/partition_2", None)
    # roll-back: the Spark job reached 1500; the last txid now says so
    write_trident_rollback(zk_client, root, "clicks-stream", "clicks", 0, encode_batch(
        offset=1500, next_offset=1500, topology_id="clicks-7-1690000000",
        topology_name="clicks", partition=0, broker=("127.0.0.1", 9092), topic="clicks"))
    assert read_trident_partition(zk_client, root, "clicks-stream", "clicks", 0)[1]\
        .next_offset == 1500


def test_rollback_removes_the_txid_trident_would_re_emit(zk_client, zk_root) -> None:
    """Killed between the opaque spout's commit of txid 43 and the coordinator's:
    currtx stays 43, so Trident re-emits 43 from the txid below it (after deleting
    43). The roll-back lands on 42 and deletes 43 (seen against real Storm, CI at
    e700b06: written on 43, it was deleted by Trident, which resumed from 42's old
    position)."""
    root = f"{zk_root}/transactional"
    storm_writes_batches(zk_client, root, "clicks-stream", "clicks", 0,
                         [(41, 1000, 1200), (42, 1200, 1350), (43, 1350, 1400)])
    zk_client.set(f"{root}/clicks-stream/coordinator/currtx", b"43")
    pdir = f"{root}/clicks-stream/user/partition_0"
    assert write_trident_rollback(zk_client, root, "clicks-stream", "clicks", 0, encode_batch(
        offset=1500, next_offset=1500, topology_id="clicks-7-1690000000",
        topology_name="clicks", partition=0, broker=("127.0.0.1", 9092), topic="clicks")) == 42
    assert sorted(zk_client.get_children(pdir)) == ["41", "42"]
    assert read_trident_partition(zk_client, root, "clicks-stream", "clicks", 0)[1]\
        .next_offset == 1500


def test_reader_survives_trident_deleting_old_txids_while_it_reads(zk_client, zk_root) -> None:
    """A running Trident's cleanupBefore removes txid 41 between the reader's listing
    and its reads (seen against real Storm): the reader lists again."""
    root = f"{zk_root}/transactional"
    storm_writes_batches(zk_client, root, "clicks-stream", "clicks", 0,
                         [(41, 1000, 1200), (42, 1200, 1350)])
    pdir = f"{root}/clicks-stream/user/partition_0"
    listings = []

    class CleaningUpMeanwhile:
        """The client, with Trident's clean-up landing just after the first listing."""

        def __getattr__(self, name):
            return getattr(zk_client, name)

        def get_children_async(self, path):
            result = zk_client.get_children_async(path)
            listings.append(sorted(result.get(timeout=10)))
            if len(listings) == 1:
                zk_client.delete(f"{pdir}/41")
            return result

    _, batch = read_trident_partition(CleaningUpMeanwhile(), root, "clicks-stream", "clicks", 0)
    assert (batch.txid, batch.next_offset) == (42, 1350)
    assert listings == [["41", "42"], ["42"]]
