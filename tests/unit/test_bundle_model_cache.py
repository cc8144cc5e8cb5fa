"""The model cache (``oper8d.bundle.modelcache``): a warm load gives what a fresh compile
gives, byte for byte in ``oper8d render``, and any change to a file the load read (its
bytes, or where a symlink leads) is seen even with the same size and modification time.
Damaged files and failing bundles: ``test_bundle_model_cache_trust.py``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from model_cache_bundles import (
    CR,
    EXAMPLES,
    SAMPLES,
    TEXT,
    cache,
    compiles,
    model_files,
    render,
    same_size_edit,
    small_bundle,
)

from benchmarks.gen import write_bundle
from oper8d.bundle import load_bundle
from oper8d.bundle import modelcache as modelcache_module
from oper8d.errors import BundleError
from oper8d.limits import Limits

__all__ = ["cache", "compiles"]  # (fixtures)

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
      - name: first
        resources:
          - {name: text, template: templates/shared.yaml}
      - name: second
        resources:
          - {name: text, template: templates/shared.yaml}
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
    """Templated keys (the general plan), patches, forEach, hooks, reads, status, and a
    text template two resources use."""
    bundle = tmp_path / "rich"
    bundle.mkdir()
    (bundle / "operator.yaml").write_text(RICH, encoding="utf-8")
    (bundle / "templates").mkdir()
    shared = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ scoped_name(component) }}\n"
    (bundle / "templates" / "shared.yaml").write_text(shared, encoding="utf-8")
    cr = tmp_path / "cr.yaml"
    cr.write_text(CR.replace("kind: Mc", "kind: Rich"), encoding="utf-8")
    assert_identical(bundle, cr, cache, compiles)
    output = render(bundle, cr, cache).stdout
    assert "blue-key: WEB" in output and "tier: web" in output and "one-announce" in output
    assert "name: one-first" in output and "name: one-second" in output


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
