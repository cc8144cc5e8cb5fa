"""oper8d: Kubernetes operators written as YAML bundles, run by a generic engine.

The public Python API is small; most users only need the ``oper8d`` command. Everything
not listed in ``__all__`` is internal and may change.
"""

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
