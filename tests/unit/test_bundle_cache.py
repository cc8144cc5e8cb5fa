"""The compile cache (``oper8d.bundle.cache``): a render with it is byte-identical to one
without, editing any bundle file is seen, a store file that is corrupt, foreign or writable
by others is ignored, and error positions do not move."""

from __future__ import annotations

import gc
import hashlib
import marshal
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2 import Environment

from benchmarks.gen import write_bundle
from oper8d.bundle import load_bundle
from oper8d.cachefiles import cache_dir
from oper8d.cli.main import main
from oper8d.errors import BundleError

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "operators"
#: (example bundle, sample CR) of every example
SAMPLES = sorted(
    (bundle.name, cr.name)
    for bundle in EXAMPLES.iterdir()
    if (bundle / "operator.yaml").is_file()
    for cr in (bundle / "samples").glob("*.yaml")
)


def render(bundle: Path, cr: Path, cache: Path | None) -> Result:
    """``oper8d render`` in-process; ``cache``: the XDG_CACHE_HOME, None: cache off."""
    env = {"XDG_CACHE_HOME": str(cache), "OPER8D_NO_CACHE": ""} if cache else {}
    if cache is None:
        env["OPER8D_NO_CACHE"] = "1"
    return CliRunner().invoke(main, ["render", str(bundle), "--cr", str(cr)], env=env)


