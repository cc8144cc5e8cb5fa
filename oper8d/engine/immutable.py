"""A write the API server refuses because it changes an immutable field, and what the
resource's ``onImmutableChange:`` makes of it.

Called by ``engine.deploy_phase`` when applying an object that exists fails. The server
is the judge: only a 422 whose causes are immutable-field refusals (``kubeschema.immutable``
knows their words) counts, so nothing else is ever recreated. The table then names the
field the update changed (a StatefulSet's refusal names only ``spec``), comparing what was
sent with the live object.

``fail`` raises a ``ClusterError`` (422: the CR's Ready condition says ConfigError, and the
component fails) naming the object, the field and the two ways out; nothing of that object
was written. ``recreate`` deletes the object (a StatefulSet with propagation ``Orphan``:
its pods and claims stay, and the new StatefulSet adopts them) and creates it again; when
the old object does not go at once (finalizers, the garbage collector orphaning its
dependents), the component waits (``PreconditionError``) and the next pass creates it.
Components that depend on this one wait for it as for any deploy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oper8d.bundle.model import ControllerSpec, ResourceSpec
from oper8d.cluster.base import Method, Propagation
from oper8d.cluster.fields import merge
from oper8d.engine.deploy import DeployManager, component_of, identity, internal_name_of
from oper8d.engine.leave import FieldPath
from oper8d.errors import ClusterError, PreconditionError
from oper8d.kubeschema.immutable import immutable_changes, is_immutable_message
from oper8d.logs import Logger
from oper8d.objects import Obj

__all__ = [
    "ImmutableRefusal",
    "PlannedRefusal",
    "immutable_refusal",
    "on_refusal",
    "planned_refusal",
    "resource_for",
    "way_out",
]

log = Logger("oper8d.deploy")

#: kinds deleted with propagation Orphan when recreated: their pods (and a StatefulSet's
#: claims) stay and the new object adopts them
_ORPHANING = frozenset({("apps", "StatefulSet")})


@dataclass(frozen=True)
class ImmutableRefusal:
    """The fields an update changed that the API server keeps, and its words."""

    fields: tuple[str, ...]
    reason: str


def immutable_refusal(err: ClusterError, live: Obj, sent: Obj) -> ImmutableRefusal | None:
    """What ``err`` (the answer to writing ``sent`` over ``live``) refused as immutable, or
    None when it is another refusal (or none)."""
    if err.status != 422:
        return None
    causes = [(f, m) for f, m in err.causes if is_immutable_message(m)]
    if not causes and not err.causes and is_immutable_message(err.message):
        causes = [("", err.message)]  # (a server that sent no causes)
    if not causes:
        return None
    reported = {f for f, _ in causes}
    named = [
        c.field
        for c in immutable_changes(live, merge(live, sent))
        if c.reported in reported and not _holds(live, sent, c.field)
    ]
    fields = tuple(dict.fromkeys(named)) or tuple(f for f in dict.fromkeys(reported) if f)
    reason = causes[0][1].rpartition(": ")[2] or causes[0][1]
    return ImmutableRefusal(fields or ("(a field the server names in its message)",), reason)


def way_out(resource: str) -> str:
    """How to proceed past an immutable change of ``resource``'s object."""
    return (
        f"revert the change, or set `onImmutableChange: recreate` on resource '{resource}' "
        "to delete the object and create it again"
    )


