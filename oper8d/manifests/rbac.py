"""Least-privilege RBAC for an operator: the verbs its engine and runtime use, per kind.

``required_permissions(bundle)`` computes what the operator process needs from what the
bundle can deploy and from what the runtime does (see docs/security.md, "Reads and RBAC";
tests/integration/test_rbac_minimal.py shows on a real API server that each verb is used):

* every kind a resource writes literally (inline objects, text templates): ``get`` (the
  engine reads the live object before writing it), ``list`` and ``watch`` (informers,
  pruning), ``delete`` (disabled components, pruning, finalization); ``create`` and
  ``patch`` for ``method: apply`` (server-side apply, which the API server authorizes as
  ``create`` too when the object is new), ``create`` and ``update`` for ``method: update``
  or ``replace`` (PUT, or POST when the object is missing);
* each CR kind: ``get/list/watch``, ``update`` (finalizer, inventory and temporary-patch
  annotations), ``<plural>/status`` ``update``, and ``<plural>/finalizers`` ``update``
  (owner references with ``blockOwnerDeletion`` need it where the
  OwnerReferencesPermissionEnforcement admission plugin runs);
* Secrets only when the bundle needs them: ``get/create/patch`` when a template calls
  ``random_string()`` (the ``<cr>-oper8d-generated`` Secret), the deploy verbs when it
  deploys Secrets, ``get`` for declared reads;
* ConfigMaps: ``get`` (the config-defaults ConfigMap a CR may name, in its namespace);
  TemporaryPatches: ``get/list/watch/update``, only when a controller turns them on
  (``temporaryPatches.enabled``); ``events.k8s.io`` Events: ``create``;
* a resource declaring a namespace known before any CR (``namespace: monitoring``, or a
  template of the bundle's config): its deploy verbs in that namespace too, so an operator
  watching only some namespaces can write there;
* reads (``bundle.reads``): ``get`` for each ``reads:`` entry (``resourceNames`` when it
  names objects; a Role in a declared namespace; cluster-wide for a cluster-scoped
  kind) and for each ``lookup()`` of a literal, namespaced kind other than Secret in the
  CR's namespace;
* the leader-election Lease, in the operator's namespace only: ``get/update`` of the
  Lease by name and ``create``; or, with sharding (``oper8d run --sharding``), the shard
  group's Leases in that namespace: ``get/list/create/update/delete`` (``runtime.sharding``:
  each replica creates, reads and renews its own Lease, named after its Pod so no
  ``resourceNames`` can pin it, lists the group's, and deletes its own on a graceful stop
  and a dead peer's once expired; no watch).

Kinds computed while rendering (a templated ``kind:``) cannot be known here: they are
listed in ``Permissions.notes`` and can be added with ``extra_kinds``. No
CustomResourceDefinition access is granted: the manager finds the TemporaryPatch kind
through discovery (open to every authenticated user) and ``--install-crds`` is not used
in a cluster, where the CRDs are applied with these manifests.

``rbac_objects`` turns the permissions into a ClusterRole and ClusterRoleBinding (all
namespaces) or a Role and RoleBinding per watched namespace (plus a ClusterRole for kinds
outside namespaces, if any), and a Role per namespace a declared read names. Used by
``manifests.package`` and ``oper8d manifests``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from oper8d.bundle.loader import read_bundle_text
from oper8d.bundle.model import Bundle, ControllerSpec, ResourceSpec
from oper8d.bundle.reads import cluster_scoped, is_secret
from oper8d.errors import BundleError, Oper8dError, SourcePos
from oper8d.manifests.crd import TEMPORARY_PATCH_GROUP, TEMPORARY_PATCH_VERSION
from oper8d.manifests.rbac_kinds import RBAC_GROUP, KindResource, kind_resource

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

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"


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
        return _ordered(found)

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


def required_permissions(
    bundle: Bundle, *, extra_kinds: Iterable[tuple[str, str]] = ()
) -> Permissions:
    """The permissions the operator of ``bundle`` needs (see the module docstring).

    ``extra_kinds`` are ``(apiVersion, kind)`` pairs the bundle renders without naming
    them literally; they get the verbs of a deployed kind that no informer watches.
    """
    needs = _Needs(bundle)
    open_methods: set[str] = set()
    for controller in bundle.controllers:
        _controller_needs(needs, controller)
        for resource in _resources(controller):
            needs.deploy(resource, _declared_namespace(bundle, controller, resource))
            if _renders_computed_kinds(bundle.root, resource):
                open_methods.add(resource.method)
                needs.note(
                    f"{resource.pos}: resource {resource.name!r} renders a kind computed at "
                    "render time, which cannot be granted here: add it with "
                    "--extra-kind apiVersion/Kind"
                )
        if controller.random_strings:
            needs.add("v1", "Secret", SECRET_RANDOMS)
        _read_needs(needs, controller)
    for api_version, kind in sorted(set(extra_kinds)):
        verbs = set(DEPLOY_UNWATCHED)
        for method in open_methods or {"apply"}:
            verbs |= METHOD_VERBS[method]
        needs.add(api_version, kind, verbs)
    needs.add("v1", "ConfigMap", {"get"})
    if bundle.temporary_patch_targets:
        tp_api_version = f"{TEMPORARY_PATCH_GROUP}/{TEMPORARY_PATCH_VERSION}"
        needs.add(tp_api_version, "TemporaryPatch", TEMPORARY_PATCHES)
    needs.add("events.k8s.io/v1", "Event", EVENT_WRITE)
    if any(not c.resource.namespaced for c in bundle.controllers):
        needs.note(
            "the Events and random-string Secrets of cluster-scoped CRs live in namespace "
            "'default': a namespace-scoped install grants them only in the watched namespaces"
        )
    return needs.permissions()


def lease_grants(lease_name: str) -> tuple[Grant, ...]:
    """Leader election: read and renew the named Lease, create it (create requests carry
    no name RBAC could match, so that rule cannot be narrowed to the name)."""
    return (
        Grant("coordination.k8s.io", "leases", ("create",), True),
        Grant("coordination.k8s.io", "leases", _ordered(LEASE_BY_NAME), True, (lease_name,)),
    )


def shard_lease_grants() -> tuple[Grant, ...]:
    """Sharding: every verb ``runtime.sharding`` uses on Leases (see the module docstring);
    granted in the operator's namespace only."""
    return (Grant("coordination.k8s.io", "leases", _ordered(SHARD_LEASES), True),)


