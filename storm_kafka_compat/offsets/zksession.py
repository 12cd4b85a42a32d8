"""A ZooKeeper session with Storm's connection and retry policy (kazoo adapter).

Retry semantics follow Storm's ``storm.zookeeper.*`` settings: one attempt waits
at most ``connection_timeout_ms`` for a live connection, then at most
``call_timeout_s`` for the answer; a failed attempt (connection loss, timeout,
session expiry) is retried ``retry_times`` times, ``retry_interval_ms`` apart
(a fixed interval, no backoff, like Curator's ``RetryNTimes``). A ZooKeeper never
reached since the session was created fails after one connection timeout. A
request is only handed to kazoo while the connection is live, so nothing queued
during an outage is sent behind the caller's back once ZooKeeper comes back.
This is the project's one ZooKeeper retry loop; the offset store
(:mod:`.zkstore`) is built on it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any, Callable, Iterator, List, Optional, Tuple, TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (AuthFailedError, ConnectionLoss, KazooException, NoAuthError,
                              OperationTimeoutError, SessionExpiredError)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry
from kazoo.security import make_digest_acl

from storm_kafka_compat.config import ZkAuth
from storm_kafka_compat.errors import ConfigError, StateError, ZooKeeperUnavailableError

T = TypeVar("T")
logger = logging.getLogger("storm_kafka_compat.offsets.zkstore")

#: how long kazoo waits between reconnection attempts at most (s)
_RECONNECT_MAX_DELAY_S = 1.0
#: errors an attempt is retried after
_RETRIABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError, KazooTimeoutError)


class _NotConnected(Exception):
    """No live connection within the connection timeout."""


class ZkSession:
    """A kazoo session with Storm's ``storm.zookeeper.*`` connection and retry policy.

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
        nodes created get a digest ACL (all permissions) for them.
    call_timeout_s : float, optional
        How long one attempt waits for the server's answer once the request
        is sent; defaults to ``connection_timeout_ms``.
    sleep : callable, optional
        ``sleep(seconds)`` used between attempts (injected in tests).
    clock : callable, optional
        Monotonic ``clock() -> seconds`` used to report durations.

    Attributes
    ----------
    round_trips : int
        Requests sent to ZooKeeper so far (each attempt counted).
    """

    def __init__(self, hosts: str, *, session_timeout_ms: int = 20000,
                 connection_timeout_ms: int = 15000, retry_times: int = 5,
                 retry_interval_ms: int = 1000, auth: Optional[ZkAuth] = None,
                 call_timeout_s: Optional[float] = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
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
        #: inside bounded(): how long one request may wait (s), one attempt only
        self._bound_s: Optional[float] = None
        #: since when (epoch s) ZooKeeper has not answered: the connection was lost
        #: or a request failed; None once a request succeeds again
        self.unreachable_since: Optional[float] = None
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

    # --- connection -------------------------------------------------------------------

    def _on_state(self, state: str) -> None:
        # runs on kazoo's event thread: never block here
        if state == KazooState.CONNECTED:
            self._ever_connected = True
            self._live.set()
        else:
            self._live.clear()
            if not self._closed:      # a clean stop is not news
                if self.unreachable_since is None:
                    self.unreachable_since = time.time()
                logger.info("ZooKeeper %s connection state %s", self.hosts, state)

    def _await_connected(self) -> None:
        if self._closed:
            raise StateError(f"ZooKeeper state store for {self.hosts} is closed; "
                             f"create a new ZkStateStore")
        if not self._started:
            self._started = True
            self._client.start_async()
        wait_s = self.connection_timeout_ms / 1000.0
        if self._bound_s is not None:
            # a known outage is not waited for again; otherwise at most the bound
            wait_s = 0.0 if self.unreachable_since is not None else min(wait_s, self._bound_s)
        if not self._live.wait(wait_s):
            raise _NotConnected()

    @contextlib.contextmanager
    def bounded(self, wait_s: float) -> Iterator[None]:
        """Within this block every request is one attempt (no retries) that waits at most
        ``wait_s`` for a connection and for each answer, and not at all for a
        connection already known to be down. For the periodic commit: ZooKeeper
        being away must not stall the loop, and the commit is due again at the next
        interval (the final commit keeps the whole retry policy)."""
        previous, self._bound_s = self._bound_s, float(wait_s)
        try:
            yield
        finally:
            self._bound_s = previous

    @property
    def call_wait_s(self) -> float:
        """How long one request waits for its answer (shorter inside :meth:`bounded`)."""
        if self._bound_s is None:
            return self.call_timeout_s
        return min(self.call_timeout_s, self._bound_s)

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

    def _retrying(self, what: str, path: str, attempt: Callable[[], T]) -> T:
        """Run ``attempt`` with Storm's RetryNTimes semantics; a ZooKeeper never
        reached since the store was created fails after one connection timeout.
        Inside :meth:`bounded`, one attempt only."""
        last: BaseException = _NotConnected("no attempt made")
        started = time.monotonic()
        attempts = 1 if self._bound_s is not None else self.retry_times + 1
        for number in range(attempts):
            if number:
                self._sleep(self.retry_interval_ms / 1000.0)
            try:
                self._await_connected()
                result = attempt()
                self.unreachable_since = None
                return result
            except _NotConnected as exc:
                if not self._ever_connected:
                    raise self._never_reached(what, path) from None
                last = exc
                logger.info("ZooKeeper %s: %s %s failed (attempt %d of %d): not connected",
                            self.hosts, what, path, number + 1, attempts)
            except _RETRIABLE as exc:
                last = exc
                logger.info("ZooKeeper %s: %s %s failed (attempt %d of %d): %s",
                            self.hosts, what, path, number + 1, attempts,
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
        if self.unreachable_since is None:
            self.unreachable_since = time.time()
        if self._bound_s is not None:
            raise ZooKeeperUnavailableError(
                f"ZooKeeper at {self.hosts} did not answer {what} {path!r} within "
                f"{self._bound_s:g} s ({type(last).__name__}"
                f"{': ' + str(last) if str(last) else ''}); unreachable since "
                f"{time.strftime('%H:%M:%S', time.localtime(self.unreachable_since))}",
                zk_path=path, hosts=self.hosts)
        raise self._unavailable(what, path, last, attempts, time.monotonic() - started)

    def _send(self, async_result: Any) -> Any:
        self.round_trips += 1
        return async_result.get(timeout=self.call_wait_s)

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

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
