"""Least-privilege RBAC for an operator: the verbs its engine and runtime use, per kind.

``required_permissions(bundle)`` computes what the operator process needs from what the
bundle can deploy and from what the runtime does (see docs/operations.md):

* every kind a resource writes literally (inline objects, text templates): ``get``,
  ``list``, ``watch`` (informers), ``create`` and ``patch`` (server-side apply, which
  the API server also authorizes as ``create`` when the object is new), ``delete``
  (disabled components, pruning, finalization); ``update`` only when a resource of
  that kind uses ``method: update`` or ``replace``;
* each CR kind: ``get/list/watch``, ``update/patch`` (finalizer, inventory and
  temporary-patch annotations), ``<plural>/status`` ``update/patch``, and
  ``<plural>/finalizers`` ``update`` (owner references with ``blockOwnerDeletion``
  need it where the OwnerReferencesPermissionEnforcement admission plugin runs);
* Secrets (random strings): ``get/list/watch/create/patch``; ConfigMaps (config
  defaults): ``get``; TemporaryPatches: ``get/list/watch/update/patch``;
  ``events.k8s.io`` Events: ``create/patch`` (the recorder POSTs each Event);
* ``lookup('v1', 'Secret', ...)`` calls with literal arguments: ``get`` on that kind;
* the leader-election Lease, in the operator's namespace only: ``get/update`` of the
  Lease by name and ``create``.

Kinds computed while rendering (a templated ``kind:``) cannot be known here: they are
listed in ``Permissions.notes`` and can be added with ``extra_kinds``. No
CustomResourceDefinition access is granted: the manager finds the TemporaryPatch kind
through discovery (open to every authenticated user) and ``--install-crds`` is not used
in a cluster, where the CRDs are applied with these manifests.

``rbac_objects`` turns the permissions into a ClusterRole and ClusterRoleBinding (all
namespaces) or a Role and RoleBinding per watched namespace (plus a ClusterRole for kinds
outside namespaces, if any). Used by ``manifests.package`` and ``oper8d manifests``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oper8d.bundle.model import Bundle, ControllerSpec, ResourceSpec
from oper8d.manifests.crd import TEMPORARY_PATCH_GROUP, TEMPORARY_PATCH_VERSION
from oper8d.manifests.rbac_kinds import RBAC_GROUP, KindResource, kind_resource

#: every verb we grant, in the order kubectl and the docs list them
VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete")

READ = frozenset({"get", "list", "watch"})
#: a literal kind the bundle deploys with server-side apply
DEPLOY = READ | {"create", "patch", "delete"}
#: a kind only known at render time: no informer watches it (the runtime starts informers
#: for literal kinds only), so it is read with get and list
DEPLOY_UNWATCHED = frozenset({"get", "list", "create", "patch", "delete"})
CR = READ | {"update", "patch"}
SUBRESOURCE_WRITE = frozenset({"update", "patch"})
SECRET_RANDOMS = READ | {"create", "patch"}
EVENT_WRITE = frozenset({"create", "patch"})
LEASE_BY_NAME = frozenset({"get", "update"})

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


@dataclass(frozen=True)
class Permissions:
    """What the operator needs where it reconciles, and what could not be worked out."""

    grants: tuple[Grant, ...]
    #: human-readable caveats, one a line (written as comments above the rules)
    notes: tuple[str, ...] = ()

    def verbs(self, group: str, resource: str) -> tuple[str, ...]:
        """The verbs granted on ``resource`` of ``group`` (all names), in VERB_ORDER."""
        found: set[str] = set()
        for g in self.grants:
            if (g.group, g.resource) == (group, resource) and not g.names:
                found |= set(g.verbs)
        return _ordered(found)

    @property
    def namespaced(self) -> tuple[Grant, ...]:
        return tuple(g for g in self.grants if g.namespaced)

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
    open_update = False
    for controller in bundle.controllers:
        _controller_needs(needs, controller)
        for resource in _resources(controller):
            needs.deploy(resource)
            if _renders_computed_kinds(bundle.root, resource):
                open_update |= resource.method in ("update", "replace")
                needs.note(
                    f"{resource.pos}: resource {resource.name!r} renders a kind computed at "
                    "render time, which cannot be granted here: add it with "
                    "--extra-kind apiVersion/Kind"
                )
    for api_version, kind in sorted(set(extra_kinds)):
        verbs = DEPLOY_UNWATCHED | ({"update"} if open_update else set())
        needs.add(api_version, kind, verbs)
    needs.add("v1", "Secret", SECRET_RANDOMS)
    needs.add("v1", "ConfigMap", {"get"})
    needs.add(f"{TEMPORARY_PATCH_GROUP}/{TEMPORARY_PATCH_VERSION}", "TemporaryPatch", CR)
    needs.add("events.k8s.io/v1", "Event", EVENT_WRITE)
    _lookup_needs(needs, bundle)
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
) -> list[dict[str, Any]]:
    """The Roles, ClusterRoles and bindings that give ``service_account`` (in
    ``namespace``) ``permissions``: cluster-wide, or in each of ``watch_namespaces``."""
    subject = {"kind": "ServiceAccount", "name": service_account, "namespace": namespace}
    labels = dict(labels or {})
    objects: list[dict[str, Any]] = []
    cluster_grants = permissions.grants if not watch_namespaces else permissions.cluster_scoped
    if cluster_grants:
        objects += _role_and_binding("Cluster", name, None, cluster_grants, subject, labels)
    for ns in sorted(set(watch_namespaces)):
        objects += _role_and_binding("", name, ns, permissions.namespaced, subject, labels)
    objects += _role_and_binding(
        "", f"{name}-leader-election", namespace, lease_grants(lease_name), subject, labels
    )
    return objects


# -- building the permissions ----------------------------------------------------------
class _Needs:
    """Verbs collected per (group, resource, scope), and notes, while walking a bundle."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self._verbs: dict[tuple[str, str, bool], set[str]] = {}
        self._notes: list[str] = []

    def note(self, text: str) -> None:
        if text not in self._notes:
            self._notes.append(text)

    def add(
        self, api_version: str, kind: str, verbs: Iterable[str], subresource: str | None = None
    ) -> KindResource:
        res = kind_resource(self.bundle, api_version, kind)
        if res.guessed:
            self.note(
                f"{kind} ({api_version}) is neither built in nor a CR kind of this bundle: "
                f"its resource name is guessed as '{res.plural}'; check "
                "`kubectl api-resources` and correct the rule if it differs"
            )
        resource = f"{res.plural}/{subresource}" if subresource else res.plural
        self._verbs.setdefault((res.group, resource, res.namespaced), set()).update(verbs)
        return res

    def deploy(self, resource: ResourceSpec) -> None:
        verbs = DEPLOY | ({"update"} if resource.method in ("update", "replace") else set())
        for api_version, kind in resource.kinds:
            res = self.add(api_version, kind, verbs)
            if res.group == RBAC_GROUP:
                self.note(
                    f"the bundle creates {kind} objects: the API server lets the operator "
                    "create them only when it holds every permission they grant (the "
                    "escalate and bind verbs are not granted here)"
                )

    def permissions(self) -> Permissions:
        grants = sorted(
            Grant(group, resource, _ordered(verbs), namespaced)
            for (group, resource, namespaced), verbs in self._verbs.items()
        )
        return Permissions(tuple(grants), tuple(self._notes))


