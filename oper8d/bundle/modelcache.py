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
rebuild: it is pickled with each template, and each of the engine's shared objects (its
environments, globals, nonce), as a reference to an entry the pickler's memo holds
before it starts; the templates' module code is stored beside, with ``marshal``, as the
compile cache stores it. Loading builds a new ``TemplateEngine`` for the limits, fills the
same memo entries with its objects and the templates it rebuilds from their code
(``TemplateEngine.restore``), then unpickles the model. The unpickler loads only oper8d's
own classes and functions.

Files follow :mod:`oper8d.cachefiles` (a private folder, this user's files only,
checksummed, written whole) beside the compile cache's, and are pruned with them.
Any problem (unreadable, corrupt, foreign, another key, a file changed) means a normal
compile, silently. ``OPER8D_NO_CACHE=1`` or ``load_bundle(cache=False)`` turns it off.
"""

from __future__ import annotations

import contextlib
import copyreg
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
from oper8d.cachefiles import read_private, trusted_cache_dir, write_private
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
            stored_key, reads, names, codes, pickled = marshal.loads(body)
            if stored_key != self.key or not _unchanged(root, reads, limits):
                return None
            engine = TemplateEngine(limits)
            unpickler = _Unpickler(_prefix(len(names)) + pickled, engine, names, codes)
            unpickler.load()  # the prefix: the engine's objects, in their memo entries
            name, controllers, version, description = unpickler.load()
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
        (the cache is an optimisation).

        The engine's objects (its environments, globals, nonce and every template it
        made) are put in the pickler's memo before the model is pickled, so each reference
        to one is written as a reference to a memo entry, at C speed (a ``persistent_id``
        would be a Python call for every object of the model); ``load`` fills the same
        entries first. An engine object that is not there (a template another engine made)
        cannot be pickled at all."""
        shared = engine.shared()
        made = engine.made()
        names = [*shared, *(key for _template, key, _code in made)]
        objects = [*shared.values(), *(template for template, _key, _code in made)]
        codes = {key: code for _template, key, code in made}
        refused: dict[type, Any] = {Template: _not_stored}
        for env in (shared["env"], shared["text_env"]):
            template_class = getattr(env, "template_class", Template)
            refused.update({type(env): _not_stored, template_class: _not_stored})
        stream = io.BytesIO()
        pickler = pickle.Pickler(stream, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.memo = {id(obj): (index, obj) for index, obj in enumerate(objects)}
        pickler.dispatch_table = {**copyreg.dispatch_table, **refused}
        try:
            pickler.dump(
                (bundle.name, bundle.controllers, bundle.operator_version, bundle.description)
            )
            body = marshal.dumps((self.key, reads, names, codes, stream.getvalue()))
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
    folder = trusted_cache_dir(environ)
    if folder is None:
        return None
    try:
        return ModelSlot(folder, cache_key(root, limits))
    except (OSError, ValueError):
        return None


def _unchanged(root: Path, reads: Any, limits: Limits) -> bool:
    """Whether each stored read finds the same real path and the same bytes again."""
    files = BundleFiles(root, limits=limits, record=True)
    try:
        for relpath, _real, _digest in reads:
            files.read(relpath, relpath, resolve_at=_NOWHERE, where=_NOWHERE)
    except (BundleError, OSError):
        return False
    return bool(files.reads == reads)


def _not_stored(obj: object) -> Any:
    raise pickle.PicklingError(f"a {type(obj).__name__} the engine did not make")


def _prefix(count: int) -> bytes:
    """A pickle that puts persistent objects 0 to ``count - 1`` in memo entries 0 to
    ``count - 1`` and returns None: what ``ModelSlot.save`` put in its pickler's memo."""
    # each: BININT index, BINPERSID, MEMOIZE, POP; around them: PROTO 5 ... NONE, STOP
    parts = [b"J" + index.to_bytes(4, "little") + b"Q\x940" for index in range(count)]
    return b"\x80\x05" + b"".join(parts) + b"N."


class _Unpickler(pickle.Unpickler):
    """Loads a model for ``engine``: oper8d's classes only; the engine's objects named
    ``names`` (by memo entry, see ``_prefix``), each template rebuilt once from its code."""

    def __init__(
        self,
        data: bytes,
        engine: TemplateEngine,
        names: list[str],
        codes: dict[str, CodeType],
    ) -> None:
        super().__init__(io.BytesIO(data))
        self._engine = engine
        self._names = names
        self._codes = codes
        self._known: dict[str, Any] = dict(engine.shared())

    def persistent_load(self, pid: Any) -> Any:
        name = self._names[pid]
        found = self._known.get(name)
        if found is None:
            code = self._codes[name]
            if not isinstance(code, CodeType):
                raise pickle.UnpicklingError("not code")
            found = self._known[name] = self._engine.restore(name, code)
        return found

    def find_class(self, module: str, name: str) -> Any:
        # a name of oper8d's own (not one a module of it imported, nor a dotted path on
        # from there: ``oper8d.bundle.loader`` / ``os.system``)
        if module.startswith("oper8d.") and "." not in name:
            found = super().find_class(module, name)
            if str(getattr(found, "__module__", "")).startswith("oper8d."):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a bundle model")
