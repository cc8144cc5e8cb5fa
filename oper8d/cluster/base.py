"""The one interface the engine talks to a cluster through.

Two implementations: ``cluster.memory.MemoryCluster`` (embedded, in-process, the
dry-run/simulation cluster) and the real-cluster client in ``cluster.kube``.
Objects are plain dicts, as the API server sends them (``oper8d.objects.Obj``, re-exported
here for the protocol's users).
"""

from __future__ import annotations

from typing import Literal, Protocol

from oper8d.errors import ClusterError
from oper8d.objects import Obj

Method = Literal["apply", "update", "replace"]
Propagation = Literal["Background", "Foreground", "Orphan"]


class ClusterReader(Protocol):
    """Reads of live objects: what simulators and ``oper8d diff`` need."""

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        """The live object, or None when it does not exist."""
        ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        """Objects of a kind, optionally in one namespace and matching a label selector
        (``"a=b,c!=d,e in (x,y),!f"``)."""
        ...


class Cluster(ClusterReader, Protocol):
    """CRUD on Kubernetes objects. Errors are ``oper8d.errors.ClusterError``
    (``status`` holds the HTTP code: 409 conflict, 422 invalid, ...)."""

    def apply(
        self, obj: Obj, *, field_manager: str, method: Method = "apply", force: bool = True
    ) -> Obj:
        """Create or change ``obj``: server-side apply (``apply``), read-modify-write
        (``update``, keeps fields we do not set) or PUT (``replace``). Returns the live object."""
        ...

    def update(self, obj: Obj) -> Obj:
        """PUT the whole object (metadata and spec; not status). ``metadata.resourceVersion``,
        when set, must match the live one or a 409 ClusterError is raised."""
        ...

    def update_status(self, obj: Obj) -> Obj:
        """Write ``obj['status']`` through the status subresource."""
        ...

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Propagation = "Background",
    ) -> bool:
        """Delete an object; False when it was already gone. With finalizers the object
        stays, with ``metadata.deletionTimestamp`` set, until they are removed."""
        ...


PROPAGATIONS = ("Background", "Foreground", "Orphan")


def check_propagation(propagation: str) -> None:
    """Refuse a deletion propagation policy the API server does not know (a 400)."""
    if propagation not in PROPAGATIONS:
        raise ClusterError(
            f"unknown propagation {propagation!r}: use Background, Foreground or Orphan",
            status=400,
        )
