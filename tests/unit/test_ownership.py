"""OwnershipGuard / check_owner: a second job with the same zkRoot/id is detected."""

from __future__ import annotations

import pytest

from storm_kafka_compat.errors import ConcurrentWriterError
from storm_kafka_compat.offsets.document import encode_document
from storm_kafka_compat.offsets.ownership import OwnershipGuard, check_owner
from storm_kafka_compat.testing.memory_store import MemoryStateStore

P0, P1 = "/r/s/partition_0", "/r/s/partition_1"


def doc(topology_id: str, offset: int, partition: int = 0) -> bytes:
    return encode_document(topology_id=topology_id, topology_name="n", offset=offset,
                           partition=partition, broker_host="h", broker_port=9092, topic="t")


@pytest.mark.parametrize("stored, expected", [
    (None, []),                                  # no node: not a conflict
    (doc("ours", 5), []),                        # ours
    (doc("theirs", 7), [("theirs", 7)]),         # another topology
    (b"{not json", [(None, None)]),              # unreadable: its id is not ours
])
def test_check_owner_table(stored, expected):
    store = MemoryStateStore({P0: stored} if stored is not None else {})
    found = check_owner(store, [P0], "ours")
    assert [(c.theirs, c.stored_offset) for c in found] == expected
    assert all(c.zk_path == P0 and c.ours == "ours" for c in found)


def test_guard_checks_only_documents_it_wrote_last():
    store = MemoryStateStore({P0: doc("storm-topology", 3), P1: doc("storm-topology", 4, 1)})
    guard = OwnershipGuard("ours")
    # the Storm topology we resume from is not a conflict: we never wrote these
    assert guard.check(store, [P0, P1]) == []
    ours = {P0: doc("ours", 10), P1: doc("ours", 11, 1)}
    guard.trying(ours)
    store.write_many(ours)
    guard.wrote(ours)
    assert guard.check(store, [P0, P1]) == []
    # an edit that keeps our id (an operator's reset) is another writer now
    store.write(P0, doc("ours", 2))
    found = guard.check(store, [P0])
    assert [(c.zk_path, c.theirs, c.stored_offset, c.written_offset) for c in found] == \
        [(P0, "ours", 2, 10)]
    assert "was changed by another writer: offset 2 is stored where this job ('ours') " \
           "wrote 10" in found[0].message
    # another job takes P1 over
    store.write(P1, doc("other-job", 12, 1))
    found = guard.check(store, [P1])
    assert [(c.zk_path, c.theirs, c.stored_offset) for c in found] == [(P1, "other-job", 12)]
    assert guard.conflicts == 2
    msg = found[0].message
    assert P1 in msg and "'other-job'" in msg and "'ours'" in msg and "same zkRoot/id" in msg
    err = found[0].error()
    assert isinstance(err, ConcurrentWriterError) and err.zk_path == P1
    guard.forget([P1])
    assert guard.check(store, [P1]) == [] and guard.watched == {P0}


def test_a_write_that_failed_may_still_land_and_is_not_a_conflict():
    store = MemoryStateStore()
    guard = OwnershipGuard("ours")
    first = {P0: doc("ours", 10)}
    guard.trying(first)
    store.write_many(first)
    guard.wrote(first)
    late = {P0: doc("ours", 20)}
    guard.trying(late)                  # the write timed out (ZooKeeper paused) ...
    store.write_many(late)              # ... and landed once ZooKeeper resumed
    assert guard.check(store, [P0]) == []


def test_owner_records_overlap_by_the_partition_split():
    from storm_kafka_compat.offsets.ownership import OwnerRecord, crashed, owners_refusal
    one = OwnerRecord("t", "ours", "n", "h", 1, 0)                  # task 0 of 1
    assert one.overlaps(0, 1) and one.overlaps(1, 3)
    half = OwnerRecord("t", "ours", "n", "h", 1, 0, task=1, tasks=2)  # partitions 1, 3, 5...
    assert not half.overlaps(0, 2) and half.overlaps(1, 2) and half.overlaps(2, 3)
    assert OwnerRecord.parse(half.encode()) == half and OwnerRecord.parse(b"{}") is None
    assert "task 1 of 2), driver pid 1 on h" in half.describe()
    assert crashed(one, "h", lambda pid: False) and not crashed(one, "h", lambda pid: True)
    assert not crashed(one, "elsewhere", lambda pid: False)
    assert owners_refusal({}, "reset") is None
    text = owners_refusal({"/r/s/owner~task-0": one}, "offsets reset --execute")
    assert text is not None and text.startswith("offsets reset --execute refused: a running "
                                                "job owns these documents (topology 'ours'")
    assert "--force" in text


def test_check_owner_uses_one_pipelined_read_when_available():
    calls = []

    class Store(MemoryStateStore):
        def read_many(self, paths):
            calls.append(list(paths))
            return {p: self.read(p) for p in paths}

    store = Store({P0: doc("x", 1), P1: doc("ours", 1, 1)})
    assert [c.zk_path for c in check_owner(store, [P0, P1, P0], "ours")] == [P0]
    assert calls == [[P0, P1]]
    assert check_owner(store, [], "ours") == [] and calls == [[P0, P1]]


class _Answer:
    def __init__(self, value):
        self.value = value

    def get(self, timeout=None):
        return self.value


class _Kazoo:
    """The few kazoo calls write_trident_rollback makes, over a dict of nodes."""

    def __init__(self, nodes):
        self.nodes = dict(nodes)

    def exists_async(self, path):
        return _Answer(path in self.nodes or any(p.startswith(path + "/") for p in self.nodes))

    def get_children_async(self, path):
        return _Answer(sorted({p[len(path) + 1:].split("/")[0] for p in self.nodes
                               if p.startswith(path + "/")}))

    def get_async(self, path):
        return _Answer((self.nodes[path], None))

    def ensure_path_async(self, path):
        return _Answer(None)

    def set_async(self, path, data):
        self.nodes[path] = data
        return _Answer(None)

    def create_async(self, path, data):
        return self.set_async(path, data)

    def delete_async(self, path):
        del self.nodes[path]
        return _Answer(None)


def test_a_trident_roll_back_is_refused_while_the_job_runs():
    from storm_kafka_compat.errors import ResetRefusedError
    from storm_kafka_compat.offsets.ownership import OwnerRecord
    from storm_kafka_compat.trident.zk import write_trident_rollback
    record = OwnerRecord("t", "clicks-compat", "clicks", "host-a", 4711, 0)
    node = "/tx/s/user/partition_0/7"
    zk = _Kazoo({"/r/s/owner~task-0": record.encode(), node: b"old",
                 "/tx/s/coordinator/currtx": b"8"})
    with pytest.raises(ResetRefusedError) as err:
        write_trident_rollback(zk, "/tx", "s", "clicks", 0, b"new", spout_root="/r/s")
    assert "the Trident roll-back refused" in str(err.value)
    assert "driver pid 4711 on host-a" in str(err.value) and zk.nodes[node] == b"old"
    assert write_trident_rollback(zk, "/tx", "s", "clicks", 0, b"new", spout_root="/r/s",
                                  force=True) == 7
    assert zk.nodes[node] == b"new"
