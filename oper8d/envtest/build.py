"""Run testenv/build.sh, which builds (or finds cached) the test environment binaries."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ._process import log_tail

BUILD_SCRIPT_ENV = "OPER8D_TESTENV_BUILD"
BIN_DIR_ENV = "OPER8D_TESTENV_BIN_DIR"


class BuildError(RuntimeError):
    """testenv/build.sh failed; the message ends with the tail of its log."""


def build_script() -> Path:
    """Locate build.sh: $OPER8D_TESTENV_BUILD, else testenv/build.sh of this checkout."""
    configured = os.environ.get(BUILD_SCRIPT_ENV)
    if configured:
        path = Path(configured)
        return path / "build.sh" if path.is_dir() else path
    return Path(__file__).resolve().parents[2] / "testenv" / "build.sh"


def build(
    log_path: Path | None = None,
    echo: bool = False,
    *,
    k8s_version: str | None = None,
    cached_only: bool = False,
) -> Path:
    """Run build.sh (seconds when cached, ~25 minutes cold) and return the bin dir.

    The script's output goes to ``log_path`` (a temp file by default) and, with
    ``echo``, to stderr as well. Raises BuildError with the log tail on failure.
    ``k8s_version`` names the Kubernetes release (build.sh's argument; "1.36", the one
    it builds, is the default); with ``cached_only`` nothing is built: a BuildError tells
    that some binary is not in the cache yet.
    """
    script = build_script()
    if not script.is_file():
        raise BuildError(f"build script not found: {script} (set ${BUILD_SCRIPT_ENV})")
    if log_path is None:
        fd, name = tempfile.mkstemp(prefix="oper8d-testenv-build-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    last_line = ""
    with (
        log_path.open("w") as log,
        subprocess.Popen(
            ["bash", str(script), *([k8s_version] if k8s_version else [])],
            env={**os.environ, **({"OPER8D_TESTENV_CACHED_ONLY": "1"} if cached_only else {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            log.flush()
            if echo:
                sys.stderr.write(line)
            if line.strip():
                last_line = line.strip()
    bin_dir = Path(last_line)
    if proc.returncode != 0 or not bin_dir.is_dir():
        raise BuildError(
            f"{script} failed (exit code {proc.returncode})\n"
            f"--- last lines of {log_path} ---\n{log_tail(log_path)}"
        )
    return bin_dir


def bin_dir_or_build(echo: bool = False) -> Path:
    """$OPER8D_TESTENV_BIN_DIR if set, else the bin dir that build.sh returns."""
    configured = os.environ.get(BIN_DIR_ENV)
    return Path(configured) if configured else build(echo=echo)
