"""The services the driver starts for its tasks (its bolt hosts, its plan dealer), both
sides: a Python worker keeps one authenticated ``multiprocessing.connection`` per
address for the next task, made again once if it broke (a connect that gets no answer
gives up after :data:`CONNECT_TIMEOUT_S`: a firewall that drops packets would hold it for
minutes); a service accepts each connection into a thread of its own (:func:`accept_each`).

A request is a tuple; the answer ``("ok", value)`` or ``("error", text)``.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import threading
from dataclasses import dataclass, field
from multiprocessing import AuthenticationError
from multiprocessing.connection import (Connection, Listener, answer_challenge,
                                        deliver_challenge)
from typing import Any, Callable, Dict, Literal, Tuple

log = logging.getLogger(__name__)

Address = Tuple[str, int]
#: how a service answers a request: ``("ok", value)`` or ``("error", text)``
Answer = Tuple[Literal["ok", "error"], Any]

#: how long a connect waits for the driver's side to accept (s)
CONNECT_TIMEOUT_S = 5.0

#: this Python worker's connections, per address
_CONNECTIONS: Dict[Address, Connection] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Service:
    """Where a driver's service listens and the key it takes (sent with the job)."""

    address: Address
    authkey: bytes = field(repr=False)

    def call(self, request: Tuple[Any, ...]) -> Answer:
        """:func:`call` this service."""
        return call(self.address, self.authkey, request)

    def open(self) -> None:
        """:func:`open_connection` to this service."""
        open_connection(self.address, self.authkey)


class Unreachable(Exception):
    """The service at an address could not be reached, twice (the cause in the text)."""


def _io_timeout(sock: socket.socket, seconds: float) -> None:
    """The kernel's bound on each read and write of ``sock`` (0: none): it holds for a
    ``multiprocessing`` Connection over the socket's descriptor, which a Python socket
    timeout does not."""
    whole = int(seconds)
    value = struct.pack("ll", whole, int((seconds - whole) * 1_000_000))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


def _no_delay(conn: Connection) -> None:
    """Send each write of ``conn`` at once: a ``multiprocessing`` Connection writes a
    large message as its length, then its bytes, and with Nagle's algorithm on, the
    bytes waited for the peer's delayed acknowledgement of the length, about 40 ms (a
    word count's deposit to a bolt host: 46-51 ms, against 1-6 ms without the wait)."""
    with socket.socket(fileno=os.dup(conn.fileno())) as same:
        same.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def connect(address: Address, authkey: bytes) -> Connection:
    """An authenticated connection to the listener at ``address``. The handshake waits
    at most :data:`CONNECT_TIMEOUT_S` for each answer: what listens there may not be
    the service (a port the service left, taken by another server) and never answer."""
    with socket.create_connection(address, timeout=CONNECT_TIMEOUT_S) as s:
        s.setblocking(True)
        _io_timeout(s, CONNECT_TIMEOUT_S)
        conn = Connection(s.detach())
    try:
        answer_challenge(conn, authkey)
        deliver_challenge(conn, authkey)
        with socket.socket(fileno=os.dup(conn.fileno())) as same:
            _io_timeout(same, 0)        # the calls themselves wait as long as they take
        _no_delay(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def open_connection(address: Address, authkey: bytes) -> None:
    """Make this worker's connection to the service at ``address`` now, ahead of its
    first call (which then pays neither the connect nor the handshake: a Python worker
    prepared before the first batch opens its connections to the driver's services)."""
    with _LOCK:
        if address in _CONNECTIONS:
            return
    conn = connect(address, authkey)
    with _LOCK:
        held = _CONNECTIONS.setdefault(address, conn)
    if held is not conn:
        conn.close()


def call(address: Address, authkey: bytes, request: Tuple[Any, ...]) -> Answer:
    """Send ``request`` to the service at ``address``; its ``(status, value)``.

    Raises :class:`Unreachable` when it cannot be reached (or the connection broke)
    twice in a row.
    """
    for attempt in (1, 2):
        with _LOCK:
            conn = _CONNECTIONS.pop(address, None)
        try:
            if conn is None:
                conn = connect(address, authkey)
            conn.send(request)
            status, value = conn.recv()
        except (OSError, EOFError, AuthenticationError) as exc:
            if conn is not None:
                conn.close()
            if attempt == 2:
                raise Unreachable(f"{type(exc).__name__}: {exc}") from exc
            continue
        with _LOCK:
            _CONNECTIONS[address] = conn
        return status, value
    raise AssertionError("unreachable")


def accept_each(listener: Listener, stopped: threading.Event,
                serve: Callable[[Connection], None], name: str) -> None:
    """Accept connections on ``listener`` until ``stopped`` is set (and the listener
    closed), each served by ``serve`` in a daemon thread of its own named ``name``; a
    caller without the key is refused and the loop goes on."""
    while not stopped.is_set():
        try:
            conn = listener.accept()
            _no_delay(conn)
        except Exception:  # noqa: BLE001 - a stranger without the key, a closed listener
            if stopped.is_set():
                return
            log.debug("a connection to %s was refused", name, exc_info=True)
            continue
        threading.Thread(target=serve, args=(conn,), name=name, daemon=True).start()


def stop_accepting(listener: Listener, stopped: threading.Event) -> None:
    """End :func:`accept_each`'s loop on ``listener`` and close it: ``stopped`` set, the
    accept it is blocked in woken by a connection that leaves at once (closing the
    listener alone does not wake it on Linux: a bolt host then lingered until killed,
    5 s after each run's stop)."""
    stopped.set()
    try:
        with socket.create_connection(listener.address, timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError:
        log.debug("waking the accept of %s failed", listener.address, exc_info=True)
    listener.close()
