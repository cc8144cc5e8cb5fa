"""The in-memory cluster's indexes answer exactly what a scan of every object would.

Lists by kind, namespace and selector, garbage collection through owner references and
namespace deletion all read indexes (``cluster.memory.index``); whatever sequence of writes and
deletes happened, a list must equal the brute-force filter over all stored objects.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d.cluster.memory import MemoryCluster
from oper8d.cluster.selectors import as_selector

NAMES = st.sampled_from(["a", "b", "c", "d"])
NAMESPACES = st.sampled_from(["ns1", "ns2"])
KINDS = st.sampled_from([("v1", "ConfigMap"), ("v1", "Secret")])
LABELS = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["web", "db"]))
SELECTORS = st.sampled_from(
    [None, "app=web", "app in (web,db)", "tier!=db", "app,tier=db", "!tier", "app=web,tier=web"]
)

writes = st.tuples(
    st.sampled_from(["apply", "delete"]), KINDS, NAMESPACES, NAMES, LABELS, st.booleans()
)


def obj(kind: tuple[str, str], namespace: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": kind[0],
        "kind": kind[1],
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
    }


def scan(
    cluster: MemoryCluster, kind: tuple[str, str], namespace: str | None, selector: str | None
) -> list[tuple[str, str]]:
    wanted = as_selector(selector)
    return sorted(
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in cluster.objects()
        if (o["apiVersion"], o["kind"]) == kind
        and (namespace is None or o["metadata"].get("namespace") == namespace)
        and wanted.matches(o["metadata"].get("labels"))
    )


@settings(max_examples=150, derandomize=True)
@given(st.lists(writes, max_size=25), KINDS, st.one_of(st.none(), NAMESPACES), SELECTORS)
def test_a_list_equals_a_scan_of_every_object_after_any_writes(
    ops: list[Any], kind: tuple[str, str], namespace: str | None, selector: str | None
) -> None:
    cluster = MemoryCluster()
    owner = cluster.apply(obj(("v1", "ConfigMap"), "ns1", "owner", {}), field_manager="t")
    for op, op_kind, ns, name, labels, owned in ops:
        if op == "delete":
            cluster.delete(op_kind[0], op_kind[1], name, ns)
            continue
        body = obj(op_kind, ns, name, labels)
        if owned and ns == "ns1":
            body["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "owner",
                    "uid": owner["metadata"]["uid"],
                }
            ]
        cluster.apply(body, field_manager="t")
    listed = cluster.list(kind[0], kind[1], namespace=namespace, label_selector=selector)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in listed] == scan(
        cluster, kind, namespace, selector
    )
    # deleting the owner collects exactly the objects that still point at it
    dependents = [
        o
        for o in cluster.objects()
        if any(
            r["uid"] == owner["metadata"]["uid"] for r in o["metadata"].get("ownerReferences") or []
        )
    ]
    cluster.delete("v1", "ConfigMap", "owner", "ns1")
    for dependent in dependents:
        meta = dependent["metadata"]
        assert (
            cluster.get(dependent["apiVersion"], dependent["kind"], meta["name"], meta["namespace"])
            is None
        )
