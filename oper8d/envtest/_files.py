"""Throwaway credentials, kubeconfig and fake Node objects for the test environment."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def service_account_keys(directory: Path) -> tuple[Path, Path]:
    """Generate an RSA key pair with openssl; return (private key, public key) paths."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl is needed to generate the service-account key pair")
    private, public = directory / "sa.key", directory / "sa.pub"
    for argv in (
        [
            openssl,
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            str(private),
        ],
        [openssl, "pkey", "-in", str(private), "-pubout", "-out", str(public)],
    ):
        subprocess.run(argv, check=True, capture_output=True)
    return private, public


def token_auth_file(path: Path, token: str) -> Path:
    """Write a --token-auth-file whose one user 'admin' is in group system:masters."""
    path.write_text(f'{token},admin,admin,"system:masters"\n')
    path.chmod(0o600)
    return path


def write_kubeconfig(path: Path, server: str, ca_file: Path, token: str) -> Path:
    """Write an admin kubeconfig (JSON, which every kubeconfig reader accepts as YAML)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "envtest",
                "cluster": {"server": server, "certificate-authority": str(ca_file)},
            }
        ],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "admin"}}],
        "current-context": "envtest",
    }
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)
    return path


def fake_node(name: str) -> dict[str, Any]:
    """A Node for kwok to manage, as kwok's docs describe (without their NoSchedule taint,
    so ordinary workloads schedule onto it without a toleration)."""
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok",
            },
        },
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "",
                "kernelVersion": "",
                "kubeProxyVersion": "fake",
                "kubeletVersion": "fake",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "",
                "systemUUID": "",
            },
            "phase": "Running",
        },
    }
