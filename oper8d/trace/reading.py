"""What ``oper8d trace`` reads and how it finds things: the controller a KIND names, a
read-only view of a cluster, the objects a CR owns, and each object as shown.

A trace sends GET and LIST requests only: the engine code it reuses (the render, the
readiness rules) is handed :class:`ReadOnly`, whose writes raise instead of reaching the
cluster, so a path that would write is an error, never a change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.cluster.base import ClusterReader, Method, Propagation
from oper8d.engine.deploy import inventory_of, list_owned
from oper8d.errors import ClusterError, Oper8dError
from oper8d.objects import Obj, ObjView
from oper8d.trace.model import Manager, ObjectTrace, Verdict

__all__ = [
    "ReadOnly",
    "UnknownKind",
    "find_controller",
    "kind_names",
    "managers_of",
    "object_trace",
    "owned_objects",
]


class UnknownKind(Oper8dError):
    """The KIND of ``oper8d trace KIND/NAME`` names no controller of the bundle."""


def kind_names(controller: ControllerSpec) -> tuple[str, ...]:
    """What names a controller's kind, as kubectl takes it: the kind, its plural, singular
    and short names, and those followed by ``.<group>``."""
    res = controller.resource
    names = (res.kind, res.plural, res.kind.lower(), *res.short_names)
    return (*names, *(f"{n}.{res.group}" for n in names[:3]))


def find_controller(bundle: Bundle, text: str) -> ControllerSpec:
    """The controller whose kind ``text`` names (any of :func:`kind_names`, in any case)."""
    wanted = text.lower()
    for controller in bundle.controllers:
        if wanted in (n.lower() for n in kind_names(controller)):
            return controller
    known = "; ".join(
        f"{c.resource.kind} ({', '.join([c.resource.plural, *c.resource.short_names])})"
        for c in bundle.controllers
    )
    raise UnknownKind(f"bundle '{bundle.name}' has no kind {text!r}: its kinds are {known}")


class ReadOnly:
    """A ``Cluster`` that reads through ``reader`` and refuses every write (405)."""

    def __init__(self, reader: ClusterReader) -> None:
        self.reader = reader

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        return self.reader.get(api_version, kind, name, namespace)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        return self.reader.list(api_version, kind, namespace, label_selector)

    def apply(
        self, obj: Obj, *, field_manager: str, method: Method = "apply", force: bool = True
    ) -> Obj:
        raise self._refused("apply", obj)

    def update(self, obj: Obj) -> Obj:
        raise self._refused("update", obj)

    def update_status(self, obj: Obj) -> Obj:
        raise self._refused("update the status of", obj)

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Propagation = "Background",
    ) -> bool:
        raise self._refused("delete", {"kind": kind, "metadata": {"name": name}})

    @staticmethod
    def _refused(verb: str, obj: Obj) -> ClusterError:
        name = (obj.get("metadata") or {}).get("name")
        return ClusterError(
            f"trace reads only: it would {verb} {obj.get('kind')} {name}", status=405
        )


def owned_objects(reader: ClusterReader, cr: Obj) -> list[Obj]:
    """The live objects carrying the CR's owner label, of each kind its inventory names
    (as the reconciler's prune and finalizer find them); a kind the server no longer
    serves has none."""
    meta = cr.get("metadata") or {}
    return list_owned(reader, str(meta.get("uid") or ""), meta.get("namespace"), inventory_of(cr))


def managers_of(obj: ObjView) -> tuple[Manager, ...]:
    """Who wrote ``obj``, from its ``metadata.managedFields``, in the server's order."""
    entries = (obj.get("metadata") or {}).get("managedFields") or ()
    return tuple(
        Manager(
            manager=str(e.get("manager") or ""),
            operation=str(e.get("operation") or ""),
            time=e.get("time"),
            subresource=e.get("subresource") or None,
        )
        for e in entries
        if isinstance(e, Mapping)
    )


def object_trace(
    identity: ObjView,
    live: ObjView | None,
    *,
    internal_name: str | None,
    rendered: bool,
    readiness: Verdict | None = None,
) -> ObjectTrace:
    """An object as shown: its identity from ``identity`` (the rendered or the live
    object), the rest from ``live`` (None: it does not exist)."""
    meta: Mapping[str, Any] = identity.get("metadata") or {}
    live_meta: Mapping[str, Any] = (live or {}).get("metadata") or {}
    return ObjectTrace(
        api_version=str(identity.get("apiVersion") or ""),
        kind=str(identity.get("kind") or ""),
        name=str(meta.get("name") or ""),
        namespace=meta.get("namespace") or None,
        internal_name=internal_name,
        exists=live is not None,
        rendered=rendered,
        readiness=readiness,
        uid=live_meta.get("uid"),
        creation_timestamp=live_meta.get("creationTimestamp"),
        deletion_timestamp=live_meta.get("deletionTimestamp"),
        finalizers=_strings(live_meta.get("finalizers")),
        managers=managers_of(live) if live is not None else (),
    )


def _strings(value: Any) -> tuple[str, ...]:
    items: Sequence[Any] = value if isinstance(value, list) else ()
    return tuple(str(v) for v in items)
