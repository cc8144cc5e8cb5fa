"""``runtime.store.share_strings``: what the informers do to every object they keep, so that
the strings that repeat across a fleet's objects (namespaces, labels, kinds, owner uids,
enum-like values) are held once. Objects stay equal to what the API server sent."""

from __future__ import annotations

import json
from typing import Any

from oper8d.runtime.store import drop_unread, share_strings


def deployment(i: int) -> dict[str, Any]:
    """A Deployment as one WebApp of a fleet deploys it (the benchmark's example)."""
    owner = f"8b9b454d-380b-5071-9b08-{i:012d}"
    labels = {
        "app": "webapp",
        "app.kubernetes.io/managed-by": "oper8d",
        "oper8d.io/owner-uid": owner,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"w{i}-app",
            "namespace": f"ns{i % 50}",
            "uid": f"d8e0f13b-f0f2-552d-83e6-{i:012d}",
            "resourceVersion": str(1000 + i),
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "demo.oper8d.io/v1alpha1",
                    "kind": "WebApp",
                    "name": f"w{i}",
                    "uid": owner,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "webapp"}},
            "template": {
                "metadata": {"labels": {"app": "webapp"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx:1.27",
                            "imagePullPolicy": "IfNotPresent",
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                        }
                    ],
                    "restartPolicy": "Always",
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler",
                },
            },
        },
        "status": {
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "MinimumReplicasAvailable",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                    "message": "Deployment has minimum availability.",
                }
            ]
        },
    }


def parsed(i: int) -> dict[str, Any]:
    """The Deployment as a watch event brings it: parsed alone, every string its own."""
    loaded: dict[str, Any] = json.loads(json.dumps(deployment(i)))
    return loaded


def test_objects_parsed_apart_share_their_repeated_strings_and_stay_equal() -> None:
    first, second = parsed(1), parsed(2)
    assert first["metadata"]["namespace"] is not second["metadata"]["namespace"]
    kept = [share_strings(drop_unread(obj), keys=True) for obj in (first, second)]
    assert kept == [deployment(1), deployment(2)]
    a, b = kept
    assert a["metadata"]["labels"]["app"] is b["metadata"]["labels"]["app"]
    assert (
        a["spec"]["template"]["spec"]["schedulerName"]
        is (b["spec"]["template"]["spec"]["schedulerName"])
    )
    # keys too: the two objects' "metadata" keys are one string
    key_a = next(k for k in a if k == "metadata")
    key_b = next(k for k in b if k == "metadata")
    assert key_a is key_b
    # an owner's uid in its child's label is the string of the ownerReference
    ref = a["metadata"]["ownerReferences"][0]
    assert ref["uid"] is a["metadata"]["labels"]["oper8d.io/owner-uid"]


def test_in_place_sharing_changes_values_only() -> None:
    obj = parsed(3)
    assert share_strings(obj) is obj and obj == deployment(3)
    assert obj["kind"] is share_strings(parsed(4))["kind"]


def _strings(value: Any, found: dict[int, str]) -> None:
    """Every string object (key or value) held by ``value``, by id."""
    if isinstance(value, dict):
        for key, item in value.items():
            found[id(key)] = key
            _strings(item, found)
    elif isinstance(value, list):
        for item in value:
            _strings(item, found)
    elif isinstance(value, str):
        found[id(value)] = value


def test_a_fleets_cached_objects_hold_each_repeated_string_once() -> None:
    def distinct_strings(share: bool) -> int:
        kept = [share_strings(parsed(i), keys=True) if share else parsed(i) for i in range(300)]
        found: dict[int, str] = {}
        for obj in kept:
            _strings(obj, found)
        return len(found)

    whole, shared = distinct_strings(False), distinct_strings(True)
    # parsed alone, each Deployment holds its 65 strings; shared, only what is its own
    # (name, uid, resourceVersion, owner uid, ...) plus one copy of the rest for all
    assert whole >= 60 * 300
    assert shared <= 7 * 300 + 80, (whole / 300, shared / 300)
