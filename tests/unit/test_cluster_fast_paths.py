"""The in-memory cluster's shortcuts give what its general paths give, on generated input.

Each shortcut exists only because a render writes hundreds of objects (issue 10): a
create by server-side apply checks, fills and takes the applied config in one walk
without a merge (``cluster.memory.apply_create``), a list item's identity is written without the
JSON encoder when it is simple (``listtypes._json``), ownership is trimmed to the stored
object when read rather than at every write, built-in defaulting walks only where a
default can be (``defaults_plan``), deterministic uids are hashed without building
``UUID`` objects, the simulator's pod template hash reuses one encoder. Every property
here compares a shortcut with the general path it stands for, so the two can never drift.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from oper8d.cluster.fields import clone, server_side_apply
from oper8d.cluster.listtypes import _ENCODE, ListTypes, Shape, _json
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.memory.admission import unknown_fields
from oper8d.cluster.memory.apply_create import apply_create
from oper8d.cluster.memory.defaults import fill_key_defaults
from oper8d.cluster.memory.defaults_builtin import default_builtin, default_plans
from oper8d.cluster.memory.workload_status import template_hash
from oper8d.kubeschema import KubeSchemas

SCHEMAS = KubeSchemas.builtin()
LIST_TYPES = ListTypes(SCHEMAS)
_OBJECT = {"type": "object"}
_PORTS = {  # a map-list keyed by port and protocol (the protocol filled in before matching)
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["port", "protocol"],
    "items": {
        **_OBJECT,
        "properties": {
            "port": {"type": "integer"},
            "protocol": {"type": "string"},
            "name": {"type": "string"},
        },
    },
}
_GADGET_SPEC = {  # lists of every type, and maps atomic or not, with items of each inside
    **_OBJECT,
    "properties": {
        "groups": {  # an atomic list whose items hold a keyed list
            "type": "array",
            "items": {**_OBJECT, "properties": {"name": {"type": "string"}, "ports": _PORTS}},
        },
        "ports": _PORTS,
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": _OBJECT},
        "selector": {
            **_OBJECT,
            "x-kubernetes-map-type": "atomic",
            "properties": {"app": {"type": "string"}, "ports": _PORTS},
        },
        "free": {**_OBJECT, "x-kubernetes-preserve-unknown-fields": True},
    },
}
GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"kind": "Gadget", "plural": "gadgets"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {**_OBJECT, "properties": {"spec": _GADGET_SPEC}}},
            }
        ],
    },
}
SHAPES = {
    "Deployment": LIST_TYPES.root("apps/v1", "Deployment"),
    "Service": LIST_TYPES.root("v1", "Service"),
    "Gadget": LIST_TYPES.with_crd(GADGET_CRD).root("example.com/v1", "Gadget"),
    "unknown kind": LIST_TYPES.root("demo.io/v1", "Widget"),
}

scalars = st.one_of(st.none(), st.integers(0, 2), st.sampled_from(["", "x", "y"]), st.booleans())
names = st.sampled_from(["a", "b", "c"])
free_trees = st.recursive(
    st.dictionaries(names, scalars, max_size=3),
    lambda inner: st.dictionaries(
        names, st.one_of(scalars, inner, st.lists(st.one_of(scalars, inner), max_size=2))
    ),
    max_leaves=8,
)
maybe = st.one_of  # a field's value or a null (no opinion)


def _opt(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


ports = st.lists(
    _opt(
        containerPort=st.sampled_from([80, 81, None]),
        protocol=st.sampled_from(["TCP", "UDP", None]),
        name=maybe(st.none(), names),
        port=st.sampled_from([80, 81]),
    ),
    max_size=3,
)
containers = st.lists(
    _opt(
        name=maybe(st.none(), names),
        image=maybe(st.none(), st.just("img")),
        ports=ports,
        args=st.lists(names, max_size=2),
        env=st.lists(_opt(name=names, value=maybe(st.none(), names)), max_size=2),
        resources=_opt(requests=st.dictionaries(names, maybe(st.none(), names), max_size=2)),
    ),
    max_size=3,
)
label_maps = st.dictionaries(names, maybe(st.none(), names), max_size=2)
metadata = _opt(
    labels=label_maps,
    annotations=maybe(st.none(), label_maps),
    finalizers=st.lists(st.sampled_from(["f/a", "f/b"]), max_size=3),
    ownerReferences=st.lists(_opt(uid=names, name=maybe(st.none(), names)), max_size=2),
)
deployment_specs = _opt(
    replicas=maybe(st.none(), st.integers(0, 3)),
    selector=maybe(st.none(), st.just({}), _opt(matchLabels=label_maps)),
    template=_opt(
        metadata=_opt(labels=label_maps),
        spec=_opt(containers=containers, volumes=st.lists(_opt(name=names), max_size=2)),
    ),
    strategy=maybe(st.none(), st.just({}), _opt(type=names, rollingUpdate=free_trees)),
)
service_specs = _opt(
    ports=ports, selector=maybe(st.none(), label_maps), type=names, clusterIPs=st.lists(names)
)
#: sometimes a field the kind's schema lacks (refused), null or not
unknown = st.one_of(st.just({}), st.just({}), st.just({}), _opt(bogus=maybe(st.none(), names)))


def _with_unknown(configs: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda c, u: {**c, **u}, configs, unknown)


gadget_ports = st.lists(
    st.builds(
        lambda c, u: {**c, **u},
        _opt(port=st.sampled_from([80, 81]), protocol=maybe(st.none(), names), name=names),
        unknown,
    ),
    max_size=3,
)
gadget_specs = _opt(
    groups=st.lists(_with_unknown(_opt(name=names, ports=gadget_ports)), max_size=2),
    ports=gadget_ports,
    tags=st.lists(_with_unknown(_opt(name=names, ports=gadget_ports)), max_size=2),
    selector=_with_unknown(_opt(app=maybe(st.none(), names), ports=gadget_ports)),
    free=free_trees,
)
cases = st.one_of(
    st.tuples(
        st.just("Gadget"),
        _with_unknown(_opt(metadata=metadata, spec=maybe(st.none(), _with_unknown(gadget_specs)))),
    ),
    st.tuples(
        st.just("Deployment"),
        _with_unknown(_opt(metadata=metadata, spec=maybe(st.none(), deployment_specs))),
    ),
    st.tuples(
        st.just("Service"),
        _with_unknown(_opt(metadata=metadata, spec=maybe(st.none(), service_specs))),
    ),
    st.tuples(
        st.just("unknown kind"),
        _opt(metadata=metadata, spec=maybe(st.none(), free_trees), data=free_trees),
    ),
)


def _same(a: Any, b: Any) -> bool:
    """Equal, key order included (the store keeps a write's order)."""
    return json.dumps(a) == json.dumps(b)


TRICKY = {  # what the two paths could most easily disagree on
    "metadata": {"labels": {"a": None, "b": "x"}, "annotations": {"a": None}},
    "spec": {
        "selector": {"matchLabels": {"a": None, "b": "x"}},  # atomic: kept whole
        "strategy": {},  # an empty map: owned
        "template": {
            "spec": {
                "containers": [  # a duplicate item, nulls inside items, nulls in keys
                    {"name": "a", "image": None, "ports": [{"containerPort": 80}]},
                    {"name": "a", "image": "img", "env": [{"name": "b", "value": None}]},
                    {"name": None},
                ],
                "volumes": [],
            }
        },
    },
}


@given(cases)
@example(("Deployment", TRICKY))
@example(("unknown kind", {**TRICKY, "extra": {"a": {"b": None}, "c": [None, {"a": None}]}}))
@example(("Deployment", {"spec": {"bogus": None, "template": {"spec": {"containers": [{}]}}}}))
@example(("Deployment", {"spec": {"template": {"spec": {"containers": [{"nme": "a"}]}}}}))
@example(("Deployment", {"spec": {"selector": {"matchLabels": {}, "bogus": None}}}))
@example(("Gadget", {"spec": {"selector": {"ports": [{"port": 80}]}}}))
@example(("Gadget", {"spec": {"groups": [{"ports": [{"port": 80}]}, {"name": None}]}}))
@example(("Gadget", {"spec": {"groups": [{"name": "a"}, {"bogus": 1}]}}))
@example(("Gadget", {"spec": {"tags": [{"ports": [{"port": 80}]}, {"name": None}]}}))
@example(("Gadget", {"spec": {"tags": [{"ports": [{"port": 80, "bogus": 1}]}]}}))
def test_a_create_by_apply_gives_what_the_general_apply_gives(
    case: tuple[str, dict[str, Any]],
) -> None:
    kind, config = case
    shape: Shape = SHAPES[kind]
    fast = clone(config)
    fast_owners, fast_unknown = apply_create(fast, "op", shape)
    # the general path: refuse unknown fields, fill key defaults, merge into nothing
    general = clone(config)
    assert fast_unknown == unknown_fields(general, shape)
    if fast_unknown:
        return  # refused: the half-done config is thrown away
    fill_key_defaults(general, shape)
    merged, general_owners = server_side_apply(
        {}, general, {}, "op", shape, force=False, where="test"
    )
    assert _same(fast, merged)
    assert fast_owners == general_owners


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(),
    st.sampled_from(["web", 'quo"te', "back\\slash", "é", "\u2028", "\x00"]),
)
json_values = st.one_of(
    json_scalars,
    st.dictionaries(st.text(max_size=4), json_scalars, max_size=4),
    st.lists(json_scalars, max_size=3),
    st.dictionaries(st.text(max_size=2), st.lists(json_scalars, max_size=2), max_size=2),
)


