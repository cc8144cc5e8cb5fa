"""Differential test: the in-memory cluster's server-side apply equals the apiserver's.

Each case is a sequence of applies, run on a fresh ``MemoryCluster`` and on the real
apiserver: the owner ("op") creates the object, applies it again with changed lists, then
a second manager ("other") applies a part of it, first without force (the apiserver may
answer 409: a conflict) and, after a conflict, with force. After every step both sides must
agree on the outcome (applied, or refused with the same status) and on the object, field by
field and list order included, after normalising what the in-memory cluster does not model:
``managedFields``, uid (wherever the server copies it), resourceVersion, timestamps,
generation, status, allocated cluster IPs, and the revision annotation the deployment
controller adds. Server defaults are not normalised: both sides fill them in.

The corpus: every object the example operators render (golden files), varied; generated
Deployments (containers, env, ports with and without a protocol, volumes, finalizers in
every order and overlap); and a custom resource whose CRD has map, set and atomic lists.
"""

from __future__ import annotations

import copy
import itertools
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client
from test_kube_cluster import install_crd, new_namespace

from oper8d.cluster.kube import KubeCluster
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.errors import ClusterError
from tests.unit.kubeschema_corpus import rendered_examples

pytestmark = pytest.mark.integration

Obj = dict[str, Any]
Step = tuple[str, Obj]  # (field manager, applied config)
#: what the controllers running beside the real apiserver add (a Deployment's revision)
_CONTROLLER_ANNOTATIONS = ("deployment.kubernetes.io/revision",)
_SERVER_META = ("managedFields", "uid", "resourceVersion", "creationTimestamp", "generation")
_names = itertools.count(1)


# -- running one case on both sides ---------------------------------------------------------


class _Outcome(str):
    """``applied`` or ``refused <status>``; equal whatever the message, which it keeps
    for the report."""

    message = ""


def _outcome(cluster: Any, obj: Obj, manager: str, force: bool) -> _Outcome:
    try:
        cluster.apply(copy.deepcopy(obj), field_manager=manager, force=force)
    except ClusterError as e:
        out = _Outcome(f"refused {e.status}")
        out.message = str(e)[:300]
        return out
    return _Outcome("applied")


def _read(cluster: Any, obj: Obj) -> Obj | None:
    meta = obj["metadata"]
    name, namespace = meta["name"], meta.get("namespace")
    found: Obj | None = cluster.get(obj["apiVersion"], obj["kind"], name, namespace)
    return found


def _normalised(obj: Obj | None) -> Obj | None:
    if obj is None:
        return None
    obj = copy.deepcopy(obj)
    obj.pop("status", None)
    uid = obj["metadata"].get("uid")
    for key in _SERVER_META:
        obj["metadata"].pop(key, None)
    annotations = obj["metadata"].get("annotations") or {}
    for key in _CONTROLLER_ANNOTATIONS:
        annotations.pop(key, None)
    if "annotations" in obj["metadata"] and not annotations:
        del obj["metadata"]["annotations"]
    spec = obj.get("spec")
    if obj["kind"] == "Service" and isinstance(spec, dict):
        for key in ("clusterIP", "clusterIPs"):
            if key in spec:
                spec[key] = "<allocated>"
    if uid:  # where the server copies it (a Job's selector and pod labels)
        obj = json.loads(json.dumps(obj).replace(uid, "<uid>"))
    return obj


