"""Operator processes for integration tests: ``python -m oper8d run BUNDLE ...`` started as a
subprocess against the envtest control plane, its log in a file, its probe and metrics ports
known, and bounded waits on it.

Used by tests/integration/test_operator_process.py: ``OperatorLauncher`` starts processes
(and stops every one it started when the test ends); ``OperatorProcess`` reads the log
(JSON lines, ``--log-format json``), the probes and ``/metrics`` of one of them, and sends it
signals.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: one sample of a Prometheus exposition: (name, labels, value)
Sample = tuple[str, dict[str, str], float]


def http_get(url: str) -> tuple[int | None, str]:
    """``(status, body)`` of GET ``url``; status None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.read().decode()
    except (urllib.error.URLError, OSError) as err:
        return None, str(err)


def scrape_metrics(port: int) -> list[Sample]:
    """Every sample of ``/metrics`` on 127.0.0.1:``port`` (a process's or an in-process
    manager's metrics server)."""
    status, body = http_get(f"http://127.0.0.1:{port}/metrics")
    if status != 200:
        raise AssertionError(f"/metrics on port {port} answered {status}: {body}")
    return [
        (s.name, dict(s.labels), float(s.value))
        for family in text_string_to_metric_families(body)
        for s in family.samples
    ]


def metric_value(samples: list[Sample], metric: str, /, **labels: str) -> float:
    """The sum of the samples called ``metric`` whose labels include ``labels`` (a label
    may be called ``name``, as the work queue's are)."""
    return sum(
        value
        for sample, have, value in samples
        if sample == metric and all(have.get(k) == v for k, v in labels.items())
    )


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


class OperatorProcess:
    """One running ``oper8d run`` process (see the module docstring)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        health_port: int,
        metrics_port: int,
    ):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.health_port = health_port
        self.metrics_port = metrics_port
        self._log: IO[bytes] | None = None
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self) -> OperatorProcess:
        self._log = self.log_path.open("ab")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            "OPER8D_LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
        }
        self._popen = subprocess.Popen(
            self.argv,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        return self

    # -- the process ---------------------------------------------------------------------
    @property
    def popen(self) -> subprocess.Popen[bytes]:
        if self._popen is None:
            raise RuntimeError(f"operator process {self.name} was never started")
        return self._popen

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def identity(self) -> str:
        """The leader-election identity the manager gives itself: ``<hostname>_<pid>``."""
        return f"{socket.gethostname()}_{self.pid}"

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def kill(self, timeout: float = 10.0) -> int:
        """SIGKILL and reap; returns the exit status (``-SIGKILL``)."""
        self.popen.send_signal(signal.SIGKILL)
        return self.popen.wait(timeout)

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

    def stop(self) -> None:
        """Teardown: SIGTERM, then SIGKILL after 15 s; close the log file."""
        if self._popen is not None and self._popen.poll() is None:
            self._popen.send_signal(signal.SIGTERM)
            try:
                self._popen.wait(15)
            except subprocess.TimeoutExpired:
                self._popen.kill()
                self._popen.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- the log -------------------------------------------------------------------------
    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def records(self) -> list[LogRecord]:
        return [LogRecord.parse(line) for line in self.log_text().splitlines() if line.strip()]

    def messages(self, starting: str) -> list[LogRecord]:
        """The log records whose message starts with ``starting``."""
        return [r for r in self.records() if r.msg.startswith(starting)]

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    # -- HTTP: probes and metrics --------------------------------------------------------
    def http_get(self, path: str, port: int | None = None) -> tuple[int | None, str]:
        """``(status, body)`` of GET ``path`` on the health port (or ``port``); status None
        when nothing answers."""
        return http_get(f"http://127.0.0.1:{port or self.health_port}{path}")

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Poll /readyz until it answers 200 (the informer caches are synced); fail with the
        log when the process exits or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        last: tuple[int | None, str] = (None, "")
        while time.monotonic() < deadline:
            if not self.running:
                raise AssertionError(
                    f"{self.name} exited with {self.returncode} before it was ready; "
                    f"log:\n{self.tail()}"
                )
            last = self.http_get("/readyz")
            if last[0] == 200:
                return
            time.sleep(0.1)
        raise AssertionError(
            f"{self.name} not ready after {timeout:.0f}s (last /readyz: {last}); "
            f"log:\n{self.tail()}"
        )

    def metrics(self) -> list[Sample]:
        """Every sample of this process's /metrics."""
        return scrape_metrics(self.metrics_port)

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
        health, metrics = free_port(), free_port()
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
            "--health-probe-bind-address",
            f"127.0.0.1:{health}",
            "--metrics-bind-address",
            f"127.0.0.1:{metrics}",
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
        proc = OperatorProcess(
            name, argv, log_path, health_port=health, metrics_port=metrics
        ).start()
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.started:
            proc.stop()

    def logs(self) -> str:
        """Every started process's log tail, for a failed test's report."""
        return "\n".join(f"--- {p.name} ({p.log_path}):\n{p.tail()}" for p in self.started)
