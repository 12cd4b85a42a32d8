"""Old-broker detection for error messages (storm_kafka_compat.kafka.probe), against
local sockets that behave like each kind of broker."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

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


def _sasl_broker(auth_error: int, message: str):
    """A one-connection fake broker: answers SaslHandshake v1 (PLAIN offered) and one
    SaslAuthenticate v1 with ``auth_error``; returns (port, thread, received tokens)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    received = []

    def frame(sock):
        size = struct.unpack(">i", sock.recv(4))[0]
        data = b""
        while len(data) < size:
            data += sock.recv(size - len(data))
        return data

    def reply(sock, correlation, body):
        payload = struct.pack(">i", correlation) + body
        sock.sendall(struct.pack(">i", len(payload)) + payload)

    def serve():
        conn, _ = server.accept()
        with conn:
            req = frame(conn)
            correlation = struct.unpack(">i", req[4:8])[0]
            reply(conn, correlation, struct.pack(">hih", 0, 1, 5) + b"PLAIN")
            req = frame(conn)
            correlation = struct.unpack(">i", req[4:8])[0]
            header = 8 + 2 + struct.unpack(">h", req[8:10])[0]
            size = struct.unpack(">i", req[header:header + 4])[0]
            received.append(req[header + 4:header + 4 + size])
            text = message.encode()
            reply(conn, correlation, struct.pack(">hh", auth_error, len(text)) + text
                  + struct.pack(">iq", 0, 0))
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server.getsockname()[1], thread, received


@pytest.mark.parametrize("code,message,expected", [
    (58, "Authentication failed: Invalid username or password",
     "Authentication failed: Invalid username or password"),
    (0, "", None),
])
def test_sasl_refusal_authenticates_once_by_hand(code, message, expected):
    from storm_kafka_compat.kafka.probe import sasl_refusal
    port, thread, received = _sasl_broker(code, message)
    config = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
              "sasl_plain_username": "alice", "sasl_plain_password": "pw"}
    assert sasl_refusal(f"127.0.0.1:{port}", config) == expected
    thread.join(5)
    assert received == [b"\0alice\0pw"]


def test_sasl_refusal_asks_nothing_without_sasl_credentials():
    from storm_kafka_compat.kafka.probe import sasl_refusal
    assert sasl_refusal("127.0.0.1:1", {"security_protocol": "SSL"}) is None
    assert sasl_refusal("127.0.0.1:1", {"security_protocol": "SASL_PLAINTEXT",
                                        "sasl_mechanism": "GSSAPI",
                                        "sasl_plain_username": "u",
                                        "sasl_plain_password": "p"}) is None
    assert sasl_refusal("127.0.0.1:1", {"security_protocol": "SASL_PLAINTEXT",
                                        "sasl_plain_username": "u",
                                        "sasl_plain_password": "p"}) is None   # refused