@given(json_values)
def test_an_item_identity_is_written_as_the_json_encoder_writes_it(value: Any) -> None:
    assert _json(value) == _ENCODE(value)


def test_a_manager_owns_no_field_the_stored_object_lacks_also_after_status_writes() -> None:
    cluster = MemoryCluster()
    spec = {"ports": [{"port": 80}], "sessionAffinity": "None"}
    # the apiserver drops the affinity config of no affinity: nobody owns it then
    spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10}}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": spec,
    }
    cluster.apply(service, field_manager="op")
    live = cluster.get("v1", "Service", "web", "demo")
    assert live is not None and "sessionAffinityConfig" not in live["spec"]
    cluster.update_status({**live, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}})
    owned = cluster.managed_fields("v1", "Service", "web", "demo")["op"]
    assert 'spec.ports.k:{"port":80,"protocol":"TCP"}.port' in owned
    assert not [p for p in owned if p.startswith("spec.sessionAffinityConfig")]


probes = _opt(
    httpGet=_opt(port=st.sampled_from([80, "http"]), path=maybe(st.none(), st.just(""))),
    grpc=_opt(port=st.just(9000)),
    periodSeconds=maybe(st.none(), st.just(0)),
)
volumes = st.lists(
    _opt(
        name=names,
        configMap=_opt(name=names, defaultMode=maybe(st.none(), st.just(256))),
        secret=_opt(secretName=names),
        projected=_opt(sources=st.lists(_opt(serviceAccountToken=_opt(path=names)), max_size=1)),
        hostPath=_opt(path=names),
    ),
    max_size=2,
)
pod_specs = _opt(
    containers=st.lists(
        _opt(
            name=names,
            image=st.sampled_from(["img", "img:latest", "img:1"]),
            ports=ports,
            livenessProbe=probes,
            env=st.lists(
                _opt(name=names, valueFrom=_opt(fieldRef=_opt(fieldPath=names))), max_size=2
            ),
        ),
        max_size=2,
    ),
    initContainers=st.lists(_opt(name=names, image=st.just("img")), max_size=1),
    volumes=volumes,
    restartPolicy=maybe(st.none(), st.just("")),
    extra=free_trees,
)
builtin_objects = st.one_of(
    st.tuples(
        st.just(("apps/v1", "Deployment")),
        _opt(
            metadata=metadata,
            spec=_opt(
                replicas=maybe(st.none(), st.just(3)),
                template=_opt(metadata=_opt(labels=label_maps), spec=pod_specs),
                strategy=_opt(type=st.sampled_from(["Recreate", "RollingUpdate"])),
            ),
        ),
    ),
    st.tuples(st.just(("v1", "Pod")), _opt(metadata=metadata, spec=pod_specs)),
    st.tuples(
        st.just(("v1", "Service")),
        _opt(metadata=metadata, spec=_opt(ports=ports, type=names, sessionAffinity=names)),
    ),
    st.tuples(st.just(("v1", "ConfigMap")), _opt(metadata=metadata, data=free_trees)),
)
PLANS = default_plans(SCHEMAS.definitions)  # (shared: plans carry over, as in a store)


