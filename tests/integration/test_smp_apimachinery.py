"""oper8d's strategic merge against apimachinery's, on generated patches, list order included.

apimachinery's side is ``strategic-merge`` (testenv/kubernetes/strategicmerge), which
``testenv/build.sh`` builds from the same Kubernetes modules as the test environment: it
runs ``strategicpatch.StrategicMergePatch`` with the Go type of the object's kind, as
``kubectl patch --local --type strategic`` does. One process answers every case.

Each generated case is an object of a built-in kind (Deployment, StatefulSet, Service;
Pod, DaemonSet, ReplicaSet, Job, CronJob) and a patch over its lists (containers,
initContainers, ports, env, volumeMounts, volumes, imagePullSecrets, hostAliases,
topologySpreadConstraints, ownerReferences, Service ports; finalizers and args as
primitive lists; tolerations as a list without merge key) with the directives
(``$patch`` replace, delete and merge, ``$retainKeys``, ``$setElementOrder``,
``$deleteFromPrimitiveList``) and nulls; and lists longer than 20 items (Go sorts those
in blocks). Where apimachinery merges, oper8d must give the same JSON; where it refuses
the patch, oper8d must raise ConfigError. Two kinds of case have no single answer and
are left out: inputs apimachinery panics on, and patches whose result depends on Go's
random map order (reported by the tool, which runs each case several times). 1,600
cases run, the same ones on every run (derandomized); ``--hypothesis-show-statistics``
shows what they cover. A last test compares oper8d's merge-key tables with the struct
tags of every kind they name.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from oper8d.engine.patch import strategic_merge
from oper8d.engine.patch.mergekeys import ITEM, KIND_GROUPS, REPLACE, RULES, SET
from oper8d.envtest import BuildError, build
from oper8d.envtest.build import BIN_DIR_ENV
from oper8d.errors import ConfigError

pytestmark = pytest.mark.integration

TOOL = "strategic-merge"


class Apimachinery:
    """The ``strategic-merge`` process: one JSON line in, one JSON line out."""

    def __init__(self, binary: Path):
        self.binary = binary
        self.proc = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def merge(self, original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"original": original, "patch": patch}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"{TOOL} exited with code {self.proc.poll()}"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def merge_rules(self, api_version: str, kind: str) -> dict[str, str]:
        """The kind's merge lists (path -> merge key) and replaced maps (-> "$replace")."""
        done = subprocess.run(
            [str(self.binary), api_version, kind], capture_output=True, text=True, check=True
        )
        rules: dict[str, str] = json.loads(done.stdout)
        return rules

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def apimachinery(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apimachinery]:
    """The tool from the test environment's bin dir (built by testenv/build.sh)."""
    configured = os.environ.get(BIN_DIR_ENV)
    error = None
    try:
        bin_dir = Path(configured) if configured else build(tmp_path_factory.mktemp("smp") / "log")
    except BuildError as e:
        error = f"building the test environment failed:\n{e}"
    if error:
        pytest.fail(error, pytrace=False)
    binary = bin_dir / TOOL
    if not binary.exists():
        message = f"{binary} is missing: run testenv/build.sh (it builds {TOOL})"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    tool = Apimachinery(binary)
    yield tool
    tool.close()


def check(tool: Apimachinery, original: dict[str, Any], patch: dict[str, Any]) -> None:
    """oper8d and apimachinery agree on ``patch`` over ``original``."""
    expected = tool.merge(original, patch)
    assume("panic" not in expected and not expected.get("nondeterministic"))
    written = json.dumps(patch)
    for feature in FEATURES:
        if feature in written:
            event(f"patch has {feature}")
    event("apimachinery refuses" if "error" in expected else "apimachinery merges")
    event(f"kind {original['kind']}")
    if longest_list(original) > 20 or longest_list(patch) > 20:
        event("a list has more than 20 items")
    try:
        merged = strategic_merge(
            original, patch, kind=original["kind"], api_version=original["apiVersion"]
        )
    except ConfigError as e:
        assert "error" in expected, f"oper8d refused a patch apimachinery applies: {e}"
        return
    assert "error" not in expected, f"apimachinery refuses: {expected['error']}; oper8d: {merged}"
    assert canonical(merged) == canonical(expected["result"])