def compare(real_cluster: KubeCluster, steps: list[Step], crds: tuple[Obj, ...] = ()) -> list[str]:
    """Run ``steps`` on a fresh MemoryCluster (which knows ``crds``) and on the apiserver;
    the differences found."""
    memory = MemoryCluster(uid_factory=sequential_uids())
    for crd in crds:
        memory.apply(copy.deepcopy(crd), field_manager="test")
    problems: list[str] = []
    for number, (manager, obj) in enumerate(steps, 1):
        force_first = manager == "op"
        ours = _outcome(memory, obj, manager, force_first)
        theirs = _outcome(real_cluster, obj, manager, force_first)
        if ours != theirs:
            problems.append(
                f"step {number} ({manager}): apiserver {theirs} {theirs.message}, "
                f"in-memory {ours} {ours.message}"
            )
            return problems
        if theirs == "refused 409":  # a conflict: the second manager takes the fields over
            ours = _outcome(memory, obj, manager, True)
            theirs = _outcome(real_cluster, obj, manager, True)
            if ours != theirs:
                problems.append(f"step {number} forced: apiserver {theirs}, in-memory {ours}")
                return problems
        mine = _normalised(_read(memory, obj))
        real = _normalised(_read(real_cluster, obj))
        if mine != real:
            problems.append(f"step {number} ({manager}):\n  apiserver {real}\n  in-memory {mine}")
            return problems
    return problems


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(envtest: Any) -> Iterator[KubeCluster]:
    with envtest.api_client() as api_client:
        yield KubeCluster(api_client)


@pytest.fixture(scope="module")
def namespace(real: KubeCluster) -> Iterator[str]:
    name = new_namespace(real)
    yield name
    # the generated finalizers belong to no controller: without this the namespace would
    # stay Terminating, and later tests that wait for quiet would wait in vain
    for deployment in real.list("apps/v1", "Deployment", name):
        _drop_finalizers(real, deployment)
    real.delete("v1", "Namespace", name)


def _drop_finalizers(real: KubeCluster, obj: Obj) -> None:
    """Empty ``obj``'s finalizers; its controller may write it meanwhile (409): read, retry."""
    for _ in range(10):
        if not obj["metadata"].get("finalizers"):
            return
        obj["metadata"]["finalizers"] = []
        try:
            real.update(obj, field_manager="test")
            return
        except ClusterError as err:
            if err.status != 409:
                raise
        meta = obj["metadata"]
        fresh = real.get(obj["apiVersion"], obj["kind"], meta["name"], meta["namespace"])
        if fresh is None:
            return
        obj = fresh


# -- the rendered examples, varied ------------------------------------------------------------


def _vary(obj: Obj) -> Obj:
    """The owner's second apply: a label more, every list of named items reversed, an env
    var more in each container, a Service port more (where its ports have names)."""
    out = copy.deepcopy(obj)
    out["metadata"].setdefault("labels", {})["varied"] = "yes"

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "containers" and isinstance(item, list):
                    for container in item:
                        container.setdefault("env", []).append({"name": "ADDED", "value": "1"})
                walk(item)
        elif isinstance(value, list):
            if all(isinstance(v, dict) and "name" in v for v in value):
                value.reverse()
            for item in value:
                walk(item)

    walk(out.get("spec"))
    ports = out.get("spec", {}).get("ports") if out["kind"] == "Service" else None
    if ports and all("name" in p for p in ports):  # several ports need names
        ports.append({"name": "extra", "port": 9999})
    return out


def _partial(obj: Obj) -> Obj:
    """The second manager's apply: a label, an annotation, and in each pod template an env
    var of its own in the first container."""
    meta = {k: obj["metadata"][k] for k in ("name", "namespace")}
    out: Obj = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta}
    meta["labels"] = {"other": "yes", "varied": "theirs"}
    meta["annotations"] = {"example.com/note": "x"}
    pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    if pod.get("containers"):
        first = pod["containers"][0]["name"]
        env = [{"name": "OTHER", "value": "2"}]
        out["spec"] = {"template": {"spec": {"containers": [{"name": first, "env": env}]}}}
    return out


EXAMPLES = rendered_examples()


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[n for n, _ in EXAMPLES])
def test_examples_apply_alike(real: KubeCluster, namespace: str, index: int) -> None:
    obj = copy.deepcopy(EXAMPLES[index][1])
    obj["metadata"]["namespace"] = namespace
    obj["metadata"]["name"] = f"{obj['metadata']['name']}-{index}"
    # the owner CR exists only in the render: on the real server the garbage collector
    # would delete an object owned by a missing uid between the steps
    obj["metadata"].pop("ownerReferences", None)
    steps = [("op", obj), ("op", _vary(obj)), ("other", _partial(obj))]
    problems = compare(real, steps)
    assert not problems, problems[0]


