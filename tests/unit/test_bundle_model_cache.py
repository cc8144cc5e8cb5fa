"""The model cache (``oper8d.bundle.modelcache``): a warm load gives what a fresh compile
gives, byte for byte in ``oper8d render``; any change to a file the load read (its bytes,
or where a symlink leads) is seen even with the same size and modification time; a store
file that is corrupt, foreign or planted means a normal compile; a failing bundle is never
stored."""

from __future__ import annotations

import hashlib
import marshal
import os
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from benchmarks.gen import write_bundle
from oper8d.bundle import compile as compile_module
from oper8d.bundle import load_bundle
from oper8d.bundle import modelcache as modelcache_module
from oper8d.cli.main import main
from oper8d.errors import BundleError
from oper8d.limits import Limits

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "operators"
SAMPLES = sorted(
    (bundle.name, cr.name)
    for bundle in EXAMPLES.iterdir()
    if (bundle / "operator.yaml").is_file()
    for cr in (bundle / "samples").glob("*.yaml")
)
MAGIC = b"oper8d-bundle-model 1\n"

OPERATOR = """\
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata: {name: mc, version: 0.1.0}
controllers:
  - name: mc
    resource:
      group: demo.oper8d.io
      version: v1alpha1
      kind: Mc
      schema:
        type: object
        properties:
          size: {type: string, default: SCHEMA1}
    components:
      - name: inline
        resources:
          - name: config
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('inline') }}"}
              data: {marker: OPER1, size: "{{ spec.size }}"}
      - include: components/included.yaml
      - name: text
        resources:
          - name: config
            template: templates/text.yaml
"""
INCLUDED = """\
name: included
resources:
  - name: config
    object:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "{{ scoped_name('included') }}"}
      data: {marker: INCL1}
"""
TEXT = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ scoped_name('text') }}
data:
  marker: TEXT1
"""
CR = "apiVersion: demo.oper8d.io/v1alpha1\nkind: Mc\nmetadata: {name: one, namespace: default}\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache folder (``XDG_CACHE_HOME``) of this test, cache on."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    monkeypatch.delenv("OPER8D_NO_CACHE", raising=False)
    return folder


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """The bundle folders compiled (not served by the model cache) while the test ran."""
    seen: list[Path] = []
    original = compile_module.compile_bundle

    def counting(root: Path, *args: Any, **kw: Any) -> Any:
        seen.append(root)
        return original(root, *args, **kw)

    monkeypatch.setattr(compile_module, "compile_bundle", counting)
    yield seen


def small_bundle(tmp_path: Path) -> tuple[Path, Path]:
    bundle = tmp_path / "bundle"
    (bundle / "components").mkdir(parents=True)
    (bundle / "templates").mkdir()
    (bundle / "operator.yaml").write_text(OPERATOR, encoding="utf-8")
    (bundle / "components" / "included.yaml").write_text(INCLUDED, encoding="utf-8")
    (bundle / "templates" / "text.yaml").write_text(TEXT, encoding="utf-8")
    cr = tmp_path / "cr.yaml"
    cr.write_text(CR, encoding="utf-8")
    return bundle, cr


def render(bundle: Path, cr: Path, cache: Path | None) -> Result:
    """``oper8d render`` in-process; ``cache``: the XDG_CACHE_HOME, None: cache off."""
    env = {"XDG_CACHE_HOME": str(cache), "OPER8D_NO_CACHE": ""} if cache else {}
    if cache is None:
        env["OPER8D_NO_CACHE"] = "1"
    return CliRunner().invoke(main, ["render", str(bundle), "--cr", str(cr)], env=env)


def model_files(cache: Path) -> list[Path]:
    found = sorted((cache / "oper8d").glob("*.cache"))
    return [path for path in found if path.read_bytes().startswith(MAGIC)]


def same_size_edit(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` (as long) in place, then put the modification time back."""
    assert len(old) == len(new)
    info = path.stat()
    text = path.read_text(encoding="utf-8")
    assert old in text
    with open(path, "r+b") as stream:  # the same file (inode), written in place
        stream.write(text.replace(old, new).encode("utf-8"))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size


# -- the same result --------------------------------------------------------------------


def assert_identical(bundle: Path, cr: Path, cache: Path, compiles: list[Path]) -> None:
    off = render(bundle, cr, None)
    cold = render(bundle, cr, cache)
    compiled = len(compiles)
    warm = render(bundle, cr, cache)

    assert off.exit_code == 0, off.output
    assert (cold.stdout_bytes, cold.stderr) == (off.stdout_bytes, off.stderr)
    assert (warm.stdout_bytes, warm.stderr) == (off.stdout_bytes, off.stderr)
    assert len(model_files(cache)) == 1
    assert len(compiles) == compiled  # the warm render was served by the model cache


