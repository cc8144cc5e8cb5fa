"""The RBAC ``oper8d manifests`` generates is minimal, shown on the real API server.

For each example operator, installed for one watched namespace (per-namespace Roles; webapp
also cluster-wide, one ClusterRole), the steps the operator takes run under impersonation of
the generated ServiceAccount: the informers' lists and watches, leader election, the engine
reconciling the sample CR to Ready, an Event, a TemporaryPatch, pruning, finalization. The
steps start with *every* rule atom (one verb on one resource of one Role) removed. Whenever a
step is refused (a 403), the atom the API server names is put back and the step runs again from
where it stopped; every state it restarts from is one the operator itself reaches. An atom put
back this way is needed: the request that was refused is granted by that atom only, and every
request before it succeeded with fewer rules. When all steps are done, the example is Ready,
and the atoms never put back are exactly the ones ``UNSHOWN`` explains.

One pass per example: each refusal costs a retry of one step, not a whole run.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from harness import EXAMPLES, is_ready
from kubernetes import client

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import Bundle
from oper8d.cluster.kube import KubeCluster
from oper8d.engine.reconcile import Reconciler, ReconcilerOptions
from oper8d.envtest import Environment
from oper8d.errors import ClusterError
from oper8d.manifests.package import InstallOptions, names_for, operator_manifests
from oper8d.objects import OWNER_LABEL as OWNED_SELECTOR
from oper8d.runtime.controller import owned_kinds
from oper8d.runtime.events import EventRecorder
from oper8d.runtime.leaderelection import LeaderElector
from oper8d.runtime.temporarypatch import TemporaryPatchSync

pytestmark = pytest.mark.integration

TP = ("oper8.org/v1", "TemporaryPatch")
RBAC = "rbac.authorization.k8s.io/v1"
#: (Role namespace or "" for a ClusterRole, API group, resource, verb, resourceNames)
Atom = tuple[str, str, str, str, tuple[str, ...]]

#: atoms no step of the example can show, and why they stay
UNSHOWN: dict[str, dict[tuple[str, str, str], str]] = {
    example: {
        (group, f"{plural}/finalizers", "update"): (
            "owner references with blockOwnerDeletion need it where the "
            "OwnerReferencesPermissionEnforcement admission plugin runs (OpenShift); the test "
            "API server runs the default admission plugins, which do not check it"
        )
    }
    for example, group, plural in (
        ("webapp", "demo.oper8d.io", "webapps"),
        ("stateful", "demo.oper8d.io", "notesapps"),
        ("fanout", "demo.oper8d.io", "workerpools"),
    )
}
UNSHOWN["fanout"][("", "configmaps", "delete")] = (
    "the queue ConfigMap is rendered for every CR and fanout has no finalizer (owner "
    "references remove it): the engine deletes it only when a new bundle version renames or "
    "drops it (pruning), which one bundle version cannot show"
)

_FORBIDDEN = re.compile(
    r'cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"]+)" in API group "(?P<group>[^"]*)"'
    r'(?: in the namespace "(?P<namespace>[^"]+)")?'
)


class Refused(Exception):
    """A step was refused by the API server (a 403 was seen, even if the code swallowed it)."""


@dataclass
class Forbidden:
    """Records every 403 the impersonated client receives, by wrapping its REST client."""

    seen: list[str] = field(default_factory=list)

    def install(self, api_client: client.ApiClient) -> None:
        original = api_client.rest_client.request

        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            response = original(method, url, *args, **kwargs)
            if response.status == 403:
                body = response.read().decode(errors="replace")
                try:
                    self.seen.append(json.loads(body)["message"])
                except (ValueError, KeyError, TypeError):
                    self.seen.append(body)
            return response

        api_client.rest_client.request = request  # type: ignore[method-assign]

    def check(self) -> None:
        if self.seen:
            raise Refused(self.seen[0])


@dataclass
class Example:
    """One example operator installed for the test: its RBAC, its CR, its steps."""

    name: str
    bundle: Bundle
    admin: KubeCluster
    op: KubeCluster
    forbidden: Forbidden
    operator_ns: str
    #: False: one ClusterRole for all namespaces (no --watch-namespace)
    namespace_scoped: bool
    watched: str
    roles: dict[tuple[str, str, str], dict[str, Any]]  # (kind, namespace, name) -> role
    atoms: set[Atom]
    cr: dict[str, Any]
    removed: set[Atom] = field(default_factory=set)
    #: one engine Reconciler, kept across steps as the operator keeps it
    reconciler: Reconciler | None = None

    @property
    def service_account(self) -> str:
        return names_for(self.bundle)["operator"]

    @property
    def kind(self) -> tuple[str, str]:
        res = self.bundle.controllers[0].resource
        return res.api_version, res.kind


# -- RBAC editing -------------------------------------------------------------------------
def atoms_of(roles: dict[tuple[str, str, str], dict[str, Any]]) -> set[Atom]:
    out: set[Atom] = set()
    for (_kind, ns, _name), role in roles.items():
        for rule in role["rules"]:
            names = tuple(rule.get("resourceNames") or ())
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.add((ns, group, resource, verb, names))
    return out


def write_roles(ex: Example) -> None:
    """Apply every Role without the atoms in ``ex.removed`` (one rule per atom kept)."""
    for (kind, ns, name), role in ex.roles.items():
        kept = sorted(a for a in atoms_of({(kind, ns, name): role}) if a not in ex.removed)
        rules = []
        for _ns, group, resource, verb, names in kept:
            rule: dict[str, Any] = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
            if names:
                rule["resourceNames"] = list(names)
            rules.append(rule)
        ex.admin.apply({**role, "rules": rules}, field_manager="test", method="replace")


def allowed(ex: Example, atom: Atom) -> bool:
    """What the API server's authorizer says about the ServiceAccount and ``atom``."""
    ns, group, resource, verb, names = atom
    plural, _, sub = resource.partition("/")
    review = ex.admin.create(
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": f"system:serviceaccount:{ex.operator_ns}:{ex.service_account}",
                "groups": ["system:authenticated"],
                "resourceAttributes": {
                    "namespace": ns,
                    "verb": verb,
                    "group": group,
                    "resource": plural,
                    "subresource": sub,
                    "name": names[0] if names else "",
                },
            },
        }
    )
    return bool(review["status"].get("allowed"))