def on_refusal(
    deployer: DeployManager,
    obj: Obj,
    err: ClusterError,
    resource: ResourceSpec,
    component: str,
    method: Method = "apply",
    leave: Sequence[FieldPath] = (),
) -> tuple[Obj, bool]:
    """Handle ``err``, the refusal of applying ``obj``: raise it again unless it is an
    immutable-field refusal, which the resource's policy settles (see the module
    docstring). Returns ``deployer.apply``'s answer for the recreated object."""
    api_version, kind, name, ns = identity(obj)
    live = deployer.cluster.get(api_version, kind, name, ns)
    refusal = immutable_refusal(err, live, obj) if live is not None else None
    if live is None or refusal is None:
        raise err
    label = f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
    fields = ", ".join(refusal.fields)
    where = f"{component}.{resource.name}"
    if resource.on_immutable_change != "recreate":
        raise ClusterError(
            f"{label}: {fields} cannot change once the object exists (the API server "
            f"refuses it: {refusal.reason}); nothing was written to it. To proceed, "
            f"{way_out(where)}",
            status=422,
            causes=err.causes,
            pos=resource.pos,
        )
    if (live.get("metadata") or {}).get("deletionTimestamp"):
        raise PreconditionError(
            f"{label} is being deleted to be created again ({fields} changed, "
            "onImmutableChange: recreate): waiting for it to go",
            pos=resource.pos,
        )
    group = api_version.rpartition("/")[0]
    propagation: Propagation = "Orphan" if (group, kind) in _ORPHANING else "Background"
    log.warning(
        "%s: %s changed and the API server keeps it: deleting the object (propagation %s) "
        "to create it again (onImmutableChange: recreate)",
        label,
        fields,
        propagation,
    )
    deployer.delete(live, propagation=propagation)
    if deployer.cluster.get(api_version, kind, name, ns) is not None:
        raise PreconditionError(
            f"{label} deleted to be created again ({fields} changed, onImmutableChange: "
            "recreate): waiting for it to go",
            pos=resource.pos,
        )
    return deployer.apply(obj, method, leave)


@dataclass(frozen=True)
class PlannedRefusal:
    """What ``oper8d diff`` says of an object whose dry run the server refused as an
    immutable change: ``message``; with ``recreate`` the operator would recreate it."""

    message: str
    recreate: bool


def planned_refusal(
    err: ClusterError, live: Obj | None, wanted: Obj, controller: ControllerSpec
) -> PlannedRefusal | None:
    """``err`` (the refused dry run of ``wanted``) as ``oper8d diff`` reports it, when it
    is an immutable change of the object ``live``; None for any other refusal."""
    refusal = immutable_refusal(err, live, wanted) if live is not None else None
    if live is None or refusal is None:
        return None
    _api_version, kind, name, ns = identity(wanted)
    label = f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
    found = resource_for(controller, wanted)
    where = found[0] if found else internal_name_of(wanted) or "?"
    recreate = found is not None and found[1].on_immutable_change == "recreate"
    head = (
        f"{label}: {', '.join(refusal.fields)} cannot change once the object exists "
        f"(the API server refuses it: {refusal.reason})"
    )
    if recreate:
        message = (
            f"{head}: the operator will delete it and create it again "
            f"(onImmutableChange: recreate on resource '{where}')"
        )
    else:
        message = f"{head}: the operator will fail on it; to proceed, {way_out(where)}"
    return PlannedRefusal(message, recreate)


def resource_for(controller: ControllerSpec, obj: Obj) -> tuple[str, ResourceSpec] | None:
    """The resource (``component.resource``, and its spec) that rendered ``obj``, from the
    component and internal-name annotations the operator stamps."""
    component, internal = component_of(obj) or "", internal_name_of(obj) or ""
    rest = internal[len(component) + 1 :] if internal.startswith(f"{component}.") else ""
    for spec in controller.components:
        if component != spec.name and not (
            spec.for_each is not None and component.startswith(f"{spec.name}-")
        ):
            continue
        for resource in spec.resources:
            if rest == resource.name or rest.startswith(f"{resource.name}-"):
                return f"{spec.name}.{resource.name}", resource
    return None


def _holds(live: Obj, sent: Obj, path: str) -> bool:
    """Whether ``live`` already holds what ``sent`` sets at ``path`` (a dotted path of map
    keys): then the server's defaults, not the update, make the two differ there."""
    keys = path.split(".")
    return _contains(_at(live, keys), _at(sent, keys))


def _at(obj: Any, keys: list[str]) -> Any:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _contains(live: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        return isinstance(live, Mapping) and all(
            _contains(live.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(live) == len(wanted)
            and all(_contains(a, b) for a, b in zip(live, wanted, strict=True))
        )
    return bool(live == wanted)