def _controller_needs(needs: _Needs, controller: ControllerSpec) -> None:
    cr = controller.resource
    needs.add(cr.api_version, cr.kind, CR)
    needs.add(cr.api_version, cr.kind, SUBRESOURCE_WRITE, subresource="status")
    needs.add(cr.api_version, cr.kind, {"update"}, subresource="finalizers")


def _resources(controller: ControllerSpec) -> Iterator[ResourceSpec]:
    for component in controller.components:
        yield from component.resources
    for hook in controller.hooks:
        yield from hook.resources


# -- kinds a template computes ---------------------------------------------------------
# the same reading of a text template as bundle.compile's (kinds are literal only when
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
        text = (root / resource.template.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True  # gone since the bundle was loaded: assume the worst
    for part in _DOC_SPLIT.split(text):
        if all(_SILENT_LINE.match(line) for line in part.splitlines()):
            continue
        fields = {m[1]: m[2].strip("'\"") for m in _TOP_LINE.finditer(part)}
        literal = [fields.get(k, "") for k in ("apiVersion", "kind")]
        if not all(v and "{" not in v for v in literal):
            return True
    return False


# -- lookup() -----------------------------------------------------------------------------
_LOOKUP = re.compile(r"\blookup\s*\(")
#: literal first two arguments; a quote may be escaped (inside a double-quoted YAML string)
_LITERAL_LOOKUP = re.compile(
    r"\blookup\s*\(\s*\\?(?P<q1>['\"])(?P<api>[^'\"{}\\]+)\\?(?P=q1)\s*,\s*"
    r"\\?(?P<q2>['\"])(?P<kind>[^'\"{}\\]+)\\?(?P=q2)"
)


def _lookup_needs(needs: _Needs, bundle: Bundle) -> None:
    """``get`` for each ``lookup()`` of a literal kind; a note for the others."""
    for file in _bundle_sources(bundle):
        try:
            text = (bundle.root / file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        literal = list(_LITERAL_LOOKUP.finditer(text))
        for match in literal:
            needs.add(match["api"], match["kind"], {"get"})
        if len(_LOOKUP.findall(text)) > len(literal):
            needs.note(
                f"{file}: lookup() of a kind computed at render time: grant `get` on it "
                "with --extra-kind apiVersion/Kind or by hand"
            )


def _bundle_sources(bundle: Bundle) -> list[str]:
    """The bundle files the compile read: operator.yaml, included components, templates."""
    files = {"operator.yaml"}
    for controller in bundle.controllers:
        files |= {c.pos.file for c in controller.components}
        for resource in _resources(controller):
            files.add(resource.pos.file)
            if resource.template is not None:
                files.add(resource.template.file)
    return sorted(f for f in files if f)


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