def settle_rbac(ex: Example, atom: Atom, *, expect: bool) -> None:
    """Wait until the authorizer's cache reflects the last Role change for ``atom``."""
    deadline = time.monotonic() + 30
    while allowed(ex, atom) != expect:
        if time.monotonic() > deadline:
            raise AssertionError(f"RBAC change for {atom} not visible after 30s")
        time.sleep(0.1)


def put_back(ex: Example, message: str) -> Atom:
    """The removed atom the 403 ``message`` names; written back into its Role."""
    match = _FORBIDDEN.search(message)
    assert match, f"a 403 that names no permission: {message}"
    ns = match["namespace"] or ""
    candidates = [
        a
        for a in ex.removed
        if (a[1], a[2], a[3]) == (match["group"], match["resource"], match["verb"])
        and a[0] in (ns, "")
    ]
    assert len(candidates) == 1, f"403 for an atom that was not removed: {message}"
    (atom,) = candidates
    ex.removed.discard(atom)
    write_roles(ex)
    settle_rbac(ex, atom, expect=True)
    return atom


# -- the steps ------------------------------------------------------------------------------
def wait(ex: Example, what: str, probe: Callable[[], Any], timeout: float = 180.0) -> None:
    """Poll ``probe`` (every 0.2 s, the cluster's controllers cannot tell us) until it is
    true; stop as soon as a request was refused."""
    deadline = time.monotonic() + timeout
    while True:
        ex.forbidden.check()
        if probe():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)


def informers(ex: Example) -> None:
    """The lists and watches the manager's informers start for this controller."""
    spec = ex.bundle.controllers[0]
    watched: list[tuple[str, str, str | None]] = [(*ex.kind, None)]
    if spec.temporary_patches.enabled:  # (else the manager does not watch them)
        watched.append((*TP, None))
    watched += [(api_version, kind, OWNED_SELECTOR) for api_version, kind in owned_kinds(spec)]
    for api_version, kind, selector in watched:
        # a cluster-wide operator's informers watch all namespaces
        scope = ex.watched if ex.namespace_scoped else None
        _items, version = ex.op.list_with_version(api_version, kind, scope, selector)
        stream = ex.op.watch(
            api_version,
            kind,
            namespace=scope,
            label_selector=selector,
            resource_version=version,
            timeout_seconds=1,
        )
        stream.close()


