"""Every write ``engine.reconcile`` makes to the CR itself: its metadata (our finalizer, the
inventory annotation) and its status.

The metadata is written read-modify-write, retried on conflict, so that a field another
client set in between is kept; the status is written over the CR as last read or written,
then over whatever version is live (the status is ours alone), with every condition's
message redacted and only when something but a timestamp changed. A CR deleted meanwhile is
no error. The reconciler calls these between its steps, on the reconcile's own thread,
with its cluster (the recording one when ``engine.fingerprint`` tracks the reconcile).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oper8d.bundle.model import ControllerSpec
from oper8d.cluster.base import Cluster
from oper8d.engine import status as st
from oper8d.engine.deploy import INVENTORY_ANNOTATION, inventory_of
from oper8d.errors import ClusterError
from oper8d.logs import redact
from oper8d.objects import Obj

__all__ = ["prepare_cr", "put_status", "remove_finalizer", "update_cr", "write_status"]


def prepare_cr(cluster: Cluster, controller: ControllerSpec, cr: Obj) -> Obj:
    """One write of the CR's metadata for all it lacks: our finalizer (when the
    controller finalizes) and, in the inventory annotation, every kind a rollout may
    create (the kinds the bundle declares, literally or in ``kinds:``; nothing else
    passes ``engine.declared``).

    The one place the inventory is written, before anything is applied: pruning and
    finalization find a CR's objects only by listing the inventory's kinds, so a kind
    must be recorded before the first object of it exists. The rollout creates
    nothing of an unrecorded kind (``DeployManager.require_recorded`` guards it), so an
    operator killed at any point leaves no object that a later prune could not find."""
    finalizer = controller.finalizer
    add_finalizer = controller.finalize.enabled and finalizer not in (
        cr["metadata"].get("finalizers") or []
    )
    kinds = {f"{a}/{k}" for a, k in controller.deployed_kinds()}
    add_kinds = not kinds <= set(inventory_of(cr))
    if not add_finalizer and not add_kinds:
        return cr

    def change(meta: dict[str, Any]) -> None:
        if add_finalizer and finalizer not in (meta.get("finalizers") or []):
            meta.setdefault("finalizers", []).append(finalizer)
        if add_kinds:
            # merged with what the live CR names: a kind once recorded is never dropped
            recorded = set(inventory_of({"metadata": meta})) | kinds
            annotations = meta.setdefault("annotations", {})
            annotations[INVENTORY_ANNOTATION] = ",".join(sorted(recorded))

    return update_cr(cluster, cr, change)


def remove_finalizer(cluster: Cluster, cr: Obj, finalizer: str) -> None:
    """Take ``finalizer`` off the CR (the last step of finalizing it)."""
    update_cr(
        cluster,
        cr,
        lambda m: m.__setitem__(
            "finalizers", [f for f in m.get("finalizers", []) if f != finalizer]
        ),
    )


def write_status(cluster: Cluster, cr: Obj, new_status: dict[str, Any]) -> dict[str, Any] | None:
    """Write ``new_status`` when it differs from the CR's by more than a timestamp; what was
    written (None: nothing)."""
    # an error message may quote a rendered Secret value: never put it in the status
    for cond in new_status.get("conditions") or []:
        if isinstance(cond.get("message"), str):
            cond["message"] = redact(cond["message"])
    if not st.status_changed(cr.get("status") or {}, new_status):
        return None
    put_status(cluster, cr, new_status)
    return new_status


def put_status(cluster: Cluster, cr: Obj, new_status: dict[str, Any]) -> Obj:
    """Write the status over ``cr``: at ``cr``'s resourceVersion first (the CR as read
    from the cache or last written: no read of it from the server), then, when it
    changed since (409), over whatever version is live (the status is ours alone)."""
    body = {**cr, "status": new_status}
    try:
        try:
            return cluster.update_status(body)
        except ClusterError as err:
            if err.status != 409 or not cr["metadata"].get("resourceVersion"):
                raise
        meta = {k: v for k, v in cr["metadata"].items() if k != "resourceVersion"}
        return cluster.update_status({**body, "metadata": meta})
    except ClusterError as err:
        if err.status == 404:  # deleted meanwhile
            return cr
        raise


def update_cr(
    cluster: Cluster, cr: Obj, change: Callable[[dict[str, Any]], None], attempts: int = 5
) -> Obj:
    """Read-modify-write of the CR's metadata with conflict retries; returns the CR as
    the server stored it (``cr`` when it is gone)."""
    for _ in range(attempts):
        live = cluster.get(
            cr["apiVersion"],
            cr["kind"],
            cr["metadata"]["name"],
            cr["metadata"].get("namespace"),
        )
        if live is None:
            return cr
        change(live["metadata"])
        try:
            updated = cluster.update(live)
        except ClusterError as err:
            if err.status == 409:
                continue
            raise
        return updated
    raise ClusterError(f"conflict updating {cr['kind']} {cr['metadata']['name']}", status=409)
