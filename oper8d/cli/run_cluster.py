"""``oper8d run`` against a real cluster: connect, optionally install CRDs, run the manager
until SIGTERM/SIGINT, stop gracefully. The only CLI module that imports ``kubernetes``."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from oper8d.bundle.model import Bundle
from oper8d.errors import ClusterError
from oper8d.logformat import configure_logging

if TYPE_CHECKING:
    from oper8d.cluster.kube import KubeCluster
    from oper8d.runtime.options import ManagerOptions

log = logging.getLogger("oper8d")

#: where a Pod finds its own namespace (the in-cluster default, as kubectl uses it)
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


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


def context_namespace(kubeconfig: str | None) -> str:
    """The namespace a CR without one goes to, as kubectl picks it: the current context's
    namespace, the Pod's own namespace in a cluster, else ``default``."""
    if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
        except OSError:
            return "default"
    from kubernetes import config

    try:
        _contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)
    except Exception:  # no usable kubeconfig: api_client() has reported it already
        return "default"
    return str(((active or {}).get("context") or {}).get("namespace") or "default")


def run_on_cluster(
    bundle: Bundle,
    options: ManagerOptions,
    *,
    kubeconfig: str | None = None,
    install_crds: bool = False,
    log_format: str = "text",
) -> int:
    """Run the manager until SIGTERM/SIGINT; the process's exit code."""
    setup_logging(log_format)
    from oper8d.cluster.kube import KubeCluster
    from oper8d.runtime.manager import RECURSION_LIMIT, Manager

    try:
        client = api_client(kubeconfig)
    except Exception as err:  # the kubernetes config loaders raise several types
        click.secho(f"error: cannot load cluster credentials: {err}", fg="red", err=True)
        return 1
    cluster = KubeCluster(client, field_manager=options.field_manager or bundle.name)
    try:
        if install_crds:
            from oper8d.manifests.install import install_crds as install

            for name in install(cluster, bundle):
                log.info("CRD %s installed", name)
        preflight(cluster, bundle)
        manager = Manager(bundle, cluster, options)
    except ClusterError as err:
        click.secho(f"error: {err}", fg="red", err=True)
        return 1
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # after the bundle's templates compiled (under the default limit): a tenant's CR nested
    # 10,000 deep must not stop the informers (runtime.manager.RECURSION_LIMIT)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    try:
        manager.start()
    except OSError as err:  # the probe or metrics address is taken or not ours to bind
        manager.stop()
        click.secho(
            f"error: cannot serve the health probes or metrics: {err.strerror or err} "
            f"(--health-probe-bind-address {options.health_probe_bind_address or 'off'}, "
            f"--metrics-bind-address {options.metrics_bind_address or 'off'}): choose free "
            "addresses, or an empty one to turn that server off",
            fg="red",
            err=True,
        )
        return 1
    log.info(
        "operator %s running: %d controller(s), namespaces: %s",
        bundle.name,
        len(bundle.controllers),
        ", ".join(options.namespaces) or "all",
    )
    while not stop.is_set() and not manager.wait(0.5):
        pass
    lost_lease = manager.wait(0) and not stop.is_set()
    manager.stop()
    log.info("stopped")
    return 1 if lost_lease else 0


def preflight(cluster: KubeCluster, bundle: Bundle) -> None:
    """Fail fast when the API server cannot be reached; warn, once and with the fix, about
    CR kinds it does not serve yet (the informers pick them up when their CRDs appear)."""
    for spec in bundle.controllers:
        kind = spec.resource
        try:
            cluster.resource(kind.api_version, kind.kind)
        except ClusterError as err:
            if err.status is None:
                raise ClusterError(
                    f"{err}; check --kubeconfig (or $KUBECONFIG) and that the cluster is up"
                ) from err
            if err.status != 404:
                raise
            log.warning(
                "the cluster has no CRD for %s %s yet: run with --install-crds, or apply the "
                "CRDs from `oper8d manifests`; waiting for it",
                kind.api_version,
                kind.kind,
            )