def leader_election(ex: Example) -> None:
    """Acquire the Lease, then release it on stop."""
    elector = LeaderElector(
        ex.op,
        name=names_for(ex.bundle)["lease"],
        namespace=ex.operator_ns,
        identity="rbac-test",
        lease_duration=4.0,
        renew_deadline=3.0,
        retry_period=0.5,
    )
    stop = threading.Event()
    led = threading.Event()
    thread = threading.Thread(target=elector.run, args=(stop, led.set, lambda: None), daemon=True)
    thread.start()
    try:
        wait(ex, "the Lease", led.is_set, timeout=30)
    finally:
        stop.set()
        thread.join(10)
    ex.forbidden.check()  # the release


def reconcile_to_ready(ex: Example) -> None:
    name = ex.cr["metadata"]["name"]

    def ready() -> bool:
        reconcile_once(ex)
        return is_ready(ex.admin.get(*ex.kind, name, ex.watched))

    wait(ex, f"{ex.kind[1]} Ready", ready)


def event(ex: Example) -> None:
    cr = ex.op.get(*ex.kind, ex.cr["metadata"]["name"], ex.watched)
    assert cr is not None
    recorder = EventRecorder(ex.op, controller=ex.bundle.controllers[0].name)
    recorder.record(cr, type_="Normal", reason="Test", note="rbac test", action="Reconcile")


#: a resource of each example that turns temporary patches on (only webapp: they are off
#: unless a bundle turns them on) a TemporaryPatch changes: internal name, kind
PATCHED = {
    "webapp": ("app.deployment", "apps/v1", "Deployment", "hello-app"),
}


def temporary_patch(ex: Example) -> None:
    """Add a TemporaryPatch, see it applied, delete it, see it released; nothing for an
    example that leaves temporary patches off (it has no rule on them either)."""
    if not ex.bundle.controllers[0].temporary_patches.enabled:
        return
    internal, api_version, kind, target = PATCHED[ex.name]
    component, resource = internal.split(".")
    name = ex.cr["metadata"]["name"]
    if ex.admin.get(*TP, "debug", ex.watched) is None:
        ex.admin.apply(
            {
                "apiVersion": TP[0],
                "kind": TP[1],
                "metadata": {"name": "debug", "namespace": ex.watched},
                "spec": {
                    "apiVersion": ex.kind[0],
                    "kind": ex.kind[1],
                    "name": name,
                    "patchType": "patchStrategicMerge",
                    "patch": {component: {resource: {"metadata": {"labels": {"debug": "on"}}}}},
                },
            },
            field_manager="test",
        )
    sync = TemporaryPatchSync(ex.op, targets={ex.kind})
    sync.sync(ex.watched, "debug")
    ex.forbidden.check()

    def labelled() -> bool:
        reconcile_once(ex)
        live = ex.admin.get(api_version, kind, target, ex.watched) or {}
        return (live.get("metadata") or {}).get("labels", {}).get("debug") == "on"

    wait(ex, f"the TemporaryPatch on {kind} {target}", labelled)
    ex.admin.delete(*TP, "debug", ex.watched)
    sync.sync(ex.watched, "debug")
    ex.forbidden.check()
    wait(ex, "the TemporaryPatch to go", lambda: ex.admin.get(*TP, "debug", ex.watched) is None)


def reconcile_once(ex: Example) -> None:
    """One reconcile by the engine, as the operator's worker runs it."""
    if ex.reconciler is None:
        options = ReconcilerOptions(field_manager=ex.bundle.name, operator_version="test")
        ex.reconciler = Reconciler(ex.bundle, ex.bundle.controllers[0], ex.op, options)
    ex.reconciler.reconcile(ex.watched, ex.cr["metadata"]["name"])


