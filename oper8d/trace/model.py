"""What ``oper8d trace`` shows of one live CR, as data: the CR, its components in
dependency order, each component's objects, and what blocks a deletion.

Built by ``trace.build``; printed by the CLI (``cli/trace_view.py``). :meth:`Trace.to_data`
is the structure of ``-o json|yaml``, described by ``schemas/trace.schema.json`` (and so by
docs/reference.md): fields are added there, never renamed or removed within a format
version. Times are the server's RFC 3339 strings; ages are left to whoever prints them,
against :attr:`Trace.observed_at`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "TRACE_API_VERSION",
    "ComponentState",
    "ComponentTrace",
    "Condition",
    "CrTrace",
    "Manager",
    "ObjectTrace",
    "Reported",
    "Trace",
    "Verdict",
]

#: the ``apiVersion`` of ``-o json|yaml`` output (``kind: Trace``)
TRACE_API_VERSION = "oper8d.io/v1alpha1"

#: a component's state now: the verdict of its objects' rules (``ready``, ``waiting``,
#: ``failed``), ``disabled`` (its ``enabled`` is false), ``error`` (it cannot be rendered
#: now), ``deleting`` (the CR is being deleted), ``other`` (objects the CR owns outside its
#: components: a hook's, or a component's the bundle no longer has)
ComponentState = Literal["ready", "waiting", "failed", "disabled", "error", "deleting", "other"]


@dataclass(frozen=True)
class Verdict:
    """An engine readiness verdict (``engine.readiness.Readiness``) as shown."""

    state: Literal["ready", "waiting", "failed"]
    reason: str
    message: str

    def to_data(self) -> dict[str, Any]:
        return {"state": self.state, "reason": self.reason, "message": self.message}


@dataclass(frozen=True)
class Manager:
    """One entry of ``metadata.managedFields``: who wrote the object, how and when."""

    manager: str
    operation: str
    time: str | None = None
    subresource: str | None = None

    def to_data(self) -> dict[str, Any]:
        return {
            "manager": self.manager,
            "operation": self.operation,
            "time": self.time,
            "subresource": self.subresource,
        }


@dataclass(frozen=True)
class ObjectTrace:
    """One object of a component: rendered now (``rendered``), live (``exists``), or both."""

    api_version: str
    kind: str
    name: str
    namespace: str | None
    internal_name: str | None
    exists: bool
    rendered: bool
    #: its readiness rules' verdict; None when they were not asked (not rendered, deletion)
    readiness: Verdict | None = None
    uid: str | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    finalizers: tuple[str, ...] = ()
    managers: tuple[Manager, ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"

    def to_data(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "internalName": self.internal_name,
            "exists": self.exists,
            "rendered": self.rendered,
            "readiness": None if self.readiness is None else self.readiness.to_data(),
            "uid": self.uid,
            "creationTimestamp": self.creation_timestamp,
            "deletionTimestamp": self.deletion_timestamp,
            "finalizers": list(self.finalizers),
            "managers": [m.to_data() for m in self.managers],
        }


@dataclass(frozen=True)
class Reported:
    """What the operator last wrote about a component (``status.componentStatus``)."""

    state: str  # verified, deployed, failed, unstarted, waiting, unverified
    reason: str | None = None

    def to_data(self) -> dict[str, Any]:
        return {"state": self.state, "reason": self.reason}


@dataclass(frozen=True)
class ComponentTrace:
    """One component, its state now and its objects."""

    name: str
    state: ComponentState
    #: its ``enabled`` condition now; None when it could not be evaluated
    enabled: bool | None
    reason: str = ""
    message: str = ""
    reported: Reported | None = None
    objects: tuple[ObjectTrace, ...] = ()

    def to_data(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "enabled": self.enabled,
            "reason": self.reason,
            "message": self.message,
            "reported": None if self.reported is None else self.reported.to_data(),
            "objects": [o.to_data() for o in self.objects],
        }


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None

    def to_data(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": self.last_transition_time,
        }


@dataclass(frozen=True)
class CrTrace:
    """The CR itself."""

    api_version: str
    kind: str
    name: str
    namespace: str | None
    uid: str | None
    generation: int | None
    observed_generation: int | None
    creation_timestamp: str | None
    deletion_timestamp: str | None
    finalizers: tuple[str, ...]
    paused: bool
    conditions: tuple[Condition, ...]
    #: the error of the operator's last reconcile (Ready or Updating message), if any
    last_error: str | None

    @property
    def ref(self) -> str:
        return f"{self.kind}/{self.name}"

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    def to_data(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "generation": self.generation,
            "observedGeneration": self.observed_generation,
            "creationTimestamp": self.creation_timestamp,
            "deletionTimestamp": self.deletion_timestamp,
            "finalizers": list(self.finalizers),
            "paused": self.paused,
            "conditions": [c.to_data() for c in self.conditions],
            "lastError": self.last_error,
        }


@dataclass(frozen=True)
class Trace:
    """One look at a CR. ``blockers``: during deletion, what keeps the CR from going, one
    sentence each; ``warnings``: what the trace could not show."""

    observed_at: str
    resource: CrTrace
    components: tuple[ComponentTrace, ...]
    blockers: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def deleting(self) -> bool:
        return self.resource.deletion_timestamp is not None

    def to_data(self) -> dict[str, Any]:
        return {
            "apiVersion": TRACE_API_VERSION,
            "kind": "Trace",
            "observedAt": self.observed_at,
            "resource": self.resource.to_data(),
            "components": [c.to_data() for c in self.components],
            "blockers": list(self.blockers),
            "warnings": list(self.warnings),
        }
