"""A throwaway Kubernetes control plane (etcd, kube-apiserver, controller-manager,
scheduler, kwok with fake nodes, a volume provisioner) on loopback ports, like
controller-runtime's envtest."""

from __future__ import annotations

import json
import re
import secrets
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from . import _files
from ._process import ManagedProcess, StartError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

#: a /16: 65,000 Services (a /24 ran out at 253 in the 1,000-CR benchmark)
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/16"
#: feature gates turned on when the apiserver is at least this version (major, minor)
VERSION_GATES = {(1, 36): ("ShardedListAndWatch",)}
POD_CIDR = "10.244.0.0/16"


def _get(url: str, token: str | None = None, timeout: float = 2.0) -> tuple[int, bytes]:
    """GET ``url``; TLS is not verified (only used to probe our own loopback servers)."""
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        return response.status, response.read()


@dataclass
class Environment:
    """Options of a test control plane, and the handle to it once started.

    Use as ``with Environment() as env: client = env.api_client()``. All processes
    listen on 127.0.0.1 only; every port is picked free at start.
    """

    bin_dir: Path | None = None
    """Directory with etcd, kube-apiserver, ... (None: $OPER8D_TESTENV_BIN_DIR or build)."""
    controller_manager: bool = True
    scheduler: bool = True
    kwok: bool = True
    volume_provisioner: bool = True
    """Run the provisioner of the default StorageClass (``oper8d.envtest.provisioner``);
    it needs the controller-manager (the PV controller) and the scheduler."""
    fake_nodes: int = 2
    """Number of fake Nodes created for kwok (when kwok runs)."""
    kwok_stages: Path | None = None
    """kwok Stage config; default: kwok-stages.yaml in ``bin_dir`` (written by build.sh)."""
    start_timeout: float = 60.0
    """Seconds each process gets to become ready."""
    stop_timeout: float = 10.0
    """Seconds between SIGTERM and SIGKILL."""
    keep_temp_dir: bool = False
    """Keep data, certificates and logs after stop() (for debugging)."""
    feature_gates: tuple[str, ...] | None = None
    """kube-apiserver feature gates to turn on; None: those of ``VERSION_GATES`` that
    its version has (ShardedListAndWatch on 1.36+)."""

    temp_dir: Path | None = field(default=None, init=False)
    kubeconfig_path: Path | None = field(default=None, init=False)
    server_url: str | None = field(default=None, init=False)
    apiserver_version: tuple[int, int] | None = field(default=None, init=False)
    """(major, minor) of the kube-apiserver binary, once started."""
    etcd_url: str | None = field(default=None, init=False)
    admin_token: str | None = field(default=None, init=False)
    ca_file: Path | None = field(default=None, init=False)
    """CA bundle that verifies the apiserver's (self-signed) serving certificate."""
    log_paths: dict[str, Path] = field(default_factory=dict, init=False)
    _procs: dict[str, ManagedProcess] = field(default_factory=dict, init=False, repr=False)

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> Environment:
        """Start every part and wait until it is ready.

        On failure, stop what started, keep the temp dir (its logs/ explain the failure)
        and raise StartError with the tail of the failing process's log.
        """
        if self._procs:
            raise RuntimeError("environment already started")
        if self.bin_dir is None:
            from .build import bin_dir_or_build

            self.bin_dir = bin_dir_or_build()
        self.temp_dir = Path(tempfile.mkdtemp(prefix="oper8d-envtest-"))
        try:
            self._start_etcd()
            self._start_apiserver()
            provisioner = self.volume_provisioner and self.controller_manager and self.scheduler
            if provisioner:  # it imports while the others start; waited for at the end
                self._spawn_provisioner()
            if self.controller_manager:
                self._start_controller_manager()
            if self.scheduler:
                self._start_scheduler()
            if self.kwok:
                self._start_kwok()
            if provisioner:
                self._wait_provisioner()
        except BaseException:
            self._stop_processes()
            raise
        return self

    def stop(self) -> None:
        """Stop all processes (newest first) and remove the temp dir."""
        self._stop_processes()
        if self.temp_dir is not None and not self.keep_temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def _stop_processes(self) -> None:
        for name in reversed(list(self._procs)):
            self._procs[name].stop(self.stop_timeout)
        self._procs.clear()

    def restart_apiserver(self, downtime: float = 0.0) -> None:
        """Stop kube-apiserver, wait ``downtime`` seconds, start it again on the same
        port with the same etcd, certificates and token, and wait until it is ready."""
        proc = self._procs["kube-apiserver"]
        proc.stop(self.stop_timeout)
        if downtime:
            time.sleep(downtime)
        proc.start()
        self._wait_apiserver(proc)

    def __enter__(self) -> Environment:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ clients

    def api_client(self) -> ApiClient:
        """A new admin ``kubernetes.client.ApiClient``; close it when done."""
        from kubernetes import client

        if self.server_url is None:
            raise RuntimeError("environment not started")
        config = client.Configuration()
        config.host = self.server_url
        config.ssl_ca_cert = str(self.ca_file)
        config.api_key = {"authorization": f"Bearer {self.admin_token}"}
        return client.ApiClient(config)

    # ------------------------------------------------------------------ parts

    def _path(self, *parts: str) -> Path:
        assert self.temp_dir is not None
        path = self.temp_dir.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _spawn(self, name: str, *args: str, argv0: str | None = None) -> ManagedProcess:
        assert self.bin_dir is not None
        binary = argv0 or str(Path(self.bin_dir) / name)
        if argv0 is None and not Path(binary).exists():
            raise StartError(f"{binary} not found (run testenv/build.sh)")
        log = self._path("logs", f"{name}.log")
        self.log_paths[name] = log
        proc = ManagedProcess(name, [binary, *args], log)
        self._procs[name] = proc
        proc.start()
        return proc

    def _start_etcd(self) -> None:
        client_port, peer_port = _files.free_port(), _files.free_port()
        self.etcd_url = f"http://127.0.0.1:{client_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        proc = self._spawn(
            "etcd",
            "--name=envtest",
            f"--data-dir={self._path('etcd', 'data')}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=envtest={peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        )

        def healthy() -> bool:
            status, body = _get(f"{self.etcd_url}/health")
            return status == 200 and json.loads(body).get("health") == "true"

        proc.wait_until(healthy, "healthy", self.start_timeout)

    def _start_apiserver(self) -> None:
        port = _files.free_port()
        pki = self._path("pki", "x").parent
        sa_key, sa_pub = _files.service_account_keys(pki)
        self.admin_token = secrets.token_hex(24)
        cert_dir = self._path("apiserver-certs", "x").parent
        self.ca_file = cert_dir / "apiserver.crt"  # self-signed cert + its CA, made at start
        self.server_url = f"https://127.0.0.1:{port}"
        args = [
            f"--etcd-servers={self.etcd_url}",
            f"--cert-dir={cert_dir}",
            f"--secure-port={port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--allow-privileged=true",
            "--authorization-mode=RBAC",
            f"--token-auth-file={_files.token_auth_file(pki / 'tokens.csv', self.admin_token)}",
            f"--service-account-issuer={self.server_url}/",
            f"--service-account-key-file={sa_pub}",
            f"--service-account-signing-key-file={sa_key}",
            # On SIGTERM, stop within ~2s instead of waiting up to 60s for open watches.
            "--shutdown-send-retry-after=true",
        ]
        gates = self._feature_gates()
        if gates:
            args.append("--feature-gates=" + ",".join(f"{g}=true" for g in gates))
        if not self.controller_manager:
            # Nothing would create the 'default' ServiceAccounts that pods need.
            args.append("--disable-admission-plugins=ServiceAccount")
        proc = self._spawn("kube-apiserver", *args)
        self._wait_apiserver(proc)
        self.kubeconfig_path = _files.write_kubeconfig(
            self._path("kubeconfig"), self.server_url, self.ca_file, self.admin_token
        )

    def _feature_gates(self) -> tuple[str, ...]:
        assert self.bin_dir is not None
        out = subprocess.run(
            [str(Path(self.bin_dir) / "kube-apiserver"), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
        found = re.search(r"v(\d+)\.(\d+)", out)
        self.apiserver_version = (int(found[1]), int(found[2])) if found else None
        if self.feature_gates is not None:
            return self.feature_gates
        have = self.apiserver_version or (0, 0)
        return tuple(g for since, gates in VERSION_GATES.items() if have >= since for g in gates)

    def _wait_apiserver(self, proc: ManagedProcess) -> None:
        def ready() -> bool:
            return _get(f"{self.server_url}/readyz", self.admin_token)[0] == 200

        proc.wait_until(ready, "ready (/readyz)", self.start_timeout)

    def _component_args(self, port: int) -> list[str]:
        kubeconfig = str(self.kubeconfig_path)
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            # There is no client CA, so there is no extension-apiserver-authentication
            # ConfigMap to look up.
            "--authentication-skip-lookup=true",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--leader-elect=false",
        ]

    def _wait_healthz(self, proc: ManagedProcess, port: int) -> None:
        def healthy() -> bool:
            return _get(f"https://127.0.0.1:{port}/healthz")[0] == 200

        proc.wait_until(healthy, "healthy (/healthz)", self.start_timeout)

    def _start_controller_manager(self) -> None:
        port = _files.free_port()
        proc = self._spawn(
            "kube-controller-manager",
            *self._component_args(port),
            f"--cert-dir={self._path('controller-manager-certs', 'x').parent}",
            f"--service-account-private-key-file={self._path('pki', 'sa.key')}",
            f"--root-ca-file={self.ca_file}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--controllers=*",
        )
        self._wait_healthz(proc, port)

    def _start_scheduler(self) -> None:
        port = _files.free_port()
        proc = self._spawn(
            "kube-scheduler",
            *self._component_args(port),
            f"--cert-dir={self._path('scheduler-certs', 'x').parent}",
        )
        self._wait_healthz(proc, port)

    def _start_kwok(self) -> None:
        assert self.bin_dir is not None
        stages = self.kwok_stages or Path(self.bin_dir) / "kwok-stages.yaml"
        if not stages.is_file():
            raise StartError(f"kwok stage config {stages} not found (run testenv/build.sh)")
        proc = self._spawn(
            "kwok",
            f"--kubeconfig={self.kubeconfig_path}",
            f"--config={stages}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={_files.FAKE_NODE_ANNOTATION}=fake",
            "--node-lease-duration-seconds=40",
            f"--cidr={POD_CIDR}",
        )
        if self.fake_nodes:
            self._create_fake_nodes(proc)

    def _spawn_provisioner(self) -> None:
        self._spawn(
            "volume-provisioner",
            "-m",
            "oper8d.envtest.provisioner",
            f"--kubeconfig={self.kubeconfig_path}",
            f"--ready-file={self._path('provisioner', 'ready')}",
            argv0=sys.executable,
        )

    def _wait_provisioner(self) -> None:
        ready = self._path("provisioner", "ready")
        self._procs["volume-provisioner"].wait_until(
            ready.exists, "ready (StorageClass made, claims listed)", self.start_timeout
        )

    def _create_fake_nodes(self, kwok: ManagedProcess) -> None:
        """Create the fake Nodes and wait (with a watch) until kwok reports them Ready."""
        from kubernetes import client, watch

        names = {f"kwok-node-{i}" for i in range(self.fake_nodes)}
        with self.api_client() as api_client:
            core = client.CoreV1Api(api_client)
            for name in sorted(names):
                core.create_node(_files.fake_node(name))  # type: ignore[arg-type]  # a dict serialises too
            ready: set[str] = set()
            w = watch.Watch()
            deadline = time.monotonic() + self.start_timeout
            while ready != names and time.monotonic() < deadline and kwok.running:
                stream = w.stream(core.list_node, label_selector="type=kwok", timeout_seconds=5)
                for event in stream:
                    node: Any = event["object"]
                    conditions = (node.status and node.status.conditions) or []
                    if any(c.type == "Ready" and c.status == "True" for c in conditions):
                        ready.add(node.metadata.name)
                    if ready == names:
                        w.stop()
        if ready != names:
            raise kwok.failure(f"fake nodes not Ready: {sorted(names - ready)}")
