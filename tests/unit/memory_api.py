"""Test helper: the in-memory cluster as the runtime sees a real API server.

``MemoryApi`` gives the runtime manager (``runtime.manager.ManagedApi``) what it needs of a
``KubeCluster`` on top of a ``MemoryCluster``: discovery (``resource``; kinds in
``unserved`` answer 404, as a CRD that is not installed), lists with a resourceVersion and
watches from one (every change of the cluster is logged with its resourceVersion, and a
watch replays the log after its starting version, then waits for more), and the
``on_request`` hook. ``hold(kind)`` makes writes of one kind wait until released, to catch
a reconcile in the middle of a write. ``wait_until(predicate)`` waits, up to a bound,
until a change of the cluster makes ``predicate()`` true.

Used by tests/unit/test_runtime_manager.py and tests/unit/test_runtime_informer.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from oper8d.clock import FakeClock
from oper8d.cluster.base import Method, Obj, Propagation
from oper8d.cluster.kube.discovery import Resource
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.selectors import matches
from oper8d.errors import ClusterError
from oper8d.kinds import group_of, is_cluster_scoped
from oper8d.runtime.temporarypatch import API_VERSION as TP_API_VERSION
from oper8d.runtime.temporarypatch import KIND as TP_KIND

#: how long a test waits for another thread before it fails (never reached when correct)
STUCK = 10.0


class MemoryApi:
    """See the module docstring."""

    def __init__(self, clock: FakeClock):
        self.cluster = MemoryCluster(clock=clock.now, uid_factory=sequential_uids("api"))
        self.on_request: Callable[[str, int | None], None] | None = None
        self.unserved = {(group_of(TP_API_VERSION), TP_KIND)}
        #: (resourceVersion, event, object) of every change, in order
        self.log: list[tuple[int, str, Obj]] = []
        self.changed = threading.Condition()
        self._held: dict[str, tuple[threading.Event, threading.Event]] = {}
        self.cluster.watch(self._record)

    def _record(self, event: str, obj: Obj) -> None:
        with self.changed:
            self.log.append((int(obj["metadata"]["resourceVersion"]), event, obj))
            self.changed.notify_all()

    def wait_until(self, predicate: Callable[[], bool]) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, STUCK)

    def serve(self, api_version: str, kind: str) -> None:
        self.unserved.discard((group_of(api_version), kind))

    # -- holding writes -----------------------------------------------------------------
    def hold(self, kind: str) -> tuple[threading.Event, threading.Event]:
        """Writes of ``kind`` wait for ``release`` to be set; ``entered`` is set when one
        starts waiting. Returns (entered, release)."""
        pair = (threading.Event(), threading.Event())
        self._held[kind] = pair
        return pair

    def _maybe_hold(self, obj: Obj) -> None:
        pair = self._held.get(obj.get("kind", ""))
        if pair is not None:
            entered, release = pair
            entered.set()
            assert release.wait(STUCK), f"a {obj['kind']} write was held too long"

    # -- discovery ------------------------------------------------------------------------
    def resource(self, api_version: str, kind: str) -> Resource:
        if (group_of(api_version), kind) in self.unserved:
            raise ClusterError(f"the server could not find {api_version} {kind}", status=404)
        plural = kind.lower() + "s"
        return Resource(
            api_version, kind, plural, namespaced=not is_cluster_scoped(api_version, kind)
        )

    # -- list and watch -----------------------------------------------------------------
    def list_with_version(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        shard_selector: str | None = None,  # ignored, like an API server before 1.36
        metadata_only: bool = False,
    ) -> tuple[list[Obj], str]:
        with self.changed:
            items = self.cluster.list(api_version, kind, namespace, label_selector)
            versions = [rv for rv, _, _ in self.log[-1:]]
            versions += [int(o["metadata"]["resourceVersion"]) for o in items]
            if metadata_only:
                items = [partial(o) for o in items]
            return items, str(max(versions, default=0))

    def watch(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str,
        timeout_seconds: int = 300,
        shard_selector: str | None = None,  # ignored, like an API server before 1.36
        metadata_only: bool = False,
    ) -> MemoryWatch:
        return MemoryWatch(
            self, api_version, kind, namespace, label_selector, resource_version, metadata_only
        )

    # -- CRUD -----------------------------------------------------------------------------
    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        return self.cluster.get(api_version, kind, name, namespace)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        return self.cluster.list(api_version, kind, namespace, label_selector)

    def create(self, obj: Obj, *, field_manager: str | None = None) -> Obj:
        self._maybe_hold(obj)
        return self.cluster.create(obj, field_manager=field_manager or "test")

    def apply(
        self, obj: Obj, *, field_manager: str, method: Method = "apply", force: bool = True
    ) -> Obj:
        self._maybe_hold(obj)
        return self.cluster.apply(obj, field_manager=field_manager, method=method, force=force)

    def update(self, obj: Obj) -> Obj:
        self._maybe_hold(obj)
        return self.cluster.update(obj)

    def update_status(self, obj: Obj) -> Obj:
        return self.cluster.update_status(obj)

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Propagation = "Background",
    ) -> bool:
        return self.cluster.delete(api_version, kind, name, namespace, propagation=propagation)


def partial(obj: Obj) -> Obj:
    """``obj`` as a metadata-only list or watch sends it (``PartialObjectMetadata``)."""
    return {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": obj["metadata"],
    }


class MemoryWatch:
    """One watch: the logged changes of a kind after a resourceVersion, until closed."""

    def __init__(
        self,
        api: MemoryApi,
        api_version: str,
        kind: str,
        namespace: str | None,
        label_selector: str | None,
        resource_version: str,
        metadata_only: bool = False,
    ):
        self._api = api
        self._metadata_only = metadata_only
        self._api_version, self._kind = api_version, kind
        self._group = group_of(api_version)
        self._namespace, self._selector = namespace, label_selector
        self._from = int(resource_version)
        self._closed = False
        self._seen = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._seen = 0
        while True:
            with self._api.changed:
                self._api.changed.wait_for(self._more)
                if self._closed:
                    return
                batch, self._seen = self._api.log[self._seen :], len(self._api.log)
            for rv, event, obj in batch:
                if rv > self._from and self._wanted(obj):
                    sent = {**obj, "apiVersion": self._api_version}
                    yield {"type": event, "object": partial(sent) if self._metadata_only else sent}

    def _more(self) -> bool:
        return self._closed or len(self._api.log) > self._seen

    def _wanted(self, obj: Obj) -> bool:
        meta = obj["metadata"]
        return (
            obj["kind"] == self._kind
            and group_of(obj["apiVersion"]) == self._group
            and (self._namespace is None or meta.get("namespace") == self._namespace)
            and matches(self._selector, meta.get("labels"))
        )

    def close(self) -> None:
        with self._api.changed:
            self._closed = True
            self._api.changed.notify_all()