def policy_rules(grants: Iterable[Grant]) -> list[dict[str, Any]]:
    """RBAC PolicyRules: grants with the same group, verbs and names share one rule;
    rules sorted (group, resources, names, verbs), so the output does not depend on the
    order of ``grants``."""
    merged: dict[tuple[str, tuple[str, ...], tuple[str, ...]], set[str]] = {}
    for g in grants:
        merged.setdefault((g.group, g.verbs, g.names), set()).add(g.resource)
    rules = []
    for (group, verbs, names), resources in merged.items():
        rule: dict[str, Any] = {"apiGroups": [group], "resources": sorted(resources)}
        if names:
            rule["resourceNames"] = list(names)
        rule["verbs"] = list(verbs)
        rules.append(rule)
    return sorted(
        rules,
        key=lambda r: (r["apiGroups"], r["resources"], r.get("resourceNames", []), r["verbs"]),
    )


def rbac_objects(
    permissions: Permissions,
    *,
    name: str,
    namespace: str,
    service_account: str,
    lease_name: str,
    watch_namespaces: Sequence[str] = (),
    labels: Mapping[str, str] | None = None,
    sharding: bool = False,
) -> list[dict[str, Any]]:
    """The Roles, ClusterRoles and bindings that give ``service_account`` (in
    ``namespace``) ``permissions``: cluster-wide, or in each of ``watch_namespaces``; and
    in ``namespace`` the Lease Role, of leader election or (``sharding``) of the shard
    group's Leases."""
    subject = {"kind": "ServiceAccount", "name": service_account, "namespace": namespace}
    labels = dict(labels or {})
    objects: list[dict[str, Any]] = []
    general = [g for g in permissions.grants if not g.namespace]
    cluster_grants = general if not watch_namespaces else list(permissions.cluster_scoped)
    if cluster_grants:
        objects += _role_and_binding("Cluster", name, None, cluster_grants, subject, labels)
    watched = set(watch_namespaces)
    for ns in sorted(watched | {g.namespace for g in permissions.pinned}):
        # everywhere the operator works, the general grants already cover a pinned one
        everywhere = list(permissions.namespaced) if ns in watched or not watched else []
        pinned = [g for g in permissions.pinned if g.namespace == ns]
        pinned = _uncovered(pinned, [replace(g, namespace=ns) for g in everywhere])
        grants = [*(everywhere if ns in watched else []), *pinned]
        if grants or ns in watched:
            objects += _role_and_binding("", name, ns, grants, subject, labels)
    if sharding:
        objects += _role_and_binding(
            "", f"{name}-shards", namespace, shard_lease_grants(), subject, labels
        )
    else:
        objects += _role_and_binding(
            "", f"{name}-leader-election", namespace, lease_grants(lease_name), subject, labels
        )
    return objects