def store_files(cache: Path) -> list[Path]:
    """The compile cache's store files in the cache folder of XDG_CACHE_HOME ``cache``."""
    return sorted((cache / "oper8d").glob("*.cache"))


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the templates Jinja generated code for while the test ran."""
    seen: list[str] = []
    original = Environment.compile

    def counting(self: Environment, source: object, name: str | None = None, **kw: object):  # type: ignore[no-untyped-def]
        seen.append(str(name))
        return original(self, source, name, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Environment, "compile", counting)
    yield seen


def generated(tmp_path: Path, components: int = 4) -> tuple[Path, Path]:
    bundle = write_bundle(tmp_path / "bundle", components=components)
    cr = tmp_path / "cr.yaml"
    cr.write_text(yaml.safe_dump(bundle.cr), encoding="utf-8")
    return bundle.path, cr


# -- byte-identical output ------------------------------------------------------------------


@pytest.mark.parametrize(("bundle", "sample"), SAMPLES)
def test_a_cached_render_of_an_example_is_byte_identical_to_an_uncached_one(
    bundle: str, sample: str, tmp_path: Path, compiles: list[str]
) -> None:
    path, cr = EXAMPLES / bundle, EXAMPLES / bundle / "samples" / sample
    uncached = render(path, cr, None)
    cold = render(path, cr, tmp_path)
    compiled_cold = len(compiles)
    warm = render(path, cr, tmp_path)

    assert uncached.exit_code == 0, uncached.output
    assert cold.stdout_bytes == uncached.stdout_bytes
    assert warm.stdout_bytes == uncached.stdout_bytes
    assert warm.stderr == uncached.stderr
    assert compiled_cold > 0
    assert len(compiles) == compiled_cold  # the warm render compiled no template
    assert len(store_files(tmp_path)) == 1


def test_a_cached_render_of_the_generated_bundle_is_byte_identical(
    tmp_path: Path, compiles: list[str]
) -> None:
    bundle, cr = generated(tmp_path, components=50)
    uncached = render(bundle, cr, None)
    render(bundle, cr, tmp_path / "cache")
    before = len(compiles)
    warm = render(bundle, cr, tmp_path / "cache")

    assert uncached.exit_code == 0, uncached.output
    assert warm.stdout_bytes == uncached.stdout_bytes
    assert len(compiles) == before


def test_the_cache_folder_is_private_and_its_files_are_written_whole(tmp_path: Path) -> None:
    bundle, cr = generated(tmp_path)
    render(bundle, cr, tmp_path / "cache")

    folder = tmp_path / "cache" / "oper8d"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    (store,) = store_files(tmp_path / "cache")
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    # no temporary file left (besides the stores: the parsed Kubernetes schemas)
    schemas = "k8s-v1.34.4.json.gz.marshal"
    assert sorted(p.name for p in folder.iterdir()) == sorted([store.name, schemas])


def test_oper8d_no_cache_neither_reads_nor_writes(tmp_path: Path) -> None:
    bundle, cr = generated(tmp_path)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "OPER8D_NO_CACHE": "1"}
    result = CliRunner().invoke(main, ["render", str(bundle), "--cr", str(cr)], env=env)

    assert result.exit_code == 0, result.output
    assert not (tmp_path / "cache").exists()
    assert cache_dir({"OPER8D_NO_CACHE": "1", "HOME": "/home/x"}) is None
    assert cache_dir({"HOME": "/home/x"}) == Path("/home/x/.cache/oper8d")
    assert cache_dir({"HOME": "/home/x", "XDG_CACHE_HOME": "relative"}) == Path(
        "/home/x/.cache/oper8d"
    )


# -- edits are seen -------------------------------------------------------------------------

#: (pattern, replacement with {n}) edits that keep a generated bundle valid; each changes
#: what the edited file renders
EDITS = (
    (r"memory: 128Mi", "memory: {n}Mi"),
    (r"cpu: 100m", "cpu: {n}m"),
    (r"\{\{ spec\.port \}\}", "{{{{ spec.port + {n} }}}}"),
    (r"containerPort: \{\{ spec\.port \}\}", "containerPort: {n}"),
)


def _bundle_files(bundle: Path) -> list[Path]:
    """operator.yaml and the text templates: every file an edit of EDITS applies to."""
    return sorted(
        p
        for p in bundle.rglob("*.yaml")
        if any(re.search(pattern, p.read_text(encoding="utf-8")) for pattern, _r in EDITS)
    )


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_editing_any_bundle_file_is_seen_by_the_next_cached_render(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp = tmp_path_factory.mktemp("edit")
    bundle, cr = generated(tmp, components=2)
    cache = tmp / "cache"
    render(bundle, cr, cache)  # fill the cache
    files = _bundle_files(bundle)
    target = data.draw(st.sampled_from(files), label="file")
    text = target.read_text(encoding="utf-8")
    edits = [(p, r) for p, r in EDITS if re.search(p, text)]
    pattern, replacement = data.draw(st.sampled_from(edits), label="edit")
    n = data.draw(st.integers(min_value=1, max_value=999), label="n")
    target.write_text(re.sub(pattern, replacement.format(n=n), text, count=1), encoding="utf-8")

    warm = render(bundle, cr, cache)
    fresh = render(bundle, cr, None)

    assert fresh.exit_code == 0, fresh.output
    assert warm.stdout_bytes == fresh.stdout_bytes


def test_an_edited_template_is_compiled_again_and_nothing_else(
    tmp_path: Path, compiles: list[str]
) -> None:
    bundle, cr = generated(tmp_path)
    cache = tmp_path / "cache"
    render(bundle, cr, cache)
    template = bundle / "templates" / "c001.yaml"
    template.write_text(template.read_text().replace("cpu: 100m", "cpu: 300m"))
    compiles.clear()

    result = render(bundle, cr, cache)

    assert "cpu: 300m" in result.stdout
    assert compiles == ["templates/c001.yaml"]


def test_a_warm_load_reads_the_parse_of_each_unchanged_file_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oper8d.bundle import fastyaml

    bundle, cr = generated(tmp_path)
    component = bundle / "component.yaml"
    extra = (
        "name: extra\nresources:\n- name: config\n  object:\n    apiVersion: v1\n"
        "    kind: ConfigMap\n    metadata: {name: \"{{ scoped_name('extra') }}\"}\n"
    )
    component.write_text(extra, encoding="utf-8")
    operator = bundle / "operator.yaml"
    text = operator.read_text(encoding="utf-8")
    operator.write_text(
        text.replace("  components:\n", "  components:\n  - include: component.yaml\n", 1),
        encoding="utf-8",
    )
    cache = tmp_path / "cache"
    cold = render(bundle, cr, cache)
    parses: list[int] = []
    original = fastyaml._build

    def counting(text: str, max_depth: int) -> fastyaml.Parsed:
        parses.append(text)
        return original(text, max_depth)

    monkeypatch.setattr(fastyaml, "_build", counting)

    warm = render(bundle, cr, cache)
    assert cold.exit_code == 0, cold.output
    assert (warm.exit_code, warm.stdout) == (0, cold.stdout)
    # neither operator.yaml nor the included file: the CR alone (a CR's parse is not kept)
    assert parses == [cr.read_text(encoding="utf-8")]
    component.write_text(extra + "    data: {edited: 'yes'}\n", encoding="utf-8")
    edited = render(bundle, cr, cache)
    assert edited.exit_code == 0, edited.output
    assert "edited: 'yes'" in edited.stdout
    assert parses[1:] == [component.read_text(encoding="utf-8"), parses[0]]  # and the CR
    assert edited.stdout == render(bundle, cr, None).stdout


# -- store files that must not be used ------------------------------------------------------


def _planted(tmp_path: Path, bundle: Path) -> Path:
    """Fill the cache, then replace every stored template's code with code that prints
    PLANTED: what a store file written by someone else could do."""
    cache = tmp_path / "cache"
    env_cache = {"XDG_CACHE_HOME": str(cache), "OPER8D_NO_CACHE": ""}
    load = CliRunner().invoke(main, ["validate", str(bundle)], env=env_cache)
    assert load.exit_code == 0, load.output
    (path,) = store_files(cache)
    body = path.read_bytes()
    magic_end = body.index(b"\n") + 1
    key, entries, passed, parses = marshal.loads(body[magic_end + 32 :])
    evil = Environment().compile("PLANTED", raw=False)
    planted = {k: (False, refs, evil) for k, (_native, refs, _code) in entries.items()}
    payload = marshal.dumps((key, planted, passed, parses))
    path.write_bytes(body[:magic_end] + hashlib.sha256(payload).digest() + payload)
    return path


def test_a_store_file_this_user_wrote_is_trusted(tmp_path: Path) -> None:
    """The control for the tests below: the planted file is used when nothing is wrong
    with its owner or mode, so those tests fail if the checks are removed."""
    bundle, cr = generated(tmp_path)
    _planted(tmp_path, bundle)

    result = render(bundle, cr, tmp_path / "cache")

    assert "PLANTED" in result.output
    assert result.output != render(bundle, cr, None).output


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_store_file_others_can_write_is_ignored(tmp_path: Path, mode: int) -> None:
    bundle, cr = generated(tmp_path)
    path = _planted(tmp_path, bundle)
    path.chmod(mode)

    result = render(bundle, cr, tmp_path / "cache")

    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == render(bundle, cr, None).stdout_bytes


@pytest.mark.skipif(os.getuid() != 0, reason="changing a file's owner needs root")
def test_a_store_file_of_another_user_is_ignored(tmp_path: Path) -> None:
    bundle, cr = generated(tmp_path)
    path = _planted(tmp_path, bundle)
    os.chown(path, 12345, 12345)

    result = render(bundle, cr, tmp_path / "cache")

    assert result.stdout_bytes == render(bundle, cr, None).stdout_bytes


def test_a_cache_folder_others_can_enter_is_not_used(tmp_path: Path) -> None:
    bundle, cr = generated(tmp_path)
    path = _planted(tmp_path, bundle)
    path.parent.chmod(0o755)

    result = render(bundle, cr, tmp_path / "cache")

    assert result.stdout_bytes == render(bundle, cr, None).stdout_bytes


def test_a_symlinked_store_file_is_ignored(tmp_path: Path) -> None:
    bundle, cr = generated(tmp_path)
    path = _planted(tmp_path, bundle)
    elsewhere = tmp_path / "elsewhere.cache"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)

    result = render(bundle, cr, tmp_path / "cache")

    assert result.stdout_bytes == render(bundle, cr, None).stdout_bytes


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b[:-1] + bytes([b[-1] ^ 1]),  # one bit flipped
        lambda b: b"",  # empty
        lambda b: b"not a cache file at all",
        lambda b: re.sub(rb"^oper8d-compile-cache \d+", b"oper8d-compile-cache 99", b),
    ],
    ids=["truncated", "bit-flip", "empty", "garbage", "other-format"],
)
def test_a_corrupt_store_file_is_ignored_and_rewritten(tmp_path: Path, damage: object) -> None:
    bundle, cr = generated(tmp_path)
    cache = tmp_path / "cache"
    expected = render(bundle, cr, None).stdout_bytes
    render(bundle, cr, cache)
    (path,) = store_files(cache)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]

    damaged = render(bundle, cr, cache)
    again = render(bundle, cr, cache)

    assert damaged.exit_code == 0, damaged.output
    assert damaged.stdout_bytes == expected
    assert again.stdout_bytes == expected


def test_a_store_file_with_a_valid_checksum_but_another_key_is_ignored(tmp_path: Path) -> None:
    bundle, cr = generated(tmp_path)
    path = _planted(tmp_path, bundle)
    body = path.read_bytes()
    magic_end = body.index(b"\n") + 1
    _key, entries, passed, parses = marshal.loads(body[magic_end + 32 :])
    payload = marshal.dumps(("another bundle\0another version", entries, passed, parses))
    path.write_bytes(body[:magic_end] + hashlib.sha256(payload).digest() + payload)

    result = render(bundle, cr, tmp_path / "cache")

    assert result.stdout_bytes == render(bundle, cr, None).stdout_bytes


# -- error positions --------------------------------------------------------------------------

_FAILING_TEXT = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ scoped_name('broken') }}
data:
  a: "1"
  b: {{ spec.missing.deeper }}
"""


