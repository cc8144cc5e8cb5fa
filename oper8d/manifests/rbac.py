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

``manifests.rbac_grants`` holds the model (``Grant``, ``Permissions``, the verb sets, the
Lease grants) and ``manifests.rbac_objects`` turns the permissions into a ClusterRole and
ClusterRoleBinding or Roles and RoleBindings (``rbac_objects``); this module exports their
names too. Used by ``manifests.package`` and ``oper8d manifests``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from oper8d.bundle.loader import read_bundle_text
from oper8d.bundle.model import Bundle, ControllerSpec, ResourceSpec
from oper8d.bundle.reads import cluster_scoped, is_secret
from oper8d.errors import BundleError, Oper8dError, SourcePos
from oper8d.manifests.crd import TEMPORARY_PATCH_GROUP, TEMPORARY_PATCH_VERSION
from oper8d.manifests.rbac_grants import (
    CR,
    DEPLOY,
    DEPLOY_UNWATCHED,
    EVENT_WRITE,
    LEASE_BY_NAME,
    METHOD_VERBS,
    READ,
    SECRET_RANDOMS,
    SHARD_LEASES,
    SUBRESOURCE_WRITE,
    TEMPORARY_PATCHES,
    VERB_ORDER,
    Grant,
    Permissions,
    lease_grants,
    ordered,
    shard_lease_grants,
    uncovered,
)
from oper8d.manifests.rbac_kinds import RBAC_GROUP, KindResource, kind_resource
from oper8d.manifests.rbac_objects import RBAC_API_VERSION, policy_rules, rbac_objects

__all__ = [
    "CR",
    "DEPLOY",
    "DEPLOY_UNWATCHED",
    "EVENT_WRITE",
    "LEASE_BY_NAME",
    "METHOD_VERBS",
    "RBAC_API_VERSION",
    "READ",
    "SECRET_RANDOMS",
    "SHARD_LEASES",
    "SUBRESOURCE_WRITE",
    "TEMPORARY_PATCHES",
    "VERB_ORDER",
    "Grant",
    "Permissions",
    "lease_grants",
    "policy_rules",
    "rbac_objects",
    "required_permissions",
    "shard_lease_grants",
]


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
            Grant(group, resource, ordered(verbs), namespaced, names, namespace)
            for (group, resource, namespaced, names, namespace), verbs in self._verbs.items()
        ]
        # a grant limited to names that a grant of all names covers adds nothing
        kept = [g for g in grants if not g.names]
        kept += uncovered([g for g in grants if g.names], kept)
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
