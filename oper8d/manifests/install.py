"""Install a bundle's CRDs (and the TemporaryPatch CRD, when the bundle turns temporary
patches on) into a cluster and wait until the
API server serves them. Used by ``oper8d run --install-crds`` and integration tests."""

from __future__ import annotations

import time
from collections.abc import Callable

from oper8d.bundle.model import Bundle
from oper8d.cluster.base import Cluster
from oper8d.errors import ClusterError
from oper8d.manifests.crd import crd_for, temporary_patch_crd

CRD_API_VERSION = "apiextensions.k8s.io/v1"


def install_crds(
    cluster: Cluster,
    bundle: Bundle,
    *,
    timeout: float = 60.0,
    field_manager: str = "oper8d-install",
    wait: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Server-side apply every CRD, then wait until each is Established. Returns their names.

    Waiting polls the CRD's conditions (a handful of reads during start-up, not a reconcile
    path); ``wait`` is injectable for tests.
    """
    crds = [crd_for(c) for c in bundle.controllers]
    if bundle.temporary_patch_targets:
        crds.append(temporary_patch_crd())
    for crd in crds:
        cluster.apply(crd, field_manager=field_manager, force=True)
    names = [c["metadata"]["name"] for c in crds]
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending:
        for name in sorted(pending):
            live = cluster.get(CRD_API_VERSION, "CustomResourceDefinition", name) or {}
            status = live.get("status") or {}
            conds = {c.get("type"): c for c in status.get("conditions") or []}
            if (conds.get("Established") or {}).get("status") == "True":
                pending.discard(name)
        if pending:
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"CRDs not established after {timeout:.0f}s: {', '.join(sorted(pending))}"
                )
            wait(0.2)
    return names
