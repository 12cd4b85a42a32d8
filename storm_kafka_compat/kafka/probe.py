"""Telling an old broker from an unreachable one, for error messages.

kafka-python starts every connection with an ApiVersions request unless
``api_version`` is given. Brokers before 0.10 (KIP-35) do not know that request
and never answer it (a 0.9 broker logs "Processor got uncaught exception" and
leaves the connection open and silent), which kafka-python then reports as
"Unable to bootstrap", the same words as for a broker that is down.
:func:`version_hint` asks each bootstrap server once with a raw ApiVersions v0
request and, when one accepts the connection but does not answer, says which
setting to add.
"""

from __future__ import annotations

import socket
import struct
from typing import Any, Dict, Iterable, Optional, Tuple

from storm_kafka_compat.config.kafka_settings import BootstrapServers

#: ApiVersions (api key 18) v0, correlation id 1, client id "skc-probe", empty body
_REQUEST_BODY = struct.pack(">hhih", 18, 0, 1, 9) + b"skc-probe"
_REQUEST = struct.pack(">i", len(_REQUEST_BODY)) + _REQUEST_BODY


def predates_api_versions(host: str, port: int, timeout_s: float = 2.0) -> Optional[bool]:
    """True when the broker at ``host:port`` accepts a connection but leaves an
    ApiVersions request unanswered (closes, resets or stays silent for
    ``timeout_s``: Kafka before 0.10), False when it answers, None when nothing
    accepts the connection."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError:
        return None
    try:
        sock.sendall(_REQUEST)
        return len(sock.recv(4)) == 0
    except OSError:                 # socket.timeout, ConnectionResetError
        return True
    finally:
        sock.close()


#: answers of :func:`predates_api_versions` by ``(host, port)``, this process
_PROBED: Dict[Tuple[str, int], Optional[bool]] = {}


def _split(server: str) -> Tuple[str, int]:
    host, _, port = server.strip().rpartition(":")
    return (host.strip("[]") or server.strip()), int(port or 9092)


def version_hint(bootstrap_servers: BootstrapServers, client_config: Any = None, *,
                 section: str = "kafka") -> str:
    """A sentence to append to a connection error: empty unless no broker version
    is configured and a bootstrap server turns out to predate Kafka 0.10."""
    if client_config and client_config.get("api_version") is not None:
        return ""
    servers: Iterable[str] = (bootstrap_servers.split(",") if isinstance(bootstrap_servers, str)
                              else bootstrap_servers or ())
    for server in servers:
        try:
            host, port = _split(server)
        except ValueError:
            continue
        if (host, port) not in _PROBED:           # once per process: a probe may take 2 s
            _PROBED[(host, port)] = predates_api_versions(host, port)
        if _PROBED[(host, port)]:
            return (f"; the broker at {server.strip()} accepts connections but leaves an "
                    "ApiVersions request unanswered, as brokers older than Kafka 0.10 do: if "
                    "the cluster runs such a version, set it in "
                    f"the CONFIG, e.g. `{section}: {{api_version: \"0.9\"}}` (see "
                    "docs/configuration.md, \"Old brokers\")")
    return ""


# --- refused SASL credentials ---------------------------------------------------------------

#: SaslHandshake (17) and SaslAuthenticate (36), both v1
_SASL_HANDSHAKE, _SASL_AUTHENTICATE = 17, 36


def _frame(api_key: int, correlation: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, 1, correlation, 9) + b"skc-probe"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return out
    size = struct.unpack(">i", exactly(4))[0]
    return exactly(size)[4:]                     # without the correlation id


def _authenticate(sock: socket.socket, token: bytes, correlation: int) -> Tuple[int, str, bytes]:
    """One SaslAuthenticate v1 round: (error code, error message, server bytes)."""
    sock.sendall(_frame(_SASL_AUTHENTICATE, correlation, struct.pack(">i", len(token)) + token))
    body = _read_frame(sock)
    code, msg_len = struct.unpack(">hh", body[:4])
    message = body[4:4 + msg_len].decode("utf-8", "replace") if msg_len > 0 else ""
    rest = body[4 + max(msg_len, 0):]
    size = struct.unpack(">i", rest[:4])[0]
    return code, message, rest[4:4 + max(size, 0)]


def sasl_refusal(server: str, client_config: Any, *, timeout_s: float = 5.0) -> Optional[str]:
    """The broker's reason when it refuses the SASL credentials of ``client_config``
    (kafka-python names: ``security_protocol``, ``sasl_mechanism``,
    ``sasl_plain_username``, ``sasl_plain_password``, ``ssl_cafile``...); None when
    it accepts them, cannot be asked, or the mechanism is not PLAIN or SCRAM.

    kafka-python reports refused credentials as "Unable to bootstrap", the words of
    a broker that is down: one authentication is tried here, by hand, to tell them
    apart. Nothing of the credentials is returned or logged.
    """
    config = client_config or {}
    protocol = str(config.get("security_protocol", "PLAINTEXT")).upper()
    mechanism = str(config.get("sasl_mechanism", "PLAIN")).upper()
    user, password = config.get("sasl_plain_username"), config.get("sasl_plain_password")
    if not protocol.startswith("SASL_") or user is None or password is None or mechanism not in (
            "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        return None
    try:
        host, port = _split(server)
        sock: Any = socket.create_connection((host, port), timeout=timeout_s)
    except (OSError, ValueError):
        return None
    try:
        if protocol == "SASL_SSL":
            import ssl
            context = ssl.create_default_context(cafile=config.get("ssl_cafile"))
            context.check_hostname = bool(config.get("ssl_check_hostname", True))
            sock = context.wrap_socket(sock, server_hostname=host)
        name = mechanism.encode()
        sock.sendall(_frame(_SASL_HANDSHAKE, 1, struct.pack(">h", len(name)) + name))
        if struct.unpack(">h", _read_frame(sock)[:2])[0] != 0:
            return f"the broker does not offer SASL mechanism {mechanism}"
        if mechanism == "PLAIN":
            code, message, _ = _authenticate(
                sock, b"\0" + str(user).encode() + b"\0" + str(password).encode(), 2)
        else:
            from kafka.net.sasl.scram import ScramClient
            scram = ScramClient(str(user), str(password), mechanism)
            code, message, server_first = _authenticate(sock, scram.first_message(), 2)
            if code == 0:
                scram.process_server_first_message(server_first)
                code, message, _ = _authenticate(sock, scram.final_message(), 3)
        if code == 0:
            return None
        return message or f"SaslAuthenticate error code {code}"
    except ConnectionError:
        return None
    except (OSError, ValueError, struct.error):
        return None
    finally:
        sock.close()
