"""A worker's connections to the driver's services (executor/calls.py): made ahead of the
first call when the worker is prepared, and sending each write at once (no Nagle)."""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from multiprocessing.connection import Connection, Listener
from typing import List

from storm_kafka_compat.executor import calls


def _no_delay(conn: Connection) -> int:
    with socket.socket(fileno=os.dup(conn.fileno())) as same:
        return same.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_a_connection_opened_ahead_is_the_one_the_first_call_uses_and_sends_at_once():
    key = secrets.token_bytes(32)
    listener = Listener(("127.0.0.1", 0), authkey=key)
    stopped = threading.Event()
    accepted: List[Connection] = []

    def serve(conn: Connection) -> None:
        accepted.append(conn)
        try:
            while True:
                conn.send(("ok", conn.recv()))
        except (EOFError, OSError):
            return

    threading.Thread(target=calls.accept_each, args=(listener, stopped, serve, "test"),
                     daemon=True).start()
    address = listener.address
    try:
        calls.open_connection(address, key)
        calls.open_connection(address, key)              # one connection an address
        deadline = time.monotonic() + 5
        while not accepted and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(accepted) == 1
        big = b"x" * 100_000                             # written as its length, then itself
        assert calls.call(address, key, ("echo", big)) == ("ok", ("echo", big))
        assert len(accepted) == 1                         # the call used the open one
        assert _no_delay(accepted[0]) == 1
        with calls._LOCK:
            mine = calls._CONNECTIONS[address]
        assert _no_delay(mine) == 1
    finally:
        with calls._LOCK:
            held = calls._CONNECTIONS.pop(address, None)
        if held is not None:
            held.close()
        calls.stop_accepting(listener, stopped)