@given(builtin_objects)
def test_planned_defaulting_gives_what_walking_the_whole_object_gives(
    case: tuple[tuple[str, str], dict[str, Any]],
) -> None:
    (api_version, kind), obj = case
    schema = SCHEMAS.raw_schema(api_version, kind)
    assert schema is not None
    planned, walked = clone(obj), clone(obj)
    default_builtin(planned, api_version, kind, schema, SCHEMAS.definitions, PLANS)
    default_builtin(walked, api_version, kind, schema, SCHEMAS.definitions)
    assert _same(planned, walked)


@given(st.text(st.characters(exclude_categories=("Cs",))), st.integers(1, 40))
def test_sequential_uids_are_the_uuid5_of_the_seed_and_a_counter(seed: str, count: int) -> None:
    uids = sequential_uids(seed)
    made = [uids() for _ in range(count)]
    assert made == [str(uuid.uuid5(uuid.NAMESPACE_OID, f"{seed}/{n}")) for n in range(1, count + 1)]


@given(st.one_of(st.none(), free_trees, st.dictionaries(st.text(max_size=3), json_values)))
def test_the_pod_template_hash_is_the_sha256_of_the_sorted_json_template(template: Any) -> None:
    deployment = {"spec": {"template": template}}
    text = json.dumps(template or {}, sort_keys=True)
    digest = hashlib.sha256(text.encode()).digest()
    assert template_hash(deployment) == "".join(
        "bcdfghjklmnpqrstvwxz2456789"[b % 27] for b in digest[:10]
    )


