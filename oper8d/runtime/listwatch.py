"""What an informer lists and watches through: the ``ListWatch`` protocol (``KubeCluster``
implements it; unit tests use the in-memory API) and the ``WatchStream`` it returns.

Declared apart from ``runtime.informer`` so that the informer module holds the informer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from oper8d.objects import Obj

__all__ = ["ListWatch", "WatchStream"]


class WatchStream(Protocol):
    """One open watch (``cluster.kube_transport.EventStream``): events
    ``{"type": ..., "object": {...}}`` until the server ends it or it is closed."""

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    def close(self) -> None:
        """End the stream; safe from any thread, idempotent."""
        ...


class ListWatch(Protocol):
    """Where an informer lists and watches a kind (``KubeCluster``). Errors are
    ``ClusterError``: 410 on ``watch`` when ``resource_version`` is too old."""

    def list_with_version(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        *,
        shard_selector: str | None = None,
    ) -> tuple[list[Obj], str]:
        """The objects and the resourceVersion a watch continues from."""
        ...

    def watch(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str,
        timeout_seconds: int = 300,
        shard_selector: str | None = None,
    ) -> WatchStream:
        """The changes after ``resource_version``, until ``timeout_seconds`` or ``close()``."""
        ...
