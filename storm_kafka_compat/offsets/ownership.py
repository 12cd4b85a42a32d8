"""Who owns a spout's documents: the ownership record and the guard (pure).

Two writers of one ``zkRoot``/``id`` overwrite each other's offsets: storm-kafka
never noticed, and both topologies silently replay or skip each other's progress.
Two things keep a job the only writer of its documents:

**The ownership record.** A running job keeps an ephemeral znode beside its
documents, ``zkRoot/id/owner~task-<i>`` (``~`` is not a character of Kafka topic
names, so the node can neither be taken for a topic's directory in the wildcard
layout nor for a ``partition_N`` document; Storm never lists the directory). Its
body is a small JSON object naming the job: topology id and name, host, driver
pid, start time, task ``i`` of ``T`` and a random token. ZooKeeper removes it when
the job's session ends (a stop, a crash after the session timeout). Records of
tasks ``i`` of ``T`` and ``j`` of ``U`` overlap when ``i = j (mod gcd(T, U))``:
some partition index then belongs to both. So:

* a job starting while an overlapping record exists refuses to start, naming the
  other job (:class:`OwnerRecord.describe`), unless told to take over
  (``run --take-over``); a record left by a crashed driver on this host (its pid
  is gone) is removed at once, one from another host is waited for up to the
  session timeout;
* ``offsets reset``, ``offsets migrate --from-kafka-group`` and the other commands
  that write documents refuse while a record exists, unless ``--force``;
* at every commit the job checks that its record is still its own; a record
  taken over by another job stops this one without writing.

**The guard.** :class:`OwnershipGuard` remembers the bytes this job last wrote to
each document (and what it tried to write since, a write that timed out may still
land). Before a commit it reads them back (one pipelined read): a document that
changed under the job was written by someone else -- an operator's ``offsets
reset --force``, a Storm topology, a job with the same ``topology.id`` -- and the
job stops instead of overwriting it (:class:`OwnershipConflict`); the documents
nobody touched are still committed. A document that names another topology before
this job ever wrote it (the Storm topology we resume from) is not a conflict.

Cost: one pipelined read of the record and of the documents written, i.e. one
extra round trip per commit interval.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Set

from storm_kafka_compat.errors import OwnershipConflictError
from storm_kafka_compat.offsets.document import StoredDocument, parse_document
from storm_kafka_compat.offsets.store import DocumentStore

#: the ownership record's node name, before the task index
OWNER_PREFIX = "owner~task-"


def owner_path(spout_root: str, task_index: int) -> str:
    """``zkRoot/id/owner~task-<i>``: where task ``i`` keeps its ownership record."""
    return f"{spout_root.rstrip('/')}/{OWNER_PREFIX}{task_index}"


def is_owner_node(name: str) -> bool:
    """A child of ``zkRoot/id`` that is an ownership record."""
    return name.startswith(OWNER_PREFIX)


@dataclass(frozen=True)
class OwnerRecord:
    """A running job's ownership record of a spout's documents.

    ``tasks`` and ``task`` are the job's ``--total-tasks`` and ``--task-index``;
    ``token`` is random per run (a record with our token is ours)."""

    token: str
    topology_id: str
    topology_name: str
    host: str
    pid: int
    started_ms: int
    task: int = 0
    tasks: int = 1

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode("utf-8")

    @classmethod
    def parse(cls, data: Optional[bytes]) -> Optional["OwnerRecord"]:
        """The record in ``data``, None when it is not one (any other node)."""
        try:
            raw = json.loads(bytes(data or b"").decode("utf-8"))
            return cls(str(raw["token"]), str(raw["topology_id"]), str(raw["topology_name"]),
                       str(raw["host"]), int(raw["pid"]), int(raw["started_ms"]),
                       int(raw.get("task", 0)), int(raw.get("tasks", 1)))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def overlaps(self, task: int, tasks: int) -> bool:
        """Task ``task`` of ``tasks`` shares a partition index with this record's task."""
        return (self.task - task) % math.gcd(self.tasks, tasks) == 0

    def describe(self) -> str:
        """The job, as an operator finds it: id, task, driver pid and host, start."""
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started_ms / 1000))
        task = f", task {self.task} of {self.tasks}" if self.tasks > 1 else ""
        return (f"topology {self.topology_id!r} ({self.topology_name}{task}), driver pid "
                f"{self.pid} on {self.host}, started {started}")


def crashed(record: OwnerRecord, host: str, pid_alive: Callable[[int], bool]) -> bool:
    """The record was left by a driver on ``host`` whose process is gone (its
    ephemeral node lives on until the session times out)."""
    return record.host == host and not pid_alive(record.pid)


def read_owners(store: DocumentStore, spout_root: str) -> Dict[str, OwnerRecord]:
    """Every ownership record under ``spout_root`` (path to record)."""
    names = [n for n in store.children(spout_root) or [] if is_owner_node(n)]
    paths = [f"{spout_root.rstrip('/')}/{n}" for n in names]
    found = store.read_many(paths) if paths else {}
    out: Dict[str, OwnerRecord] = {}
    for path in paths:
        doc = found.get(path)
        record = OwnerRecord.parse(doc.data) if doc is not None else None
        if record is not None:
            out[path] = record
    return out


