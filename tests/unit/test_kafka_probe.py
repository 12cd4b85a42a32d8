"""Old-broker detection for error messages (storm_kafka_compat.kafka.probe), against
local sockets that behave like each kind of broker."""

from __future__ import annotations

import socket
import struct
import threading

from storm_kafka_compat.kafka.probe import predates_api_versions, version_hint


def _server(behaviour):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        size = struct.unpack(">i", conn.recv(4))[0]
        conn.recv(size)
        behaviour(conn)

    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_silent_broker_predates_api_versions():
    held = []
    srv, port = _server(held.append)                 # keeps the connection, never answers
    assert predates_api_versions("127.0.0.1", port, timeout_s=0.3) is True
    srv.close()


def test_closing_broker_predates_api_versions():
    srv, port = _server(lambda c: c.close())
    assert predates_api_versions("127.0.0.1", port, timeout_s=2) is True
    srv.close()


def test_answering_broker_is_recent():
    srv, port = _server(lambda c: c.sendall(struct.pack(">ii", 6, 1) + b"\x00\x00"))
    assert predates_api_versions("127.0.0.1", port, timeout_s=2) is False
    srv.close()


def test_nothing_listening_is_unreachable_not_old():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    assert predates_api_versions("127.0.0.1", port, timeout_s=0.3) is None
    from storm_kafka_compat.kafka import probe
    probe._PROBED.clear()
    assert version_hint(f"127.0.0.1:{port}") == ""


def test_hint_names_the_setting_and_is_silent_when_a_version_is_set():
    from storm_kafka_compat.kafka import probe
    probe._PROBED.clear()
    srv, port = _server(lambda c: c.close())
    hint = version_hint([f"127.0.0.1:{port}"])
    assert 'api_version: "0.9"' in hint and f"127.0.0.1:{port}" in hint
    srv.close()
    assert version_hint([f"127.0.0.1:{port}"], {"api_version": (0, 9)}) == ""
