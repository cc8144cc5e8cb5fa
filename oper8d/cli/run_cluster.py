"""``oper8d run`` against a real cluster: connect, optionally install CRDs, run the manager
until SIGTERM/SIGINT, stop gracefully. The only CLI module that imports ``kubernetes``."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass
from typing import Any

import click

from oper8d.bundle.model import Bundle
from oper8d.errors import ClusterError
from oper8d.logs import configure_logging

log = logging.getLogger("oper8d")


@dataclass(frozen=True)
class RunSettings:
    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()
    leader_elect: bool = False
    leader_election_namespace: str = "default"
    leader_election_id: str | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    max_concurrent_reconciles: int = 4
    replace_on_invalid: bool = False
    install_crds: bool = False
    log_format: str = "text"


def setup_logging(fmt: str) -> None:
    """Lines of a reconcile carry its CR, reconcile id and component; Secrets are redacted."""
    configure_logging(fmt, stream=sys.stderr, level=os.environ.get("OPER8D_LOG_LEVEL", "INFO"))


def api_client(kubeconfig: str | None) -> Any:
    """An ApiClient from a kubeconfig, the in-cluster service account, or ~/.kube/config."""
    from kubernetes import client, config

    if kubeconfig:
        return config.new_client_from_config(config_file=kubeconfig)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        cfg = client.Configuration()
        config.load_incluster_config(client_configuration=cfg)
        return client.ApiClient(cfg)
    return config.new_client_from_config()


def _address(value: str) -> str | None:
    return None if value in ("", "0") else value


def run_on_cluster(bundle: Bundle, settings: RunSettings) -> int:
    setup_logging(settings.log_format)
    from oper8d.cluster.kube import KubeCluster
    from oper8d.runtime.manager import Manager, ManagerOptions

    try:
        client = api_client(settings.kubeconfig)
    except Exception as err:  # the kubernetes config loaders raise several types
        click.secho(f"error: cannot load cluster credentials: {err}", fg="red", err=True)
        return 1
    cluster = KubeCluster(client, field_manager=bundle.name)
    try:
        if settings.install_crds:
            from oper8d.manifests.install import install_crds

            for name in install_crds(cluster, bundle):
                log.info("CRD %s installed", name)
        manager = Manager(
            bundle,
            cluster,
            ManagerOptions(
                namespaces=settings.namespaces,
                max_concurrent_reconciles=settings.max_concurrent_reconciles,
                replace_on_invalid=settings.replace_on_invalid,
                leader_elect=settings.leader_elect,
                leader_election_namespace=settings.leader_election_namespace,
                leader_election_id=settings.leader_election_id,
                lease_duration=settings.lease_duration,
                renew_deadline=settings.renew_deadline,
                retry_period=settings.retry_period,
                metrics_bind_address=_address(settings.metrics_bind_address),
                health_probe_bind_address=_address(settings.health_probe_bind_address),
            ),
        )
    except ClusterError as err:
        click.secho(f"error: {err}", fg="red", err=True)
        return 1
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    manager.start()
    log.info(
        "operator %s running: %d controller(s), namespaces: %s",
        bundle.name,
        len(bundle.controllers),
        ", ".join(settings.namespaces) or "all",
    )
    while not stop.is_set() and not manager.wait(0.5):
        pass
    lost_lease = manager.wait(0) and not stop.is_set()
    manager.stop()
    log.info("stopped")
    return 1 if lost_lease else 0
