"""The rules for files kept between processes (``oper8d.cachefiles``) and the ``oper8d``
process's use of them: nothing is waited on, made or left where it should not be."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oper8d.cachefiles import cache_dir, private_folder, read_private, write_private
from oper8d.cli import startup_code
from oper8d.cli.startup_code import reused_startup_code

REPO = Path(__file__).resolve().parents[2]
FANOUT = REPO / "examples" / "operators" / "fanout"
MAGIC = b"test-store 1\n"


def oper8d(
    *args: str, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The real ``oper8d`` process (the stores are used by its entry only)."""
    full = {k: v for k, v in os.environ.items() if k not in ("OPER8D_NO_CACHE", "XDG_CACHE_HOME")}
    full.update(env)
    command = [sys.executable, "-m", "oper8d", *args]
    return subprocess.run(
        command, env=full, capture_output=True, text=True, timeout=timeout, cwd=REPO, check=False
    )


@pytest.mark.parametrize("suffix", [".code", ".cache"], ids=["dataclass-store", "compile-cache"])
def test_a_fifo_in_place_of_a_store_file_is_ignored_not_waited_on(
    tmp_path: Path, suffix: str
) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    assert oper8d("validate", str(FANOUT), env=env).returncode == 0
    (store,) = (tmp_path / "oper8d").glob(f"*{suffix}")
    store.unlink()
    os.mkfifo(store, 0o600)
    done = oper8d("validate", str(FANOUT), env=env, timeout=30)  # hung before
    assert done.returncode == 0, done.stderr
    assert read_private(store, MAGIC) is None


def test_a_home_folder_that_does_not_exist_is_not_made(tmp_path: Path) -> None:
    home = tmp_path / "nonexistent"
    done = oper8d("validate", str(FANOUT), env={"HOME": str(home), "XDG_CACHE_HOME": ""})
    assert done.returncode == 0, done.stderr
    assert not home.exists()
    folder = cache_dir({"HOME": str(home)})
    assert folder == home / ".cache" / "oper8d"
    with pytest.raises(FileNotFoundError):
        private_folder(folder)
    home.mkdir()  # an existing home gets ~/.cache/oper8d, private
    assert private_folder(folder)
    assert (folder.stat().st_mode & 0o777, folder.parent.stat().st_mode & 0o777) == (0o700, 0o700)


def test_what_a_killed_writer_left_is_removed_by_a_later_write(tmp_path: Path) -> None:
    store = tmp_path / "x.code"
    left = tmp_path / ".x.code.999.abcd1234.tmp"  # killed before its rename, long ago
    live = tmp_path / ".x.code.998.abcd1234.tmp"  # another writer at work right now
    other = tmp_path / ".y.code.997.abcd1234.tmp"  # another store's
    for path in (left, live, other):
        path.write_bytes(b"partial")
    hour_ago = os.stat(left).st_mtime - 3600
    os.utime(left, (hour_ago, hour_ago))
    os.utime(other, (hour_ago, hour_ago))
    write_private(store, MAGIC, b"body")
    assert read_private(store, MAGIC) == b"body"
    assert not left.exists()
    assert live.exists() and other.exists()


def test_a_store_renamed_from_another_python_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code objects only run on the Python that made them: the tag of the Python that
    wrote a store is in its magic line, not only in its name."""
    from tests.unit.test_startup_code import _make

    with reused_startup_code(tmp_path):
        _make("oper8d.sample")
    (ours,) = tmp_path.glob("startup-*.code")
    monkeypatch.setattr(startup_code, "_python_tag", lambda: "another-python")
    with reused_startup_code(tmp_path):
        _make("oper8d.sample")
    (theirs,) = set(tmp_path.glob("startup-*.code")) - {ours}
    theirs.replace(ours)  # another Python's store under this Python's name
    monkeypatch.undo()
    with reused_startup_code(tmp_path) as reused:
        _make("oper8d.sample")
    assert reused.stored == 0 and reused.compiled > 0


def test_the_dataclass_store_keeps_only_what_a_process_used_past_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.test_startup_code import CLASSES, _make

    def entries() -> dict[str, object]:
        (store,) = tmp_path.glob("startup-*.code")
        tag = store.stem.removeprefix("startup-")
        body = read_private(store, b"oper8d-startup-code 1 " + tag.encode() + b"\n")
        assert body is not None
        stored: dict[str, object] = marshal.loads(body)
        return stored

    with reused_startup_code(tmp_path) as first:
        _make("oper8d.sample")
    assert len(entries()) == first.compiled
    changed = CLASSES.replace("y: int = 0", "y: int = 0\n    z: int = 0")  # an upgrade
    with reused_startup_code(tmp_path) as second:
        _make("oper8d.sample", classes=changed)
    assert second.compiled > 0
    assert len(entries()) == first.compiled + second.compiled  # both versions kept
    monkeypatch.setattr(startup_code, "_MAX_ENTRIES", first.compiled)
    with reused_startup_code(tmp_path) as third:
        _make("oper8d.sample", classes=changed.replace("x: int", "w: int"))
    assert len(entries()) == third.stored + third.compiled  # what this process used
