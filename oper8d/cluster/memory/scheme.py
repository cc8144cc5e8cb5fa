"""What the in-memory cluster knows about kinds: scope and whether they carry a generation.

Used by ``cluster.memory``. Built-in cluster-scoped kinds come from ``oper8d.kinds``;
custom kinds are registered (``KindTable.register``, or automatically when a
CustomResourceDefinition is created). Anything unknown is treated as namespaced.

``metadata.generation`` follows the API server: it is set to 1 on create and bumped when
anything outside metadata and status changes, except for the built-in kinds whose
storage strategy never sets it (ConfigMap, Secret, Service, ... : checked against a
live API server, those objects have no ``generation`` at all). Deployments also bump it
when their annotations change, because the deployment controller copies annotations
to ReplicaSets.
"""

from __future__ import annotations

import threading

from oper8d.kinds import CLUSTER_SCOPED, group_of

#: (group, kind) of built-ins that the API server stores without metadata.generation
NO_GENERATION = frozenset(
    {
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("", "Namespace"),
        ("", "Endpoints"),
        ("", "Event"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "LimitRange"),
        ("", "ResourceQuota"),
        ("events.k8s.io", "Event"),
        ("coordination.k8s.io", "Lease"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
    }
)

#: (group, kind) whose generation also moves when annotations change
ANNOTATIONS_BUMP_GENERATION = frozenset({("apps", "Deployment")})


class KindTable:
    """Scope of kinds: built-in cluster-scoped kinds plus registered ones. Thread-safe."""

    def __init__(self) -> None:
        self._registered: dict[tuple[str, str], bool] = {}
        self._lock = threading.Lock()

    def register(self, api_version: str, kind: str, namespaced: bool) -> None:
        """Declare a kind's scope (``register("demo.io/v1", "WebApp", namespaced=True)``)."""
        with self._lock:
            self._registered[(group_of(api_version), kind)] = namespaced

    def namespaced(self, group: str, kind: str) -> bool:
        with self._lock:
            registered = self._registered.get((group, kind))
        if registered is not None:
            return registered
        return (group, kind) not in CLUSTER_SCOPED


def has_generation(group: str, kind: str) -> bool:
    return (group, kind) not in NO_GENERATION
