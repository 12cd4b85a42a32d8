"""kazoo adapter for the offset documents: reads, batched multi writes, ACLs, bounded retries.

This is storm-kafka's ``ZkState`` with two deliberate differences (CONTRACT
section 2, deviation 3): a ZooKeeper error is never turned into "no state"
(after ``retry_times`` retries ``retry_interval_ms`` apart the call raises
:class:`~storm_kafka_compat.errors.ZooKeeperUnavailableError`), and many
documents are written in a few multi-op transactions instead of one round trip
each.

Retry semantics follow Storm's ``storm.zookeeper.*`` settings: one attempt waits
at most ``connection_timeout_ms`` for a live connection, then at most
``call_timeout_s`` for the answer; a failed attempt (connection loss, timeout,
session expiry) is retried ``retry_times`` times, ``retry_interval_ms`` apart
(a fixed interval, no backoff, like Curator's ``RetryNTimes``). A request is
only handed to kazoo while the connection is live, so nothing queued during an
outage is sent behind the caller's back once ZooKeeper comes back.

The store is not thread-safe: use one per thread (the driver loop owns one).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    AuthFailedError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry
from kazoo.security import make_digest_acl

from storm_kafka_compat.config import SpoutConfig, TopologyConfig, ZkAuth
from storm_kafka_compat.errors import (
    ConcurrentWriterError,
    ConfigError,
    StateError,
    ZooKeeperUnavailableError,
)
from storm_kafka_compat.offsets.document import StoredDocument, parse_document
from storm_kafka_compat.offsets.paths import parse_partition_node, spout_root, validate_zk_path

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

# kazoo's reconnect loop: unlimited tries, never more than this between attempts
_RECONNECT_MAX_DELAY_S = 1.0

_RETRIABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError, KazooTimeoutError)


class _NotConnected(Exception):
    """No live connection within ``connection_timeout_ms`` (an attempt failed)."""


def _parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


class ZkStateStore:
    """Read and write storm-kafka offset documents in ZooKeeper.

    Parameters
    ----------
    hosts : str
        ZooKeeper connect string ``h1:p1,h2:p2`` with an optional chroot
        (``h1:2181/offsets``); the chroot must already exist.
    session_timeout_ms : int
        ``storm.zookeeper.session.timeout``.
    connection_timeout_ms : int
        ``storm.zookeeper.connection.timeout``: how long one attempt waits for a
        live connection.
    retry_times : int
        ``storm.zookeeper.retry.times``: retries after the first attempt.
    retry_interval_ms : int
        ``storm.zookeeper.retry.interval``: fixed pause between attempts.
    auth : ZkAuth, optional
        Digest credentials added to the session; with ``acl_on_create`` the
        nodes this store creates get a digest ACL (all permissions) for them.
    call_timeout_s : float, optional
        How long one attempt waits for the server's answer once the request
        is sent; defaults to ``connection_timeout_ms``.
    sleep : callable, optional
        ``sleep(seconds)`` used between attempts (injected in tests).
    clock : callable, optional
        Monotonic ``clock() -> seconds`` used to report durations.
    request_budget_bytes : int
        Size budget of one multi-op transaction.

    Attributes
    ----------
    round_trips : int
        Requests sent to ZooKeeper so far (reads, listings, parent creations,
        transactions, each attempt counted).
    """

    def __init__(self, hosts: str, *, session_timeout_ms: int = 20000,
                 connection_timeout_ms: int = 15000, retry_times: int = 5,
                 retry_interval_ms: int = 1000, auth: Optional[ZkAuth] = None,
                 call_timeout_s: Optional[float] = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic,
                 request_budget_bytes: int = REQUEST_BUDGET_BYTES) -> None:
        if not hosts or not isinstance(hosts, str):
            raise ConfigError(f"ZooKeeper connect string {hosts!r} is empty; set spout.zkServers "
                              f"or topology storm.zookeeper.servers", value=hosts)
        for key, value, low in (("storm.zookeeper.session.timeout", session_timeout_ms, 1),
                                ("storm.zookeeper.connection.timeout", connection_timeout_ms, 1),
                                ("storm.zookeeper.retry.interval", retry_interval_ms, 0),
                                ("storm.zookeeper.retry.times", retry_times, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"{key}={value!r} must be an integer >= {low}",
                                  key=key, value=value)
        self.hosts = hosts
        self.session_timeout_ms = session_timeout_ms
        self.connection_timeout_ms = connection_timeout_ms
        self.retry_times = retry_times
        self.retry_interval_ms = retry_interval_ms
        self.call_timeout_s = (connection_timeout_ms / 1000.0 if call_timeout_s is None
                               else float(call_timeout_s))
        self.request_budget_bytes = request_budget_bytes
        self.round_trips = 0
        self._sleep = sleep
        self._clock = clock
        self._auth = auth
        self._chroot = hosts[hosts.index("/"):] if "/" in hosts else ""
        self._closed = False
        self._started = False
        self._live = threading.Event()
        #: a connection was made once: from then on an outage gets the whole retry
        #: policy; before, the first connection timeout decides (a wrong address
        #: fails in storm.zookeeper.connection.timeout, not after every retry)
        self._ever_connected = False
        # paths known to exist (documents and their parents); persistent nodes,
        # so the cache survives reconnects and session expiry
        self._known: Set[str] = set()
        self._listed_parents: Set[str] = set()

        auth_data: List[Tuple[str, str]] = []
        acl = None
        if auth is not None:
            if auth.scheme != "digest":
                raise ConfigError(f"ZooKeeper auth scheme {auth.scheme!r} is not supported; "
                                  f"use 'digest' with a 'user:password' payload",
                                  key="storm.zookeeper.auth.scheme", value=auth.scheme,
                                  allowed=("digest",))
            if ":" not in auth.credential:
                raise ConfigError("ZooKeeper digest credential must be 'user:password'; "
                                  "fix storm.zookeeper.auth.payload",
                                  key="storm.zookeeper.auth.payload")
            auth_data.append((auth.scheme, auth.credential))
            if auth.acl_on_create:
                user, password = auth.credential.split(":", 1)
                acl = [make_digest_acl(user, password, all=True)]
        self._acl = acl
        self._client = KazooClient(
            hosts=hosts,
            timeout=session_timeout_ms / 1000.0,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2,
                                        max_delay=_RECONNECT_MAX_DELAY_S),
            auth_data=auth_data or None,
            default_acl=acl,
        )
        self._client.add_listener(self._on_state)

    # --- construction from config ---------------------------------------------------

    @classmethod
    def from_config(cls, spout: SpoutConfig, topology: TopologyConfig,
                    **kwargs: Any) -> "ZkStateStore":
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
        if getattr(topology, "trident_tx_state_id", None) and cls is ZkStateStore:
            from storm_kafka_compat.trident.store import TridentStateStore  # moved from Trident's Kafka spouts
            return TridentStateStore.from_config(spout, topology, **kwargs).configure_trident(
                zk_root=spout.zk_root, spout_id=spout.id, topic=spout.topic,
                wildcard=topology.wildcard_match, tx_state_id=topology.trident_tx_state_id,
                transactional_root=topology.transactional_root)
        return cls(hosts,
                   session_timeout_ms=topology.zookeeper_session_timeout_ms,
                   connection_timeout_ms=topology.zookeeper_connection_timeout_ms,
                   retry_times=topology.zookeeper_retry_times,
                   retry_interval_ms=topology.zookeeper_retry_interval_ms,
                   auth=topology.zookeeper_auth, **kwargs)

    # --- connection -------------------------------------------------------------------

    def _on_state(self, state: str) -> None:
        # runs on kazoo's event thread: never block here
        if state == KazooState.CONNECTED:
            self._ever_connected = True
            self._live.set()
        else:
            self._live.clear()
            if not self._closed:      # a clean stop is not news
                logger.info("ZooKeeper %s connection state %s", self.hosts, state)

    def _await_connected(self) -> None:
        if self._closed:
            raise StateError(f"ZooKeeper state store for {self.hosts} is closed; "
                             f"create a new ZkStateStore")
        if not self._started:
            self._started = True
            self._client.start_async()
        if not self._live.wait(self.connection_timeout_ms / 1000.0):
            raise _NotConnected()

    @property
    def retry_budget_s(self) -> float:
        """Upper bound, in seconds, of the time one request may take before
        :class:`ZooKeeperUnavailableError`: every attempt waiting its full
        connection and call timeouts, plus the pauses between attempts."""
        attempts = self.retry_times + 1
        return (attempts * (self.connection_timeout_ms / 1000.0 + self.call_timeout_s)
                + self.retry_times * self.retry_interval_ms / 1000.0)

    @property
    def session_id(self) -> Optional[int]:
        """The current ZooKeeper session id, or None when not connected."""
        client_id = self._client.client_id
        return client_id[0] if client_id else None

    def _unavailable(self, what: str, path: str, cause: BaseException, attempts: int,
                     elapsed_s: float) -> ZooKeeperUnavailableError:
        return ZooKeeperUnavailableError(
            f"ZooKeeper at {self.hosts} did not answer {what} {path!r}: {attempts} attempts "
            f"over {elapsed_s:.1f} s, each waiting up to {self.connection_timeout_ms} ms for a "
            f"connection, {self.retry_interval_ms} ms apart (last: {type(cause).__name__}"
            f"{': ' + str(cause) if str(cause) else ''}); check that ZooKeeper is running and "
            f"reachable, or raise storm.zookeeper.retry.times / storm.zookeeper.retry.interval",
            zk_path=path, hosts=self.hosts)

    def _never_reached(self, what: str, path: str) -> ZooKeeperUnavailableError:
        return ZooKeeperUnavailableError(
            f"ZooKeeper at {self.hosts} cannot be reached ({what} {path!r}): no connection "
            f"within storm.zookeeper.connection.timeout ({self.connection_timeout_ms} ms), "
            f"and none since this job started; check storm.zookeeper.servers and "
            f"storm.zookeeper.port (or spout.zkServers/zkPort), that ZooKeeper runs there, "
            f"and that this host can reach it", zk_path=path, hosts=self.hosts)

    def _retrying(self, what: str, path: str, attempt: Callable[[], Any]) -> Any:
        """Run ``attempt`` with Storm's RetryNTimes semantics; a ZooKeeper never
        reached since the store was created fails after one connection timeout."""
        last: BaseException = _NotConnected("no attempt made")
        started = time.monotonic()
        for number in range(self.retry_times + 1):
            if number:
                self._sleep(self.retry_interval_ms / 1000.0)
            try:
                self._await_connected()
                return attempt()
            except _NotConnected as exc:
                if not self._ever_connected:
                    raise self._never_reached(what, path) from None
                last = exc
                logger.info("ZooKeeper %s: %s %s failed (attempt %d of %d): not connected",
                            self.hosts, what, path, number + 1, self.retry_times + 1)
            except _RETRIABLE as exc:
                last = exc
                logger.info("ZooKeeper %s: %s %s failed (attempt %d of %d): %s",
                            self.hosts, what, path, number + 1, self.retry_times + 1,
                            type(exc).__name__)
            except NoAuthError:
                raise StateError(
                    f"ZooKeeper refused {what} {path!r}: the node's ACL does not allow this "
                    f"client; set the digest credential that owns it "
                    f"(storm.zookeeper.auth.payload 'user:password')", zk_path=path) from None
            except AuthFailedError:
                raise StateError(
                    f"ZooKeeper at {self.hosts} rejected the session's credentials while "
                    f"{what} {path!r}; fix storm.zookeeper.auth.scheme/payload",
                    zk_path=path) from None
            except KazooException as exc:
                raise StateError(
                    f"ZooKeeper at {self.hosts} refused {what} {path!r}: "
                    f"{type(exc).__name__}{': ' + str(exc) if str(exc) else ''}; check the "
                    f"node and its parents with zkCli (ls/stat {path})", zk_path=path) from exc
        raise self._unavailable(what, path, last, self.retry_times + 1,
                                time.monotonic() - started)

    def _send(self, async_result: Any) -> Any:
        self.round_trips += 1
        return async_result.get(timeout=self.call_timeout_s)

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
        paths = list(paths)
        for path in paths:
            validate_zk_path(path)
        results: Dict[str, Optional[StoredDocument]] = {}
        remaining = [p for p in paths]

        def attempt() -> None:
            pending = [(p, self._client.get_async(p)) for p in remaining]
            self.round_trips += len(pending)
            for path, result in pending:
                try:
                    data, _stat = result.get(timeout=self.call_timeout_s)
                except NoNodeError:
                    results[path] = None
                    self._known.discard(path)
                else:
                    results[path] = parse_document(data)
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
        root = spout_root(zk_root, spout_id)
        validate_zk_path(root)
        found: List[Tuple[str, int, str]] = []
        names = self.children(root) or []
        if wildcard:
            for topic in names:
                if parse_partition_node(topic) is not None:
                    continue
                for name in self.children(f"{root}/{topic}") or []:
                    number = parse_partition_node(name)
                    if number is not None:
                        found.append((topic, number, f"{root}/{topic}/{name}"))
        else:
            for name in names:
                number = parse_partition_node(name)
                if number is not None:
                    found.append(("", number, f"{root}/{name}"))
        found.sort()
        docs = self.read_many(path for _t, _n, path in found)
        return {path: doc for path, doc in docs.items() if doc is not None}

    # --- writes -----------------------------------------------------------------------

    def write(self, path: str, data: bytes) -> None:
        """Write one document (create with parents, or set unconditionally)."""
        self.write_many({path: data})

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
                    return self._send(tx.commit_async())
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

    def close(self) -> None:
        """Close the session (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._client.stop()
            self._client.close()
        except KazooException as exc:  # closing must not hide the caller's error
            logger.debug("closing ZooKeeper client for %s: %s", self.hosts, exc)

    def __enter__(self) -> "ZkStateStore":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"ZkStateStore(hosts={self.hosts!r}, retry_times={self.retry_times}, "
                f"retry_interval_ms={self.retry_interval_ms}, auth={self._auth!r})")