def owners_refusal(owners: Mapping[str, OwnerRecord], what: str) -> Optional[str]:
    """The sentence a writing command refuses with while ``owners`` run, else None."""
    if not owners:
        return None
    jobs = "; ".join(f"{r.describe()} ({path})" for path, r in sorted(owners.items()))
    return (f"{what} refused: a running job owns these documents ({jobs}), and it would write "
            "its own offsets over the new ones at its next commit. Stop it first (SIGTERM to "
            "its driver), or add --force to write anyway: the job then stops at its next "
            "commit without overwriting them")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OwnershipConflict:
    """A document that changed under this job since it last wrote it.

    Attributes
    ----------
    zk_path : str
    ours : str
        Our topology id.
    theirs : str or None
        The stored topology id (None when the document has none or is unreadable).
    stored_offset : int or None
        The offset now stored (the next offset to process).
    written_offset : int or None
        The offset this job wrote there last.
    """

    zk_path: str
    ours: str
    theirs: Optional[str]
    stored_offset: Optional[int]
    written_offset: Optional[int] = None

    @property
    def message(self) -> str:
        """One sentence naming the path, both ids, both offsets and the fix."""
        if self.theirs != self.ours:
            return (f"{self.zk_path} now names topology {self.theirs!r} (offset "
                    f"{self.stored_offset}), but this job ({self.ours!r}) wrote it last "
                    f"(offset {self.written_offset}): another job with the same zkRoot/id "
                    "is running, and each would overwrite the other's offsets; this job "
                    "stops without writing it. Stop one of them or give it its own spout id")
        return (f"{self.zk_path} was changed by another writer: offset {self.stored_offset} "
                f"is stored where this job ({self.ours!r}) wrote {self.written_offset} (an "
                "`offsets reset`, or another job with the same topology.id and zkRoot/id); "
                "this job stops without overwriting it. Start it again to resume from the "
                "stored offset")

    def error(self) -> OwnershipConflictError:
        """The conflict as an exception (for a policy that stops the job)."""
        return OwnershipConflictError(self.message, zk_path=self.zk_path)


def check_owner(store: DocumentStore, paths: Iterable[str], topology_id: str
                ) -> List[OwnershipConflict]:
    """Read ``paths`` and return those whose document names another topology.

    Parameters
    ----------
    store : DocumentStore
    paths : iterable of str
        Documents to check; a missing node is not a conflict.
    topology_id : str
        Ours.

    Returns
    -------
    list of OwnershipConflict
        In the order of ``paths``.

    Raises
    ------
    StateError
        As the store's reads do (ZooKeeper unavailable, ACL).
    """
    wanted = list(dict.fromkeys(paths))
    if not wanted:
        return []
    docs = dict(store.read_many(wanted))
    out = []
    for path in wanted:
        doc = docs.get(path)
        if doc is None:
            continue
        if doc.topology_id != topology_id:
            out.append(OwnershipConflict(path, topology_id, doc.topology_id, doc.offset))
    return out


class OwnershipGuard:
    """Remembers what this job wrote last to each document and checks it before a write.

    Parameters
    ----------
    topology_id : str
        The id this job writes into its documents.
    """

    def __init__(self, topology_id: str) -> None:
        self.topology_id = topology_id
        #: path -> the bytes this job wrote there last (confirmed)
        self._written: Dict[str, bytes] = {}
        #: path -> bytes sent since, whose write failed (it may still land)
        self._tried: Dict[str, Set[bytes]] = {}
        #: conflicts seen so far (a metric)
        self.conflicts = 0
        #: what the last check read (the documents and the extra paths)
        self.last_read: Dict[str, Optional[StoredDocument]] = {}

    def check(self, store: DocumentStore, paths: Iterable[str],
              extra: Iterable[str] = ()) -> List[OwnershipConflict]:
        """Conflicts among ``paths`` that this job wrote before (others are not read):
        each document that holds bytes this job did not write. ``extra`` paths are
        read in the same pipelined request (the ownership record); their documents
        are in :attr:`last_read` afterwards."""
        mine = [p for p in dict.fromkeys(paths) if p in self._written]
        wanted = mine + [p for p in extra if p not in mine]
        docs = dict(store.read_many(wanted)) if wanted else {}
        self.last_read = docs
        found = []
        for path in mine:
            doc = docs.get(path)
            if doc is None:        # deleted by hand: recreated, as Storm does
                continue
            if doc.data == self._written[path] or doc.data in self._tried.get(path, ()):
                continue
            ours = parse_document(self._written[path])
            found.append(OwnershipConflict(path, self.topology_id, doc.topology_id, doc.offset,
                                           ours.offset))
        self.conflicts += len(found)
        return found

    def trying(self, docs: Mapping[str, bytes]) -> None:
        """``docs`` are about to be written (if the write fails, they may still land)."""
        for path, data in docs.items():
            self._tried.setdefault(path, set()).add(bytes(data))

    def wrote(self, docs: Mapping[str, bytes]) -> None:
        """Record a successful write of ``docs`` (path -> bytes)."""
        for path, data in docs.items():
            self._written[path] = bytes(data)
            self._tried.pop(path, None)

    def forget(self, paths: Iterable[str]) -> None:
        """Stop watching ``paths`` (a partition that is no longer ours)."""
        for path in paths:
            self._written.pop(path, None)
            self._tried.pop(path, None)

    @property
    def watched(self) -> Set[str]:
        return set(self._written)
