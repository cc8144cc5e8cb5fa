"""A CR's teardown, and what a resource's ``deletionPolicy`` does with its objects.

When a CR carrying oper8d's finalizer is deleted, its components are torn down in reverse
dependency order (downstream first). Each owned object is treated by the policy its live
object carries (``DELETION_POLICY_ANNOTATION``, stamped when it was applied, so objects an
older bundle made are torn down as that bundle promised):

- ``Delete``: deleted; the teardown goes upstream only once the component's objects are
  gone. While an object's own finalizers hold it, the CR's status says which object, which
  finalizers and since when (its ``deletionTimestamp``): :func:`deleting_status`;
- ``Orphan``: released (:func:`released`): the CR's owner reference and oper8d's labels
  and annotations are removed and the object is left to whoever manages it next;
- ``Retain``: left as it is. It never had an owner reference to the CR, so the garbage
  collector leaves it too, and it keeps the CR's owner label, so no other CR takes it
  over unless someone hands it over.

Prune, of an object no longer rendered, follows the same policies (:func:`prune`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from oper8d.bundle.model import DeletionPolicy
from oper8d.cluster.base import Cluster
from oper8d.engine.conditions import (
    ReadyReason,
    UpdatingReason,
    ready_condition,
    updating_condition,
    with_conditions,
    with_kstatus_conditions,
)
from oper8d.engine.deploy import DeployManager, component_of, identity, stamped_annotation
from oper8d.errors import ClusterError
from oper8d.kinds import ref_of
from oper8d.objects import DELETION_POLICY_ANNOTATION, MANAGED_BY_LABEL, OWNER_LABEL, Obj

__all__ = [
    "Blocker",
    "deleting_status",
    "deletion_policy_of",
    "prune",
    "release",
    "released",
    "tear_down",
]


def deletion_policy_of(obj: Obj) -> DeletionPolicy:
    """The policy a live object was applied with (Delete when it says nothing else)."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(DELETION_POLICY_ANNOTATION)
    if value == "Orphan":
        return "Orphan"
    return "Retain" if value == "Retain" else "Delete"


def released(live: Obj, cr_uid: str) -> Obj:
    """``live`` as an orphan: without the CR's owner reference and oper8d's labels and
    annotations (written back with an update at ``live``'s resourceVersion)."""
    obj = copy.deepcopy(live)
    meta = obj["metadata"]
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != cr_uid]
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)
    labels = {
        k: v
        for k, v in (meta.get("labels") or {}).items()
        if k != OWNER_LABEL and not (k == MANAGED_BY_LABEL and v == "oper8d")
    }
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if not stamped_annotation(k)
    }
    for key, value in (("labels", labels), ("annotations", annotations)):
        if value:
            meta[key] = value
        else:
            meta.pop(key, None)
    return obj


@dataclass(frozen=True)
class Blocker:
    """An object the teardown waits for: deleted, but held by its own finalizers."""

    ref: str
    finalizers: tuple[str, ...]
    #: its ``deletionTimestamp`` (None: the delete has not reached it yet)
    since: str | None

    def __str__(self) -> str:
        if not self.finalizers:
            return f"{self.ref} (being deleted)"
        held = ", ".join(self.finalizers)
        since = f" since {self.since}" if self.since else ""
        return f"{self.ref} (held by finalizer {held}{since})"


def tear_down(
    cluster: Cluster,
    deployer: DeployManager,
    order: Sequence[str],
    *,
    delete: bool = True,
) -> list[Blocker]:
    """One pass of the teardown of ``deployer``'s CR, components in ``order`` (downstream
    first; objects of components not named go last): what it still waits for (nothing:
    done). ``delete``: delete Delete objects (else the garbage collector will)."""
    by_component: dict[str, list[Obj]] = {}
    for obj in deployer.owned():
        by_component.setdefault(component_of(obj) or "", []).append(obj)
    names = list(order) + sorted(set(by_component) - set(order))
    for component in names:
        waiting: list[Blocker] = []
        for obj in by_component.get(component, []):
            policy = deletion_policy_of(obj)
            if policy == "Orphan":
                release(cluster, obj, deployer.cr_uid)
            elif policy == "Delete" and delete:
                deployer.delete(obj)
                blocker = _still_there(cluster, obj)
                if blocker is not None:
                    waiting.append(blocker)
        if waiting:
            return waiting
    return []


def prune(cluster: Cluster, deployer: DeployManager, objs: Iterable[Obj]) -> None:
    """Remove objects no longer rendered, each by its policy (a Retain one stays)."""
    for obj in objs:
        policy = deletion_policy_of(obj)
        if policy == "Orphan":
            release(cluster, obj, deployer.cr_uid)
        elif policy == "Delete":
            deployer.delete(obj)


def release(cluster: Cluster, obj: Obj, cr_uid: str) -> None:
    """Write ``obj`` back :func:`released`. ``obj`` may be a cached copy behind the server:
    on a conflict (409) the live object is read and released instead; one gone (404) needs
    nothing."""
    try:
        cluster.update(released(obj, cr_uid))
    except ClusterError as err:
        if err.status == 404:
            return
        if err.status != 409:
            raise
        live = cluster.get(*identity(obj))
        if live is not None:
            cluster.update(released(live, cr_uid))


def _still_there(cluster: Cluster, obj: Obj) -> Blocker | None:
    api_version, kind, name, namespace = identity(obj)
    live = cluster.get(api_version, kind, name, namespace)
    if live is None:
        return None
    meta = live.get("metadata") or {}
    return Blocker(
        ref=ref_of(live),
        finalizers=tuple(str(f) for f in meta.get("finalizers") or ()),
        since=meta.get("deletionTimestamp"),
    )


def deleting_status(
    status: Mapping[str, Any] | None,
    blockers: Sequence[Blocker],
    *,
    generation: int | None,
    now: datetime,
) -> dict[str, Any]:
    """The status of a CR whose teardown waits for ``blockers``: Ready False and Updating
    True, both naming what holds it (the message stays the same while nothing changes, so
    it is written, and told as an Event, once)."""
    message = "deleting: waiting for " + "; ".join(str(b) for b in blockers)
    new = with_conditions(
        status,
        ready_condition(ReadyReason.DELETING, message),
        updating_condition(UpdatingReason.DELETION_WAIT, message),
        now=now,
        observed_generation=generation,
    )
    return with_kstatus_conditions(new, now=now, observed_generation=generation)