def test_render_errors_name_the_same_file_line_and_column_with_the_cache(tmp_path: Path) -> None:
    bundle, cr = generated(tmp_path)
    (bundle / "templates" / "c001.yaml").write_text(_FAILING_TEXT, encoding="utf-8")
    operator = bundle / "operator.yaml"
    operator.write_text(
        operator.read_text().replace("{{ spec.replicas }}", "{{ spec.replicas.nope }}", 1)
    )
    cache = tmp_path / "cache"

    uncached, cold, warm = (render(bundle, cr, c) for c in (None, cache, cache))

    assert uncached.exit_code == 1
    assert re.search(r"\S+:\d+(:\d+)?: ", uncached.stderr), uncached.stderr
    assert cold.stderr == uncached.stderr
    assert warm.stderr == uncached.stderr


@pytest.mark.parametrize("file", ["templates/c001.yaml", "operator.yaml"])
def test_load_problems_are_reported_at_the_same_positions_with_the_cache(
    tmp_path: Path, file: str
) -> None:
    bundle, cr = generated(tmp_path)
    cache = tmp_path / "cache"
    render(bundle, cr, cache)  # every good template is stored
    path = bundle / file
    path.write_text(path.read_text().replace("{{ spec.port }}", "{{ spec.port + }}", 1))

    uncached, warm = render(bundle, cr, None), render(bundle, cr, cache)

    assert uncached.exit_code == 1
    assert "template syntax error" in uncached.stderr
    assert warm.stderr == uncached.stderr