# -- unknown fields ----------------------------------------------------------------------------


def _unknown_field_cases(namespace: str) -> list[tuple[str, Obj]]:
    deployment = copy.deepcopy(next(o for n, o in EXAMPLES if o["kind"] == "Deployment"))
    deployment["metadata"].update(namespace=namespace)
    typo = copy.deepcopy(deployment)
    typo["spec"]["replica"] = 2
    deep = copy.deepcopy(deployment)
    deep["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    meta = {"name": "cm", "namespace": namespace}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "dat": {"a": "b"}}
    return [("spec.replica", typo), ("a container field", deep), ("a top-level field", configmap)]


@pytest.mark.parametrize("which", range(3))
def test_unknown_fields_are_refused_alike(real: KubeCluster, namespace: str, which: int) -> None:
    _what, obj = _unknown_field_cases(namespace)[which]
    obj["metadata"]["name"] = f"unknown-{next(_names)}"
    problems = compare(real, [("op", obj)])
    assert not problems, problems[0]
    assert _read(real, obj) is None  # refused on both sides, not dropped


# -- a strategy switched away from the defaulted RollingUpdate -------------------------------

_SWITCHES = [
    ("Deployment", "strategy", {"type": "Recreate"}),
    ("Deployment", "strategy", {"type": "Recreate", "rollingUpdate": None}),
    ("StatefulSet", "updateStrategy", {"type": "OnDelete"}),
    ("StatefulSet", "updateStrategy", {"type": "OnDelete", "rollingUpdate": None}),
    ("DaemonSet", "updateStrategy", {"type": "OnDelete"}),
]


@pytest.mark.parametrize("which", range(len(_SWITCHES)))
def test_switching_strategy_after_the_default_fails_or_passes_alike(
    real: KubeCluster, namespace: str, which: int
) -> None:
    """The server defaults ``rollingUpdate``; a later apply of another strategy type keeps
    it (nobody owns it), which Deployments and StatefulSets refuse, even when the config
    sets it to null."""
    kind, field, strategy = _SWITCHES[which]
    name = f"switch-{next(_names)}"
    first = _deployment(
        namespace,
        name,
        {"finalizers": [], "pod": {"containers": [{"name": "app", "image": "nginx:1"}]}},
    )
    first["kind"] = kind
    second = copy.deepcopy(first)
    second["spec"][field] = strategy
    problems = compare(real, [("op", first), ("op", second)])
    assert not problems, problems[0]


# -- generated Deployments --------------------------------------------------------------------

_ENV = st.lists(st.sampled_from(["A", "B", "C", "D"]), unique=True, max_size=3).map(
    lambda names: [{"name": n, "value": n.lower()} for n in names]
)
_PORT = st.tuples(st.sampled_from([80, 81, 82]), st.sampled_from([None, "TCP", "UDP"]))
_PORTS = st.lists(_PORT, max_size=3, unique_by=lambda p: (p[0], p[1] or "TCP")).map(
    lambda ports: [
        {"containerPort": n, **({"protocol": proto} if proto else {})} for n, proto in ports
    ]
)
_CONTAINER = st.fixed_dictionaries(
    {"image": st.sampled_from(["nginx:1", "nginx:2"]), "env": _ENV, "ports": _PORTS}
)
_CONTAINERS = st.lists(
    st.tuples(st.sampled_from(["web", "side", "log"]), _CONTAINER),
    min_size=1,
    max_size=3,
    unique_by=lambda c: c[0],
).map(lambda cs: [{"name": n, **{k: v for k, v in c.items() if v != []}} for n, c in cs])
_VOLUMES = st.lists(st.sampled_from(["v1", "v2", "v3"]), unique=True, max_size=3).map(
    lambda names: [{"name": n, "emptyDir": {}} for n in names]
)
_FINALIZERS = st.lists(
    st.sampled_from(["example.com/a", "example.com/b", "example.com/c"]), unique=True, max_size=3
)


@st.composite
def _deployment_spec(draw: st.DrawFn) -> Obj:
    pod: Obj = {"containers": draw(_CONTAINERS)}
    volumes = draw(_VOLUMES)
    if volumes:
        pod["volumes"] = volumes
    return {"finalizers": draw(_FINALIZERS), "pod": pod}


@st.composite
def _other_spec(draw: st.DrawFn) -> Obj:
    containers = draw(
        st.lists(
            st.tuples(st.sampled_from(["web", "side", "log"]), _ENV, st.booleans()),
            max_size=2,
            unique_by=lambda c: c[0],
        )
    )
    return {
        "finalizers": draw(_FINALIZERS),
        "containers": [
            {"name": n, "image": "nginx:2" if img else "nginx:1", **({"env": e} if e else {})}
            for n, e, img in containers
        ],
    }


def _deployment(namespace: str, name: str, generated: Obj) -> Obj:
    labels = {"app": name}
    meta: Obj = {"name": name, "namespace": namespace}
    if generated["finalizers"]:
        meta["finalizers"] = generated["finalizers"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": generated["pod"]},
        },
    }