@pytest.mark.parametrize(("bundle", "sample"), SAMPLES)
def test_a_render_of_an_example_is_the_same_off_cold_and_warm(
    bundle: str, sample: str, cache: Path, compiles: list[Path]
) -> None:
    assert_identical(EXAMPLES / bundle, EXAMPLES / bundle / "samples" / sample, cache, compiles)


def test_a_render_of_the_generated_bundle_is_the_same_off_cold_and_warm(
    tmp_path: Path, cache: Path, compiles: list[Path]
) -> None:
    generated = write_bundle(tmp_path / "bundle", components=12)
    cr = tmp_path / "cr.yaml"
    cr.write_text(yaml.safe_dump(generated.cr), encoding="utf-8")
    assert_identical(generated.path, cr, cache, compiles)


RICH = """\
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata: {name: rich, version: 0.1.0, description: every kind of template}
controllers:
  - name: rich
    resource:
      group: demo.oper8d.io
      version: v1alpha1
      kind: Rich
      schema:
        type: object
        properties:
          workers: {type: array, items: {type: string}, default: [a, b]}
          label: {type: string, default: web}
    config: {team: blue}
    reads:
      - {apiVersion: v1, kind: ConfigMap, names: [settings]}
    components:
      - name: keyed
        resources:
          - name: config
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('keyed') }}"}
              data:
                "{{ config.team }}-key": "{{ spec.label | upper }}"
                found: "{{ lookup('v1', 'ConfigMap', 'settings') is none }}"
        patches:
          - target: {resource: config}
            type: strategicMerge
            patch: {metadata: {labels: {tier: "{{ spec.label }}"}}}
      - name: workers
        forEach: {items: spec.workers, as: worker, key: worker, maxItems: 5}
        dependsOn: [keyed]
        resources:
          - name: config
            object:
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ scoped_name('w-' ~ worker) }}"}
              data: {worker: "{{ worker }}", big: "{{ 6 * 7 }}"}
            readyWhen:
              - expr: "obj.data.worker is defined"
    hooks:
      afterVerify:
        - name: announce
          check: "live('keyed.config') is not none"
          resources:
            - name: cm
              object:
                apiVersion: v1
                kind: ConfigMap
                metadata: {name: "{{ scoped_name('announce') }}"}
    status:
      workers: "{{ spec.workers | length }}"
      team: config.team
"""


def test_a_render_of_a_bundle_with_every_kind_of_template_is_the_same_off_cold_and_warm(
    tmp_path: Path, cache: Path, compiles: list[Path]
) -> None:
    """Templated keys (the general plan), patches, forEach, hooks, reads and status."""
    bundle = tmp_path / "rich"
    bundle.mkdir()
    (bundle / "operator.yaml").write_text(RICH, encoding="utf-8")
    cr = tmp_path / "cr.yaml"
    cr.write_text(CR.replace("kind: Mc", "kind: Rich"), encoding="utf-8")
    assert_identical(bundle, cr, cache, compiles)
    output = render(bundle, cr, cache).stdout
    assert "blue-key: WEB" in output and "tier: web" in output and "one-announce" in output


def test_a_stored_model_names_the_folder_it_was_loaded_by(
    tmp_path: Path, cache: Path, compiles: list[Path]
) -> None:
    bundle, _cr = small_bundle(tmp_path)
    first = load_bundle(bundle / "operator.yaml")
    again = load_bundle(bundle)

    assert len(compiles) == 1
    assert first.root == again.root == bundle
    assert again.controllers[0].resource == first.controllers[0].resource
    assert [c.name for c in again.controllers[0].components] == ["inline", "included", "text"]


@pytest.mark.parametrize("bundle", sorted(p.name for p in EXAMPLES.iterdir()))
def test_every_file_a_compile_opens_in_the_bundle_is_a_recorded_read(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, bundle: str
) -> None:
    """What the model cache checks again is all the compile learned from the bundle."""
    real = (EXAMPLES / bundle).resolve()
    opened: list[str] = []
    original = os.open

    def recording(path: Any, *args: Any, **kw: Any) -> int:
        if str(path).startswith(str(real) + os.sep):
            opened.append(str(path))
        return original(path, *args, **kw)

    saved: list[list[tuple[str, str, bytes]]] = []
    original_save = modelcache_module.ModelSlot.save

    def saving(self: Any, bundle: Any, engine: Any, reads: Any) -> None:
        saved.append(list(reads))
        original_save(self, bundle, engine, reads)

    monkeypatch.setattr(os, "open", recording)
    monkeypatch.setattr(modelcache_module.ModelSlot, "save", saving)
    load_bundle(EXAMPLES / bundle)

    (reads,) = saved
    assert sorted(opened) == sorted(path for _relpath, path, _digest in reads)
    assert reads[0][0] == "operator.yaml"


