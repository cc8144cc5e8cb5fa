"""The model cache: a bundle's compiled, validated model, kept between processes.

Compiling a bundle is the same work on the same files every time a command starts (the
YAML, every component, resource and template, edges, checks): on a big bundle, most of a
``render``. ``bundle.compile.load_bundle`` therefore stores the ``Bundle`` each
successful compile returns, with everything that compile learned from the file system:
for each file it read (``operator.yaml``, included files, text templates), the path as
written, the real path it resolved to (symlinks followed, kept inside the bundle) and a
sha256 of its bytes (``loader.BundleFiles.reads``). The loader makes no other observation
(no folder listing, no glob): a path that does not resolve or a file that cannot be read
fails the load, and a failed load is never stored. A later load replays those reads with
the same code (the same resolution rules, the same regular-file check) and uses the
stored model only when every path resolves to the same real path and every file has the
same bytes; modification times are never trusted. Anything else the model depends on is
the key of the store file (``cache.cache_key``): the bundle's real path, the limits, the
versions of Python, Jinja, PyYAML and libyaml, the schema libraries, oper8d's version and
a digest of its source and its Kubernetes schemas.

The model holds compiled Jinja templates, which only the engine that made them can
rebuild: it is pickled with each template replaced by its module code (stored beside,
with ``marshal``, as the compile cache stores it) and the engine's shared objects (its
environments, globals, nonce) replaced by names; loading builds a new ``TemplateEngine``
for the limits and gives each template back through it (``TemplateEngine.restore``). The
unpickler loads only oper8d's own classes and functions.

Files follow :mod:`oper8d.cachefiles` (a private folder, this user's files only,
checksummed, written whole) beside the compile cache's, and are pruned with them.
Any problem (unreadable, corrupt, foreign, another key, a file changed) means a normal
compile, silently. ``OPER8D_NO_CACHE=1`` or ``load_bundle(cache=False)`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import marshal
import pickle
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any

from jinja2 import Template

from oper8d.bundle.cache import _prune, cache_key
from oper8d.bundle.loader import BundleFiles
from oper8d.bundle.model import Bundle
from oper8d.cachefiles import cache_dir, private_folder, read_private, write_private
from oper8d.errors import BundleError, SourcePos
from oper8d.limits import Limits
from oper8d.template import TemplateEngine

__all__ = ["ModelSlot", "open_model"]

#: the first bytes of a model file; a new layout gets a new magic
_MAGIC = b"oper8d-bundle-model 1\n"
#: where replayed reads would place an error (never shown: any error is a miss)
_NOWHERE = SourcePos("")

Reads = list[tuple[str, str, bytes]]


class ModelSlot:
    """Where the model of one bundle (under one key) is stored."""

    def __init__(self, folder: Path, key: str) -> None:
        self.key = key
        name = hashlib.sha256(b"model\0" + key.encode()).hexdigest()[:40]
        self._folder = folder
        self.path = folder / (name + ".cache")  # (``.cache``: pruned with the code stores)

    def load(self, root: Path, limits: Limits) -> Bundle | None:
        """The stored model, when the files it was compiled from are all unchanged."""
        body = read_private(self.path, _MAGIC)
        if body is None:
            return None
        try:
            stored_key, reads, codes, pickled = marshal.loads(body)
            if stored_key != self.key or not _unchanged(root, reads):
                return None
            engine = TemplateEngine(limits)
            name, controllers, version, description = _Unpickler(pickled, engine, codes).load()
            return Bundle(
                name=name,
                root=root,
                controllers=controllers,
                operator_version=version,
                description=description,
            )
        except Exception:  # anything at all: compile as usual
            return None

    def save(self, bundle: Bundle, engine: TemplateEngine, reads: Reads) -> None:
        """Store ``bundle``, which ``engine`` compiled from ``reads``; errors are ignored
        (the cache is an optimisation)."""
        stream = io.BytesIO()
        pickler = _Pickler(stream, engine)
        try:
            pickler.dump(
                (bundle.name, bundle.controllers, bundle.operator_version, bundle.description)
            )
            body = marshal.dumps((self.key, reads, pickler.codes, stream.getvalue()))
        except Exception:  # (something that cannot be stored: the next load compiles)
            return
        with contextlib.suppress(OSError):
            write_private(self.path, _MAGIC, body)
            _prune(self._folder)


def open_model(
    root: Path, limits: Limits, environ: Mapping[str, str] | None = None
) -> ModelSlot | None:
    """The model slot of the bundle at ``root``, or None when the cache is off or its
    folder cannot be trusted."""
    folder = cache_dir(environ)
    if folder is None:
        return None
    try:
        if not private_folder(folder):
            return None
        return ModelSlot(folder, cache_key(root, limits))
    except (OSError, ValueError):
        return None


def _unchanged(root: Path, reads: Any) -> bool:
    """Whether each stored read finds the same real path and the same bytes again."""
    files = BundleFiles(root, record=True)
    try:
        for relpath, _real, _digest in reads:
            files.read(relpath, relpath, resolve_at=_NOWHERE, where=_NOWHERE)
    except (BundleError, OSError):
        return False
    return bool(files.reads == reads)


class _Pickler(pickle.Pickler):
    """Pickles a model compiled by ``engine``: its templates as code (``codes``), the
    engine's shared objects by name."""

    def __init__(self, stream: io.BytesIO, engine: TemplateEngine) -> None:
        super().__init__(stream, protocol=pickle.HIGHEST_PROTOCOL)
        self._engine = engine
        # (the engine keeps these objects alive while it pickles: the ids stay theirs)
        self._shared = {id(obj): name for name, obj in engine.shared().items()}
        self.codes: dict[str, CodeType] = {}

    def persistent_id(self, obj: Any) -> str | None:
        name = self._shared.get(id(obj))
        if name is not None:
            return name
        if isinstance(obj, Template):
            origin = self._engine.origin(obj)
            if origin is None:
                raise pickle.PicklingError("a template this engine did not make")
            key, code = origin
            self.codes[key] = code
            return key
        return None


class _Unpickler(pickle.Unpickler):
    """Loads a model for ``engine``: oper8d's classes only, each template rebuilt once
    from its code."""

    def __init__(self, data: bytes, engine: TemplateEngine, codes: dict[str, CodeType]) -> None:
        super().__init__(io.BytesIO(data))
        self._engine = engine
        self._codes = codes
        self._known: dict[str, Any] = dict(engine.shared())

    def persistent_load(self, pid: Any) -> Any:
        found = self._known.get(pid)
        if found is None:
            code = self._codes[pid]
            if not isinstance(code, CodeType):
                raise pickle.UnpicklingError("not code")
            found = self._known[pid] = self._engine.restore(pid, code)
        return found

    def find_class(self, module: str, name: str) -> Any:
        # a name of oper8d's own (not one a module of it imported, nor a dotted path on
        # from there: ``oper8d.bundle.loader`` / ``os.system``)
        if module.startswith("oper8d.") and "." not in name:
            found = super().find_class(module, name)
            if str(getattr(found, "__module__", "")).startswith("oper8d."):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a bundle model")
