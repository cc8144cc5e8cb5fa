"""The TemporaryPatch controller (oper8's contract, ``oper8.org/v1``).

For each TemporaryPatch it adds ``{name: {timestamp, api_version, kind}}`` to the target
CR's ``oper8.org/temporary-patches`` annotation and keeps the finalizer
``finalizers.temporarypatch.oper8.org`` on the patch; when the patch is deleted it removes
the entry, then the finalizer. The annotation change makes the target's controller
reconcile, which applies (or stops applying) the patch. Runs inside the manager.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

from oper8d.clock import Clock, SystemClock, rfc3339
from oper8d.engine.config import TEMPORARY_PATCHES_ANNOTATION
from oper8d.engine.temporary_patches import announced_patches
from oper8d.errors import ClusterError, ConfigError
from oper8d.objects import Obj

log = logging.getLogger("oper8d.temporarypatch")

API_VERSION = "oper8.org/v1"
KIND = "TemporaryPatch"
FINALIZER = "finalizers.temporarypatch.oper8.org"


class PatchClient(Protocol):
    """What the controller needs of a cluster (``KubeCluster``, ``MemoryCluster``)."""

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None: ...

    def update(self, obj: Obj) -> Obj:
        """PUT; 409 ClusterError when ``metadata.resourceVersion`` is stale."""
        ...


class TemporaryPatchSync:
    """Keeps target CR annotations in step with TemporaryPatch objects."""

    def __init__(
        self,
        cluster: PatchClient,
        *,
        targets: set[tuple[str, str]],
        clock: Clock | None = None,
    ):
        #: (apiVersion, kind) of the CRs this operator reconciles: patches for others are ignored
        self.cluster = cluster
        self.targets = targets
        self.clock = clock or SystemClock()

    def sync(self, namespace: str | None, name: str) -> None:
        """Bring one patch and its target up to date. Raises ClusterError to be retried."""
        patch = self.cluster.get(API_VERSION, KIND, name, namespace)
        if patch is None:
            return
        spec = patch.get("spec") or {}
        target = (spec.get("apiVersion"), spec.get("kind"))
        if target not in self.targets:
            return
        meta = patch["metadata"]
        if meta.get("deletionTimestamp"):
            self._edit_target(patch, lambda entries: entries.pop(name, None))
            if FINALIZER in (meta.get("finalizers") or []):
                self._edit(
                    patch,
                    lambda m: m.__setitem__(
                        "finalizers", [f for f in m.get("finalizers", []) if f != FINALIZER]
                    ),
                )
            return
        if FINALIZER not in (meta.get("finalizers") or []):
            patch = self._edit(patch, lambda m: m.setdefault("finalizers", []).append(FINALIZER))
        entry = {
            "timestamp": meta.get("creationTimestamp") or rfc3339(self.clock.now()),
            "api_version": spec.get("apiVersion"),
            "kind": spec.get("kind"),
        }
        self._edit_target(patch, lambda entries: entries.__setitem__(name, entry))

    def _edit_target(self, patch: Obj, change: Callable[[dict[str, Any]], Any]) -> None:
        spec = patch.get("spec") or {}
        ns = patch["metadata"].get("namespace")
        target = self.cluster.get(spec["apiVersion"], spec["kind"], spec.get("name", ""), ns)
        if target is None:
            return

        def edit(meta: dict[str, Any]) -> None:
            annotations = meta.setdefault("annotations", {})
            raw = annotations.get(TEMPORARY_PATCHES_ANNOTATION) or "{}"
            try:
                announced_patches(raw)  # (its shape: a list here would fail the worker)
                entries = json.loads(raw)
            except ConfigError:
                entries = {}  # malformed: written again from the patches, as the CR needs
            change(entries)
            if entries:
                annotations[TEMPORARY_PATCHES_ANNOTATION] = json.dumps(entries, sort_keys=True)
            else:
                annotations.pop(TEMPORARY_PATCHES_ANNOTATION, None)

        self._edit(target, edit)

    def _edit(self, obj: Obj, change: Callable[[dict[str, Any]], Any], attempts: int = 5) -> Obj:
        meta = obj["metadata"]
        for _ in range(attempts):
            live = self.cluster.get(
                obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")
            )
            if live is None:
                return obj
            before = json.dumps(live["metadata"], sort_keys=True)
            change(live["metadata"])
            if json.dumps(live["metadata"], sort_keys=True) == before:
                return live  # nothing to write
            try:
                return self.cluster.update(live)
            except ClusterError as err:
                if err.status != 409:
                    raise
        raise ClusterError(f"conflict updating {obj['kind']} {meta['name']}", status=409)
