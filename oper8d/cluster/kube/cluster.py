"""``KubeCluster``: the ``Cluster`` protocol (``cluster.base``) against a real API server.

Used by the runtime manager and the integration tests. Objects are the server's JSON as
plain dicts; requests go through ``cluster.kube.transport`` (a ``kubernetes`` ApiClient's
configuration and connection pool, no generated model classes) and kinds are resolved
by ``cluster.kube.discovery``.

Writes:

* ``apply(method="apply")``: server-side apply, a PATCH with content type
  ``application/apply-patch+yaml``, ``fieldManager`` and ``force``;
* ``apply(method="update")``: GET, merge our fields into the live object (maps recurse,
  lists and scalars replace, as ``MemoryCluster`` does), PUT with the live
  ``resourceVersion``; a 409 is retried (up to 3 times); POST when missing;
* ``apply(method="replace")`` and ``update()``: PUT (``replace`` POSTs when missing;
  ``update`` with a stale ``resourceVersion`` fails with 409);
* ``update_status``: PUT to ``/status``; without a ``resourceVersion`` in the body the
  live one is fetched first (and a 409 from a race with another writer retried);
* ``delete``: DELETE with ``propagationPolicy``; False when the object was gone.

``dry_run_apply`` sends the server-side apply PATCH with ``dryRun=All``: the object the
server would store, nothing persisted (``oper8d diff``); counted as ``dry_run_apply``,
not as a write.

Watching (for the runtime's informers): ``list_with_version`` also returns the list's
``resourceVersion``, ``list_page`` returns one page of a list (``limit`` and ``continue``:
an informer parses a big list a page at a time) and ``watch`` streams the changes after a
``resourceVersion`` (see their docstrings).

Accounting: ``requests`` counts HTTP requests per verb (get, list, create, apply,
update, update_status, delete, watch; ``discovery`` for resource lists), so a read-modify-write
``apply(method="update")`` counts a get and an update; ``writes`` sums the mutating ones.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from oper8d.cluster.base import Method, Propagation, check_propagation
from oper8d.cluster.fields import content, merge
from oper8d.cluster.kube.discovery import Discovery, Resource
from oper8d.cluster.kube.transport import (
    APPLY_PATCH,
    JSON,
    METADATA_LIST,
    METADATA_WATCH,
    EventStream,
    KubeTransport,
    Query,
)
from oper8d.errors import ClusterError
from oper8d.objects import Obj

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

log = logging.getLogger("oper8d.cluster")

__all__ = ["MUTATING_VERBS", "KubeCluster"]

#: the verbs ``KubeCluster.writes`` counts
MUTATING_VERBS = ("create", "apply", "update", "update_status", "delete")

#: extra attempts after a 409 in read-modify-write loops
CONFLICT_RETRIES = 3

#: page size of list requests (continue tokens fetch the rest)
LIST_PAGE = 500

#: seconds a watch waits for data beyond its ``timeoutSeconds`` before the connection is
#: taken for dead (the server ends the watch itself at ``timeoutSeconds``)
WATCH_READ_SLACK = 30.0


class KubeCluster:
    """A real cluster implementing ``Cluster``. See the module docstring."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        field_manager: str = "oper8d",
        timeout: float | None = 30.0,
        on_request: Callable[[str, int | None], None] | None = None,
    ):
        """``on_request(verb, http_code)`` is called after every request (code None when the
        server could not be reached): the manager counts API requests in its metrics."""
        self.field_manager = field_manager
        self.on_request = on_request
        self._transport = KubeTransport(api_client, timeout=timeout)
        self._discovery = Discovery(self._transport)
        self._lock = threading.Lock()
        self._requests: Counter[str] = Counter()
        #: "apiVersion/kind" -> whether the API server applied a ``shardSelector`` to its
        #: lists (echoed ``shardInfo``); Kubernetes 1.36.3 does for built-in kinds only
        self.shard_selector_honoured: dict[str, bool] = {}

    # -- accounting ----------------------------------------------------------------------
    @property
    def requests(self) -> Counter[str]:
        """HTTP requests per verb since creation or ``reset_requests()`` (a copy)."""
        with self._lock:
            counts = Counter(self._requests)
        counts["discovery"] += self._discovery.fetches
        return +counts

    @property
    def writes(self) -> int:
        """Mutating requests since creation or ``reset_requests()``."""
        with self._lock:
            return sum(self._requests[v] for v in MUTATING_VERBS)

    def reset_requests(self) -> None:
        with self._lock:
            self._requests.clear()
            self._discovery.fetches = 0

    def resource(self, api_version: str, kind: str) -> Resource:
        """The REST resource of a kind (plural, scope); 404 ClusterError when unknown."""
        return self._discovery.resource(api_version, kind)

    def _send(
        self,
        verb: str,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON,
        accept: str = JSON,
    ) -> Any:
        with self._lock:
            self._requests[verb] += 1
        if self.on_request is None:
            return self._transport.request(
                method, path, query=query, body=body, content_type=content_type, accept=accept
            )
        try:
            result = self._transport.request(
                method, path, query=query, body=body, content_type=content_type, accept=accept
            )
        except ClusterError as err:
            self.on_request(verb, err.status)
            raise
        self.on_request(verb, 200)
        return result

    # -- reads ---------------------------------------------------------------------------
    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        res = self.resource(api_version, kind)
        try:
            sent: Obj | None = self._send("get", "GET", res.object_path(name, namespace))
            return sent
        except ClusterError as err:
            if err.status == 404:
                return None
            raise

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        return self.list_with_version(api_version, kind, namespace, label_selector)[0]

    def list_with_version(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        shard_selector: str | None = None,
        metadata_only: bool = False,
    ) -> tuple[builtins.list[Obj], str]:
        """``list()`` and the ``resourceVersion`` of the list: a ``watch`` from it sees
        every change after the list. Pages of one list share one snapshot (a 410
        ClusterError when the continue token expired: list again). ``shard_selector`` is
        sent as ``shardSelector``; an API server without sharded lists ignores it and
        returns everything (``shard_selector_honoured`` tells which, logged once).
        ``metadata_only``: each object's apiVersion, kind and metadata alone (the server
        sends ``PartialObjectMetadata``: no spec, status or data travel)."""
        items: list[Obj] = []
        token = ""
        while True:
            page = self.list_page(
                api_version,
                kind,
                namespace,
                label_selector,
                limit=LIST_PAGE,
                continue_token=token,
                shard_selector=shard_selector,
                metadata_only=metadata_only,
            )
            items += page[0]
            token = page[2]
            if not token:
                return items, page[1]

    def list_page(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        limit: int,
        continue_token: str = "",
        shard_selector: str | None = None,
        metadata_only: bool = False,
    ) -> tuple[builtins.list[Obj], str, str]:
        """One page of a list (``runtime.listwatch.PagedList``): at most ``limit`` objects
        (0: no limit) from ``continue_token`` on, the resourceVersion of the list's snapshot
        (the first page's) and the next page's token ("" after the last page). An expired
        token is a 410 ClusterError."""
        res = self.resource(api_version, kind)
        query: list[tuple[str, str]] = []
        if limit > 0:
            query.append(("limit", str(limit)))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if shard_selector:
            query.append(("shardSelector", shard_selector))
        if continue_token:
            query.append(("continue", continue_token))
        accept = METADATA_LIST if metadata_only else JSON
        page = (
            self._send("list", "GET", res.collection_path(namespace), query=query, accept=accept)
            or {}
        )
        # list items come without apiVersion and kind; callers expect them
        items = [{"apiVersion": api_version, "kind": kind, **i} for i in page.get("items") or []]
        if metadata_only:  # each item says PartialObjectMetadata: name the listed kind
            for item in items:
                item["apiVersion"], item["kind"] = api_version, kind
        meta = page.get("metadata") or {}
        # a metadata list is sharded too but says nothing of it (1.36.3 leaves shardInfo
        # out of PartialObjectMetadataList): only full lists tell whether it is honoured
        if shard_selector and not metadata_only:
            self._saw_shard_info(f"{api_version}/{kind}", bool(meta.get("shardInfo")))
        return items, meta.get("resourceVersion") or "", meta.get("continue") or ""

    def watch(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
        shard_selector: str | None = None,
        metadata_only: bool = False,
    ) -> EventStream:
        """Stream the changes to a kind after ``resource_version``: an iterator of events
        ``{"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK", "object": {...}}`` (a BOOKMARK's
        object carries only ``metadata.resourceVersion``: watch from it next time).

        The server ends the stream after ``timeout_seconds``; a too-old
        ``resource_version`` raises ``ClusterError(status=410)`` (list again), a broken
        connection ``ClusterError(status=None)``. Close the stream when done; ``close()``
        from another thread interrupts a waiting read. ``metadata_only``: the events'
        objects are ``PartialObjectMetadata`` (apiVersion ``meta.k8s.io/v1``)."""
        res = self.resource(api_version, kind)
        path = res.collection_path(namespace)
        query = [
            ("watch", "1"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(int(timeout_seconds))),
        ]
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if shard_selector:
            query.append(("shardSelector", shard_selector))
        with self._lock:
            self._requests["watch"] += 1
        response = self._transport.open_stream(
            "GET",
            path,
            query=query,
            read_timeout=timeout_seconds + WATCH_READ_SLACK,
            accept=METADATA_WATCH if metadata_only else JSON,
        )
        return EventStream(response, f"{kind} {path}")

    def _saw_shard_info(self, kind: str, honoured: bool) -> None:
        with self._lock:
            if self.shard_selector_honoured.get(kind) == honoured:
                return
            self.shard_selector_honoured[kind] = honoured
        if honoured:
            log.info("the API server shards lists and watches of %s (shardSelector)", kind)
        else:
            log.warning(
                "the API server ignores shardSelector for %s (it needs Kubernetes 1.36+ with "
                "the ShardedListAndWatch feature gate, and 1.36 shards built-in kinds only): "
                "filtering shards on the client side",
                kind,
            )

    # -- writes --------------------------------------------------------------------------
    def apply(
        self, obj: Obj, *, field_manager: str, method: Method = "apply", force: bool = True
    ) -> Obj:
        res, name, namespace = self._locate(obj)
        manager = field_manager or self.field_manager
        if method == "apply":
            body = _without_server_fields(obj)
            query = [("fieldManager", manager), ("force", "true" if force else "false")]
            sent: Obj = self._send(
                "apply",
                "PATCH",
                res.object_path(name, namespace),
                query=query,
                body=body,
                content_type=APPLY_PATCH,
            )
            return sent
        if method == "update":
            return self._read_modify_write(res, obj, name, namespace, manager)
        if method == "replace":
            try:
                return self._put("update", res, name, namespace, obj, manager)
            except ClusterError as err:
                if err.status != 404:
                    raise
            return self._create(res, namespace, obj, manager)
        raise ClusterError(
            f"unknown apply method {method!r}: use apply, update or replace", status=400
        )

    def dry_run_apply(self, obj: Obj, *, field_manager: str, force: bool = True) -> Obj:
        """What a server-side apply of ``obj`` would store, without storing it (``dryRun=All``:
        admission, defaulting and validation run; nothing is persisted). ``oper8d diff``
        compares it with the live object. Counted as ``dry_run_apply``, not as a write."""
        res, name, namespace = self._locate(obj)
        query = [
            ("fieldManager", field_manager or self.field_manager),
            ("force", "true" if force else "false"),
            ("dryRun", "All"),
        ]
        sent: Obj = self._send(
            "dry_run_apply",
            "PATCH",
            res.object_path(name, namespace),
            query=query,
            body=_without_server_fields(obj),
            content_type=APPLY_PATCH,
        )
        return sent

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        """POST ``obj``; 409 when it exists."""
        res, _, namespace = self._locate(obj, need_name=False)
        return self._create(res, namespace, obj, field_manager or self.field_manager)

    def update(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        res, name, namespace = self._locate(obj)
        return self._put("update", res, name, namespace, obj, field_manager or self.field_manager)

    def update_status(self, obj: Obj) -> Obj:
        res, name, namespace = self._locate(obj)
        path = res.object_path(name, namespace) + "/status"
        query = [("fieldManager", self.field_manager)]
        if obj["metadata"].get("resourceVersion"):
            sent: Obj = self._send("update_status", "PUT", path, query=query, body=obj)
            return sent

        def attempt(live: Obj) -> Obj:
            body = {**obj, "metadata": {**obj["metadata"], **_version_of(live)}}
            sent: Obj = self._send("update_status", "PUT", path, query=query, body=body)
            return sent

        return self._with_live(res, name, namespace, attempt)

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Propagation = "Background",
        resource_version: str | None = None,
    ) -> bool:
        """``resource_version``: delete only the object at that version (a 409 otherwise),
        as sharding deletes a peer's Lease it judged expired."""
        check_propagation(propagation)
        res = self.resource(api_version, kind)
        body = None
        if resource_version is not None:
            body = {
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": resource_version},
            }
        try:
            self._send(
                "delete",
                "DELETE",
                res.object_path(name, namespace),
                query=[("propagationPolicy", propagation)],
                body=body,
            )
        except ClusterError as err:
            if err.status == 404:
                return False
            raise
        return True

    # -- helpers -------------------------------------------------------------------------
    def _locate(self, obj: Obj, *, need_name: bool = True) -> tuple[Resource, str, str | None]:
        if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
            raise ClusterError(
                f"expected an object with apiVersion and kind, got {str(obj)[:200]}", status=400
            )
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        if need_name and not name:
            raise ClusterError(f"{obj['kind']}: metadata.name is required", status=400)
        res = self.resource(obj["apiVersion"], obj["kind"])
        namespace = meta.get("namespace") if res.namespaced else None
        if res.namespaced and not namespace:
            raise ClusterError(
                f"{obj['kind']} {name!r} is namespaced: give metadata.namespace", status=400
            )
        return res, name, namespace

    def _create(self, res: Resource, namespace: str | None, obj: Obj, manager: str) -> Obj:
        body = _without_server_fields(obj)
        sent: Obj = self._send(
            "create",
            "POST",
            res.collection_path(namespace),
            query=[("fieldManager", manager)],
            body=body,
        )
        return sent

    def _put(
        self, verb: str, res: Resource, name: str, namespace: str | None, obj: Obj, manager: str
    ) -> Obj:
        sent: Obj = self._send(
            verb,
            "PUT",
            res.object_path(name, namespace),
            query=[("fieldManager", manager)],
            body=obj,
        )
        return sent

    def _read_modify_write(
        self, res: Resource, obj: Obj, name: str, namespace: str | None, manager: str
    ) -> Obj:
        ours = content(obj)

        def attempt(live: Obj) -> Obj:
            merged = merge(live, ours)
            merged.pop("status", None)  # written only through update_status
            return self._put("update", res, name, namespace, merged, manager)

        try:
            return self._with_live(res, name, namespace, attempt)
        except _Missing:
            return self._create(res, namespace, obj, manager)

    def _with_live(
        self,
        res: Resource,
        name: str,
        namespace: str | None,
        write: Callable[[Obj], Obj],
    ) -> Obj:
        """GET the live object and ``write`` it; on 409 read again (a bounded number of
        times). Raises ``_Missing`` when the object does not exist."""
        for attempt in range(CONFLICT_RETRIES + 1):
            live = self.get(res.api_version, res.kind, name, namespace)
            if live is None:
                raise _Missing(f"{res.kind} {namespace or ''}/{name} does not exist")
            try:
                return write(live)
            except ClusterError as err:
                if err.status != 409 or attempt == CONFLICT_RETRIES:
                    raise
        raise AssertionError("unreachable")


class _Missing(ClusterError):
    """The object a read-modify-write needs is gone (a 404)."""

    def __init__(self, message: str):
        super().__init__(message, status=404)


def _version_of(live: Obj) -> dict[str, str]:
    version = (live.get("metadata") or {}).get("resourceVersion")
    return {"resourceVersion": version} if version else {}


def _without_server_fields(obj: Obj) -> Obj:
    """``obj`` without ``managedFields`` (an apply or create may not set them) and the
    server-assigned fields that would be a precondition by accident."""
    meta = {
        k: v
        for k, v in (obj.get("metadata") or {}).items()
        if k not in ("managedFields", "creationTimestamp", "selfLink")
    }
    return {**obj, "metadata": meta}
