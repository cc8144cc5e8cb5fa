"""Child processes of the test environment: start, wait until ready, stop, log tail."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO


class StartError(RuntimeError):
    """A process of the test environment exited or did not become ready in time."""


def log_tail(path: Path, lines: int = 40) -> str:
    """Return the last ``lines`` lines of the file at ``path`` ('' if it is missing)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


class ManagedProcess:
    """One long-running binary whose stdout and stderr go to a log file.

    The process runs in its own session, so a Ctrl-C in the terminal reaches only the
    Python process, which then stops its children in order.
    """

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def running(self) -> bool:
        """True while the process has been started and has not exited."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the process; the log file is appended to, so restarts keep history."""
        if self.running:
            raise RuntimeError(f"{self.name} is already running")
        self._log = self.log_path.open("ab")
        self._log.write(f"\n=== starting: {' '.join(self.argv)}\n".encode())
        self._log.flush()
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as e:
            self._close_log()
            raise StartError(f"cannot start {self.name} ({self.argv[0]}): {e}") from e

    def failure(self, message: str) -> StartError:
        """Build a StartError about this process that includes the tail of its log."""
        return StartError(
            f"{self.name}: {message}\n--- last lines of {self.log_path} ---\n"
            f"{log_tail(self.log_path)}"
        )

    def wait_until(self, probe: Callable[[], bool], what: str, timeout: float) -> None:
        """Poll ``probe`` with a short backoff until it returns True.

        Raises StartError (with the log tail) if the process exits first or ``timeout``
        seconds pass. Exceptions raised by ``probe`` count as 'not yet'.
        """
        deadline = time.monotonic() + timeout
        delay = 0.05
        last_error = ""
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise self.failure(f"exited with code {code} before it was {what}")
            try:
                if probe():
                    return
            except Exception as e:  # a readiness probe of a starting process
                last_error = f"{type(e).__name__}: {e}"
            if time.monotonic() > deadline:
                hint = f" (last probe error: {last_error})" if last_error else ""
                raise self.failure(f"not {what} after {timeout:.0f}s{hint}")
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)

    def stop(self, timeout: float = 10.0) -> None:
        """Send SIGTERM, then SIGKILL after ``timeout`` seconds; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            self._signal(proc, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(proc, signal.SIGKILL)
                proc.wait()
        self._close_log()

    @staticmethod
    def _signal(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