#: a change of each example's CR that makes the engine delete objects, and one of them
PRUNE: dict[str, tuple[dict[str, Any], str, str, str]] = {
    "webapp": (
        {"ingress": {"enabled": False}, "autoscaling": {"enabled": False}},
        "networking.k8s.io/v1",
        "Ingress",
        "hello-web",
    ),
    "fanout": (
        {"workers": [{"name": "ingest", "replicas": 2}, {"name": "resize", "topic": "images"}]},
        "apps/v1",
        "Deployment",
        "pool-worker-notify",
    ),
}


def prune(ex: Example) -> None:
    if ex.name not in PRUNE:
        return  # stateful: finalization deletes every kind it deploys
    change, api_version, kind, gone = PRUNE[ex.name]
    name = ex.cr["metadata"]["name"]
    live = ex.admin.get(*ex.kind, name, ex.watched)
    assert live is not None
    if any(live["spec"].get(k) != v for k, v in change.items()):
        ex.admin.apply(
            {
                "apiVersion": ex.kind[0],
                "kind": ex.kind[1],
                "metadata": {"name": name, "namespace": ex.watched},
                "spec": change,
            },
            field_manager="test-prune",  # a manager of its own: the rest of the spec stays
        )

    def pruned() -> bool:
        reconcile_once(ex)
        others = [o for o in ex.admin.list(api_version, kind, ex.watched) if o]
        return all(o["metadata"]["name"] != gone for o in others) and (
            ex.name != "webapp"
            or not ex.admin.list("autoscaling/v2", "HorizontalPodAutoscaler", ex.watched)
        )

    wait(ex, f"{kind} {gone} to be pruned", pruned)


def finalize(ex: Example) -> None:
    if not ex.bundle.controllers[0].finalize.enabled:
        return  # owner references remove the objects; the operator does nothing
    name = ex.cr["metadata"]["name"]
    ex.admin.delete(*ex.kind, name, ex.watched)

    def gone() -> bool:
        reconcile_once(ex)
        return ex.admin.get(*ex.kind, name, ex.watched) is None

    wait(ex, f"{ex.kind[1]} to be finalized", gone)


STEPS: list[tuple[str, Callable[[Example], None]]] = [
    ("informers", informers),
    ("leader election", leader_election),
    ("reconcile to Ready", reconcile_to_ready),
    ("event", event),
    ("temporary patch", temporary_patch),
    ("prune", prune),
    ("finalize", finalize),
]


# -- fixtures -------------------------------------------------------------------------------
@pytest.fixture
def admin(k8s: client.ApiClient) -> KubeCluster:
    return KubeCluster(k8s, field_manager="test")


