"""HTTP requests to a real API server, as plain JSON, for ``cluster.kube.KubeCluster``.

Wraps a ``kubernetes.client.ApiClient``: it reuses the client's configuration (host,
TLS, bearer token or client certificate, refreshed tokens) and its urllib3 pool, but
bypasses the generated model classes, so objects stay dicts on the hot path. Every
failure becomes an ``oper8d.errors.ClusterError``: the HTTP status in ``status`` and the
server's ``Status.message`` in the message; connection failures have ``status=None``.

Streaming (watches): ``KubeTransport.open_stream`` returns the response unread and
``EventStream`` reads its line-delimited JSON events one at a time; ``close()`` may be
called from another thread and interrupts a read that is waiting for the server.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import urllib3
from kubernetes.client.exceptions import ApiException

from oper8d.errors import ClusterError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

JSON = "application/json"
#: Accept headers asking for metadata only (``PartialObjectMetadata``): a list's items, and
#: the objects of a watch's events, come without spec, status or data
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
APPLY_PATCH = "application/apply-patch+yaml"

Query = Sequence[tuple[str, str]]


class KubeTransport:
    """Sends one request and returns the decoded JSON body (None when empty)."""

    def __init__(self, api_client: ApiClient, *, timeout: float | None = 30.0):
        self.api_client = api_client
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON,
        accept: str = JSON,
    ) -> Any:
        headers = {"Accept": accept}
        payload: Any = None
        if body is not None:
            headers["Content-Type"] = content_type
            # The REST layer JSON-encodes bodies of JSON content types itself and sends
            # bytes as they are otherwise; JSON is valid YAML, so the apply-patch body
            # needs no YAML serializer.
            payload = body if content_type == JSON else json.dumps(body).encode()
        try:
            _, url, headers, _, _ = self.api_client.param_serialize(
                method,
                path,
                query_params=list(query) or None,
                header_params=headers,
                auth_settings=["BearerToken"],
            )
            response = self.api_client.rest_client.request(
                method, url, headers=headers, body=payload, _request_timeout=self.timeout
            )
            data = response.read()
        except ApiException as err:  # raised by the REST layer for TLS failures (status 0)
            raise ClusterError(
                f"{method} {path}: {err.reason or err}", status=err.status or None
            ) from err
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise ClusterError(
                f"{method} {path}: cannot reach the API server at "
                f"{self.api_client.configuration.host}: {err}",
                status=None,
            ) from err
        if not 200 <= response.status <= 299:
            raise ClusterError(
                f"{method} {path}: {_server_message(data, response.reason)} "
                f"(HTTP {response.status})",
                status=response.status,
                causes=_causes(data),
            )
        return json.loads(data) if data else None

    def open_stream(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        read_timeout: float | None,
        accept: str = JSON,
    ) -> urllib3.BaseHTTPResponse:
        """Send a request whose body is a stream (a watch) and return the response with
        the body unread; the connection is given ``self.timeout`` to open and then waits
        up to ``read_timeout`` seconds for each piece of the body. A non-2xx answer
        raises ``ClusterError`` like ``request`` does."""
        try:
            _, url, headers, _, _ = self.api_client.param_serialize(
                method,
                path,
                query_params=list(query) or None,
                header_params={"Accept": accept},
                auth_settings=["BearerToken"],
            )
            response = self.api_client.rest_client.request(
                method, url, headers=headers, _request_timeout=(self.timeout, read_timeout)
            )
            if not 200 <= response.status <= 299:
                data = response.read()
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as err:
            raise self._failure(method, path, err) from err
        if not 200 <= response.status <= 299:
            raise ClusterError(
                f"{method} {path}: {_server_message(data, response.reason)} "
                f"(HTTP {response.status})",
                status=response.status,
            )
        stream: urllib3.BaseHTTPResponse = response.response
        return stream

    def _failure(self, method: str, path: str, err: Exception) -> ClusterError:
        """The ClusterError for a request that got no HTTP answer."""
        if isinstance(err, ApiException):  # the REST layer's TLS failures (status 0)
            return ClusterError(f"{method} {path}: {err.reason or err}", status=err.status or None)
        return ClusterError(
            f"{method} {path}: cannot reach the API server at "
            f"{self.api_client.configuration.host}: {err}",
            status=None,
        )


class EventStream:
    """The events of a watch response, one decoded JSON object per line, as an iterator.

    An ``ERROR`` event raises ``ClusterError`` with the Status's ``code`` (410 when the
    resourceVersion is too old); a connection that breaks raises ``ClusterError`` with
    ``status=None``; the end of the body (the server's ``timeoutSeconds``) or ``close()``
    ends the iteration. ``close()`` is safe from any thread and idempotent.
    """

    def __init__(self, response: urllib3.BaseHTTPResponse, where: str):
        self._response = response
        self._where = where
        self._chunks: Iterator[bytes] = response.stream(decode_content=True)
        self._buffer = b""
        self._lock = threading.Lock()
        self._closed = False

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> dict[str, Any]:
        while True:
            line = self._next_line()
            if line.strip():
                return self._decode(line)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        # Shutting the socket down wakes a read blocked in another thread; closing the
        # response drops the connection (it is never handed back to the pool mid-stream).
        with contextlib.suppress(AttributeError, ValueError, RuntimeError, OSError):
            self._response.shutdown()  # fails when not connected: nothing waits on it then
        with contextlib.suppress(OSError, ValueError):
            self._response.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _next_line(self) -> bytes:
        while b"\n" not in self._buffer:
            if self._closed:
                raise StopIteration
            try:
                chunk = next(self._chunks, b"")
            except Exception as err:
                if self._closed:  # whatever a read of a closed stream raises, it is the end
                    raise StopIteration from None
                if not isinstance(err, urllib3.exceptions.HTTPError | OSError):
                    raise
                raise ClusterError(
                    f"watch {self._where}: the connection to the API server broke: {err}",
                    status=None,
                ) from err
            if not chunk:
                rest, self._buffer = self._buffer, b""
                if rest.strip():
                    return rest  # a last event without a newline
                raise StopIteration
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _decode(self, line: bytes) -> dict[str, Any]:
        try:
            event = json.loads(line)
        except ValueError as err:
            raise ClusterError(
                f"watch {self._where}: the API server sent a line that is not JSON: {line[:200]!r}",
                status=None,
            ) from err
        if event.get("type") == "ERROR":
            status = event.get("object") or {}
            code = status.get("code")
            raise ClusterError(
                f"watch {self._where}: {status.get('message') or 'error event'}"
                + (f" (code {code})" if code else ""),
                status=code if isinstance(code, int) and code else None,
            )
        return cast(dict[str, Any], event)


def _causes(data: bytes | None) -> tuple[tuple[str, str], ...]:
    """The ``(field, message)`` of each cause in a Status body's details."""
    try:
        decoded = json.loads(data) if data else None
    except ValueError:
        return ()
    details = decoded.get("details") if isinstance(decoded, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(causes, list):
        return ()
    return tuple(
        (str(c.get("field") or ""), str(c.get("message") or ""))
        for c in causes
        if isinstance(c, dict)
    )


def _server_message(data: bytes | None, reason: str | None) -> str:
    """The ``message`` of a Status body, else the raw body or the HTTP reason."""
    text = (data or b"").decode("utf-8", "replace").strip()
    try:
        decoded = json.loads(text) if text else None
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("message"):
        return str(decoded["message"])
    return text[:500] or reason or "no message from the server"