# -- invalidation -----------------------------------------------------------------------

EDITS = {
    "operator.yaml": ("operator.yaml", "OPER1", "OPER2"),
    "an included file": ("components/included.yaml", "INCL1", "INCL2"),
    "a text template": ("templates/text.yaml", "TEXT1", "TEXT2"),
    "the CR's schema": ("operator.yaml", "SCHEMA1", "SCHEMA2"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_same_size_edit_with_the_old_modification_time_is_seen(
    tmp_path: Path, cache: Path, compiles: list[Path], edit: str
) -> None:
    bundle, cr = small_bundle(tmp_path)
    file, old, new = EDITS[edit]
    assert old in render(bundle, cr, cache).stdout
    render(bundle, cr, cache)  # served by the model cache
    compiled = len(compiles)

    same_size_edit(bundle / file, old, new)
    result = render(bundle, cr, cache)

    assert len(compiles) == compiled + 1
    assert new in result.stdout and old not in result.stdout
    assert result.stdout_bytes == render(bundle, cr, None).stdout_bytes


def test_a_symlink_that_leads_elsewhere_is_seen(
    tmp_path: Path, cache: Path, compiles: list[Path]
) -> None:
    bundle, cr = small_bundle(tmp_path)
    templates = bundle / "templates"
    (templates / "one.yaml").write_text(TEXT, encoding="utf-8")
    (templates / "two.yaml").write_text(TEXT.replace("TEXT1", "TEXT2"), encoding="utf-8")
    (templates / "text.yaml").unlink()
    (templates / "text.yaml").symlink_to("one.yaml")
    assert "TEXT1" in render(bundle, cr, cache).stdout

    (templates / "text.yaml").unlink()
    (templates / "text.yaml").symlink_to("two.yaml")
    result = render(bundle, cr, cache)

    assert "TEXT2" in result.stdout and "TEXT1" not in result.stdout
    assert len(compiles) == 2


def test_a_symlinked_folder_that_leads_elsewhere_is_compiled_again(
    tmp_path: Path, cache: Path, compiles: list[Path]
) -> None:
    """The same bytes found at another real path: the load is not the same observation."""
    bundle, cr = small_bundle(tmp_path)
    (bundle / "templates").rename(bundle / "first")
    (bundle / "second").mkdir()
    (bundle / "second" / "text.yaml").write_text(TEXT, encoding="utf-8")
    (bundle / "templates").symlink_to("first")
    before = render(bundle, cr, cache)
    render(bundle, cr, cache)
    assert len(compiles) == 1

    (bundle / "templates").unlink()
    (bundle / "templates").symlink_to("second")
    after = render(bundle, cr, cache)

    assert len(compiles) == 2
    assert after.stdout_bytes == before.stdout_bytes


def test_a_symlink_that_now_leaves_the_bundle_fails_the_load(
    tmp_path: Path, cache: Path, compiles: list[Path]
) -> None:
    bundle, _cr = small_bundle(tmp_path)
    outside = tmp_path / "outside.yaml"
    outside.write_text(TEXT, encoding="utf-8")
    load_bundle(bundle)
    load_bundle(bundle)
    assert len(compiles) == 1

    (bundle / "templates" / "text.yaml").unlink()
    (bundle / "templates" / "text.yaml").symlink_to(outside)

    with pytest.raises(BundleError, match="outside the bundle"):
        load_bundle(bundle)


def test_another_key_is_a_miss(
    tmp_path: Path, cache: Path, compiles: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other limits, or other oper8d source (its bundle schemas, say): compiled again."""
    bundle, _cr = small_bundle(tmp_path)
    load_bundle(bundle)
    load_bundle(bundle, Limits(nesting_depth=50))
    assert len(compiles) == 2
    load_bundle(bundle)
    assert len(compiles) == 2

    from oper8d.bundle import cache as cache_module

    monkeypatch.setattr(cache_module, "_code_digest", lambda: "status another checkout")
    load_bundle(bundle)
    assert len(compiles) == 3


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
    "not a model": lambda p: resign(p, marshal.dumps((*stored(p)[:3], pickle.dumps([1, 2])))),
    "a template's code missing": lambda p: resign(
        p, marshal.dumps((*stored(p)[:2], {}, stored(p)[3]))
    ),
    "a foreign class": lambda p: resign(
        p, marshal.dumps((*stored(p)[:3], pickle.dumps(_Planted())))
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
    unpickler = modelcache_module._Unpickler(b"", engine, {})
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
    monkeypatch.setattr(modelcache_module.TemplateEngine, "origin", lambda self, template: None)
    load_bundle(bundle)
    assert model_files(cache) == []