#: what ``--hypothesis-show-statistics`` counts in the generated patches
FEATURES = (
    *('"containers"', '"initContainers"', '"env"', '"ports"', '"volumeMounts"', '"volumes"'),
    *('"imagePullSecrets"', '"finalizers"', '"args"', '"tolerations"', "$setElementOrder"),
    *("$deleteFromPrimitiveList", "$retainKeys", '"$patch": "delete"', '"$patch": "replace"'),
    *('"$patch": "merge"', "null", '"hostAliases"', '"topologySpreadConstraints"'),
    '"ownerReferences"',
)


def longest_list(value: Any) -> int:
    if isinstance(value, dict):
        return max((longest_list(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max([len(value), *(longest_list(v) for v in value)])
    return 0


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# -- generated objects and patches -----------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "d", "e"])
WORDS = st.sampled_from(["x", "y", "z"])
PORTS = st.sampled_from([80, 443, 8080, 9090])
PATHS = st.sampled_from(["/data", "/etc/conf", "/tmp", "/var/log"])


def fields(required: dict[str, Any], optional: dict[str, st.SearchStrategy[Any]]) -> Any:
    """A map with ``required`` and any of ``optional``."""
    return st.fixed_dictionaries({k: st.just(v) for k, v in required.items()}, optional=optional)


def env_var(name: str) -> Any:
    return fields({"name": name}, {"value": WORDS})


def container_port(port: int) -> Any:
    return fields({"containerPort": port}, {"name": WORDS, "protocol": st.just("TCP")})


def volume_mount(path: str) -> Any:
    return fields({"mountPath": path}, {"name": NAMES, "readOnly": st.booleans()})


def volume(name: str) -> Any:
    return fields({"name": name}, {"emptyDir": st.just({}), "secret": st.just({"secretName": "s"})})


def pull_secret(name: str) -> Any:
    return st.just({"name": name})


def service_port(port: int) -> Any:
    return fields({"port": port}, {"name": WORDS, "targetPort": PORTS, "protocol": st.just("TCP")})


def originals(keys: st.SearchStrategy[Any], item: Callable[[Any], Any], max_size: int = 4) -> Any:
    """A list of items with distinct merge keys."""
    return st.lists(keys, unique=True, max_size=max_size).flatmap(
        lambda ks: st.tuples(*(item(k) for k in ks)).map(list)
    )


def primitives(values: st.SearchStrategy[Any] = NAMES) -> Any:
    return st.lists(values, unique=True, max_size=4)


def container(name: str) -> Any:
    return fields(
        {"name": name},
        {
            "image": WORDS,
            "args": st.lists(WORDS, max_size=3),
            "env": originals(NAMES, env_var),
            "ports": originals(PORTS, container_port),
            "volumeMounts": originals(PATHS, volume_mount),
            "resources": st.just({"limits": {"cpu": "1"}}),
        },
    )


TOLERATIONS = st.lists(st.fixed_dictionaries({"key": NAMES, "operator": st.just("Exists")}))


def pod_spec() -> Any:
    return fields(
        {},
        {
            "containers": originals(NAMES, container),
            "initContainers": originals(NAMES, container, 2),
            "volumes": originals(NAMES, volume),
            "imagePullSecrets": originals(NAMES, pull_secret),
            "tolerations": TOLERATIONS,
            "nodeSelector": st.dictionaries(NAMES, WORDS, max_size=2),
        },
    )


def object_meta() -> Any:
    return fields(
        {},
        {"labels": st.dictionaries(NAMES, WORDS, max_size=2), "finalizers": primitives()},
    )


def template() -> Any:
    return st.fixed_dictionaries({"spec": pod_spec()}, optional={"metadata": object_meta()})


def deployment() -> Any:
    spec = fields(
        {"selector": {"matchLabels": {"app": "web"}}},
        {
            "replicas": st.integers(0, 3),
            "strategy": st.sampled_from(
                [
                    {"type": "Recreate"},
                    {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                ]
            ),
        },
    )
    spec = st.tuples(spec, template()).map(lambda both: {**both[0], "template": both[1]})
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("apps/v1"),
            "kind": st.just("Deployment"),
            "metadata": object_meta().map(lambda m: {"name": "web", **m}),
            "spec": spec,
        }
    )


def stateful_set() -> Any:
    claim = NAMES.map(lambda n: {"metadata": {"name": n}, "spec": {"accessModes": ["RWO"]}})
    spec = fields(
        {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}}},
        {
            "replicas": st.integers(0, 3),
            "updateStrategy": st.just({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            "volumeClaimTemplates": st.lists(claim, max_size=2),
        },
    )
    spec = st.tuples(spec, template()).map(lambda both: {**both[0], "template": both[1]})
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("apps/v1"),
            "kind": st.just("StatefulSet"),
            "metadata": object_meta().map(lambda m: {"name": "db", **m}),
            "spec": spec,
        }
    )