def test_a_bundle_with_problems_is_reported_the_same_from_load_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle, _cr = generated(tmp_path)
    operator = bundle / "operator.yaml"
    operator.write_text(
        operator.read_text().replace("- name: c000\n", "- name: c000\n    bogus: 1\n")
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("OPER8D_NO_CACHE", raising=False)
    with pytest.raises(BundleError) as first:
        load_bundle(bundle)
    with pytest.raises(BundleError) as second:
        load_bundle(bundle)

    assert "bogus" in str(first.value)
    assert [str(p) for p in first.value.problems] == [str(p) for p in second.value.problems]
    assert store_files(tmp_path / "cache")  # what compiled was kept, the problems were not


# -- garbage collection -------------------------------------------------------------------


@pytest.mark.parametrize("enabled", [True, False])
def test_loads_and_offline_runs_leave_garbage_collection_as_they_found_it(
    tmp_path: Path, enabled: bool
) -> None:
    from oper8d.offline import reconcile_offline

    bundle, cr = generated(tmp_path, components=2)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "operator.yaml").write_text("apiVersion: [\n", encoding="utf-8")
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        loaded = load_bundle(bundle, cache=False)
        assert gc.isenabled() is enabled
        with pytest.raises(BundleError):
            load_bundle(broken, cache=False)
        assert gc.isenabled() is enabled
        run = reconcile_offline(loaded, yaml.safe_load(cr.read_text()))
        assert run.ready
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
