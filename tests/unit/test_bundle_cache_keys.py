"""The keys of the compile cache (``oper8d.bundle.cache``): equal inputs always find the
stored result, and an input that differs in any way (a value, a type, a file of oper8d)
never does."""

from __future__ import annotations

import copy
import marshal
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oper8d.bundle import cache
from oper8d.bundle.cache import _code_digest, data_key

_plain = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


def _rebuilt(value: object) -> object:
    """``value`` made again with fresh objects, strings interned (as a stored parse is)."""
    if isinstance(value, dict):
        return {sys.intern(str(k)): _rebuilt(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebuilt(v) for v in value]
    return value


@given(_plain)
def test_equal_data_has_one_key_however_it_was_built(data: object) -> None:
    key = data_key("operator ()", data)
    assert key is not None
    assert data_key("operator ()", copy.deepcopy(data)) == key
    assert data_key("operator ()", marshal.loads(marshal.dumps(data))) == key
    assert data_key("operator ()", _rebuilt(data)) == key
    shared = [data, data]  # one object twice: no reference in the key
    assert data_key("operator ()", shared) == data_key("operator ()", copy.deepcopy(shared))
    assert data_key("component ()", data) != key


@given(_plain, _plain)
def test_different_data_never_shares_a_key(a: object, b: object) -> None:
    if marshal.dumps(a, 0) != marshal.dumps(b, 0):  # (different, as marshal.loads shows)
        assert data_key("c", a) != data_key("c", b)


@pytest.mark.parametrize(
    "values",
    [
        [1, 1.0, True, "1", [1], (1,), {"1": 1}],
        [{1: "x"}, {"1": "x"}, {True: "x"}],
        [0, False, None, "", [], {}],
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],  # key order is part of the data
    ],
)
def test_values_that_differ_only_in_type_or_order_have_different_keys(
    values: list[object],
) -> None:
    keys = [data_key("check", v) for v in values]
    assert None not in keys
    assert len(set(keys)) == len(keys)


def test_data_marshal_cannot_hold_has_no_key() -> None:
    loop: list[object] = []
    loop.append(loop)
    assert data_key("check", {"a": object()}) is None
    assert data_key("check", loop) is None


# -- the digest of oper8d's own source ------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
#: a time when every file of a package copied now has long settled
LATER = time.time_ns() + 3600 * 10**9


def _package(tmp_path: Path) -> Path:
    """A copy of the oper8d files the digest covers."""
    package = tmp_path / "oper8d"
    for folder, suffix in cache._CODE:
        (package / folder).mkdir(parents=True, exist_ok=True)
        for source in (REPO / "oper8d" / folder).glob(f"*{suffix}"):
            shutil.copy2(source, package / folder / source.name)
    return package


def _same_size_edit(path: Path) -> None:
    """Change one byte of ``path`` in place and put its modification time back."""
    info = path.stat()
    data = bytearray(path.read_bytes())
    data[-2] = ord("#") if data[-2] != ord("#") else ord(" ")
    with open(path, "r+b") as stream:  # the same file (inode), written in place
        stream.write(bytes(data))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_a_file_changed_moments_ago_is_known_by_its_content(tmp_path: Path) -> None:
    package = _package(tmp_path)
    now = time.time_ns()
    before = _code_digest(package, now)
    assert before.startswith("content ")
    _same_size_edit(package / "bundle" / "compile.py")  # perhaps within one clock tick
    assert _code_digest(package, now) != before


def _rewrite(path: Path) -> None:
    """Replace ``path`` by a new file with the same text (as git and editors write)."""
    info = path.stat()
    new = path.with_name(path.name + ".new")
    new.write_bytes(path.read_bytes())
    os.replace(new, path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


CHANGES = {
    "edited, longer": lambda p: (p / "template" / "tree.py").write_text("# edited\n"),
    "modification time": lambda p: os.utime(p / "bundle" / "loader.py", ns=(0, 0)),
    "replaced by a new file": lambda p: _rewrite(p / "bundle" / "cache.py"),
    "a schema edited": lambda p: (p / "schemas" / "operator.schema.json").write_text("{}"),
    "a module added": lambda p: (p / "bundle" / "extra.py").write_text(""),
    "a module removed": lambda p: (p / "template" / "names.py").unlink(),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_any_change_to_settled_files_changes_their_status_digest(
    tmp_path: Path, change: str
) -> None:
    package = _package(tmp_path)
    before = _code_digest(package, LATER)
    assert before.startswith("status ")
    assert _code_digest(package, LATER) == before  # unchanged: the same, every time
    CHANGES[change](package)
    assert _code_digest(package, LATER) != before


def test_the_status_digest_covers_every_file_the_content_digest_reads(tmp_path: Path) -> None:
    package = _package(tmp_path)
    (package / "bundle" / "notes.txt").write_text("not source")
    (package / "bundle" / ".hidden.py").write_text("")
    before = _code_digest(package, LATER)
    (package / "bundle" / "notes.txt").write_text("still not source")
    (package / "bundle" / ".hidden.py").write_text("# neither")
    assert _code_digest(package, LATER) == before


def test_another_version_of_a_library_the_stored_checks_ran_changes_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "checker"
    package.mkdir()
    (package / "__init__.py").write_text("VERSION = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cache, "_LIBRARIES", ("checker", "not_installed_anywhere"))
    before = cache._libraries_status()
    assert before == cache._libraries_status()
    assert "checker" not in sys.modules  # known without importing it
    replacement = tmp_path / "new.py"  # as an installer does: a new file in its place
    replacement.write_text("VERSION = 2\n")
    replacement.replace(package / "__init__.py")
    assert cache._libraries_status() != before
