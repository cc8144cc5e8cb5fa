"""The in-memory API server: the ``Cluster`` protocol kept in process, for dry runs,
``oper8d diff``, ``oper8d test`` and the engine's own tests.

``cluster.py`` (``MemoryCluster``, the entry, whose docstring says what it models) over
``store.py``, ``entries.py``, ``deletion.py`` and ``index.py`` (the objects), with
``admission.py``, ``defaults*.py``, ``apply_create.py`` and ``scheme.py`` (what the API
server refuses, fills in and sets) and ``simulate.py``/``workload_status.py`` (readiness).
Field merging and ownership (``cluster.fields``) and selectors (``cluster.selectors``) are
shared with the real client and the engine. Never imports the ``kubernetes`` client.
"""

from typing import TYPE_CHECKING, Any

__all__ = ["MUTATING_VERBS", "MemoryCluster", "sequential_uids"]

if TYPE_CHECKING:
    from oper8d.cluster.memory.cluster import MUTATING_VERBS, MemoryCluster, sequential_uids
else:
    # Loaded on first use: checking a CR (`oper8d validate`) imports admission.py alone,
    # not the store, defaults and simulator behind MemoryCluster.
    def __getattr__(name: str) -> Any:
        if name in __all__:
            import importlib

            return getattr(importlib.import_module("oper8d.cluster.memory.cluster"), name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
