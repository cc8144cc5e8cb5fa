"""The model cache (``oper8d.bundle.modelcache``) when it is off, damaged or planted, and
with bundles that fail: a store file that is corrupt, foreign or holds anything but
oper8d's own classes means a normal compile; a failing bundle is never stored."""

from __future__ import annotations

import hashlib
import marshal
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from model_cache_bundles import (
    MAGIC,
    cache,
    compiles,
    model_files,
    render,
    same_size_edit,
    small_bundle,
)

from oper8d.bundle import load_bundle
from oper8d.bundle import modelcache as modelcache_module
from oper8d.errors import BundleError
from oper8d.limits import Limits

__all__ = ["cache", "compiles"]  # (fixtures)


# -- a cache that is off, damaged or planted --------------------------------------------


def test_cache_off_neither_reads_nor_writes_a_model(
    tmp_path: Path, cache: Path, compiles: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle, _cr = small_bundle(tmp_path)
    load_bundle(bundle, cache=False)
    assert model_files(cache) == []
    load_bundle(bundle)
    load_bundle(bundle, cache=False)
    monkeypatch.setenv("OPER8D_NO_CACHE", "1")
    load_bundle(bundle)
    assert len(compiles) == 4


def resign(path: Path, body: bytes) -> None:
    """Write ``body`` as a model file with a valid checksum (what cachefiles checks)."""
    path.write_bytes(MAGIC + hashlib.sha256(body).digest() + body)


def stored(path: Path) -> tuple[Any, ...]:
    data = path.read_bytes()
    result = marshal.loads(data[len(MAGIC) + 32 :])
    assert isinstance(result, tuple)
    return result


class _Planted:
    def __reduce__(self) -> tuple[Any, ...]:
        return print, ("PLANTED",)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "a flipped byte": lambda p: p.write_bytes(p.read_bytes()[:-1] + b"\0"),
    "another magic": lambda p: p.write_bytes(b"oper8d-bundle-model 0\n" + p.read_bytes()[22:]),
    "empty": lambda p: p.write_bytes(b""),
    "writable by others": lambda p: p.chmod(0o666),
    "not marshal data": lambda p: resign(p, b"\xff not marshal"),
    "another key": lambda p: resign(p, marshal.dumps(("other", *stored(p)[1:]))),
    "not a model": lambda p: resign(p, marshal.dumps((*stored(p)[:4], pickle.dumps([1, 2])))),
    "a template's code missing": lambda p: resign(
        p, marshal.dumps((*stored(p)[:3], {}, stored(p)[4]))
    ),
    "a foreign class": lambda p: resign(
        p, marshal.dumps((*stored(p)[:4], pickle.dumps(_Planted())))
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_foreign_model_file_means_a_normal_compile(
    tmp_path: Path,
    cache: Path,
    compiles: list[Path],
    damage: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundle, cr = small_bundle(tmp_path)
    fresh = render(bundle, cr, None)
    render(bundle, cr, cache)
    (path,) = model_files(cache)
    DAMAGE[damage](path)

    result = render(bundle, cr, cache)

    assert len(compiles) == 3  # uncached, cold, and again
    assert result.stdout_bytes == fresh.stdout_bytes
    assert "PLANTED" not in result.output + capsys.readouterr().out
    assert len(model_files(cache)) == 1  # written again, whole


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("builtins", "print"),
        ("os", "system"),
        ("oper8d.bundle.loader", "os"),  # a module oper8d imports
        ("oper8d.bundle.loader", "os.system"),  # a dotted path from one
        ("oper8d.bundle.loader", "hashlib"),
        ("oper8d.template.compiled", "Template"),  # Jinja's, imported by oper8d
    ],
)
def test_the_model_loader_refuses_anything_but_oper8d_names(module: str, name: str) -> None:
    engine = modelcache_module.TemplateEngine(Limits())
    unpickler = modelcache_module._Unpickler(b"", engine, [], {})
    assert unpickler.find_class("oper8d.errors", "SourcePos").__name__ == "SourcePos"
    with pytest.raises(pickle.UnpicklingError):
        unpickler.find_class(module, name)


def test_a_resigned_model_file_is_served(tmp_path: Path, cache: Path, compiles: list[Path]) -> None:
    """The control of the test above: re-signing alone does not make a file unusable."""
    bundle, cr = small_bundle(tmp_path)
    fresh = render(bundle, cr, None)
    render(bundle, cr, cache)
    (path,) = model_files(cache)
    resign(path, marshal.dumps(stored(path)))

    result = render(bundle, cr, cache)

    assert len(compiles) == 2  # uncached, cold
    assert result.stdout_bytes == fresh.stdout_bytes


def test_the_model_file_belongs_to_its_bundle_folder(
    tmp_path: Path, cache: Path, compiles: list[Path]
) -> None:
    """A copy of a bundle elsewhere is another key (its real path)."""
    bundle, _cr = small_bundle(tmp_path)
    load_bundle(bundle)
    copy = tmp_path / "copy"
    bundle.rename(copy)
    load_bundle(copy)
    assert len(compiles) == 2
    assert len(model_files(cache)) == 2


# -- failing bundles --------------------------------------------------------------------


def test_a_failing_bundle_is_never_stored(
    tmp_path: Path, cache: Path, compiles: list[Path]
) -> None:
    bundle, _cr = small_bundle(tmp_path)
    same_size_edit(bundle / "templates" / "text.yaml", "('text') }}", "('text') }{")
    for _ in range(2):
        with pytest.raises(BundleError) as failed:
            load_bundle(bundle)
        assert failed.value.problems[0].pos is not None
        assert failed.value.problems[0].pos.file == "templates/text.yaml"
    assert len(compiles) == 2
    assert model_files(cache) == []


def test_a_bundle_that_breaks_after_it_was_stored_fails(
    tmp_path: Path, cache: Path, compiles: list[Path]
) -> None:
    bundle, _cr = small_bundle(tmp_path)
    load_bundle(bundle)
    load_bundle(bundle)
    same_size_edit(bundle / "components" / "included.yaml", "name: included", "name: 'include")

    with pytest.raises(BundleError):
        load_bundle(bundle)
    (bundle / "components" / "included.yaml").unlink()
    with pytest.raises(BundleError, match="not found"):
        load_bundle(bundle)
    assert len(compiles) == 3


def test_a_model_is_not_stored_when_it_cannot_be_pickled(
    tmp_path: Path, cache: Path, compiles: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template the engine did not make (nothing it could store): no file, no error."""
    bundle, _cr = small_bundle(tmp_path)
    monkeypatch.setattr(modelcache_module.TemplateEngine, "made", lambda self: [])
    load_bundle(bundle)
    assert model_files(cache) == []
