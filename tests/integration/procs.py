"""Operator processes for integration tests: ``python -m oper8d run BUNDLE ...`` started as a
subprocess against the envtest control plane, its log in a file, its probe and metrics ports
known, and bounded waits on it.

Used by tests/integration/test_operator_process.py: ``OperatorLauncher`` starts processes
(and stops every one it started when the test ends); ``OperatorProcess`` reads the log
(JSON lines, ``--log-format json``), the probes and ``/metrics`` of one of them, and sends it
signals. The process itself is ``benchmarks.replicas.Replica``, which the benchmark of
sharded replicas runs too.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from benchmarks.replicas import Replica, Sample, free_port, http_get, scrape_metrics
from benchmarks.replicas import total as metric_value

__all__ = [
    "LogRecord",
    "OperatorLauncher",
    "OperatorProcess",
    "Sample",
    "free_port",
    "http_get",
    "metric_value",
    "scrape_metrics",
]


@dataclass(frozen=True)
class LogRecord:
    """One line of an operator's log: a JSON record, or (``level`` "raw") anything else the
    process printed to stderr, such as a traceback or a library's own warning. ``ts`` is
    seconds since the epoch (None when the line has no time)."""

    line: str
    level: str
    logger: str
    msg: str
    ts: float | None
    error: str | None = None

    @classmethod
    def parse(cls, line: str) -> LogRecord:
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict) or "msg" not in data:
            return cls(line, "raw", "", line, None)
        return cls(
            line,
            str(data.get("level", "")),
            str(data.get("logger", "")),
            str(data["msg"]),
            _epoch(data.get("ts")),
            data.get("error"),
        )


def _epoch(ts: object) -> float | None:
    """An ISO 8601 log time as epoch seconds: with a zone ("...Z") as given, without one as
    local time (both formats the JSON log has used)."""
    if not isinstance(ts, str) or not ts:
        return None
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


class OperatorProcess(Replica):
    """One running ``oper8d run`` process (see the module docstring): the benchmark's
    ``Replica`` (the process, its ports, its log file, /readyz and /metrics), plus what the
    tests read and send."""

    @property
    def popen(self) -> subprocess.Popen[bytes]:
        if self._popen is None:
            raise RuntimeError(f"operator process {self.name} was never started")
        return self._popen

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def terminate(self, timeout: float) -> int:
        """SIGTERM and wait at most ``timeout`` seconds for the exit status; a process still
        running then fails the test, naming the tail of its log."""
        self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.name} still running {timeout:.0f}s after SIGTERM; log:\n{self.tail()}"
            ) from None

    # -- the log -------------------------------------------------------------------------
    def records(self) -> list[LogRecord]:
        return [LogRecord.parse(line) for line in self.log_text().splitlines() if line.strip()]

    def messages(self, starting: str) -> list[LogRecord]:
        """The log records whose message starts with ``starting``."""
        return [r for r in self.records() if r.msg.startswith(starting)]

    # -- HTTP: probes and metrics --------------------------------------------------------
    def http_get(self, path: str, port: int | None = None) -> tuple[int | None, str]:
        """``(status, body)`` of GET ``path`` on the health port (or ``port``); status None
        when nothing answers."""
        return http_get(f"http://127.0.0.1:{port or self.health_port}{path}")

    def metric(self, metric: str, /, **labels: str) -> float:
        """The sum of this process's samples called ``metric`` whose labels include
        ``labels``."""
        return metric_value(self.metrics(), metric, **labels)


class OperatorLauncher:
    """Starts operator processes with their logs under ``log_dir``; ``stop_all()`` (called
    by the test's fixture) stops every process it started."""

    def __init__(self, log_dir: Path, kubeconfig: Path):
        self.log_dir = log_dir
        self.kubeconfig = kubeconfig
        self.started: list[OperatorProcess] = []

    def start(
        self,
        bundle: Path,
        namespace: str,
        *,
        name: str = "operator",
        leader_elect: bool = False,
        install_crds: bool = False,
        extra: Sequence[str] = (),
    ) -> OperatorProcess:
        argv = [
            sys.executable,
            "-m",
            "oper8d",
            "run",
            str(bundle),
            "--kubeconfig",
            str(self.kubeconfig),
            "--namespace",
            namespace,
            "--log-format",
            "json",
        ]
        if leader_elect:
            argv += [
                "--leader-elect",
                "--leader-election-namespace",
                namespace,
                "--lease-duration",
                "3",
                "--renew-deadline",
                "2",
                "--retry-period",
                "0.5",
            ]
        if install_crds:
            argv.append("--install-crds")
        argv += list(extra)
        log_path = self.log_dir / f"{name}-{len(self.started)}.log"
        proc = OperatorProcess(name, argv, log_path)
        proc.start()
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.started:
            proc.stop()

    def logs(self) -> str:
        """Every started process's log tail, for a failed test's report."""
        return "\n".join(f"--- {p.name} ({p.log_path}):\n{p.tail()}" for p in self.started)
