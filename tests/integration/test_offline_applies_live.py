"""What passes offline applies live: every object that ``oper8d render`` (and so ``test``
and ``run --dry-run``, which run the same reconciler with the same checks) produces for
the examples and for generated bundles is accepted by the real API server, strict field
validation included (a server-side dry-run apply of each, in a fresh namespace)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from test_kube_cluster import new_namespace

from benchmarks.gen import write_bundle
from oper8d.cluster.kube import KubeCluster
from oper8d.errors import ClusterError
from oper8d.testing import run_offline

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"
CASES = [
    ("webapp", "webapp.yaml"),
    ("webapp", "webapp-minimal.yaml"),
    ("stateful", "notes.yaml"),
    ("fanout", "pool.yaml"),
]
#: what the in-memory server set on an object, which a client never sends
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def as_sent(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    sent = copy.deepcopy(obj)
    sent.pop("status", None)
    meta = sent["metadata"]
    for key in (*SERVER_SET, "ownerReferences"):  # the owner CR exists only offline
        meta.pop(key, None)
    if meta.get("namespace"):
        meta["namespace"] = namespace
    return sent


def refusals(cluster: KubeCluster, objects: list[dict[str, Any]]) -> list[str]:
    namespace = new_namespace(cluster)
    refused = []
    for obj in objects:
        try:
            cluster.dry_run_apply(as_sent(obj, namespace), field_manager="oper8d")
        except ClusterError as err:
            refused.append(f"{obj['kind']} {obj['metadata']['name']}: {err}")
    cluster.delete("v1", "Namespace", namespace)
    return refused


@pytest.mark.parametrize(("example", "sample"), CASES)
def test_every_object_an_example_renders_is_accepted_by_the_api_server(
    k8s: client.ApiClient, example: str, sample: str
) -> None:
    cr = yaml.safe_load((EXAMPLES / example / "samples" / sample).read_text())
    run = run_offline(EXAMPLES / example, cr)
    assert run.fatal_error is None, run.fatal_error
    assert run.applied
    assert refusals(KubeCluster(k8s), list(run.applied.values())) == []


@pytest.mark.parametrize("shape", ["chain", "independent"])
def test_every_object_a_generated_bundle_renders_is_accepted_by_the_api_server(
    k8s: client.ApiClient, tmp_path: Path, shape: str
) -> None:
    generated = write_bundle(tmp_path / "bundle", components=8, shape=shape)  # type: ignore[arg-type]
    run = run_offline(generated.path, generated.cr)
    assert run.fatal_error is None, run.fatal_error
    assert len(run.applied) == generated.objects
    assert refusals(KubeCluster(k8s), list(run.applied.values())) == []