def service() -> Any:
    spec = fields(
        {},
        {
            "type": st.sampled_from(["ClusterIP", "NodePort"]),
            "selector": st.dictionaries(NAMES, WORDS, max_size=2),
            "ports": originals(PORTS, service_port),
            "ipFamilies": st.lists(st.sampled_from(["IPv4", "IPv6"]), unique=True, max_size=2),
        },
    )
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("v1"),
            "kind": st.just("Service"),
            "metadata": object_meta().map(lambda m: {"name": "svc", **m}),
            "spec": spec,
        }
    )


# -- patches: shapes of the kinds' fields, walked with the original at hand -------------------


class Shape:
    """What a field holds, for generating patches to it."""


class Scalar(Shape):
    def __init__(self, values: st.SearchStrategy[Any]):
        self.values = values


class Whole(Shape):
    """A list without merge key, or a free-form map: a patch gives a new value."""

    def __init__(self, values: st.SearchStrategy[Any]):
        self.values = values


class Labels(Shape):
    """A map of strings: merged key by key, ``null`` deletes a key."""


class Struct(Shape):
    def __init__(self, **fields: Shape):
        self.fields = fields


class Keyed(Shape):
    """A list merged on ``key``."""

    def __init__(self, key: str, keys: st.SearchStrategy[Any], item: Struct):
        self.key, self.keys, self.item = key, keys, item


class Values(Shape):
    """A primitive list with strategy merge (finalizers)."""


ENV = Struct(value=Scalar(WORDS))
CONTAINER = Struct(
    image=Scalar(WORDS),
    args=Whole(st.lists(WORDS, max_size=3)),
    env=Keyed("name", NAMES, ENV),
    ports=Keyed("containerPort", PORTS, Struct(name=Scalar(WORDS), protocol=Scalar(WORDS))),
    volumeMounts=Keyed(
        "mountPath", PATHS, Struct(name=Scalar(NAMES), readOnly=Scalar(st.booleans()))
    ),
    resources=Struct(limits=Labels()),
)
VOLUME = Struct(
    emptyDir=Struct(medium=Scalar(st.just("Memory"))), secret=Struct(secretName=Scalar(WORDS))
)
POD_SPEC = Struct(
    containers=Keyed("name", NAMES, CONTAINER),
    initContainers=Keyed("name", NAMES, CONTAINER),
    volumes=Keyed("name", NAMES, VOLUME),
    imagePullSecrets=Keyed("name", NAMES, Struct()),
    tolerations=Whole(TOLERATIONS),
    nodeSelector=Labels(),
)
META = Struct(labels=Labels(), finalizers=Values())
TEMPLATE = Struct(metadata=META, spec=POD_SPEC)
REPLICAS = Scalar(st.integers(0, 3))
SHAPES = {
    "Deployment": Struct(
        metadata=META,
        spec=Struct(
            replicas=REPLICAS,
            strategy=Struct(
                type=Scalar(st.sampled_from(["Recreate", "RollingUpdate"])),
                rollingUpdate=Struct(maxSurge=REPLICAS, maxUnavailable=REPLICAS),
            ),
            template=TEMPLATE,
        ),
    ),
    "StatefulSet": Struct(
        metadata=META,
        spec=Struct(
            replicas=REPLICAS,
            updateStrategy=Struct(type=Scalar(WORDS), rollingUpdate=Struct(partition=REPLICAS)),
            volumeClaimTemplates=Whole(st.lists(st.just({"metadata": {"name": "c"}}), max_size=1)),
            template=TEMPLATE,
        ),
    ),
    "Service": Struct(
        metadata=META,
        spec=Struct(
            type=Scalar(WORDS),
            selector=Labels(),
            ports=Keyed("port", PORTS, Struct(name=Scalar(WORDS), targetPort=Scalar(PORTS))),
            ipFamilies=Whole(st.lists(st.sampled_from(["IPv4", "IPv6"]), max_size=2)),
        ),
    ),
}


