"""Generated bundles for the benchmarks: N components of three objects each.

Used by ``bench_render`` and ``bench_reconcile`` (and the smoke test). Every component
deploys a ConfigMap, a Deployment and a Service with a few expressions each, as oper8's
measured anchor does (3 objects per component). Components alternate between inline
objects (rendered as trees, no YAML parse) and a Helm-style text template file (rendered
text, then parsed), so a bundle exercises both render paths half and half. The shape
says how components depend on each other: ``chain`` (each on the previous one) or
``independent`` (no edges).

The bundle is written as files, so loading it goes through the real loader, validator
and compiler.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

Shape = Literal["chain", "independent"]

OBJECTS_PER_COMPONENT = 3
CR_API_VERSION = "bench.oper8d.io/v1alpha1"
CR_KIND = "BenchApp"


@dataclass(frozen=True)
class GeneratedBundle:
    """A bundle written to ``path`` and a CR it reconciles."""

    path: Path
    cr: dict[str, Any]
    components: int
    shape: Shape

    @property
    def objects(self) -> int:
        """Objects one full render produces."""
        return self.components * OBJECTS_PER_COMPONENT


def component_name(index: int) -> str:
    return f"c{index:03d}"


def write_bundle(
    root: Path,
    *,
    components: int,
    shape: Shape = "chain",
    name: str = "bench",
) -> GeneratedBundle:
    """Write a bundle of ``components`` components into ``root`` (created if missing)."""
    if components < 1:
        raise ValueError(f"a bundle needs at least 1 component, got {components}")
    if shape not in ("chain", "independent"):
        raise ValueError(f"unknown shape {shape!r}: use 'chain' or 'independent'")
    root.mkdir(parents=True, exist_ok=True)
    (root / "templates").mkdir(exist_ok=True)
    entries: list[dict[str, Any]] = []
    for index in range(components):
        comp = component_name(index)
        entry: dict[str, Any] = {"name": comp}
        if shape == "chain" and index > 0:
            entry["dependsOn"] = [component_name(index - 1)]
        if index % 2 == 1:
            template_file = f"templates/{comp}.yaml"
            (root / template_file).write_text(_text_template(comp), encoding="utf-8")
            entry["resources"] = [{"name": "manifests", "template": template_file}]
        else:
            entry["resources"] = _inline_resources(comp)
        entries.append(entry)
    operator = {
        "apiVersion": "oper8d.io/v1alpha1",
        "kind": "Operator",
        "metadata": {"name": name, "version": "0.1.0"},
        "controllers": [
            {
                "name": name,
                "resource": {
                    "group": CR_API_VERSION.split("/")[0],
                    "version": CR_API_VERSION.split("/")[1],
                    "kind": CR_KIND,
                    "schema": {
                        "type": "object",
                        "properties": {
                            "version": {"type": "string", "default": "1.0.0"},
                            "image": {"type": "string", "default": "ghcr.io/example/app"},
                            "replicas": {"type": "integer", "minimum": 1, "default": 2},
                            "port": {"type": "integer", "default": 8080},
                        },
                    },
                },
                "config": {"logLevel": "info"},
                "components": entries,
                # a stable CR is not requeued; a waiting one is retried soon
                "requeue": {"whileWaiting": "1s", "afterSuccess": None},
            }
        ],
    }
    (root / "operator.yaml").write_text(yaml.safe_dump(operator, sort_keys=False), "utf-8")
    cr = {
        "apiVersion": CR_API_VERSION,
        "kind": CR_KIND,
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {"version": "1.0.0", "replicas": 2},
    }
    (root / "cr.yaml").write_text(yaml.safe_dump(cr, sort_keys=False), "utf-8")
    return GeneratedBundle(path=root, cr=cr, components=components, shape=shape)


def _inline_resources(comp: str) -> list[dict[str, Any]]:
    app = f"{{{{ scoped_name('{comp}') }}}}"
    config_name = f"{{{{ scoped_name('{comp}-config') }}}}"

    def labels() -> dict[str, str]:  # a fresh dict each time: no YAML anchors in the file
        return {"app": app, "version": "{{ version }}"}

    return [
        {
            "name": "config",
            "object": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": config_name},
                "data": {
                    "LOG_LEVEL": "{{ config.logLevel }}",
                    "REPLICAS": "{{ spec.replicas | string }}",
                    "COMPONENT": "{{ component }}",
                },
            },
        },
        {
            "name": "deployment",
            "object": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": app, "labels": labels()},
                "spec": {
                    "replicas": "{{ spec.replicas }}",
                    "selector": {"matchLabels": {"app": app}},
                    "template": {
                        "metadata": {"labels": labels()},
                        "spec": {
                            "containers": [
                                {
                                    "name": "app",
                                    "image": "{{ spec.image }}:{{ version }}",
                                    "ports": [{"containerPort": "{{ spec.port }}"}],
                                    "envFrom": [{"configMapRef": {"name": config_name}}],
                                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                                }
                            ]
                        },
                    },
                },
            },
        },
        {
            "name": "service",
            "object": {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": app, "labels": labels()},
                "spec": {
                    "selector": {"app": app},
                    "ports": [{"name": "http", "port": 80, "targetPort": "{{ spec.port }}"}],
                },
            },
        },
    ]


def _text_template(comp: str) -> str:
    """The same three objects as ``_inline_resources``, as one multi-document template."""
    app = f"{{{{ scoped_name('{comp}') }}}}"
    config_name = f"{{{{ scoped_name('{comp}-config') }}}}"
    return f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {config_name}
data:
  LOG_LEVEL: {{{{ config.logLevel | quote }}}}
  REPLICAS: {{{{ spec.replicas | quote }}}}
  COMPONENT: {{{{ component | quote }}}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {app}
  labels:
    app: {app}
    version: {{{{ version | quote }}}}
spec:
  replicas: {{{{ spec.replicas }}}}
  selector:
    matchLabels:
      app: {app}
  template:
    metadata:
      labels:
        app: {app}
        version: {{{{ version | quote }}}}
    spec:
      containers:
        - name: app
          image: "{{{{ spec.image }}}}:{{{{ version }}}}"
          ports:
            - containerPort: {{{{ spec.port }}}}
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
    version: {{{{ version | quote }}}}
spec:
  selector:
    app: {app}
  ports:
    - name: http
      port: 80
      targetPort: {{{{ spec.port }}}}
"""
