"""Helpers for end-to-end tests: an operator (the Manager) running in this process against
the envtest control plane, and bounded waits on cluster state."""

from __future__ import annotations

import contextlib
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from oper8d.bundle.compile import load_bundle
from oper8d.cluster.base import Obj
from oper8d.cluster.kube import KubeCluster
from oper8d.manifests.install import install_crds
from oper8d.runtime.manager import Manager, ManagerOptions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 120.0) -> T:
    """Call ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout``.
    This drives a test against a real cluster (controllers, kwok) whose progress we cannot
    be told about; the product code itself never polls."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def condition(obj: Obj | None, type_: str) -> dict[str, Any]:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return {}


def is_ready(obj: Obj | None) -> bool:
    return condition(obj, "Ready").get("status") == "True"


def new_namespace(cluster: KubeCluster, prefix: str = "e2e") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, field_manager="test"
    )
    return name


def copy_example(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(EXAMPLES / name, target)
    return target


@contextmanager
def running_operator(
    api_client: Any, bundle_path: Path, namespace: str, *, cleanup: bool = True, **options: Any
) -> Iterator[Manager]:
    """Install the bundle's CRDs, run its Manager watching ``namespace`` with a client of
    its own (so ``manager.api.requests`` counts only the operator's requests), stop it after."""
    bundle = load_bundle(bundle_path)
    cluster = KubeCluster(api_client, field_manager=bundle.name)
    install_crds(cluster, bundle)
    opts = ManagerOptions(
        namespaces=(namespace,),
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        graceful_shutdown_timeout=10.0,
        **options,
    )
    manager = Manager(bundle, cluster, opts)
    manager.start()
    try:
        yield manager
    finally:
        # delete the CRs while the operator runs, so their finalizers are removed and the
        # test namespace does not stay Terminating
        for spec in bundle.controllers if cleanup else ():
            kind = spec.resource
            for cr in cluster.list(kind.api_version, kind.kind, namespace):
                cluster.delete(kind.api_version, kind.kind, cr["metadata"]["name"], namespace)
            # the test's own assertions matter more than a slow cleanup
            with contextlib.suppress(AssertionError):
                wait_for(
                    f"{kind.kind} CRs to be finalized",
                    lambda kind=kind: not cluster.list(kind.api_version, kind.kind, namespace),
                    timeout=30,
                )
        manager.stop()
