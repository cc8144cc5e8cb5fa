"""HTTP requests to a real API server, as plain JSON, for ``cluster.kube.KubeCluster``.

Wraps a ``kubernetes.client.ApiClient``: it reuses the client's configuration (host,
TLS, bearer token or client certificate, refreshed tokens) and its urllib3 pool, but
bypasses the generated model classes, so objects stay dicts on the hot path. Every
failure becomes an ``oper8d.errors.ClusterError``: the HTTP status in ``status`` and the
server's ``Status.message`` in the message; connection failures have ``status=None``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import urllib3
from kubernetes.client.exceptions import ApiException

from oper8d.errors import ClusterError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

JSON = "application/json"
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
    ) -> Any:
        headers = {"Accept": JSON}
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
            )
        return json.loads(data) if data else None


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