def _other_deployment(namespace: str, name: str, generated: Obj) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if generated["finalizers"]:
        meta["finalizers"] = generated["finalizers"]
    obj: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta}
    if generated["containers"]:
        obj["spec"] = {"template": {"spec": {"containers": generated["containers"]}}}
    return obj


@settings(
    max_examples=75,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=_deployment_spec(), second=_deployment_spec(), other=_other_spec())
def test_generated_deployments_apply_alike(
    real: KubeCluster, namespace: str, first: Obj, second: Obj, other: Obj
) -> None:
    name = f"gen-{next(_names)}"
    steps = [
        ("op", _deployment(namespace, name, first)),
        ("op", _deployment(namespace, name, second)),
        ("other", _other_deployment(namespace, name, other)),
    ]
    problems = compare(real, steps)
    assert not problems, problems[0]


# -- a custom resource with map, set and atomic lists ----------------------------------------

GROUP = f"ssa{uuid.uuid4().hex[:6]}.oper8d.io"
_ITEM = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "value": {"type": "string"},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
    },
}


def _crd(kind: str, plural: str, spec_properties: Obj) -> Obj:
    """A namespaced CRD of ``GROUP`` serving v1, whose ``spec`` holds ``spec_properties``."""
    spec_schema = {"type": "object", "properties": spec_properties}
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [version],
        },
    }


GADGET_CRD = _crd(
    "Gadget",
    "gadgets",
    {
        "items": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": _ITEM,
        },
        "names": {
            "type": "array",
            "x-kubernetes-list-type": "set",
            "items": {"type": "string"},
        },
        "plain": {"type": "array", "items": {"type": "string"}},
        "mode": {"type": "string"},
    },
)

_WORDS = st.sampled_from(["a", "b", "c", "d"])
_GADGET_ITEMS = st.lists(
    st.tuples(_WORDS, st.one_of(st.none(), _WORDS), st.lists(_WORDS, unique=True, max_size=3)),
    max_size=3,
    unique_by=lambda t: t[0],
).map(
    lambda items: [
        {"name": n, **({"value": v} if v else {}), **({"tags": t} if t else {})}
        for n, v, t in items
    ]
)
# (``mode`` is always set: when a manager's removals empty ``spec``, the apiserver stores
# ``spec: null`` and refuses it, 422, which the in-memory cluster does not model)
_GADGET_SPEC = st.fixed_dictionaries(
    {"mode": st.just("m")},
    optional={
        "items": _GADGET_ITEMS,
        "names": st.lists(_WORDS, unique=True, max_size=3),
        "plain": st.lists(_WORDS, max_size=3),
    },
)


