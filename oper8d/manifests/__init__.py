"""Kubernetes manifests oper8d generates from a bundle: the CustomResourceDefinition of
each controller's CR kind (its spec schema converted to a structural schema) and the
TemporaryPatch CRD. Used by the CLI and by tests that install CRDs in a real cluster.

    from oper8d.manifests import crd_for, temporary_patch_crd

    crds = [crd_for(c) for c in bundle.controllers] + [temporary_patch_crd()]
"""

from __future__ import annotations

from oper8d.manifests.crd import crd_for, printer_columns, temporary_patch_crd
from oper8d.manifests.structural import StructuralSchema, structural_schema

__all__ = [
    "StructuralSchema",
    "crd_for",
    "printer_columns",
    "structural_schema",
    "temporary_patch_crd",
]