@pytest.fixture(
    params=[
        ("webapp", True),
        ("stateful", True),
        ("fanout", True),
        ("webapp", False),  # the ClusterRole of a cluster-wide install
    ],
    ids=["webapp", "stateful", "fanout", "webapp-cluster-wide"],
)
def example(
    request: pytest.FixtureRequest, envtest: Environment, admin: KubeCluster
) -> Iterator[Example]:
    name, namespace_scoped = request.param
    bundle = load_bundle(EXAMPLES / name)
    suffix = uuid.uuid4().hex[:6]
    operator_ns, watched = f"min-op-{suffix}", f"min-{name}-{suffix}"
    admin.apply(_namespace(watched), field_manager="test")
    options = InstallOptions(
        namespace=operator_ns, watch_namespaces=(watched,) if namespace_scoped else ()
    )
    objs = [m.obj for m in operator_manifests(bundle, options) if m.obj["kind"] != "Deployment"]
    for obj in objs:
        admin.apply(obj, field_manager="test")
    _wait_for_crds(admin, objs)
    roles = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objs
        if o["kind"] in ("Role", "ClusterRole")
    }
    cr = yaml.safe_load(next((EXAMPLES / name / "samples").glob("*.yaml")).read_text())
    if name == "webapp":
        cr = yaml.safe_load((EXAMPLES / name / "samples" / "webapp.yaml").read_text())
    cr["metadata"]["namespace"] = watched
    # the config-defaults ConfigMap a CR may name (read with `get` in its namespace)
    admin.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "defaults", "namespace": watched},
            "data": {},
        },
        field_manager="test",
    )
    cr["metadata"].setdefault("annotations", {})["oper8.org/config-defaults"] = "defaults"
    forbidden = Forbidden()
    with envtest.api_client() as api_client:
        sa = names_for(bundle)["operator"]
        api_client.set_default_header(
            "Impersonate-User", f"system:serviceaccount:{operator_ns}:{sa}"
        )
        forbidden.install(api_client)
        ex = Example(
            name=name,
            bundle=bundle,
            admin=admin,
            op=KubeCluster(api_client, field_manager=bundle.name),
            forbidden=forbidden,
            operator_ns=operator_ns,
            namespace_scoped=namespace_scoped,
            watched=watched,
            roles=roles,
            atoms=atoms_of(roles),
            cr=cr,
        )
        try:
            yield ex
        finally:
            _cleanup(ex)


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _wait_for_crds(admin: KubeCluster, objs: list[dict[str, Any]]) -> None:
    for crd in (o for o in objs if o["kind"] == "CustomResourceDefinition"):
        deadline = time.monotonic() + 60
        while True:
            live = admin.get(crd["apiVersion"], crd["kind"], crd["metadata"]["name"]) or {}
            conditions = (live.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            assert time.monotonic() < deadline, f"CRD {crd['metadata']['name']} not Established"
            time.sleep(0.2)


def _cleanup(ex: Example) -> None:
    """Full RBAC back, the CR finalized by the operator's engine, namespaces removed."""
    ex.removed.clear()
    write_roles(ex)
    name = ex.cr["metadata"]["name"]
    if ex.admin.get(*ex.kind, name, ex.watched) is not None:
        ex.admin.delete(*ex.kind, name, ex.watched)
        deadline = time.monotonic() + 30
        while ex.admin.get(*ex.kind, name, ex.watched) and time.monotonic() < deadline:
            with contextlib.suppress(ClusterError):
                reconcile_once(ex)
            time.sleep(0.5)
    for ns in (ex.watched, ex.operator_ns):
        ex.admin.delete("v1", "Namespace", ns)
    for kind, _ns, role_name in ex.roles:
        if kind == "ClusterRole":
            ex.admin.delete(RBAC, "ClusterRole", role_name)
            ex.admin.delete(RBAC, "ClusterRoleBinding", role_name)


# -- the test -------------------------------------------------------------------------------
def test_every_rule_is_needed_by_some_step_and_the_example_reaches_ready(
    example: Example,
) -> None:
    ex = example
    ex.admin.apply(ex.cr, field_manager="test")
    ex.removed = set(ex.atoms)
    write_roles(ex)
    for ns in {a[0] for a in ex.removed}:  # one atom of each Role
        settle_rbac(ex, min(a for a in ex.removed if a[0] == ns), expect=False)
    shown: dict[Atom, str] = {}
    for step_name, step in STEPS:
        for _attempt in range(len(ex.atoms) + 1):
            ex.forbidden.seen.clear()
            try:
                step(ex)
                ex.forbidden.check()
            except Refused as refusal:
                atom = put_back(ex, str(refusal))
                shown[atom] = step_name
                continue
            except ClusterError as err:
                if err.status != 403:
                    raise
                atom = put_back(ex, str(err))
                shown[atom] = step_name
                continue
            break
        if step_name == "reconcile to Ready":
            assert is_ready(ex.admin.get(*ex.kind, ex.cr["metadata"]["name"], ex.watched))

    unshown = {(a[1], a[2], a[3]) for a in ex.removed}
    assert ex.namespace_scoped or any(a[0] == "" for a in shown), "no ClusterRole was tested"
    assert unshown == set(UNSHOWN[ex.name]), (
        f"rules no step needed: {sorted(unshown - set(UNSHOWN[ex.name]))}; "
        f"explained but shown: {sorted(set(UNSHOWN[ex.name]) - unshown)}; "
        f"shown: {sorted(shown.items())}"
    )
    # the generated RBAC is what was shown plus what UNSHOWN explains, nothing else
    assert set(shown) | ex.removed == ex.atoms
    assert len(shown) >= 20, shown
