"""Requests to the test environment's kube-apiserver for the differential tests: the
apiserver's verdict (accepted or refused) on a dry-run create or server-side apply of an
object, as ``KubeSchemas.validate`` gives it offline.

``ApiServer`` keeps one HTTPS connection per thread and reuses it (keep-alive), so a test
that sends thousands of dry runs pays the TLS handshake once per worker; ``verdicts`` sends
many at once over a few such connections.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import pytest

from oper8d.envtest import Environment
from oper8d.kubeschema import KubeSchemas

T = TypeVar("T")
R = TypeVar("R")

#: one-line results a differential test prints at the end of the run (``conftest.py``)
SUMMARY = pytest.StashKey[list[str]]()

#: what server-side apply sends (oper8d applies every rendered object so)
APPLY = "application/apply-patch+yaml"


def collection(obj: dict[str, Any], schemas: KubeSchemas, namespace: str = "default") -> str:
    """The collection path ``obj`` is created in: its own namespace, else ``namespace``."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    info = schemas.kind_info(api_version, kind)
    plural = info.plural if info else kind.lower() + "s"
    namespaced = info.namespaced if info else True
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    meta = obj.get("metadata")
    ns = (meta.get("namespace") if isinstance(meta, dict) else None) or namespace
    return f"{root}/namespaces/{ns}/{plural}" if namespaced else f"{root}/{plural}"


class ApiServer:
    """The test apiserver, over one kept-alive connection per thread."""

    def __init__(self, env: Environment) -> None:
        assert env.server_url is not None and env.ca_file is not None
        url = urlsplit(env.server_url)
        self._host, self._port = url.hostname or "127.0.0.1", url.port or 443
        self._token = env.admin_token
        self._context = ssl.create_default_context(cafile=str(env.ca_file))
        self._local = threading.local()
        self._opened: list[http.client.HTTPSConnection] = []
        self._lock = threading.Lock()

    def _connection(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(
                self._host, self._port, context=self._context, timeout=30
            )
            self._local.conn = conn
            with self._lock:
                self._opened.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection a thread opened."""
        with self._lock:
            for conn in self._opened:
                conn.close()
            self._opened.clear()

    def send(
        self,
        method: str,
        path: str,
        body: Any,
        query: str = "",
        content_type: str = "application/json",
    ) -> tuple[int, str]:
        """The status and body of one request (a dropped kept-alive connection is opened
        again once)."""
        data = json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self._token}", "Content-Type": content_type}
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, f"{path}{query}", body=data, headers=headers)
                response = conn.getresponse()
                return response.status, response.read().decode()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def create_rejects(
        self,
        schemas: KubeSchemas,
        obj: dict[str, Any],
        validation: str = "Strict",
        real: bool = False,
    ) -> tuple[bool, str]:
        """The apiserver's verdict on a create of ``obj``: a dry run, or a ``real`` one
        (what a dry run does not do, such as allocating a node port), deleted again at once."""
        query = f"?fieldValidation={validation}" + ("" if real else "&dryRun=All")
        path = collection(obj, schemas)
        status, text = self.send("POST", path, obj, query)
        if real and status < 300:
            deleted, answer = self.send("DELETE", f"{path}/{obj['metadata']['name']}", {})
            assert deleted < 300, answer
        return status >= 300, f"{status} {text[:400]}"

    def apply_rejects(
        self,
        schemas: KubeSchemas,
        obj: dict[str, Any],
        validation: str = "Strict",
        namespace: str = "default",
        real: bool = False,
    ) -> tuple[bool, str]:
        """The apiserver's verdict on a dry-run server-side apply of ``obj`` (what oper8d
        sends), in its own namespace or ``namespace``; or a ``real`` one (what a dry run
        does not do, such as allocating a node port), deleted again at once."""
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        path = f"{collection(obj, schemas, namespace)}/{quote(str(name), safe='')}"
        query = f"?fieldValidation={validation}&fieldManager=kubeschema-test&force=true"
        status, text = self.send("PATCH", path, obj, query + ("" if real else "&dryRun=All"), APPLY)
        if real and status < 300:
            deleted, answer = self.send("DELETE", path, {})
            assert deleted < 300, answer
        return status >= 300, f"{status} {text[:400]}"

    def verdicts(self, items: Sequence[T], ask: Callable[[T], R], workers: int = 4) -> list[R]:
        """``ask`` of every item, over ``workers`` connections, in the items' order."""
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(ask, items))
