"""kazoo adapter for the offset documents: reads, batched multi writes, ACLs, bounded retries.

This is storm-kafka's ``ZkState`` with two deliberate differences (CONTRACT
section 2, deviation 3): a ZooKeeper error is never turned into "no state"
(after ``retry_times`` retries ``retry_interval_ms`` apart the call raises
:class:`~storm_kafka_compat.errors.ZooKeeperUnavailableError`), and many
documents are written in a few multi-op transactions instead of one round trip
each.

The session, its connection handling and Storm's retry policy are
:class:`~storm_kafka_compat.offsets.zksession.ZkSession`'s; this module is
what is read and written over it.

The store is not thread-safe: use one per thread (the driver loop owns one).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Self, Set, Tuple

from kazoo.exceptions import (NoAuthError, NodeExistsError, NoNodeError, RolledBackError,
                              RuntimeInconsistency)

from storm_kafka_compat.config import SpoutConfig, TopologyConfig
from storm_kafka_compat.errors import ConcurrentWriterError, ConfigError, StateError
from storm_kafka_compat.offsets.document import StoredDocument, parse_document
from storm_kafka_compat.offsets.store import NodeStat
from storm_kafka_compat.offsets.paths import spout_document_paths, validate_zk_path
from storm_kafka_compat.offsets.zksession import ZkSession

logger = logging.getLogger(__name__)

#: conservative size budget of one multi request; ZooKeeper refuses requests
#: above jute.maxbuffer (default 1 MiB) by dropping the connection
REQUEST_BUDGET_BYTES = 512 * 1024
#: largest single document accepted (leaves room under the 1 MiB jute.maxbuffer)
MAX_DOCUMENT_BYTES = 1000 * 1024
#: serialised bytes of one multi op besides path and data: multi header (9),
#: two length prefixes (8), flags/version (4), plus the response share
_OP_OVERHEAD_BYTES = 96
#: per ACL entry in a create: perms (4) + scheme and id strings with prefixes
_ACL_OVERHEAD_BYTES = 16


def _parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


class ZkStateStore(ZkSession):
    """Read and write storm-kafka offset documents in ZooKeeper over a
    :class:`~storm_kafka_compat.offsets.zksession.ZkSession` (whose parameters it
    takes: ``hosts``, ``session_timeout_ms``, ``connection_timeout_ms``,
    ``retry_times``, ``retry_interval_ms``, ``auth``, ``call_timeout_s``, ``sleep``,
    ``clock``).

    Parameters
    ----------
    request_budget_bytes : int
        Size budget of one multi-op transaction.

    Attributes
    ----------
    round_trips : int
        Requests sent to ZooKeeper so far (reads, listings, parent creations,
        transactions, each attempt counted).
    """

    def __init__(self, hosts: str, *, request_budget_bytes: int = REQUEST_BUDGET_BYTES,
                 **session: Any) -> None:
        super().__init__(hosts, **session)
        self.request_budget_bytes = request_budget_bytes
        # paths known to exist (documents and their parents); persistent nodes,
        # so the cache survives reconnects and session expiry
        self._known: Set[str] = set()
        self._listed_parents: Set[str] = set()

    # --- construction from config ---------------------------------------------------

    @classmethod
    def from_config(cls, spout: SpoutConfig, topology: TopologyConfig,
                    **kwargs: Any) -> Self:
        """Build the store storm-kafka's ``KafkaSpout.open`` would build.

        Servers are ``spout.zkServers``, or ``storm.zookeeper.servers`` when that is
        None; the port is ``spout.zkPort``, or ``storm.zookeeper.port``; every server
        gets that port (a server written ``host:port`` keeps its own port, an
        extension). Timing and auth come from the topology's ``storm.zookeeper.*``.
        """
        servers = spout.zk_servers if spout.zk_servers is not None else topology.zookeeper_servers
        port = spout.zk_port if spout.zk_port is not None else topology.zookeeper_port
        if not servers:
            raise ConfigError("no ZooKeeper servers for the offset store: set spout.zkServers "
                              "or storm.zookeeper.servers", key="spout.zkServers",
                              value=servers)
        hosts = ",".join(s if re.search(r":\d+$", s) else f"{s}:{port}" for s in servers)
        return cls(hosts,
                   session_timeout_ms=topology.zookeeper_session_timeout_ms,
                   connection_timeout_ms=topology.zookeeper_connection_timeout_ms,
                   retry_times=topology.zookeeper_retry_times,
                   retry_interval_ms=topology.zookeeper_retry_interval_ms,
                   auth=topology.zookeeper_auth, **kwargs)

    # --- reads ------------------------------------------------------------------------

    def read(self, path: str) -> Optional[StoredDocument]:
        """Read one document.

        Parameters
        ----------
        path : str
            Absolute znode path (validated).

        Returns
        -------
        StoredDocument or None
            None when the node does not exist; a document (possibly with a
            ``problem``) otherwise.

        Raises
        ------
        ZooKeeperUnavailableError
            When ZooKeeper does not answer within the retries.
        StateError
            When the node's ACL refuses this client.
        ConfigError
            When the path is not a valid ZooKeeper path.
        """
        validate_zk_path(path)

        def attempt() -> Optional[StoredDocument]:
            try:
                data, _stat = self._send(self._client.get_async(path))
            except NoNodeError:
                self._known.discard(path)
                return None
            self._known.add(path)
            return parse_document(data)

        return self._retrying("reading", path, attempt)

    def children(self, path: str) -> Optional[List[str]]:
        """Return the sorted child names of ``path``, or None when it does not exist."""
        validate_zk_path(path)

        def attempt() -> Optional[List[str]]:
            try:
                return sorted(self._send(self._client.get_children_async(path)))
            except NoNodeError:
                return None

        return self._retrying("listing", path, attempt)

    def read_many(self, paths: Iterable[str]) -> Dict[str, Optional[StoredDocument]]:
        """Read several documents with pipelined requests (same rules as :meth:`read`)."""
        return {p: (found[0] if found is not None else None)
                for p, found in self.read_many_stat(paths).items()}

    def read_many_stat(self, paths: Iterable[str]
                       ) -> Dict[str, Optional[Tuple[StoredDocument, NodeStat]]]:
        """:meth:`read_many`, with each node's last-modified time and version (for the
        operator tools: which id Storm wrote last, whether a writer is still at work)."""
        paths = list(paths)
        for path in paths:
            validate_zk_path(path)
        results: Dict[str, Optional[Tuple[StoredDocument, NodeStat]]] = {}
        remaining = [p for p in paths]

        def attempt() -> None:
            pending = [(p, self._client.get_async(p)) for p in remaining]
            self.round_trips += len(pending)
            for path, result in pending:
                try:
                    data, stat = result.get(timeout=self.call_wait_s)
                except NoNodeError:
                    results[path] = None
                    self._known.discard(path)
                else:
                    results[path] = (parse_document(data),
                                     NodeStat(int(stat.mtime), int(stat.version)))
                    self._known.add(path)
                remaining.remove(path)

        if remaining:
            self._retrying("reading", remaining[0], attempt)
        return {p: results[p] for p in paths}

    def list_spout_documents(self, zk_root: str, spout_id: str,
                             wildcard: bool) -> Dict[str, StoredDocument]:
        """Read every offset document of one spout (for the operator tools).

        Parameters
        ----------
        zk_root, spout_id : str
            ``zkRoot`` and ``id``.
        wildcard : bool
            True for the wildcard layout ``zkRoot/id/<topic>/partition_N``.

        Returns
        -------
        dict
            Path to document, ordered by topic then partition number. Children
            that are not ``partition_<N>`` nodes of the chosen layout are skipped.
        """
        docs = self.read_many(self.spout_document_paths(zk_root, spout_id, wildcard))
        return {path: doc for path, doc in docs.items() if doc is not None}

    def spout_document_paths(self, zk_root: str, spout_id: str, wildcard: bool) -> List[str]:
        """The paths of one spout's offset documents (as :meth:`list_spout_documents`)."""
        return spout_document_paths(self.children, zk_root, spout_id, wildcard)

    # --- writes -----------------------------------------------------------------------

    def write(self, path: str, data: bytes) -> None:
        """Write one document (create with parents, or set unconditionally)."""
        self.write_many({path: data})

    def create_ephemeral(self, path: str, data: bytes) -> bool:
        """Create ``path`` holding ``data`` as an ephemeral node of this session (parents
        created as needed); False when it exists already (an ownership record)."""
        validate_zk_path(path)
        self._ensure_parent(_parent(path))

        def attempt() -> bool:
            try:
                self._send(self._client.create_async(path, bytes(data), acl=self._acl,
                                                     ephemeral=True))
            except NodeExistsError:
                return False
            return True

        return self._retrying("creating", path, attempt)

    def delete(self, path: str) -> bool:
        """Delete one node (not recursive). Returns False when it did not exist."""
        validate_zk_path(path)

        def attempt() -> bool:
            try:
                self._send(self._client.delete_async(path))
            except NoNodeError:
                return False
            finally:
                self._known.discard(path)
            return True

        return self._retrying("deleting", path, attempt)

    def _op_size(self, path: str, data: bytes) -> int:
        size = len(self._chroot) + len(path.encode("utf-8")) + len(data) + _OP_OVERHEAD_BYTES
        for entry in self._acl or ():
            size += _ACL_OVERHEAD_BYTES + len(entry.id.scheme) + len(entry.id.id)
        return size

    def _ensure_parent(self, parent: str) -> None:
        """Create ``parent`` and its ancestors, one retried request per missing level."""
        if parent == "/" or parent in self._known:
            return
        missing: List[str] = []
        node = parent
        while node != "/" and node not in self._known:
            missing.append(node)
            node = _parent(node)
        for node in reversed(missing):
            def attempt(node: str = node) -> None:
                try:
                    self._send(self._client.create_async(node, b"", acl=self._acl))
                except NodeExistsError:
                    pass
                except NoNodeError:
                    if _parent(node) == "/" and self._chroot:
                        raise StateError(
                            f"the chroot {self._chroot!r} of {self.hosts} does not exist; "
                            f"create it first (zkCli: create {self._chroot} \"\") or remove "
                            f"it from the connect string", zk_path=node) from None
                    raise
            self._retrying("creating", node, attempt)
            self._known.add(node)

    def _discover(self, paths: Iterable[str], force: bool = False) -> None:
        """Learn which of ``paths`` exist: one listing per parent not seen yet."""
        parents = sorted({_parent(p) for p in paths if force or p not in self._known})
        for parent in parents:
            if not force and parent in self._listed_parents:
                continue
            names = self.children(parent)
            if names is None:
                self._ensure_parent(parent)
                names = []
            self._known.add(parent)
            self._listed_parents.add(parent)
            prefix = parent.rstrip("/")
            for path in [p for p in self._known if _parent(p) == parent]:
                self._known.discard(path)
            self._known.update(f"{prefix}/{name}" for name in names)

    def _chunks(self, docs: Mapping[str, bytes]) -> List[List[Tuple[str, bytes]]]:
        chunks: List[List[Tuple[str, bytes]]] = []
        current: List[Tuple[str, bytes]] = []
        size = 0
        for path, data in docs.items():
            op = self._op_size(path, data)
            if current and size + op > self.request_budget_bytes:
                chunks.append(current)
                current, size = [], 0
            current.append((path, data))
            size += op
        if current:
            chunks.append(current)
        return chunks

    def _commit_chunk(self, chunk: List[Tuple[str, bytes]]) -> None:
        """Commit one chunk atomically; fix stale existence knowledge once."""
        for round_number in (1, 2):
            creates = [p for p, _d in chunk if p not in self._known]

            def attempt() -> List[Any]:
                tx = self._client.transaction()
                for path, data in chunk:
                    if path in self._known:
                        tx.set_data(path, data)
                    else:
                        tx.create(path, data, acl=self._acl)
                try:
                    answers: List[Any] = self._send(tx.commit_async())
                    return answers
                except (NoNodeError, NodeExistsError) as exc:
                    # the server may report a failed multi in the reply header
                    return [exc]

            results = self._retrying("writing", chunk[0][0], attempt)
            failures = [(path, r) for (path, _d), r in zip(chunk, results)
                        if isinstance(r, Exception)
                        and not isinstance(r, (RolledBackError, RuntimeInconsistency))]
            if len(results) == 1 and len(chunk) > 1 and failures:
                failures = [(f"{_parent(chunk[0][0])}/...", failures[0][1])]
            if not failures:
                self._known.update(creates)
                return
            path, error = failures[0]
            if isinstance(error, NoAuthError):
                raise StateError(
                    f"ZooKeeper refused writing {path!r}: the node's ACL does not allow this "
                    f"client; set the digest credential that owns it "
                    f"(storm.zookeeper.auth.payload 'user:password')", zk_path=path)
            if not isinstance(error, (NoNodeError, NodeExistsError)) or round_number == 2:
                raise ConcurrentWriterError(
                    f"writing {path!r} failed with {type(error).__name__} although this "
                    f"process checked the node just before: another writer is creating or "
                    f"deleting nodes under {_parent(path)!r}; run only one job per "
                    f"zkRoot/id", zk_path=path)
            logger.info("ZooKeeper %s: %s for %s; re-reading which nodes exist",
                        self.hosts, type(error).__name__, path)
            self._discover([p for p, _d in chunk], force=True)

    def write_many(self, docs: Mapping[str, bytes]) -> int:
        """Write documents in as few round trips as possible.

        Nodes known to exist get an unconditional ``setData``; new ones are
        created (parents first). Documents go in multi-op transactions of at
        most ``request_budget_bytes`` each; every transaction is atomic, and
        each is retried like a single call.

        Parameters
        ----------
        docs : mapping of str to bytes
            Path to document bytes.

        Returns
        -------
        int
            Round trips this call used (listings of unknown parents, parent
            creations and transactions); once the paths are known, it equals
            the number of transactions.

        Raises
        ------
        ZooKeeperUnavailableError
            When ZooKeeper does not answer within the retries. Transactions
            committed before the outage stay written; the failing one is all
            or nothing.
        ConcurrentWriterError
            When nodes keep appearing or vanishing under this writer.
        StateError
            When an ACL refuses this client.
        """
        for path, data in docs.items():
            validate_zk_path(path)
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(f"document for {path!r} must be bytes, got {type(data).__name__}")
            if len(data) > MAX_DOCUMENT_BYTES:
                raise StateError(f"document for {path!r} is {len(data)} bytes, above the "
                                 f"{MAX_DOCUMENT_BYTES}-byte limit under ZooKeeper's "
                                 f"jute.maxbuffer; offset documents are ~200 bytes",
                                 zk_path=path)
        if not docs:
            return 0
        docs = {p: bytes(d) for p, d in docs.items()}
        before = self.round_trips
        self._discover(docs)
        for chunk in self._chunks(docs):
            self._commit_chunk(chunk)
        return self.round_trips - before

    # --- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> "ZkStateStore":
        return self

    def __repr__(self) -> str:
        return (f"ZkStateStore(hosts={self.hosts!r}, retry_times={self.retry_times}, "
                f"retry_interval_ms={self.retry_interval_ms}, auth={self._auth!r})")
