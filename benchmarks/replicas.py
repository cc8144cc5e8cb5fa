"""Operator replicas as separate OS processes, for ``benchmarks.bench_shards`` (and, as the
base of ``tests/integration/procs.py``'s ``OperatorProcess``, for the integration tests).

A ``Replica`` is one ``python -m oper8d run BUNDLE ...`` process against a kubeconfig, with
its own /metrics and probe ports and its log in a file. The benchmark reads its Prometheus
counters over HTTP (``metrics``) and its CPU time and memory straight from ``/proc/<pid>``
(``cpu_seconds``, ``memory_kib``): reading /proc costs the replica nothing, so a CPU window
is not disturbed by the reading. Linux only, as the test environment is.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from prometheus_client.parser import text_string_to_metric_families

REPO_ROOT = Path(__file__).resolve().parents[1]
_TICKS = os.sysconf("SC_CLK_TCK")

#: one sample of a Prometheus exposition: (name, labels, value)
Sample = tuple[str, dict[str, str], float]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Replica:
    """One ``oper8d run --sharding`` process (see the module docstring)."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path):
        self.name, self.log_path = name, log_path
        self.health_port, self.metrics_port = free_port(), free_port()
        self.argv = [
            *argv,
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--metrics-bind-address",
            f"127.0.0.1:{self.metrics_port}",
        ]
        self._log: IO[bytes] | None = None
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self, log_level: str = "INFO") -> Replica:
        self._log = self.log_path.open("ab")
        path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        env = {
            **os.environ,
            "PYTHONPATH": path,
            "OPER8D_LOG_LEVEL": log_level,
            "PYTHONUNBUFFERED": "1",
        }
        self._popen = subprocess.Popen(
            self.argv,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        return self

    @property
    def pid(self) -> int:
        if self._popen is None:
            raise RuntimeError(f"replica {self.name} was never started")
        return self._popen.pid

    @property
    def identity(self) -> str:
        """The shard member name the manager gives itself: ``<hostname>_<pid>``."""
        return f"{socket.gethostname()}_{self.pid}"

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until /readyz answers 200 (its informers listed their kinds)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running:
                raise RuntimeError(f"{self.name} exited before it was ready:\n{self.tail()}")
            if http_get(f"http://127.0.0.1:{self.health_port}/readyz")[0] == 200:
                return
            time.sleep(0.2)
        raise TimeoutError(f"{self.name} not ready after {timeout:.0f}s:\n{self.tail()}")

    def metrics(self) -> list[Sample]:
        """Every sample of the replica's /metrics."""
        return scrape_metrics(self.metrics_port)

    def cpu_seconds(self) -> float:
        """User + system CPU time of the process so far (/proc/<pid>/stat)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime

    def memory_kib(self) -> tuple[int, int]:
        """(VmRSS, VmHWM: the peak RSS) in KiB, from /proc/<pid>/status."""
        values = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
        return values.get("VmRSS", 0), values.get("VmHWM", 0)

    def kill(self, timeout: float = 10.0) -> int | None:
        """SIGKILL and reap: no Lease released, no reconcile finished. The exit status
        (``-SIGKILL``; None when it was never started)."""
        if self._popen is None:
            return None
        if self._popen.poll() is None:
            self._popen.send_signal(signal.SIGKILL)
        return self._popen.wait(timeout)

    def stop(self) -> None:
        """SIGTERM, SIGKILL after 15 s; close the log."""
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


def scrape_metrics(port: int) -> list[Sample]:
    """Every sample of ``/metrics`` on 127.0.0.1:``port`` (a process's or an in-process
    manager's metrics server)."""
    status, body = http_get(f"http://127.0.0.1:{port}/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics on port {port} answered {status}: {body[:200]}")
    return [
        (s.name, dict(s.labels), float(s.value))
        for family in text_string_to_metric_families(body)
        for s in family.samples
    ]


def total(samples: list[Sample], metric: str, /, **labels: str) -> float:
    """The sum of the samples of ``metric`` whose labels include ``labels`` (a label may
    be called ``name``, as the work queue's are)."""
    return sum(
        value
        for name, have, value in samples
        if name == metric and all(have.get(k) == v for k, v in labels.items())
    )


def by_label(samples: list[Sample], metric: str, *label_names: str) -> Counter[str]:
    """The samples of ``metric`` summed by the values of ``label_names`` ("a b" keys)."""
    out: Counter[str] = Counter()
    for name, labels, value in samples:
        if name == metric:
            out[" ".join(labels.get(n, "") for n in label_names)] += int(value)
    return out


def operator_argv(bundle: Path, kubeconfig: Path, extra: Sequence[str]) -> list[str]:
    """``python -m oper8d run BUNDLE --kubeconfig ... --sharding --log-format json ...``."""
    return [
        sys.executable,
        "-m",
        "oper8d",
        "run",
        str(bundle),
        "--kubeconfig",
        str(kubeconfig),
        "--sharding",
        "--log-format",
        "json",
        *extra,
    ]


def http_get(url: str) -> tuple[int | None, str]:
    """``(status, body)`` of GET ``url``; status None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.read().decode()
    except (urllib.error.URLError, OSError) as err:
        return None, str(err)
