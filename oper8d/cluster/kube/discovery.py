"""API discovery for ``cluster.kube.KubeCluster``: (apiVersion, kind) -> REST resource.

Reads ``/api/v1`` and ``/apis/<group>/<version>`` resource lists, one group-version at a
time and only when first needed, and caches them per KubeCluster. A kind missing from
the cache re-reads its group-version (a CRD installed after start is found); a kind the
server does not serve is a 404 ClusterError.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from oper8d.cluster.kube.transport import KubeTransport
from oper8d.errors import ClusterError
from oper8d.kinds import parse_api_version, path_segment_problem


@dataclass(frozen=True)
class Resource:
    """Where objects of one kind live on the API server."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def group_path(self) -> str:
        return group_path(self.api_version)

    def collection_path(self, namespace: str | None) -> str:
        """``.../<plural>`` (all namespaces when ``namespace`` is None)."""
        if self.namespaced and namespace:
            _check_segment(self.kind, "namespace", namespace)
            return f"{self.group_path}/namespaces/{namespace}/{self.plural}"
        return f"{self.group_path}/{self.plural}"

    def object_path(self, name: str, namespace: str | None) -> str:
        if not name:
            raise ClusterError(f"{self.kind}: metadata.name is required", status=400)
        if self.namespaced and not namespace:
            raise ClusterError(
                f"{self.kind} {name!r} is namespaced: give its namespace", status=400
            )
        _check_segment(self.kind, "name", name)
        return f"{self.collection_path(namespace)}/{name}"


def _check_segment(kind: str, what: str, value: str) -> None:
    problem = path_segment_problem(value)
    if problem is not None:
        raise ClusterError(f"{kind}: invalid {what}: {problem}", status=400)


def group_path(api_version: str) -> str:
    """``/api/v1`` for the core group, ``/apis/<group>/<version>`` otherwise. A 400
    ClusterError, before any request, for what is not an apiVersion: the HTTP client
    would normalise ``/apis/../api/v1/namespaces/ns/secrets/x`` into a core read."""
    try:
        group, version = parse_api_version(api_version)
    except ValueError as err:
        raise ClusterError(str(err), status=400) from err
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


class Discovery:
    """Resolves kinds through the server's resource lists; thread-safe."""

    def __init__(self, transport: KubeTransport):
        self._transport = transport
        self._lock = threading.Lock()
        self._by_version: dict[str, dict[str, Resource]] = {}
        #: resource lists fetched (for request accounting)
        self.fetches = 0

    def resource(self, api_version: str, kind: str) -> Resource:
        """The resource serving ``kind`` in ``api_version``; refreshes once on a miss.
        A 400 ClusterError when ``api_version`` is not one (:func:`group_path`)."""
        known = self._by_version.get(api_version)
        if known is not None and kind in known:
            return known[kind]
        fresh = self._fetch(api_version)
        if kind in fresh:
            return fresh[kind]
        served = ", ".join(sorted(fresh)) or "none"
        raise ClusterError(
            f"the API server does not serve kind {kind!r} in {api_version!r} (kinds there: "
            f"{served}); install its CustomResourceDefinition or fix apiVersion/kind",
            status=404,
        )

    def forget(self, api_version: str | None = None) -> None:
        """Drop cached resource lists (all, or one group-version's)."""
        with self._lock:
            if api_version is None:
                self._by_version.clear()
            else:
                self._by_version.pop(api_version, None)

    def _fetch(self, api_version: str) -> dict[str, Resource]:
        path = group_path(api_version)  # (raises before any request)
        try:
            listing = self._transport.request("GET", path)
        except ClusterError as err:
            if err.status != 404:
                raise
            listing = None  # the group-version is not served (yet)
        finally:
            with self._lock:
                self.fetches += 1
        resources: dict[str, Resource] = {}
        for entry in (listing or {}).get("resources") or []:
            if "/" in entry.get("name", ""):
                continue  # subresources (status, scale, ...) share their parent's kind
            resources[entry["kind"]] = Resource(
                api_version=api_version,
                kind=entry["kind"],
                plural=entry["name"],
                namespaced=bool(entry.get("namespaced")),
            )
        with self._lock:
            self._by_version[api_version] = resources
        return resources
