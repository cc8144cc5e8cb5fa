"""The health probe and metrics HTTP endpoint of a running operator.

The manager starts one ``ProbeServer`` (``--health-probe-bind-address``, like
controller-runtime's) that the kubelet and Prometheus poll:

- ``GET /healthz`` → 200 ``ok`` while ``healthy()``, else 503 ``not healthy: <why>``;
- ``GET /readyz`` → 200 ``ok`` while ``ready()``, else 503 ``not ready: <why>``;
- ``GET /metrics`` → the Prometheus text exposition of ``Metrics`` (404 without one);
- anything else → 404.

A check returns a bool or ``(bool, reason)``; one that raises counts as failing, with the
exception as the reason. The server runs in a daemon thread (``http.server``'s
``ThreadingHTTPServer``, one thread per request); requests are logged at debug level
only, so the kubelet's polling does not fill stderr.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from oper8d.runtime.metrics import EXPOSITION_CONTENT_TYPE, Metrics

__all__ = ["Check", "ProbeServer", "parse_address"]

_log = logging.getLogger(__name__)

#: a probe check: True/False, or (True/False, reason shown when False)
Check = Callable[[], bool | tuple[bool, str]]


def parse_address(address: str) -> tuple[str, int]:
    """``"host:port"`` → ``(host, port)``. ``":8081"`` gives host ``""`` (every interface,
    as controller-runtime does), ``"[::1]:8081"`` an IPv6 host; port 0 picks a free port."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(
            f"invalid probe address {address!r}: expected HOST:PORT with a port from 0 to "
            "65535, e.g. ':8081' (every interface) or '127.0.0.1:8081'"
        )
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


class _Server(ThreadingHTTPServer):
    """Holds the checks for the handler; binds IPv6 when the host is an IPv6 address."""

    daemon_threads = True

    def __init__(self, host: str, port: int, healthy: Check, ready: Check, metrics: Any):
        if ":" in host:
            self.address_family = socket.AF_INET6
        self.healthy = healthy
        self.ready = ready
        self.metrics: Metrics | None = metrics
        super().__init__((host, port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The default prints a traceback to stderr, e.g. when a prober hangs up early.
        _log.debug("probe request from %s failed", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0 (the default): one request per connection, so stop() leaves no live connection.
    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._probe(self.server.healthy, "not healthy")
        elif path == "/readyz":
            self._probe(self.server.ready, "not ready")
        elif path == "/metrics" and self.server.metrics is not None:
            self._reply(200, self.server.metrics.exposition(), EXPOSITION_CONTENT_TYPE)
        else:
            self._reply(404, f"no such endpoint {path}; try /healthz, /readyz, /metrics\n")

    def _probe(self, check: Check, failing: str) -> None:
        passed, reason = _run_check(check)
        if passed:
            self._reply(200, "ok\n")
        else:
            self._reply(503, f"{failing}: {reason}\n")

    def _reply(
        self, code: int, body: str | bytes, content_type: str = "text/plain; charset=utf-8"
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("probe %s: " + format, self.client_address[0], *args)


def _run_check(check: Check) -> tuple[bool, str]:
    try:
        result = check()
    except Exception as exc:  # a broken check fails the probe rather than the server
        return False, f"check raised {type(exc).__name__}: {exc}"
    if isinstance(result, tuple):
        passed, reason = result
        return bool(passed), str(reason) or "no reason given"
    return bool(result), "check returned false"


class ProbeServer:
    """Serves /healthz, /readyz and /metrics on ``address`` from ``start()`` to ``stop()``."""

    def __init__(
        self,
        address: str,
        *,
        healthy: Check,
        ready: Check,
        metrics: Metrics | None = None,
    ):
        self._host, self._port = parse_address(address)
        self._healthy = healthy
        self._ready = ready
        self._metrics = metrics
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port being served (the one picked when the address said port 0)."""
        if self._server is None:
            raise RuntimeError("ProbeServer.port is known once the server runs; call start()")
        return int(self._server.server_address[1])

    def start(self) -> None:
        """Bind the address (OSError when taken) and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("ProbeServer already started; stop() it before starting again")
        server = _Server(self._host, self._port, self._healthy, self._ready, self._metrics)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"oper8d-probes:{self.port}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, close the socket and join the thread; no-op when not running."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.shutdown()
        server.server_close()
        thread.join()
        self._server = self._thread = None
