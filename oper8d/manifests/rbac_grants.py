"""The RBAC model of ``manifests.rbac``: the verbs it grants, ``Grant`` and ``Permissions``,
and the grants of the operator's own Leases (leader election, or sharding's group).

``manifests.rbac.required_permissions`` collects grants from a bundle; ``manifests.rbac_objects``
writes them as Roles and bindings; ``runtime.shardlease`` does no more on Leases than
:func:`shard_lease_grants` allows. ``manifests.rbac`` exports every name here, where its
callers import them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "CR",
    "DEPLOY",
    "DEPLOY_UNWATCHED",
    "EVENT_WRITE",
    "LEASE_BY_NAME",
    "METHOD_VERBS",
    "READ",
    "SECRET_RANDOMS",
    "SHARD_LEASES",
    "SUBRESOURCE_WRITE",
    "TEMPORARY_PATCHES",
    "VERB_ORDER",
    "Grant",
    "Permissions",
    "lease_grants",
    "ordered",
    "shard_lease_grants",
    "uncovered",
]

#: every verb we grant, in the order kubectl and the docs list them
VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete")

READ = frozenset({"get", "list", "watch"})
#: a literal kind the bundle deploys, whatever its method
DEPLOY = READ | {"delete"}
#: what each deploy method writes with
METHOD_VERBS = {
    "apply": frozenset({"create", "patch"}),
    "update": frozenset({"create", "update"}),
    "replace": frozenset({"create", "update"}),
}
#: a kind only known at render time: no informer watches it (the runtime starts informers
#: for literal kinds only), so it is read with get and list
DEPLOY_UNWATCHED = frozenset({"get", "list", "delete"})
CR = READ | {"update"}
TEMPORARY_PATCHES = READ | {"update"}
SUBRESOURCE_WRITE = frozenset({"update"})
#: the <cr>-oper8d-generated Secret: read, then server-side applied when a key is new
SECRET_RANDOMS = frozenset({"get", "create", "patch"})
EVENT_WRITE = frozenset({"create"})
LEASE_BY_NAME = frozenset({"get", "update"})
#: what ``runtime.sharding`` does on the Leases of its group (one namespace)
SHARD_LEASES = frozenset({"get", "list", "create", "update", "delete"})


@dataclass(frozen=True, order=True)
class Grant:
    """Verbs on one resource (``deployments``, ``webapps/status``) of one API group."""

    group: str
    resource: str
    verbs: tuple[str, ...]
    namespaced: bool
    #: resourceNames: only these objects (empty: all)
    names: tuple[str, ...] = ()
    #: only in this namespace (a declared read of another namespace); empty: wherever the
    #: operator works (namespaced grants) or cluster-wide
    namespace: str = ""


@dataclass(frozen=True)
class Permissions:
    """What the operator needs where it reconciles, and what could not be worked out."""

    grants: tuple[Grant, ...]
    #: human-readable caveats, one a line (written as comments above the rules)
    notes: tuple[str, ...] = ()

    def verbs(self, group: str, resource: str) -> tuple[str, ...]:
        """The verbs granted on ``resource`` of ``group`` (all names, wherever the operator
        works), in VERB_ORDER."""
        found: set[str] = set()
        for g in self.grants:
            if (g.group, g.resource) == (group, resource) and not g.names and not g.namespace:
                found |= set(g.verbs)
        return ordered(found)

    @property
    def namespaced(self) -> tuple[Grant, ...]:
        """Grants for every namespace the operator works in."""
        return tuple(g for g in self.grants if g.namespaced and not g.namespace)

    @property
    def pinned(self) -> tuple[Grant, ...]:
        """Grants in one named namespace (declared reads)."""
        return tuple(g for g in self.grants if g.namespace)

    @property
    def cluster_scoped(self) -> tuple[Grant, ...]:
        return tuple(g for g in self.grants if not g.namespaced)


def lease_grants(lease_name: str) -> tuple[Grant, ...]:
    """Leader election: read and renew the named Lease, create it (create requests carry
    no name RBAC could match, so that rule cannot be narrowed to the name)."""
    return (
        Grant("coordination.k8s.io", "leases", ("create",), True),
        Grant("coordination.k8s.io", "leases", ordered(LEASE_BY_NAME), True, (lease_name,)),
    )


def shard_lease_grants() -> tuple[Grant, ...]:
    """Sharding: every verb ``runtime.sharding`` uses on Leases (see ``manifests.rbac``'s
    docstring); granted in the operator's namespace only."""
    return (Grant("coordination.k8s.io", "leases", ordered(SHARD_LEASES), True),)


def uncovered(grants: Iterable[Grant], wider: Iterable[Grant]) -> list[Grant]:
    """``grants`` minus those whose verbs a grant of ``wider`` on all names of the same
    resource, in the same namespace (or everywhere), already gives."""
    given: dict[tuple[str, str, str], set[str]] = {}
    for g in wider:
        if not g.names:
            given.setdefault((g.group, g.resource, g.namespace), set()).update(g.verbs)
    return [
        g
        for g in grants
        if not set(g.verbs) <= given.get((g.group, g.resource, g.namespace), set())
    ]


def ordered(verbs: Iterable[str]) -> tuple[str, ...]:
    """``verbs`` once each, in VERB_ORDER."""
    found = set(verbs)
    return tuple(v for v in VERB_ORDER if v in found)
