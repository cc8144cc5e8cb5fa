"""oper8d: Kubernetes operators written as YAML bundles, run by a generic engine.

The public Python API is small; most users only need the ``oper8d`` command. Everything
not listed in ``__all__`` is internal and may change.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oper8d.bundle import Bundle, load_bundle
    from oper8d.cluster import Cluster
    from oper8d.errors import (
        BundleError,
        ClusterError,
        ConfigError,
        ExpectedError,
        FatalError,
        Oper8dError,
        PreconditionError,
        Problem,
        ReconcileError,
        RolloutError,
        SourcePos,
        VerificationError,
    )

__version__ = "0.1.0"

# Loaded on first use: the bundle compiler pulls in Jinja (`oper8d --help` and error-only
# imports stay fast), and the `oper8d` process makes every class, errors' too, only once it
# can reuse their compiled methods (cli/startup_code.py). Every other name of `__all__`
# is an error type of oper8d.errors.
_LAZY = {"Bundle": "oper8d.bundle", "load_bundle": "oper8d.bundle", "Cluster": "oper8d.cluster"}


def __getattr__(name: str) -> Any:
    if name in __all__:
        import importlib

        return getattr(importlib.import_module(_LAZY.get(name, "oper8d.errors")), name)
    raise AttributeError(f"module 'oper8d' has no attribute {name!r}")


__all__ = [
    "Bundle",
    "BundleError",
    "Cluster",
    "ClusterError",
    "ConfigError",
    "ExpectedError",
    "FatalError",
    "Oper8dError",
    "PreconditionError",
    "Problem",
    "ReconcileError",
    "RolloutError",
    "SourcePos",
    "VerificationError",
    "__version__",
    "load_bundle",
]