def test_defaulting_plans_do_not_grow_with_the_keys_of_a_map() -> None:
    """A map's keys (a CRD's property names, a user's) share the plan of its values: a
    long-lived in-memory cluster's plans stay the size of the schema, not of the data."""
    from oper8d.cluster.memory import MemoryCluster
    from oper8d.cluster.memory.defaults_plan import _Plan

    cluster = MemoryCluster()

    def crd(n: int) -> dict[str, Any]:
        props = {f"field{n}x{i}": {"type": "object"} for i in range(100)}
        schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}
        version = {
            "name": "v1",
            "served": True,
            "storage": True,
            "schema": {"openAPIV3Schema": schema},
        }
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"things{n}.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"kind": f"Thing{n}", "plural": f"things{n}"},
                "versions": [version],
            },
        }

    def planned() -> int:  # the table entries of this cluster's plans
        plans = cluster._store._default_plans._by_node.values()
        return sum(len(plan.fields) for _node, plan in plans if isinstance(plan, _Plan))

    cluster.apply(crd(0), field_manager="t")
    after_one = planned()
    for n in range(1, 4):
        cluster.apply(crd(n), field_manager="t")
    assert planned() == after_one


json_trees = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
        st.tuples(inner, inner),
    ),
    max_leaves=25,
)


