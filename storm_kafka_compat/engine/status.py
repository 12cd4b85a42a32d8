"""The running job's status over HTTP (``run --status-port PORT``).

``GET /status`` (or ``/``) answers the last snapshot
(:func:`~.report.status_snapshot`) as JSON. The server runs in a daemon thread of the
driver and only reads the snapshot the loop last published, so it never blocks
the loop. ``storm-kafka-compat status URL`` prints it.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Optional

from storm_kafka_compat.errors import ConfigError

log = logging.getLogger(__name__)


class StatusServer:
    """Serves ``snapshot()`` on ``host:port`` until :meth:`close`."""

    def __init__(self, port: int, snapshot: Callable[[], Optional[Dict[str, Any]]], *,
                 host: str = "127.0.0.1") -> None:
        def handler_factory(*args: Any) -> "_Handler":
            return _Handler(snapshot, *args)
        try:
            self._server = ThreadingHTTPServer((host, port), handler_factory)
        except OSError as exc:
            raise ConfigError(f"--status-port {port}: cannot listen on {host}:{port} ({exc}); "
                              "choose a free port", key="--status-port", value=port) from exc
        self.port = self._server.server_address[1]
        self.url = f"http://{host}:{self.port}/status"
        self._thread = threading.Thread(target=self._server.serve_forever, name="status-http",
                                        daemon=True)
        self._thread.start()
        log.info("status on %s", self.url)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    def __init__(self, snapshot: Callable[[], Optional[Dict[str, Any]]], *args: Any) -> None:
        self._snapshot = snapshot
        super().__init__(*args)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        snap = self._snapshot()
        if self.path.rstrip("/") not in ("", "/status"):
            self.send_error(404, "the status is at /status")
            return
        body = json.dumps(snap if snap is not None else {"starting": True}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        log.debug("status %s", format % args)
