"""Every file oper8d reads whole is refused from its size before it is read (fileBytes,
crBytes): a 2 GiB template gave a MemoryError traceback in ``oper8d validate`` (an outside
audit). The files are sparse (``truncate``), so each case costs a ``stat``, not 2 GiB; a
file that were read would take seconds and the memory, and the test would fail."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from oper8d.cachefiles import read_private, write_private
from oper8d.cli.main import main
from oper8d.fileio import FileTooLarge, read_bounded

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"
HUGE = 2 * 1024**3


def huge(path: Path) -> Path:
    """``path`` as a sparse file of 2 GiB of zeros."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as stream:
        stream.truncate(HUGE)
    return path


def invoke(*args: str | Path) -> Result:
    started = time.monotonic()
    result = CliRunner().invoke(main, [*map(str, args)])
    assert time.monotonic() - started < 10, "the file was read"
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def stateful(tmp_path: Path) -> Path:
    bundle = tmp_path / "stateful"
    shutil.copytree(EXAMPLES / "stateful", bundle)
    return bundle


@pytest.mark.parametrize(
    ("file", "at"),
    [
        ("operator.yaml", "operator.yaml: "),
        ("templates/database.yaml", "components/database.yaml:7:15: "),  # where it is named
        ("components/database.yaml", "operator.yaml:"),  # where it is included
    ],
)
def test_a_huge_bundle_file_is_refused_naming_it_and_the_limit(
    stateful: Path, file: str, at: str
) -> None:
    huge(stateful / file)
    result = invoke("validate", stateful)
    assert result.exit_code == 1
    assert f"limit fileBytes exceeded: '{file}' holds {HUGE} bytes" in result.stderr
    assert result.stderr.startswith(f"{stateful}/{at}"), result.stderr


def test_raising_file_bytes_lets_a_big_file_through(stateful: Path) -> None:
    template = stateful / "templates" / "database.yaml"
    template.write_text(template.read_text() + "#" * (5 * 1024 * 1024) + "\n")
    assert "limit fileBytes exceeded" in invoke("validate", stateful).stderr
    assert invoke("--limit", "fileBytes=8Mi", "validate", stateful).exit_code == 0


def test_a_huge_cr_file_is_refused_for_crbytes(tmp_path: Path) -> None:
    cr = huge(tmp_path / "cr.yaml")
    for command in ("validate", "render"):
        result = invoke(command, EXAMPLES / "stateful", "--cr", cr)
        assert result.exit_code == 1
        assert f"limit crBytes exceeded: '{cr}' holds {HUGE} bytes" in result.stderr


def test_a_huge_bundle_test_file_and_its_cr_file_are_refused(stateful: Path) -> None:
    huge(stateful / "samples" / "notes.yaml")  # the CR file of the render cases
    result = invoke("test", stateful)
    assert result.exit_code == 2  # (a problem of the test files)
    assert "limit fileBytes exceeded: 'samples/notes.yaml'" in result.output
    huge(stateful / "tests" / "render.yaml")
    result = invoke("test", stateful)
    assert "limit fileBytes exceeded: 'tests/render.yaml'" in result.output


def test_a_huge_golden_file_fails_its_case(stateful: Path) -> None:
    huge(stateful / "tests" / "golden" / "notes.yaml")
    result = invoke("test", stateful)
    assert result.exit_code == 1
    assert "limit fileBytes exceeded: 'tests/golden/notes.yaml'" in result.output


def test_a_huge_crd_file_is_refused(tmp_path: Path) -> None:
    huge(tmp_path / "crds" / "big.yaml")
    sample = EXAMPLES / "webapp" / "samples" / "webapp.yaml"
    result = invoke("render", EXAMPLES / "webapp", "--cr", sample, "--crds", tmp_path / "crds")
    assert result.exit_code == 1
    assert "big.yaml: limit fileBytes exceeded" in result.stderr


def test_a_huge_cache_file_is_ignored_unread(tmp_path: Path) -> None:
    store = tmp_path / "store.cache"
    write_private(store, b"magic\n", b"body")
    assert read_private(store, b"magic\n") == b"body"
    os.truncate(store, HUGE)
    assert read_private(store, b"magic\n") is None


def test_a_file_growing_past_the_bound_while_read_is_refused(tmp_path: Path) -> None:
    # /proc files report a size of 0 and hold more: read_bounded never reads past the bound
    proc = Path("/proc/self/status")
    if not proc.is_file():
        pytest.skip("needs /proc")
    with pytest.raises(FileTooLarge):
        read_bounded(proc, 10)
    assert read_bounded(proc, 1 << 20).startswith(b"Name:")


def test_oper8d_test_takes_the_limits_of_the_command(stateful: Path) -> None:
    cases = stateful / "tests" / "render.yaml"
    cases.write_text(cases.read_text() + "#" * (5 * 1024 * 1024) + "\n")
    assert "limit fileBytes exceeded" in invoke("test", stateful).output
    assert invoke("--limit", "fileBytes=8Mi", "test", stateful).exit_code == 0
