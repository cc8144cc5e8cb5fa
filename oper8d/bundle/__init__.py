"""Bundles: load ``operator.yaml`` (with positions), validate it, compile it to the typed model."""

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import Bundle, ComponentSpec, ControllerSpec, CRKind

__all__ = ["Bundle", "CRKind", "ComponentSpec", "ControllerSpec", "load_bundle"]
