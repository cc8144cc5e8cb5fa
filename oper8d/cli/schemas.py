"""The Kubernetes schemas a command checks rendered objects against (``--crds``,
``--kube-schemas``), shared by render, run --dry-run and test.

Built-in kinds come from the schemas shipped in ``oper8d.kubeschema`` (the Kubernetes
version the test environment pins) or from ``--kube-schemas FILE``; custom kinds from the
bundle's own generated CRDs and the CRD files under each ``--crds DIR``. A kind none of them
knows is not checked (one warning).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from oper8d.bundle.model import Bundle
from oper8d.cachefiles import cache_dir
from oper8d.cli.inputs import current_limits, fail
from oper8d.errors import BundleError
from oper8d.kubeschema import CRDError, KubeSchemas, SchemaDataError, load_crd_dir
from oper8d.manifests.crd import crd_for

__all__ = ["schema_options", "schemas_for"]


def schema_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--crds DIR`` (repeatable) and ``--kube-schemas FILE``."""
    command = click.option(
        "--kube-schemas",
        "kube_schemas",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="Schemas of the built-in kinds to check against instead of the shipped ones "
        "(a file scripts/gen_kube_schemas.py writes).",
    )(command)
    return click.option(
        "--crds",
        "crd_dirs",
        multiple=True,
        type=click.Path(exists=True, file_okay=False),
        help="A folder of CustomResourceDefinition YAML files: objects of those kinds are "
        "checked against their schemas too (repeatable).",
    )(command)


def schemas_for(
    bundle: Bundle,
    crd_dirs: Sequence[str] = (),
    kube_schemas: str | None = None,
    builtin: KubeSchemas | None = None,
) -> KubeSchemas:
    """The schemas for ``bundle``'s objects; a clear error (exit 1) when a file is broken.
    ``builtin``: ``KubeSchemas.builtin()``, when the command loaded it already."""
    try:
        if kube_schemas:
            base = KubeSchemas.load(Path(kube_schemas), current_limits())
        else:
            base = builtin or KubeSchemas.builtin(cache=cache_dir())
        own = []
        for controller in bundle.controllers:
            try:
                own.append(crd_for(controller))
            except BundleError:
                continue  # validate reports a schema a CRD cannot express
        limits = current_limits()
        crds = [crd for folder in crd_dirs for crd in load_crd_dir(Path(folder), limits)]
        return base.with_crds(own, where="the bundle's CRD").with_crds(crds)
    except (CRDError, SchemaDataError, OSError) as err:
        fail([str(err)])
