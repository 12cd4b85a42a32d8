"""A loopback TCP proxy that can cut and heal connections, for network-fault tests.

Put it between a client and a server to simulate a partition while the server
stays up (the only way to expire a ZooKeeper session: a stopped standalone
server keeps its sessions)::

    with TcpProxy("127.0.0.1", zk.port) as proxy:
        client = KazooClient(hosts=proxy.connect_string, ...)
        proxy.cut()      # every connection dropped, new ones closed at once
        ...
        proxy.heal()     # connections accepted and forwarded again
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import List, Set, Tuple

logger = logging.getLogger(__name__)

_BUFFER_BYTES = 65536
_ACCEPT_POLL_S = 0.1


class TcpProxy:
    """Forward ``127.0.0.1:<port>`` to ``target_host:target_port`` with threads.

    Parameters
    ----------
    target_host : str
        Host of the real server.
    target_port : int
        Port of the real server.
    listen_port : int
        Port to listen on; 0 picks a free one (see :attr:`port`).
    """

    def __init__(self, target_host: str, target_port: int, listen_port: int = 0) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", listen_port))
        self._listener.listen(64)
        self._listener.settimeout(_ACCEPT_POLL_S)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: Set[Tuple[socket.socket, socket.socket]] = set()
        self._threads: List[threading.Thread] = []
        self._cut = threading.Event()
        self._stopped = threading.Event()
        self.connections_accepted = 0
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True,
                                          name=f"TcpProxy-accept-{self.port}")
        self._acceptor.start()

    @property
    def connect_string(self) -> str:
        """``127.0.0.1:<port>`` of the proxy."""
        return f"127.0.0.1:{self.port}"

    @property
    def is_cut(self) -> bool:
        """True between :meth:`cut` and :meth:`heal`."""
        return self._cut.is_set()

    # --- control ----------------------------------------------------------------------

    def cut(self) -> None:
        """Drop every open connection and close new ones as soon as they arrive."""
        self._cut.set()
        self._drop_all()
        logger.info("TcpProxy %d -> %s:%d cut", self.port, *self.target)

    def heal(self) -> None:
        """Forward new connections again."""
        self._cut.clear()
        logger.info("TcpProxy %d -> %s:%d healed", self.port, *self.target)

    def stop(self) -> None:
        """Stop listening, drop every connection and join the threads."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self._acceptor.join(timeout=5)
        self._listener.close()
        self._drop_all()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=5)

    def __enter__(self) -> "TcpProxy":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- internals --------------------------------------------------------------------

    @staticmethod
    def _close(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            sock.close()
        except OSError:
            pass

    def _drop_all(self) -> None:
        with self._lock:
            pairs = list(self._pairs)
            self._pairs.clear()
        for client, upstream in pairs:
            self._close(client)
            self._close(upstream)

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _addr = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            if self._cut.is_set() or self._stopped.is_set():
                self._close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError as exc:
                logger.info("TcpProxy %d: upstream %s:%d refused: %s", self.port,
                            *self.target, exc)
                self._close(client)
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            pair = (client, upstream)
            with self._lock:
                self._pairs.add(pair)
                self.connections_accepted += 1
                self._threads = [t for t in self._threads if t.is_alive()]
                for src, dst in ((client, upstream), (upstream, client)):
                    thread = threading.Thread(target=self._pump, args=(src, dst, pair),
                                              daemon=True, name=f"TcpProxy-pump-{self.port}")
                    self._threads.append(thread)
                    thread.start()

    def _pump(self, src: socket.socket, dst: socket.socket,
              pair: Tuple[socket.socket, socket.socket]) -> None:
        try:
            while True:
                data = src.recv(_BUFFER_BYTES)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._pairs.discard(pair)
            self._close(src)
            self._close(dst)
