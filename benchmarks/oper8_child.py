"""The oper8 side of ``benchmarks.vs_oper8``: run by path with a scratch venv's Python that
has oper8 installed (never oper8d's environment; oper8 is not a dependency of oper8d).

``python oper8_child.py SHAPE COMPONENTS FIRST STEADY`` builds, in this process, an oper8
operator equivalent to ``benchmarks.gen``'s bundle of that shape: one oper8 ``Component``
per component, each adding a ConfigMap, a Deployment and a Service with the same names,
labels and values (every other component renders a YAML text and parses it with libyaml,
as the generated bundle's text-template components do; the others build the dicts in
Python). It reconciles the CR with oper8's own ``ReconcileManager`` against oper8's
``DryRunDeployManager`` (oper8's dry run: nothing leaves the process) and prints one JSON
line: the CPU seconds (``time.process_time``, all threads) of ``FIRST`` first reconciles
(each on a fresh dry-run cluster holding only the CR) and of ``STEADY`` steady no-op
reconciles of a CR already stable.

This file imports only oper8, its dependencies and the standard library.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from typing import Any

GROUP = "bench.oper8d.io"
VERSION = "v1alpha1"
KIND = "BenchApp"
#: the CR schema's defaults in ``benchmarks.gen``, applied as oper8 does (cr defaults)
SPEC_DEFAULTS = {"version": "1.0.0", "image": "ghcr.io/example/app", "replicas": 2, "port": 8080}

TEXT = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {config_name}
data:
  LOG_LEVEL: "{log_level}"
  REPLICAS: "{replicas}"
  COMPONENT: "{component}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {app}
  labels:
    app: {app}
    version: "{version}"
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {app}
  template:
    metadata:
      labels:
        app: {app}
        version: "{version}"
    spec:
      containers:
        - name: app
          image: "{image}:{version}"
          ports:
            - containerPort: {port}
          envFrom:
            - configMapRef:
                name: {config_name}
          resources:
            requests:
              cpu: 100m
              memory: 128Mi
---
apiVersion: v1
kind: Service
metadata:
  name: {app}
  labels:
    app: {app}
    version: "{version}"
spec:
  selector:
    app: {app}
  ports:
    - name: http
      port: 80
      targetPort: {port}
"""


def objects(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The three objects of one component, as Python dicts."""
    app, config_name, version = values["app"], values["config_name"], values["version"]
    labels = {"app": app, "version": version}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": config_name},
            "data": {
                "LOG_LEVEL": values["log_level"],
                "REPLICAS": str(values["replicas"]),
                "COMPONENT": values["component"],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": app, "labels": dict(labels)},
            "spec": {
                "replicas": values["replicas"],
                "selector": {"matchLabels": {"app": app}},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": f"{values['image']}:{version}",
                                "ports": [{"containerPort": values["port"]}],
                                "envFrom": [{"configMapRef": {"name": config_name}}],
                                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                            }
                        ]
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": app, "labels": dict(labels)},
            "spec": {
                "selector": {"app": app},
                "ports": [{"name": "http", "port": 80, "targetPort": values["port"]}],
            },
        },
    ]


def build(shape: str, components: int) -> Any:
    """An oper8 Controller class of ``components`` components in ``shape``."""
    import yaml
    from oper8 import Component, Controller, component, controller

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def make(index: int) -> type:
        comp = f"c{index:03d}"

        @component(comp)
        class Bench(Component):  # type: ignore[misc]
            def __init__(self, session: Any) -> None:
                super().__init__(session)
                spec = session.spec
                values = {
                    "component": comp,
                    "app": session.get_scoped_name(comp),
                    "config_name": session.get_scoped_name(f"{comp}-config"),
                    "version": session.version,
                    "image": spec.image,
                    "replicas": spec.replicas,
                    "port": spec.port,
                    "log_level": session.config.logLevel,
                }
                if index % 2 == 1:
                    docs = list(yaml.load_all(TEXT.format(**values), Loader=loader))
                else:
                    docs = objects(values)
                for name, obj in zip(("config", "deployment", "service"), docs, strict=True):
                    self.add_resource(name, obj)

        return Bench

    classes = [make(i) for i in range(components)]

    @controller(GROUP, VERSION, KIND)
    class BenchController(Controller):  # type: ignore[misc]
        def setup_components(self, session: Any) -> None:
            made = [cls(session) for cls in classes]
            if shape == "chain":
                for before, after in itertools.pairwise(made):
                    after.add_dependency(session, before)

        def get_cr_manifest_defaults(self) -> dict[str, Any]:
            return {"spec": dict(SPEC_DEFAULTS)}

    return BenchController


def main(argv: list[str]) -> int:
    shape, components, first_n, steady_n = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    os.environ.setdefault("LOG_LEVEL", "off")
    import aconfig
    import alog
    from oper8 import config
    from oper8.deploy_manager.dry_run_deploy_manager import DryRunDeployManager
    from oper8.reconcile import ReconcileManager

    alog.configure("off")
    config.dry_run = True
    controller_class = build(shape, components)
    cr = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": "bench", "namespace": "default", "uid": "bench-uid"},
        "spec": {"version": "1.0.0", "replicas": 2},
    }

    def fresh() -> tuple[Any, Any]:
        cluster = DryRunDeployManager(resources=[aconfig.Config(cr)])
        manager = ReconcileManager(deploy_manager=cluster, enable_vcs=False)
        return cluster, manager

    def live_cr(cluster: Any) -> Any:
        found, current = cluster.get_object_current_state(KIND, "bench", "default")
        assert found, "the CR vanished from oper8's dry-run cluster"
        return current

    controller_obj = controller_class(config_defaults=aconfig.Config({"logLevel": "info"}))
    first: list[float] = []
    cluster = manager = None
    for _ in range(first_n + 1):  # the first one warms imports and caches up, untimed
        cluster, manager = fresh()
        resource = live_cr(cluster)
        start = time.process_time()
        manager.reconcile(controller_obj, resource)
        first.append(time.process_time() - start)
    first = first[1:]
    assert cluster is not None and manager is not None
    status = live_cr(cluster).get("status", {})
    ready = [c for c in status.get("conditions", []) if c.get("type") == "Ready"]
    kinds = cluster._cluster_content.get("default", {})
    objects_made = sum(
        len(names)
        for kind, versions in kinds.items()
        if kind != KIND
        for names in versions.values()
    )
    manager.reconcile(controller_obj, live_cr(cluster))  # settles, untimed
    steady: list[float] = []
    for _ in range(steady_n):
        resource = live_cr(cluster)
        start = time.process_time()
        manager.reconcile(controller_obj, resource)
        steady.append(time.process_time() - start)
    print(
        json.dumps(
            {
                "first": first,
                "steady": steady,
                "ready": ready[0].get("status") if ready else None,
                "objects": objects_made,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
