"""An in-memory stand-in for :class:`storm_kafka_compat.offsets.zkstore.ZkStateStore`.

It stores raw document bytes by path and parses them with Storm's rules, so code
under test sees exactly what it would read back from ZooKeeper. ``fail_writes``
and ``fail_reads`` make the next calls raise ZooKeeperUnavailableError.
"""

from __future__ import annotations

import time
from typing import Dict, Iterable, List, Mapping, Optional, Set, Tuple

from storm_kafka_compat.errors import ZooKeeperUnavailableError
from storm_kafka_compat.offsets.document import StoredDocument, parse_document
from storm_kafka_compat.offsets.paths import spout_document_paths
from storm_kafka_compat.offsets.store import NodeStat


class MemoryStateStore:
    """Documents by path; every ``write_many`` counts as one round trip. ``stats``
    holds each node's last write (epoch ms) and version, as ZooKeeper's stat does."""

    def __init__(self, docs: Optional[Mapping[str, bytes]] = None) -> None:
        self.docs: Dict[str, bytes] = dict(docs or {})
        now = int(time.time() * 1000)
        self.stats: Dict[str, NodeStat] = {p: NodeStat(now, 0) for p in self.docs}
        self.round_trips = 0
        self.writes = 0
        self.fail_writes = 0
        self.fail_reads = 0
        self.ephemeral: Set[str] = set()

    def read(self, path: str) -> Optional[StoredDocument]:
        if self.fail_reads:
            self.fail_reads -= 1
            raise ZooKeeperUnavailableError(f"scripted outage reading {path}", zk_path=path)
        data = self.docs.get(path)
        return None if data is None else parse_document(data)

    def read_many(self, paths: Iterable[str]) -> Dict[str, Optional[StoredDocument]]:
        return {p: self.read(p) for p in paths}

    def write_many(self, docs: Mapping[str, bytes]) -> int:
        if self.fail_writes:
            self.fail_writes -= 1
            raise ZooKeeperUnavailableError(f"scripted outage writing {len(docs)} documents")
        self.docs.update(docs)
        now = int(time.time() * 1000)
        for path in docs:
            old = self.stats.get(path)
            self.stats[path] = NodeStat(now, old.version + 1 if old is not None else 0)
        self.round_trips += 1
        self.writes += len(docs)
        return 1

    def read_many_stat(self, paths: Iterable[str]
                       ) -> Dict[str, Optional[Tuple[StoredDocument, NodeStat]]]:
        out: Dict[str, Optional[Tuple[StoredDocument, NodeStat]]] = {}
        for path in paths:
            doc = self.read(path)
            out[path] = None if doc is None else (doc, self.stats.get(path, NodeStat(0, 0)))
        return out

    def spout_document_paths(self, zk_root: str, spout_id: str, wildcard: bool) -> List[str]:
        return spout_document_paths(self.children, zk_root, spout_id, wildcard)

    def children(self, path: str) -> Optional[List[str]]:
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):].split("/")[0] for p in self.docs if p.startswith(prefix)}
        return sorted(names) if names or path in self.docs else None

    def write(self, path: str, data: bytes) -> None:
        self.write_many({path: data})

    def create_ephemeral(self, path: str, data: bytes) -> bool:
        """Create ``path`` unless it exists (an ownership record; :meth:`expire` plays
        the end of the session)."""
        if path in self.docs:
            return False
        self.docs[path] = bytes(data)
        self.ephemeral.add(path)
        return True

    def delete(self, path: str) -> bool:
        self.ephemeral.discard(path)
        return self.docs.pop(path, None) is not None

    def expire(self) -> None:
        """The session ended: every ephemeral node goes."""
        for path in list(self.ephemeral):
            self.delete(path)

    def close(self) -> None:
        pass
