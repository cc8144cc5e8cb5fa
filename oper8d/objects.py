"""Kubernetes objects as every layer of oper8d handles them, and the labels oper8d puts on them.

Objects are plain dicts end to end, as the API server sends them (``Obj``); code that only
reads one takes an ``ObjView``. The cluster protocol, the engine, the runtime and the CLI
import these names from here (``cluster.base`` re-exports ``Obj`` for the protocol's users).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "MANAGED_BY_LABEL",
    "OWNER_LABEL",
    "Deletion",
    "Obj",
    "ObjView",
    "json_key_text",
    "newer",
    "resource_version",
]

#: a Kubernetes object: the JSON the API server sends, as dicts, lists and scalars
Obj = dict[str, Any]
#: an object that is only read
ObjView = Mapping[str, Any]
#: what ``oper8d render`` says a disabled component would remove: (component, object), or
#: (component, description) when the object's identity cannot be known offline
Deletion = tuple[str, Obj | str]

#: on every object oper8d deploys: the uid of the CR it was deployed for; the runtime's
#: informers of owned kinds select on it
OWNER_LABEL = "oper8d.io/owner-uid"
#: on every object oper8d deploys, with the value ``oper8d``
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
#: a resource's ``deletionPolicy`` when not Delete: what teardown and prune do with the
#: live object, whatever the bundle says by then (``engine.teardown``)
DELETION_POLICY_ANNOTATION = "oper8d.io/deletion-policy"


def resource_version(obj: ObjView) -> str:
    """``metadata.resourceVersion`` ("" when unset)."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def newer(a: ObjView, b: ObjView) -> bool | None:
    """Whether ``a``'s resourceVersion is greater than ``b``'s; None when they cannot be
    compared. resourceVersions are opaque: only equality means anything in general. The
    API server's are integers (etcd revisions), so a cache ordering its own copies (an
    object it wrote against the watch event of an earlier state) compares them as such,
    as every client that orders them does; the change tracker (``engine.fingerprint``)
    compares them only for equality."""
    try:
        return int(resource_version(a)) > int(resource_version(b))
    except ValueError:
        return None


def json_key_text(key: object) -> str | None:
    """A YAML mapping key as the text key of a Kubernetes object (JSON), the way
    sigs.k8s.io/yaml (``kubectl apply``) converts it: a string is itself, an integer or a
    boolean its text (``1: a`` is ``"1"``, ``true:`` is ``"true"``). None for any other key
    (null, a float, a mapping): one rule for operator.yaml and for text templates, whose
    readers refuse such a key and ask for it to be quoted."""
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(int(key))
    return None