# -- building the permissions ----------------------------------------------------------
class _Needs:
    """Verbs collected per (group, resource, scope), and notes, while walking a bundle."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self._verbs: dict[tuple[str, str, bool, tuple[str, ...], str], set[str]] = {}
        self._notes: list[str] = []

    def note(self, text: str) -> None:
        if text not in self._notes:
            self._notes.append(text)

    def add(
        self,
        api_version: str,
        kind: str,
        verbs: Iterable[str],
        subresource: str | None = None,
        *,
        names: tuple[str, ...] = (),
        namespace: str = "",
        namespaced: bool | None = None,
    ) -> KindResource:
        res = kind_resource(self.bundle, api_version, kind)
        if res.guessed:
            self.note(
                f"{kind} ({api_version}) is neither built in nor a CR kind of this bundle: "
                f"its resource name is guessed as '{res.plural}'; check "
                "`kubectl api-resources` and correct the rule if it differs"
            )
        resource = f"{res.plural}/{subresource}" if subresource else res.plural
        scope = res.namespaced if namespaced is None else namespaced
        key = (res.group, resource, scope, tuple(sorted(names)), namespace)
        self._verbs.setdefault(key, set()).update(verbs)
        return res

    def deploy(self, resource: ResourceSpec, namespace: str | None = None) -> None:
        """The verbs ``resource`` needs wherever the operator works (its informers watch
        the kind there) and, when it declares a namespace known now, in that one too."""
        verbs = DEPLOY | METHOD_VERBS[resource.method]
        for api_version, kind in resource.kinds:
            res = self.add(api_version, kind, verbs)
            if namespace and res.namespaced:
                self.add(api_version, kind, verbs, namespace=namespace, namespaced=True)
            if res.group == RBAC_GROUP:
                self.note(
                    f"the bundle creates {kind} objects: the API server lets the operator "
                    "create them only when it holds every permission they grant (the "
                    "escalate and bind verbs are not granted here)"
                )

    def permissions(self) -> Permissions:
        grants = [
            Grant(group, resource, _ordered(verbs), namespaced, names, namespace)
            for (group, resource, namespaced, names, namespace), verbs in self._verbs.items()
        ]
        # a grant limited to names that a grant of all names covers adds nothing
        kept = [g for g in grants if not g.names]
        kept += _uncovered([g for g in grants if g.names], kept)
        return Permissions(tuple(sorted(kept)), tuple(self._notes))


def _controller_needs(needs: _Needs, controller: ControllerSpec) -> None:
    cr = controller.resource
    needs.add(cr.api_version, cr.kind, CR)
    needs.add(cr.api_version, cr.kind, SUBRESOURCE_WRITE, subresource="status")
    needs.add(cr.api_version, cr.kind, {"update"}, subresource="finalizers")


def _read_needs(needs: _Needs, controller: ControllerSpec) -> None:
    """``get`` for the declared reads and for lookup() of literal kinds in the CR's
    namespace (what ``bundle.reads.refusal`` lets through without a declaration)."""
    bundle = needs.bundle
    for read in controller.reads:
        scoped = cluster_scoped(bundle, controller.reads, read.api_version, read.kind)
        needs.add(
            read.api_version,
            read.kind,
            {"get"},
            names=read.names,
            namespace="" if scoped else read.namespace or "",
            namespaced=not scoped,
        )
    computed = []
    for call in controller.lookups:
        if call.api_version is None or call.kind is None:
            computed.append(call)
            continue
        if is_secret(call.api_version, call.kind):
            continue  # only the declared reads
        if not cluster_scoped(bundle, controller.reads, call.api_version, call.kind):
            needs.add(call.api_version, call.kind, {"get"})
    for call in computed:
        needs.note(
            f"{call.pos}: lookup() of a kind computed at render time: grant `get` on it "
            "with --extra-kind apiVersion/Kind or by hand"
        )


def _uncovered(grants: Iterable[Grant], wider: Iterable[Grant]) -> list[Grant]:
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


def _declared_namespace(
    bundle: Bundle, controller: ControllerSpec, resource: ResourceSpec
) -> str | None:
    """The namespace ``resource`` declares, when it is known before any CR: written
    literally, or a template of the bundle's config (which a CR cannot change:
    ``bundle.placement``); None when it is the CR's or derives from the CR's namespace."""
    expr = resource.namespace
    if expr is None:
        return None
    context = {
        "config": dict(controller.config_defaults),
        "operator": {"name": bundle.name, "version": bundle.operator_version},
    }
    try:  # as two CRs of different namespaces would render it
        values = {expr.evaluate({**context, "namespace": ns}) for ns in ("cr-a", "cr-b")}
    except Oper8dError:  # it fails on every CR alike: render says so
        return None
    value = values.pop() if len(values) == 1 else None  # else it reads the CR's namespace
    return value if isinstance(value, str) and value else None


def _resources(controller: ControllerSpec) -> Iterator[ResourceSpec]:
    for component in controller.components:
        yield from component.resources
    for hook in controller.hooks:
        yield from hook.resources


# -- kinds a template computes ---------------------------------------------------------
# the same reading of a text template as bundle.components' (kinds are literal only when
# these lines are), so a document compile found no kind in is one we report
_DOC_SPLIT = re.compile(r"^---\s*$", re.M)
_TOP_LINE = re.compile(r"^(apiVersion|kind):\s*([^\s#]+)\s*$", re.M)
#: a line that renders no YAML of its own: blank, a YAML comment, Jinja tags only
_SILENT_LINE = re.compile(r"^\s*(#.*|(\{%.*?%\}|\{#.*?#\}|\s)*)$")


def _renders_computed_kinds(root: Path, resource: ResourceSpec) -> bool:
    """True when some object of ``resource`` has no literal apiVersion and kind."""
    if resource.object is not None:
        return not resource.kinds
    if resource.template is None:
        return False
    try:
        file = resource.template.file
        text = read_bundle_text(root, file, pos=SourcePos(file))
    except BundleError:
        return True  # changed since the bundle was loaded: assume the worst
    for part in _DOC_SPLIT.split(text):
        if all(_SILENT_LINE.match(line) for line in part.splitlines()):
            continue
        fields = {m[1]: m[2].strip("'\"") for m in _TOP_LINE.finditer(part)}
        literal = [fields.get(k, "") for k in ("apiVersion", "kind")]
        if not all(v and "{" not in v for v in literal):
            return True
    return False


# -- objects ------------------------------------------------------------------------------
def _role_and_binding(
    prefix: str,
    name: str,
    namespace: str | None,
    grants: Iterable[Grant],
    subject: Mapping[str, str],
    labels: Mapping[str, str],
) -> list[dict[str, Any]]:
    """``prefix`` "Cluster": ClusterRole + ClusterRoleBinding; "": Role + RoleBinding."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    role = {
        "apiVersion": RBAC_API_VERSION,
        "kind": f"{prefix}Role",
        "metadata": dict(metadata),
        "rules": policy_rules(grants),
    }
    binding = {
        "apiVersion": RBAC_API_VERSION,
        "kind": f"{prefix}RoleBinding",
        "metadata": dict(metadata),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": f"{prefix}Role", "name": name},
        "subjects": [dict(subject)],
    }
    return [role, binding]


def _ordered(verbs: Iterable[str]) -> tuple[str, ...]:
    found = set(verbs)
    return tuple(v for v in VERB_ORDER if v in found)
