"""Detect a second job writing the same offset documents (pure).

Two jobs with the same ``zkRoot``/``id`` overwrite each other's offsets:
storm-kafka never noticed (each KafkaSpout task blindly sets its documents),
so both topologies silently replay or skip each other's progress. We notice it
the way an operator would: a document this job wrote last now names another
``topology.id``. Before each commit the driver reads back the documents it is
about to overwrite and compares::

    guard = OwnershipGuard(topology_id)
    ...
    for conflict in guard.check(store, docs):          # before store.write_many(docs)
        log.error("%s", conflict.message)
    store.write_many(docs)
    guard.wrote(docs)                                  # after it succeeded

A document that is edited by hand while the job runs, keeping our topology
id, is not a conflict: it is overwritten at the next commit, as Storm does.
A document that names another topology before this job ever wrote it (the
Storm topology we resume from) is not one either.

Cost: one pipelined read per document written, i.e. one extra round trip per
commit interval in practice (``ZkStateStore.read_many``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterable, List, Optional, Set

from storm_kafka_compat.errors import OwnershipConflictError
from storm_kafka_compat.offsets.store import DocumentStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OwnershipConflict:
    """A document whose stored ``topology.id`` is not ours.

    Attributes
    ----------
    zk_path : str
    ours : str
        Our topology id.
    theirs : str or None
        The stored topology id (None when the document has none or is unreadable).
    stored_offset : int or None
        The offset the other writer stored (the next offset to process).
    """

    zk_path: str
    ours: str
    theirs: Optional[str]
    stored_offset: Optional[int]

    @property
    def message(self) -> str:
        """One sentence naming the path, both ids and the fix."""
        return (f"{self.zk_path} now names topology {self.theirs!r} (offset "
                f"{self.stored_offset}), but this job ({self.ours!r}) wrote it last: another "
                f"job with the same zkRoot/id is running, and each overwrites the other's "
                f"offsets; stop one of them or give it its own spout id")

    def error(self) -> OwnershipConflictError:
        """The conflict as an exception (for a policy that stops the job)."""
        return OwnershipConflictError(self.message, zk_path=self.zk_path)


def check_owner(store: DocumentStore, paths: Iterable[str], topology_id: str
                ) -> List[OwnershipConflict]:
    """Read ``paths`` and return those whose document names another topology.

    Parameters
    ----------
    store : ZkStateStore-like
        An :class:`~storm_kafka_compat.offsets.store.OffsetStore` of documents.
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
    """Remembers which documents this job wrote last and checks them before a write.

    Parameters
    ----------
    topology_id : str
        The id this job writes into its documents.
    """

    def __init__(self, topology_id: str) -> None:
        self.topology_id = topology_id
        self._ours: Set[str] = set()
        #: conflicts seen so far (a metric)
        self.conflicts = 0

    def check(self, store: DocumentStore, paths: Iterable[str]) -> List[OwnershipConflict]:
        """Conflicts among ``paths`` that this job wrote last (others are not read)."""
        mine = [p for p in paths if p in self._ours]
        found = check_owner(store, mine, self.topology_id)
        self.conflicts += len(found)
        return found

    def wrote(self, paths: Iterable[str]) -> None:
        """Record a successful write of ``paths`` (our id is now stored there)."""
        self._ours.update(paths)

    def forget(self, paths: Iterable[str]) -> None:
        """Stop watching ``paths`` (a partition that is no longer ours)."""
        self._ours.difference_update(paths)

    @property
    def watched(self) -> Set[str]:
        return set(self._ours)
