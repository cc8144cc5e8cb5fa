"""Helpers of the model cache tests (``test_bundle_model_cache*.py``): a small bundle
with an included file and a text template, the cache folder of a test, a count of the
compiles the model cache did not serve, and in-place edits that keep size and mtime."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from oper8d.bundle import compile as compile_module
from oper8d.cli.main import main

MAGIC = b"oper8d-bundle-model 1\n"

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "operators"
#: (example bundle, sample CR) of every example
SAMPLES = sorted(
    (bundle.name, cr.name)
    for bundle in EXAMPLES.iterdir()
    if (bundle / "operator.yaml").is_file()
    for cr in (bundle / "samples").glob("*.yaml")
)

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


def cache_files(cache: Path, magic: bytes) -> list[Path]:
    """The files in the cache folder of XDG_CACHE_HOME ``cache`` that start with ``magic``."""
    found = sorted((cache / "oper8d").glob("*.cache"))
    return [path for path in found if path.read_bytes().startswith(magic)]


def model_files(cache: Path) -> list[Path]:
    """The model cache's files (``bundle.modelcache``)."""
    return cache_files(cache, MAGIC)


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