def _served(real: KubeCluster, envtest: Any, crd: Obj) -> Iterator[str]:
    """Install ``crd`` on the apiserver for a module's tests: yields its apiVersion."""
    with envtest.api_client() as api_client:
        install_crd(api_client, real, crd)
        yield f"{GROUP}/v1"
        client.ApiextensionsV1Api(api_client).delete_custom_resource_definition(
            crd["metadata"]["name"]
        )


@pytest.fixture(scope="module")
def gadgets(real: KubeCluster, envtest: Any) -> Iterator[str]:
    yield from _served(real, envtest, GADGET_CRD)


@settings(
    max_examples=75,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=_GADGET_SPEC, second=_GADGET_SPEC, other=_GADGET_SPEC)
def test_generated_custom_resources_apply_alike(
    real: KubeCluster, namespace: str, gadgets: str, first: Obj, second: Obj, other: Obj
) -> None:
    name = f"gadget-{next(_names)}"

    def gadget(spec: Obj) -> Obj:
        meta = {"name": name, "namespace": namespace}
        return {"apiVersion": gadgets, "kind": "Gadget", "metadata": meta, "spec": spec}

    steps = [("op", gadget(first)), ("op", gadget(second)), ("other", gadget(other))]
    problems = compare(real, steps, crds=(GADGET_CRD,))
    assert not problems, problems[0]


# -- a custom resource whose list items are keyed by a field with a default -----------------

KEYED_CRD = _crd(
    "Widget",
    "widgets",
    {
        "items": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "port"],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "port": {"type": "integer", "default": 80},
                    "value": {"type": "string"},
                },
            },
        }
    },
)


@pytest.fixture(scope="module")
def widgets(real: KubeCluster, envtest: Any) -> Iterator[str]:
    yield from _served(real, envtest, KEYED_CRD)


def test_an_item_without_its_defaulted_key_is_the_item_with_the_default_alike(
    real: KubeCluster, namespace: str, widgets: str
) -> None:
    """The apiserver defaults a map-list's key fields before it matches items: applying
    ``{name: a}`` twice is a no-op (it was refused as a duplicate in memory), and
    ``{name: a, port: 80}`` from another manager is the same item."""
    name = f"widget-{next(_names)}"

    def widget(*items: Obj) -> Obj:
        meta = {"name": name, "namespace": namespace}
        return {
            "apiVersion": widgets,
            "kind": "Widget",
            "metadata": meta,
            "spec": {"items": list(items)},
        }

    steps = [
        ("op", widget({"name": "a"})),
        ("op", widget({"name": "a"})),
        ("other", widget({"name": "a", "port": 80, "value": "x"})),
        ("op", widget({"name": "a"}, {"name": "a", "port": 81})),
        ("op", widget({"name": "b", "port": None})),
    ]
    problems = compare(real, steps, crds=(KEYED_CRD,))
    assert not problems, problems[0]


def _null_valued_string_maps(namespace: str, name: str) -> list[Obj]:
    meta = {"name": name, "namespace": namespace, "labels": {"a": None, "b": "x"}}
    labels = {"app": name, "x": None}
    pod_spec = {"containers": [{"name": "app", "image": "nginx:1"}], "nodeSelector": {"n": None}}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": None, "b": "x"}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"selector": {"a": None, "b": "x"}, "ports": [{"port": 80}]},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            },
        },
    ]


@pytest.mark.parametrize("which", range(3), ids=["configmap", "service", "deployment"])
def test_a_null_in_a_string_map_is_an_empty_string_alike(
    real: KubeCluster, namespace: str, which: int
) -> None:
    """Labels, a ConfigMap's data, a selector, a nodeSelector: the apiserver decodes a
    null value there as "" (the in-memory cluster dropped it, kept null, or refused the
    Deployment's selector)."""
    obj = _null_valued_string_maps(namespace, f"nulls-{next(_names)}")[which]
    changed = copy.deepcopy(obj)
    changed["metadata"]["labels"] = {"b": None}
    problems = compare(real, [("op", obj), ("op", obj), ("other", changed)])
    assert not problems, problems[0]
