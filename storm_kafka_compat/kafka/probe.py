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


def version_hint(bootstrap_servers: Any, client_config: Any = None, *,
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
