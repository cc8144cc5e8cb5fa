"""``load_bundle``: the model of a bundle folder, from the model cache or compiled.

Every command (validate, render, graph, run) and the controller load a bundle through
here. A bundle whose files are unchanged since an earlier load comes from the model cache
(``bundle.modelcache``) and never imports the compiler (``bundle.compile`` and the
modules it uses: validation, schemas, edges, checks): importing those is work a warm
``oper8d render`` of a big bundle does not need.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oper8d.bundle.model import Bundle
from oper8d.bundle.modelcache import open_model
from oper8d.errors import BundleError, Problem
from oper8d.limits import Limits, bounded_work

if TYPE_CHECKING:
    from oper8d.kubeschema import KubeSchemas

__all__ = ["OPERATOR_FILE", "load_bundle"]

OPERATOR_FILE = "operator.yaml"


def load_bundle(
    path: str | Path,
    limits: Limits | None = None,
    *,
    cache: bool = True,
    builtin_schemas: KubeSchemas | None = None,
) -> Bundle:
    """Load, validate and compile the bundle at ``path`` (a folder or its operator.yaml).

    ``cache``: reuse the model an earlier load compiled from the same files
    (``bundle.modelcache``), else the templates' compiled code from the user's compile
    cache (``bundle.cache``), and keep what this load compiles (off with
    ``OPER8D_NO_CACHE=1``).
    ``builtin_schemas``: ``KubeSchemas.builtin()`` when the caller has it already (the
    conditions' field paths are checked against it; loading it costs a few ms); it must be
    that set: a stored model was checked against it.
    Raises ``BundleError`` listing every problem found, each with file:line:col.
    """
    root = Path(path)
    if root.is_file():
        root = root.parent
    if not (root / OPERATOR_FILE).is_file():
        raise BundleError(
            Problem(f"no {OPERATOR_FILE} in {root} (a bundle is a folder with an {OPERATOR_FILE})")
        )
    limits = limits if limits is not None else Limits()
    slot = open_model(root, limits) if cache else None
    if slot is not None:
        with bounded_work():  # (the collector's passes over the objects it builds)
            stored = slot.load(root, limits)
        if stored is not None:
            return stored
    # imported here: a load the model cache serves never needs the compiler (see above)
    from oper8d.bundle.compile import compile_bundle

    return compile_bundle(root, limits, cache=cache, builtin_schemas=builtin_schemas, slot=slot)
