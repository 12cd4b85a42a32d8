"""storm-kafka's offset policy: ZooKeeper documents and PartitionManager.

A partition starts where storm-kafka's start-up decision puts it
(:func:`~storm_kafka_compat.spout.startup.decide_start`, on the document at
``zkRoot/id/[topic/]partition_N``); commits write every changed document in
one batched write, after one pipelined read that detects another writer of
this job's documents (the ownership guard; Storm never checked), and the job
keeps an ownership record beside them while it runs
(:mod:`storm_kafka_compat.offsets.ownership`). A partition that goes away is
committed first (Storm's ``close()``). The periodic commit waits for ZooKeeper
at most :attr:`ZkDocuments.commit_wait_s` (an outage must not stall the loop);
the final commit keeps Storm's whole retry policy.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from typing import Callable, Dict, Optional, Sequence, Set, Tuple

from storm_kafka_compat.config import Broker, JobConfig
from storm_kafka_compat.discovery.base import PartitionInfo
from storm_kafka_compat.offsets.document import StoredDocument, encode_document
from storm_kafka_compat.errors import ConfigError, OwnershipConflictError, StormKafkaCompatError
from storm_kafka_compat.offsets.ownership import (OwnerRecord, OwnershipGuard, crashed,
                                                  owner_path, read_owners)
from storm_kafka_compat.offsets.paths import document_path, spout_root
from storm_kafka_compat.offsets.spout_ids import (holding, ids_under_root, other_ids_problem,
                                                  topic_matcher)
from storm_kafka_compat.offsets.store import (BoundedStore, DocumentStore, OwnerRecords,
                                              SpoutListing)
from storm_kafka_compat.spout.manager import PartitionManager
from storm_kafka_compat.spout.spout import Spout
from storm_kafka_compat.spout.startup import StartDecision, decide_start
from storm_kafka_compat.spout.state import PartitionState
from storm_kafka_compat.structs import TopicPartition

log = logging.getLogger(__name__)
#: one line per partition at start: where it resumes and why (shown by the CLI)
decisions = logging.getLogger("storm_kafka_compat.decisions")


class ZkDocuments:
    """The :class:`~storm_kafka_compat.spout.policy.OffsetPolicy` of storm-kafka's KafkaSpout.

    Parameters
    ----------
    job : JobConfig
    store : DocumentStore
        Where the documents are read and written (the runtime's; not closed here).
    topology_id : str
        Written into every document.
    task_index, total_tasks : int
        This spout task among the spout's tasks (named in the ownership record).
    take_over : bool
        Start even while another job's ownership record is there (``run
        --take-over``); that job stops at its next commit.
    new_id : bool
        The spout id is new on purpose (``run --new-id``): start it at
        ``startOffsetTime`` although other ids under the zkRoot hold offsets of the
        topic (said as a warning). Without it such a start is refused
        (:meth:`check_id`).
    host : str, optional
        This host's name, in the ownership record (``socket.gethostname()``).
    pid_alive : callable(int) -> bool, optional
        Whether a process of this host still runs (a record of a crashed driver on
        this host is removed at once).
    sleep, clock : callable, optional
        For the wait on another host's record (``time.sleep``, ``time.monotonic``).
    """

    store_name = "ZooKeeper"
    commits_on_revoke = True

    def __init__(self, job: JobConfig, store: DocumentStore, topology_id: str, *,
                 task_index: int = 0, total_tasks: int = 1,
                 take_over: bool = False, new_id: bool = False, host: Optional[str] = None,
                 pid_alive: Optional[Callable[[int], bool]] = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.job = job
        self.store = store
        self.topology_id = topology_id
        self.commit_interval_ms = job.spout.state_update_interval_ms
        #: how long the periodic commit waits for ZooKeeper (s): it must not stall the
        #: loop through an outage, and is due again at the next interval
        self.commit_wait_s = min(job.topology.zookeeper_connection_timeout_ms / 1000.0,
                                 max(1.0, self.commit_interval_ms / 2000.0))
        #: detects another writer of our documents: one pipelined read of the
        #: documents we wrote last, and of our ownership record, per commit
        self.ownership = OwnershipGuard(topology_id)
        self.task_index, self.total_tasks, self.take_over = task_index, total_tasks, take_over
        self.new_id = new_id
        #: the spout id was checked against the other ids under the zkRoot (check_id)
        self._id_checked = False
        self._host = host or socket.gethostname()
        self._pid_alive = pid_alive or _pid_alive
        self._sleep, self._clock = sleep, clock
        #: our ownership record and its path, once claimed
        self.record: Optional[OwnerRecord] = None
        self._record_path: Optional[str] = None
        #: documents that changed under this job: never written by it again
        self._refused: Set[str] = set()
        #: the documents of the partitions being started, read in one go (read_ahead)
        self._ahead: Dict[str, Optional[StoredDocument]] = {}
        #: another job took the record over: nothing more is written
        self._lost = False
        #: zkRoot/id did not exist at start: the record is made before the first write
        self._deferred = False

    @property
    def conflicts(self) -> int:
        return self.ownership.conflicts

    @property
    def unreachable_since(self) -> Optional[float]:
        """Since when (epoch s) ZooKeeper has not answered, None while it answers."""
        return self.store.unreachable_since if isinstance(self.store, BoundedStore) else None

    # --- ownership ---------------------------------------------------------------------------
    def claim(self, *, before_writing: bool = False) -> None:
        """Keep the ownership record of this job's documents (before the first document
        is read); raise OwnershipConflictError naming the job that owns them.

        A record of a crashed driver on this host is removed; one from another host
        is waited for until the session timeout has passed (its session may be dead);
        ``take_over`` removes any. Where ``zkRoot/id`` does not exist yet (no
        document was ever written) only the check is made at start, and the record
        is made before the first write (``before_writing``): a start that fails
        leaves no node behind."""
        if self.record is not None or not isinstance(self.store, OwnerRecords):
            return
        spout = self.job.spout
        if spout.zk_root is None or spout.id is None:
            return
        root = spout_root(spout.zk_root, spout.id)
        if not before_writing and self._deferred:
            return                  # checked at this start: made before the first write
        if not before_writing and self.store.children(root) is None:
            self._deferred = True
            return
        self._deferred = False
        record = OwnerRecord(uuid.uuid4().hex, self.topology_id, self.job.topology.name,
                             self._host, os.getpid(), int(time.time() * 1000), self.task_index,
                             self.total_tasks)
        path = owner_path(root, self.task_index)
        wait_s = self.job.topology.zookeeper_session_timeout_ms / 1000.0 + 2.0
        deadline = self._clock() + wait_s
        said = False
        while True:
            others = {p: r for p, r in read_owners(self.store, root).items()
                      if r.overlaps(self.task_index, self.total_tasks)}
            for p, r in list(others.items()):
                if self.take_over or crashed(r, self._host, self._pid_alive):
                    log.warning("%s the ownership record %s of %s", "taking over from" if
                                self.take_over else "removing (its driver is gone)", p,
                                r.describe())
                    self.store.delete(p)
                    del others[p]
            if not others:
                if self.store.create_ephemeral(path, record.encode()):
                    break
                continue                 # created by another job since: look again
            here = all(r.host == self._host for r in others.values())
            if here or self._clock() >= deadline:
                jobs = "; ".join(r.describe() for r in others.values())
                raise OwnershipConflictError(
                    f"another job owns the documents under {root}: {jobs}; this job does not "
                    "start (two writers would overwrite each other's offsets). Stop that job "
                    "first, give this one its own spout id, or start it with --take-over "
                    "(the other job then stops at its next commit without writing)",
                    zk_path=next(iter(others)))
            if not said:
                log.warning("another job's ownership record is under %s (%s): waiting up to "
                            "%.0f s for it to expire, as it does when that job is gone", root,
                            "; ".join(r.describe() for r in others.values()), wait_s)
                said = True
            self._sleep(1.0)
        self.record, self._record_path = record, path
        log.info("ownership record %s: %s", path, record.describe())

    def _check_record(self) -> None:
        """Our record, as the last check read it, is still ours: re-made after the
        session expired; another job's stops this one."""
        if self.record is None or self._record_path is None:
            return
        assert isinstance(self.store, OwnerRecords)
        doc = self.ownership.last_read.get(self._record_path)
        found = OwnerRecord.parse(doc.data) if doc is not None else None
        if found is None and self.store.create_ephemeral(self._record_path,
                                                         self.record.encode()):
            log.info("ownership record %s made again (the ZooKeeper session was new)",
                     self._record_path)
            return
        if found is None:
            found = OwnerRecord.parse(getattr(self.store.read(self._record_path), "data", None))
        if found is not None and found.token == self.record.token:
            return
        self._lost = True
        other = found.describe() if found is not None else "an unreadable record"
        raise OwnershipConflictError(
            f"{self._record_path} now holds the ownership record of another job ({other}), "
            "which took these documents over: this job stops without writing them",
            zk_path=self._record_path)

    def check_id(self) -> None:
        """Once, before the first document is read: when this spout id has no document
        while other ids under the zkRoot hold offsets of the topic (a wrong ``spout.id``,
        or Storm's random one), raise ConfigError in ``migrate plan``'s words
        (:func:`~storm_kafka_compat.offsets.spout_ids.other_ids_problem`), unless
        ``new_id``: then it is a warning and the job starts at ``startOffsetTime``."""
        if self._id_checked:
            return
        self._id_checked = True
        spout, wildcard = self.job.spout, self.job.topology.wildcard_match
        if (not isinstance(self.store, SpoutListing) or spout.zk_root is None
                or spout.id is None
                or self.store.spout_document_paths(spout.zk_root, spout.id, wildcard)):
            return
        others = holding([d for d in ids_under_root(self.store, spout.zk_root,
                                                    wildcard=wildcard)
                          if d.spout_id != spout.id], topic_matcher(spout.topic, wildcard))
        if not others:
            return
        problem = other_ids_problem(spout_root(spout.zk_root, spout.id), spout.topic, others)
        if self.new_id:
            log.warning("%s; starting at startOffsetTime, the id taken as new (run refuses "
                        "this start unless given --new-id)", problem)
            return
        raise ConfigError(
            f"{problem}. If this id is new on purpose (every partition then starts at "
            f"startOffsetTime), run with --new-id", key="spout.id", value=spout.id)

    # --- the policy ------------------------------------------------------------------------
    def _path(self, info: PartitionInfo) -> str:
        return document_path(self.job.spout.zk_root, self.job.spout.id, info.partition,
                             info.path_topic)

    def read_ahead(self, infos: Sequence[PartitionInfo]) -> None:
        """See :meth:`~storm_kafka_compat.spout.policy.OffsetPolicy.read_ahead`: the
        documents of ``infos``, pipelined, after the id check and the claim."""
        self._ahead = {}
        if not infos:
            return
        self.check_id()
        self.claim()
        try:
            self._ahead = self.store.read_many([self._path(info) for info in infos])
        except StormKafkaCompatError as exc:
            log.debug("reading %d documents at once failed (%s); each is read alone",
                      len(infos), exc)

    def start(self, spout: Spout, info: PartitionInfo) -> Tuple[StartDecision, PartitionManager]:
        self.check_id()
        self.claim()
        path = self._path(info)
        stored = self._ahead.pop(path) if path in self._ahead else self.store.read(path)
        decision = decide_start(
            stored, topology_id=self.topology_id, config=self.job.spout,
            offset_for=lambda t: spout.log_offset(info, t), where=path,
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

    def write(self, due: Sequence[Tuple[PartitionState, int]], *, patient: bool = True) -> int:
        """Write the documents of ``due`` after checking that nobody else wrote them
        (and that our ownership record is ours). Documents changed under the job are
        not written: the others are, then OwnershipConflictError ends the run. Not
        ``patient`` (the periodic commit): each request waits at most
        :attr:`commit_wait_s`, once."""
        if self._lost:
            return 0
        docs = {pm.location: self.document(pm, off) for pm, off in due
                if pm.location not in self._refused}
        if not docs:
            return 0
        if not patient and isinstance(self.store, BoundedStore):
            with self.store.bounded(self.commit_wait_s):
                return self._write(docs)
        return self._write(docs)

    def _write(self, docs: Dict[str, bytes]) -> int:
        if self._deferred:
            try:
                self.claim(before_writing=True)
            except OwnershipConflictError:
                self._lost = True           # another job's documents: never written
                raise
        extra = [self._record_path] if self._record_path is not None else []
        conflicts = self.ownership.check(self.store, docs, extra)
        self._check_record()
        self._refused.update(c.zk_path for c in conflicts)
        writable = {p: d for p, d in docs.items() if p not in self._refused}
        trips = 0
        if writable:
            self.ownership.trying(writable)
            trips = int(self.store.write_many(writable))
            self.ownership.wrote(writable)
        if conflicts:
            raise OwnershipConflictError("; ".join(c.message for c in conflicts),
                                         zk_path=conflicts[0].zk_path)
        return trips

    def storm_conf(self) -> Dict[str, object]:
        return {}

    def kafka_offset_metric(self, managers: Dict[TopicPartition, PartitionState]
                            ) -> Optional[Dict[str, int]]:
        return None

    def close(self) -> None:
        """Take the ownership record out (the store is the runtime's: not closed)."""
        if self.record is None or self._record_path is None or self._lost:
            return
        assert isinstance(self.store, OwnerRecords)
        try:
            if isinstance(self.store, BoundedStore):
                with self.store.bounded(self.commit_wait_s):
                    self.store.delete(self._record_path)
            else:
                self.store.delete(self._record_path)
        except StormKafkaCompatError as exc:   # it ends with the session anyway
            log.info("ownership record %s not removed (%s); it ends with the session",
                     self._record_path, exc)


def _pid_alive(pid: int) -> bool:
    """A process with this id runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # another user's process
        return True
    return True