def _containers(value: Any) -> list[Any]:
    """Every dict, list and tuple in ``value``, itself included."""
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list | tuple):
        return [value, *(c for v in value for c in _containers(v))]
    return []


@given(json_trees)
def test_a_clone_is_a_deep_copy_that_shares_no_container(value: Any) -> None:
    """What every read and write of the in-memory cluster relies on (``copies.clone``):
    equal, key order included, tuples made lists, and not one dict or list shared."""
    copied = clone(value)
    assert _same(copied, value)
    assert not any(isinstance(c, tuple) for c in _containers(copied))
    shared = {id(c) for c in _containers(value)} & {id(c) for c in _containers(copied)}
    assert not shared


@given(cases)
@example(("Deployment", TRICKY))
@example(("unknown kind", {**TRICKY, "extra": {"a": {"b": None}, "c": [None, {"a": None}]}}))
def test_a_create_by_apply_neither_changes_nor_keeps_the_config_it_is_given(
    case: tuple[str, dict[str, Any]],
) -> None:
    """The store hands ``apply_create`` the client's object below its top level (no copy
    first): the walk copies each map and list before it changes or keeps it."""
    kind, config = case
    before = json.dumps(config)
    made = dict(config)  # (the top level: ``fields.content``'s own)
    _owners, unknown = apply_create(made, "op", SHAPES[kind])
    assert json.dumps(config) == before
    if not unknown:  # (a refused apply keeps nothing)
        ours = {id(c) for c in _containers(made)}
        assert not ours & {id(c) for c in _containers(config)}


_keys = st.text(alphabet="zyxcba", min_size=1, max_size=3)


@given(
    labels=st.dictionaries(_keys, st.sampled_from(["a", "b"]), max_size=4),
    status=st.dictionaries(_keys, st.integers(0, 3), max_size=4),
)
def test_every_stored_object_is_in_the_servers_order_also_after_status_writes(
    labels: dict[str, str], status: dict[str, int]
) -> None:
    """A status write orders the new version with ``admission.status_ordered``, which
    leaves a built-in kind as it is (its sorted maps are the stored version's): held to
    ``server_ordered`` over objects of both sorts, written and then given statuses."""
    from oper8d.cluster.memory.admission import server_ordered
    from oper8d.cluster.memory.simulate import DefaultSimulator

    cluster = MemoryCluster(
        uid_factory=sequential_uids(), simulator=DefaultSimulator(), schemas=SCHEMAS
    )
    meta = {"namespace": "demo", "labels": labels, "annotations": labels}
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "c:1"}]},
    }
    workload = {"selector": {"matchLabels": {"app": "web"}}, "template": template}
    sent = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", **meta}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", **meta}},
        {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", **meta}},
    ]
    sent[0]["spec"] = workload
    sent[1]["data"] = labels
    sent[2]["spec"] = {**labels, "b": {"z": 1, "a": 2}}
    for obj in sent:
        cluster.apply(obj, field_manager="op")
    for obj in sent[1:]:  # (a ConfigMap's status is kept unchecked; a Thing has no schema)
        live = cluster.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], "demo")
        assert live is not None
        cluster.update_status({**live, "status": {**status, "nested": dict(status)}})
    for obj in cluster.objects():
        assert json.dumps(obj) == json.dumps(server_ordered(obj))


@given(st.one_of(st.text(alphabet="./%?#a-\n", max_size=4), st.none(), st.integers()))
@example(".")
@example("..")
@example("...")
@example("..\n")
def test_the_stores_quick_segment_check_agrees_with_path_segment_problem(value: Any) -> None:
    from oper8d.cluster.memory.store import _unsafe
    from oper8d.kinds import path_segment_problem

    expected = isinstance(value, str) and path_segment_problem(value) is not None
    assert _unsafe(value) == expected
