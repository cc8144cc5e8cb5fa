"""The typed bundle model: what ``bundle.compile`` produces from ``operator.yaml``.

A bundle is compiled once into these frozen dataclasses; validate, render, graph,
test and the controller all read the same compile. Templates inside are already
compiled (see ``oper8d.template``); nothing is re-parsed during a reconcile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from oper8d.dag import Graph
from oper8d.errors import SourcePos
from oper8d.template import Expr, TextTemplate, TreeTemplate

DeployMethod = Literal["apply", "update", "replace"]
#: what becomes of a resource's objects when its CR is deleted or it stops being rendered
DeletionPolicy = Literal["Delete", "Orphan", "Retain"]
#: what a change of an immutable field does (``onImmutableChange:``)
ImmutablePolicy = Literal["fail", "recreate"]
RuleKind = Literal["builtin", "exists", "condition", "expr", "subsystem"]
PatchType = Literal["strategicMerge", "json6902"]
HookPhase = Literal[
    "afterDeploy", "afterDeployUnsuccessful", "afterVerify", "afterVerifyUnsuccessful"
]

FORMAT_VERSION = "oper8d.io/v1alpha1"


@dataclass(frozen=True)
class CRKind:
    """The custom resource kind a controller manages."""

    group: str
    version: str
    kind: str
    plural: str
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    short_names: tuple[str, ...] = ()
    #: JSON Schema (OpenAPI v3 subset) of ``.spec``; defaults are applied from it
    schema: Mapping[str, Any] = field(default_factory=dict)
    #: JSON Schema of what a CR may override of the config (``configOverrides``, the
    #: config-defaults ConfigMap's data); None: nothing (``engine.inputs``)
    config_schema: Mapping[str, Any] | None = None
    #: dotted path of the CR's version inside the CR
    version_path: str = "spec.version"
    printer_columns: tuple[Mapping[str, Any], ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def namespaced(self) -> bool:
        return self.scope == "Namespaced"


@dataclass(frozen=True)
class ReadyRule:
    """One readiness rule; a resource or component is ready when all its rules hold."""

    kind: RuleKind
    pos: SourcePos
    condition_type: str | None = None
    condition_status: str = "True"
    condition_reason: str | None = None
    expr: Expr | None = None  # kind == "expr"; ``obj`` is the live object
    subsystem_version: Expr | None = None  # kind == "subsystem"; None: the CR's version
    message: str | None = None


@dataclass(frozen=True)
class LeaveField:
    """A field a resource leaves to another controller (an HPA's ``spec.replicas``)."""

    #: the map keys from the object's root: ``("spec", "replicas")``
    path: tuple[str, ...]
    pos: SourcePos
    #: left only while this holds (``{path, when}``); None: always
    when: Expr | None = None


@dataclass(frozen=True)
class ResourceSpec:
    """A resource of a component: one inline object or a multi-document text template."""

    name: str
    pos: SourcePos
    object: TreeTemplate | None = None
    template: TextTemplate | None = None
    method: DeployMethod = "apply"
    ready: tuple[ReadyRule, ...] = ()  # empty: builtin
    #: (apiVersion, kind) pairs this resource may render: those written literally and those
    #: declared in ``kinds:``; anything else is refused before apply (``engine.declared``).
    #: The runtime starts informers for them before the first reconcile
    kinds: tuple[tuple[str, str], ...] = ()
    #: the namespace its objects live in when not the CR's (``namespace:``, a template string)
    namespace: Expr | None = None
    #: fields other controllers own once the object exists (``leaveToOthers:``): set on
    #: create, then never reverted or compared
    leave_to_others: tuple[LeaveField, ...] = ()
    #: ``deletionPolicy:``: Delete (with the CR, or when no longer rendered), Orphan
    #: (released: owner references and oper8d's labels removed, the object kept) or
    #: Retain (never owned by the CR's garbage collection, never deleted by oper8d)
    deletion_policy: DeletionPolicy = "Delete"
    #: a change the API server refuses as immutable: ``fail`` (the CR says so) or
    #: ``recreate`` (the object is deleted and created again)
    on_immutable_change: ImmutablePolicy = "fail"


@dataclass(frozen=True)
class Edge:
    """``downstream`` waits for ``upstream``: deployed, ready too when ``ready``, and
    ``when`` must hold over live objects."""

    upstream: str
    downstream: str
    pos: SourcePos
    when: Expr | None = None
    inferred: bool = False  # found in a template's live('<component>.<resource>') call
    #: wait until ``upstream`` is verified (``dependsOn: [{component, ready: true}]``)
    ready: bool = False


@dataclass(frozen=True)
class PatchSpec:
    """A post-render patch applied to the objects of a component."""

    type: PatchType
    patch: TreeTemplate
    pos: SourcePos
    target_resource: str | None = None  # resource name inside the component
    target_kind: str | None = None
    target_name: str | None = None


@dataclass(frozen=True)
class ForEach:
    """One copy of the component per item of ``items`` (a list), item bound to ``var``."""

    items: Expr
    var: str = "item"
    key: Expr | None = None  # instance suffix; default: item.name, else the index
    #: the bundle's bound on the number of items (``maxItems``); None: only the
    #: process-wide ``forEachItems`` limit
    max_items: int | None = None
    pos: SourcePos | None = None  # of the ``forEach`` mapping, for errors


@dataclass(frozen=True)
class ComponentSpec:
    """A named group of resources deployed, checked and deleted together."""

    name: str
    pos: SourcePos
    resources: tuple[ResourceSpec, ...]
    enabled: Expr | None = None  # None: always enabled
    for_each: ForEach | None = None
    ready: tuple[ReadyRule, ...] = ()  # component-level (span resources, use live())
    patches: tuple[PatchSpec, ...] = ()


@dataclass(frozen=True)
class HookSpec:
    """A check that holds the rollout and/or objects applied after a rollout phase."""

    name: str
    phase: HookPhase
    pos: SourcePos
    check: Expr | None = None
    message: str | None = None
    resources: tuple[ResourceSpec, ...] = ()


@dataclass(frozen=True)
class FinalizeSpec:
    """What the controller does before a CR's deletion completes."""

    enabled: bool = False
    #: on CR deletion, delete components in reverse dependency order before
    #: removing the finalizer (owner references would delete them unordered)
    delete_components: bool = True


@dataclass(frozen=True)
class RequeueSpec:
    """Seconds; None means "do not requeue for this reason"."""

    after_error: float | None = 60.0
    while_waiting: float | None = 10.0
    after_success: float | None = None


@dataclass(frozen=True)
class TemporaryPatchPolicy:
    """What TemporaryPatches may change of what a controller deploys: nothing unless the
    bundle turns them on (``temporaryPatches.enabled``); then objects of ``allowed_kinds``
    only, and of those only fields at or below ``allowed_paths`` (field path keys; ``*``
    is any one key or list index). Enforced by ``engine.patch.bounds``."""

    enabled: bool = False
    allowed_kinds: tuple[str, ...] = ()
    allowed_types: tuple[str, ...] = ("patchStrategicMerge", "patchJson6902")
    allowed_paths: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class ReadSpec:
    """A read the bundle declares (``reads:``): objects ``lookup()`` and ``live()`` may
    return beyond the CR's own namespace, cluster-scoped kinds, and Secrets. Declared
    reads are the only ones that reach another namespace, and they drive the RBAC."""

    api_version: str
    kind: str
    pos: SourcePos
    #: None: the CR's namespace (namespaced kinds); always None for cluster-scoped kinds
    namespace: str | None = None
    #: only these object names (RBAC ``resourceNames``); empty: any name
    names: tuple[str, ...] = ()
    #: None: known from the kind (built-in kinds, the bundle's CR kinds), else namespaced
    scope: Literal["Namespaced", "Cluster"] | None = None


@dataclass(frozen=True)
class LookupCall:
    """A ``lookup(apiVersion, kind, name, namespace)`` call found in the bundle's templates
    at compile time. An argument computed at render time is None; ``namespace_given`` is
    False when the call reads the CR's namespace (no fourth argument, or ``none``)."""

    pos: SourcePos
    api_version: str | None
    kind: str | None
    name: str | None = None
    namespace: str | None = None
    namespace_given: bool = False


@dataclass(frozen=True)
class ControllerSpec:
    """One controller: the CR kind it manages, its components and how it rolls out."""

    name: str
    pos: SourcePos
    resource: CRKind
    components: tuple[ComponentSpec, ...]
    edges: tuple[Edge, ...] = ()
    config_defaults: Mapping[str, Any] = field(default_factory=dict)
    hooks: tuple[HookSpec, ...] = ()
    status_fields: Mapping[str, Expr] = field(default_factory=dict)
    finalize: FinalizeSpec = field(default_factory=FinalizeSpec)
    requeue: RequeueSpec = field(default_factory=RequeueSpec)
    temporary_patches: TemporaryPatchPolicy = field(default_factory=TemporaryPatchPolicy)
    #: what lookup()/live() may read besides the CR's own namespace (see ReadSpec)
    reads: tuple[ReadSpec, ...] = ()
    #: every lookup() call of the controller's templates (for RBAC and validate)
    lookups: tuple[LookupCall, ...] = ()
    #: some template calls random_string(): the CR gets a generated Secret
    random_strings: bool = False
    #: the component dependency graph, built once here from ``components`` and ``edges``:
    #: the rollout, the finalizer and ``oper8d graph`` all walk this one (compile has
    #: rejected cycles before a ControllerSpec is made)
    graph: Graph = field(init=False, repr=False, compare=False)
    #: the components by name, for ``component()`` (asked once per component each rollout)
    _by_name: Mapping[str, ComponentSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        nodes = [c.name for c in self.components]
        graph = Graph(nodes, [(e.upstream, e.downstream) for e in self.edges])
        by_name: dict[str, ComponentSpec] = {}
        for c in self.components:
            by_name.setdefault(c.name, c)
        # frozen: the only writes, at construction
        object.__setattr__(self, "graph", graph)
        object.__setattr__(self, "_by_name", by_name)

    @property
    def finalizer(self) -> str:
        """oper8's finalizer name: ``finalizers.<kind lower>.<group>``."""
        return f"finalizers.{self.resource.kind.lower()}.{self.resource.group}"

    def deployed_kinds(self) -> tuple[tuple[str, str], ...]:
        """Every literal (apiVersion, kind) the components and hooks can deploy, sorted."""
        kinds = {k for c in self.components for r in c.resources for k in r.kinds}
        kinds |= {k for h in self.hooks for r in h.resources for k in r.kinds}
        return tuple(sorted(kinds))

    def component(self, name: str) -> ComponentSpec:
        """The component called ``name``; KeyError when there is none."""
        return self._by_name[name]


@dataclass(frozen=True)
class Bundle:
    """A compiled bundle: its controllers, from the folder at ``root``."""

    name: str
    root: Path
    controllers: tuple[ControllerSpec, ...]
    operator_version: str | None = None
    description: str | None = None

    @property
    def temporary_patch_targets(self) -> frozenset[tuple[str, str]]:
        """(apiVersion, kind) of the CRs whose controllers turn TemporaryPatches on: the
        TemporaryPatch controller, its watch, its CRD and its RBAC exist only for them."""
        return frozenset(
            (c.resource.api_version, c.resource.kind)
            for c in self.controllers
            if c.temporary_patches.enabled
        )

    def controller_for(self, api_version: str, kind: str) -> ControllerSpec | None:
        for c in self.controllers:
            if c.resource.api_version == api_version and c.resource.kind == kind:
                return c
        return None
