"""``oper8d render --previous``: the immutable fields a render would change."""

from __future__ import annotations

import copy

from oper8d.bundle.model import Bundle
from oper8d.cluster.memory import MemoryCluster
from oper8d.engine.deploy import identity, object_key
from oper8d.engine.immutable import PlannedRefusal, planned_refusal
from oper8d.errors import ClusterError
from oper8d.objects import Obj
from oper8d.offline.run import EPOCH, OfflineRun, controller_for

__all__ = ["immutable_since"]


_STORED_ONLY = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def immutable_since(bundle: Bundle, run: OfflineRun, previous: list[Obj]) -> list[PlannedRefusal]:
    """The objects of ``run`` whose change from the object of the same identity in
    ``previous`` (an earlier render, or the stored objects with their status) the API
    server would refuse as immutable: each object of ``previous`` is created in a scratch
    in-memory cluster (its status written too) and the new one applied over it."""
    controller = controller_for(bundle, run.cr)
    before = {object_key(o): o for o in previous if isinstance(o.get("metadata"), dict)}
    scratch = MemoryCluster(clock=lambda: EPOCH)
    out: list[PlannedRefusal] = []
    for obj in run.applied.values():
        old = before.get(object_key(obj))
        if old is None:
            continue
        try:
            live = _stored(scratch, old)
        except ClusterError:
            continue  # (a previous object the server would not store has no fields to keep)
        try:
            scratch.apply(_unowned(obj), field_manager="oper8d")
        except ClusterError as err:
            planned = planned_refusal(err, live, obj, controller)
            if planned is not None:
                out.append(planned)
    return out


def _stored(cluster: MemoryCluster, obj: Obj) -> Obj:
    sent = _unowned(obj)
    sent.pop("status", None)
    sent["metadata"] = {k: v for k, v in sent["metadata"].items() if k not in _STORED_ONLY}
    cluster.apply(sent, field_manager="oper8d")
    if isinstance(obj.get("status"), dict):
        stored = cluster.get(*identity(obj))
        cluster.update_status({**(stored or {}), "status": copy.deepcopy(obj["status"])})
    live = cluster.get(*identity(obj))
    assert live is not None
    return live


def _unowned(obj: Obj) -> Obj:
    """A copy of ``obj`` without owner references (their owner is not in the scratch
    cluster, whose garbage collector would take the object)."""
    out = copy.deepcopy(obj)
    out["metadata"] = {k: v for k, v in out["metadata"].items() if k != "ownerReferences"}
    return out