#: other kinds with a pod template: (apiVersion, where the template sits; () = the Pod itself)
WORKLOADS = {
    "Pod": ("v1", ()),
    "DaemonSet": ("apps/v1", ("spec", "template")),
    "ReplicaSet": ("apps/v1", ("spec", "template")),
    "Job": ("batch/v1", ("spec", "template")),
    "CronJob": ("batch/v1", ("spec", "jobTemplate", "spec", "template")),
}
HOST_ALIAS = Struct(hostnames=Whole(st.lists(WORDS, max_size=2)))
SPREAD = Struct(maxSkew=REPLICAS, whenUnsatisfiable=Scalar(st.just("DoNotSchedule")))
OWNER = Struct(name=Scalar(WORDS), controller=Scalar(st.booleans()))
WORKLOAD_POD_SPEC = Struct(
    **POD_SPEC.fields,
    hostAliases=Keyed("ip", st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.3"]), HOST_ALIAS),
    topologySpreadConstraints=Keyed("topologyKey", st.sampled_from(["zone", "host"]), SPREAD),
)
WORKLOAD_META = Struct(**META.fields, ownerReferences=Keyed("uid", NAMES, OWNER))
for _kind, (_version, _at) in WORKLOADS.items():
    _shape: Shape = Struct(metadata=WORKLOAD_META, spec=WORKLOAD_POD_SPEC)
    for _name in reversed(_at):
        _shape = Struct(**{_name: _shape})
    SHAPES[_kind] = Struct(**{"metadata": WORKLOAD_META, **_shape.fields})


def workload() -> Any:
    """A Pod, or a kind that nests a pod template, with host aliases, spread constraints
    and owner references besides the lists of ``pod_spec``."""
    spec = st.tuples(
        pod_spec(),
        originals(st.sampled_from(["10.0.0.1", "10.0.0.2"]), lambda ip: st.just({"ip": ip})),
        originals(st.sampled_from(["zone", "host"]), lambda k: st.just({"topologyKey": k})),
    ).map(lambda t: {**t[0], "hostAliases": t[1], "topologySpreadConstraints": t[2]})
    meta = st.tuples(object_meta(), originals(NAMES, lambda uid: st.just({"uid": uid})))
    meta = meta.map(lambda m: {"name": "w", **m[0], "ownerReferences": m[1]})

    def build(kind: str, pod_spec: dict[str, Any], metadata: dict[str, Any]) -> dict[str, Any]:
        version, at = WORKLOADS[kind]
        body: dict[str, Any] = {"metadata": metadata, "spec": pod_spec}
        for name in reversed(at):
            body = {name: body}
        return {"apiVersion": version, "kind": kind, "metadata": metadata, **body}

    return st.builds(build, st.sampled_from(sorted(WORKLOADS)), spec, meta)


def chance(draw: Any, percent: int) -> bool:
    return bool(draw(st.integers(0, 99)) < percent)


class PatchDrawer:
    """Draws a patch for an object, field by field; ``directives`` (percent) sets how
    often a directive is tried at each place it can go."""

    def __init__(self, draw: Any, directives: int):
        self.draw, self.directives = draw, directives

    def value(self, shape: Shape, original: Any) -> Any:
        draw = self.draw
        if isinstance(shape, Scalar | Whole):
            return draw(shape.values)
        if isinstance(shape, Labels):
            return draw(st.dictionaries(NAMES, WORDS | st.none(), max_size=3))
        if isinstance(shape, Struct):
            return self.struct(shape, original if isinstance(original, dict) else {}, True)
        if isinstance(shape, Keyed):
            return self.keyed(shape, original if isinstance(original, list) else [])
        return draw(st.lists(NAMES, max_size=4))  # repeats allowed: merged as a set

    def struct(self, shape: Struct, original: dict[str, Any], directives: bool) -> Any:
        draw, patch = self.draw, {}
        for name, field in shape.fields.items():
            roll = draw(st.integers(0, 9))
            # reach the lists deep in a pod template more often than scalars
            often = isinstance(field, Keyed) or name in ("spec", "template")
            if roll == 0:
                patch[name] = None
            elif roll >= (3 if often else 6):
                patch[name] = self.value(field, original.get(name))
            if isinstance(field, Keyed | Values) and chance(draw, 2 * self.directives):
                self.list_directives(patch, name, field, original.get(name))
        if not directives or not chance(draw, self.directives):
            return patch
        which = draw(st.sampled_from(["replace", "delete", "retainKeys", "merge"]))
        if which == "retainKeys":
            keep = [k for k in patch if not k.startswith("$")]
            extra = draw(st.lists(st.sampled_from(sorted(shape.fields) or ["x"]), max_size=2))
            if keep and chance(draw, 20):
                keep.pop()  # a key the patch sets but does not retain: refused
            return {**patch, "$retainKeys": keep + extra}
        if which == "delete":
            return {"$patch": "delete"}
        return {"$patch": which, **patch}

    def keyed(self, shape: Keyed, original: list[Any]) -> list[Any]:
        draw, items = self.draw, []
        known = [i.get(shape.key) for i in original if isinstance(i, dict)]
        keys = (st.sampled_from(known) | shape.keys) if known else shape.keys
        for key in draw(st.lists(keys, unique=True, max_size=4)):
            if chance(draw, 2 * self.directives):
                items.append({shape.key: key, "$patch": "delete"})
            else:
                before = next((i for i in original if i.get(shape.key) == key), {})
                items.append({shape.key: key, **self.struct(shape.item, before, False)})
        if chance(draw, self.directives // 2):
            items.insert(draw(st.integers(0, len(items))), {"$patch": "replace"})
        return items

    def list_directives(
        self, patch: dict[str, Any], name: str, shape: Shape, original: Any
    ) -> None:
        """``$setElementOrder`` (and for primitive lists ``$deleteFromPrimitiveList``)."""
        draw = self.draw
        original = original if isinstance(original, list) else []
        listed = patch.get(name) if isinstance(patch.get(name), list) else []
        key = shape.key if isinstance(shape, Keyed) else None

        def ident(item: Any) -> Any:
            return item.get(key) if key else item

        def wrap(value: Any) -> Any:
            return {key: value} if key else value

        if key:
            named = [ident(i) for i in listed if "$patch" not in i]
        else:
            named = list(listed)
            gone = [v for v in [*original, "e"] if v not in named]
            if gone and chance(draw, 50):
                doomed = draw(st.lists(st.sampled_from(gone), unique=True, min_size=1))
                patch[f"$deleteFromPrimitiveList/{name}"] = doomed
        if chance(draw, 50):
            # as kubectl writes it: the patch's items in their order, with other
            # items of the original placed among them
            others = [ident(i) for i in original if ident(i) not in named]
            others = draw(st.permutations(others))[: draw(st.integers(0, len(others)))]
            order = list(named)
            for other in others:
                order.insert(draw(st.integers(0, len(order))), other)
        else:
            # any order, which may contradict the patch's
            pool = list(dict.fromkeys([*named, *(ident(i) for i in original)]))
            order = list(draw(st.permutations(pool)))[: draw(st.integers(0, len(pool)))]
        patch[f"$setElementOrder/{name}"] = [wrap(k) for k in order]


@st.composite
def cases(draw: Any, objects: Any, directives: int) -> tuple[dict[str, Any], dict[str, Any]]:
    original = draw(objects)
    shape = SHAPES[original["kind"]]
    patch = PatchDrawer(draw, directives).struct(shape, original, False)
    return original, patch


def compare(examples: int) -> settings:
    """Fixed examples (the same in CI as here), as many as asked."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@compare(350)
@given(case=cases(deployment(), directives=8))
def test_deployment_patches_merge_as_apimachinery_merges_them(
    apimachinery: Apimachinery, case: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    check(apimachinery, *case)


@compare(250)
@given(case=cases(stateful_set(), directives=8))
def test_stateful_set_patches_merge_as_apimachinery_merges_them(
    apimachinery: Apimachinery, case: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    check(apimachinery, *case)


@compare(250)
@given(case=cases(service(), directives=8))
def test_service_patches_merge_as_apimachinery_merges_them(
    apimachinery: Apimachinery, case: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    check(apimachinery, *case)


@compare(300)
@given(case=cases(deployment() | stateful_set(), directives=40))
def test_directive_heavy_patches_merge_as_apimachinery_merges_them(
    apimachinery: Apimachinery, case: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    check(apimachinery, *case)


@compare(250)
@given(case=cases(workload(), directives=10))
def test_pod_and_other_workload_patches_merge_as_apimachinery_merges_them(
    apimachinery: Apimachinery, case: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    check(apimachinery, *case)


LONG_NAMES = st.sampled_from([f"v{i}" for i in range(60)])


@st.composite
def long_lists(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Lists longer than 20 items, where Go's stable sort merges sorted blocks, with
    partial or empty ``$setElementOrder`` lists (which sort with a comparison that is
    not an order)."""
    names = draw(st.lists(LONG_NAMES, unique=True, min_size=15, max_size=45))
    env = [{"name": n, "value": "old"} for n in names]
    finalizers = draw(st.lists(LONG_NAMES, unique=True, min_size=10, max_size=30))
    items = []
    for name in draw(st.lists(LONG_NAMES, unique=True, min_size=5, max_size=40)):
        deleted = chance(draw, 15)
        items.append({"name": name, **({"$patch": "delete"} if deleted else {"value": "new"})})
    container: dict[str, Any] = {"name": "app"}
    meta: dict[str, Any] = {}
    if chance(draw, 80):
        container["env"] = items
    if chance(draw, 50):
        meta["finalizers"] = draw(st.lists(LONG_NAMES, unique=True, min_size=5, max_size=25))
    drawer = PatchDrawer(draw, 100)
    if chance(draw, 70):
        drawer.list_directives(container, "env", Keyed("name", LONG_NAMES, ENV), env)
    if chance(draw, 50):
        drawer.list_directives(meta, "finalizers", Values(), finalizers)
    for patch in (container, meta):
        for key in [k for k in patch if k.startswith("$setElementOrder/")]:
            if chance(draw, 30):
                patch[key] = []
    original = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "finalizers": finalizers},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "env": env}]}}},
    }
    patch = {"metadata": meta, "spec": {"template": {"spec": {"containers": [container]}}}}
    return original, patch


@compare(200)
@given(case=long_lists())
def test_long_lists_are_ordered_as_apimachinery_orders_them(
    apimachinery: Apimachinery, case: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    check(apimachinery, *case)


#: the version of each API group whose types the rules are compared with
VERSIONS = {
    "": "v1",
    "apps": "apps/v1",
    "batch": "batch/v1",
    "autoscaling": "autoscaling/v2",
    "policy": "policy/v1",
    "networking.k8s.io": "networking.k8s.io/v1",
    "rbac.authorization.k8s.io": "rbac.authorization.k8s.io/v1",
}


@pytest.mark.parametrize("kind", sorted(KIND_GROUPS))
def test_merge_rules_of_every_known_kind_are_the_struct_tags_apimachinery_reads(
    apimachinery: Apimachinery, kind: str
) -> None:
    def text(path: tuple[str | None, ...]) -> str:
        out = ""
        for part in path:
            out = out + "[]" if part is ITEM else (f"{out}.{part}" if out else str(part))
        return out

    ours = {
        text(path): {SET: "", REPLACE: "$replace"}.get(rule, rule)
        for path, rule in RULES[kind].items()
    }

    assert ours == apimachinery.merge_rules(VERSIONS[KIND_GROUPS[kind]], kind)
