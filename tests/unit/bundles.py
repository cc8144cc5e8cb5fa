"""Test helpers: small bundles written into a temp folder, and a harness that reconciles
their CRs against the in-memory cluster with a fake clock.

Used by the reconcile, rollout, deploy and compile behaviour tests. ``write_bundle`` takes
the body of one controller (its ``components:``, ``status:``, ... keys, unindented) and
wraps it in an ``operator.yaml`` whose controller reconciles ``demo.oper8d.io/v1alpha1
Demo``; ``Harness`` holds the cluster, the clock, the simulator and a ``Reconciler``.
"""

from __future__ import annotations

import copy
import json
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import Bundle
from oper8d.clock import FakeClock
from oper8d.cluster.base import Obj
from oper8d.cluster.memory import MemoryCluster, sequential_uids
from oper8d.cluster.memory.simulate import DefaultSimulator
from oper8d.engine.reconcile import Reconciler, ReconcileResult, ReconcilerOptions

API_VERSION = "demo.oper8d.io/v1alpha1"
KIND = "Demo"
NAMESPACE = "default"

_HEADER = """\
apiVersion: oper8d.io/v1alpha1
kind: Operator
metadata:
  name: demo
  version: 1.0.0
controllers:
  - name: demo
    resource:
      group: demo.oper8d.io
      version: v1alpha1
      kind: Demo
      schema: {schema}
{config_schema}"""


def demo_cr(**spec: Any) -> dict[str, Any]:
    """A CR named ``demo`` of the test bundles' kind, with ``spec``."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": "demo", "namespace": NAMESPACE},
        "spec": spec,
    }


def write_bundle(
    root: Path,
    controller: str,
    *,
    schema: Mapping[str, Any] | None = None,
    files: Mapping[str, str] | None = None,
    config_schema: Mapping[str, Any] | None = None,
) -> Path:
    """Write a bundle folder under ``root`` and return it. ``controller`` is YAML of the
    controller's keys below ``resource`` (dedented here); ``files`` are extra files
    (templates, includes) by relative path; ``config_schema``: the resource's
    ``configSchema`` (what a CR may override of the config; none: nothing)."""
    root.mkdir(parents=True, exist_ok=True)
    body = textwrap.indent(textwrap.dedent(controller).strip("\n"), " " * 4)
    overridable = (
        f"      configSchema: {json.dumps(config_schema)}\n" if config_schema is not None else ""
    )
    header = _HEADER.format(
        schema=json.dumps(schema or {"type": "object"}), config_schema=overridable
    )
    text = header + body + "\n"
    (root / "operator.yaml").write_text(text, encoding="utf-8")
    for rel, content in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


def build(
    root: Path,
    controller: str,
    *,
    schema: Mapping[str, Any] | None = None,
    files: Mapping[str, str] | None = None,
    config_schema: Mapping[str, Any] | None = None,
) -> Bundle:
    """``write_bundle`` then compile it."""
    written = write_bundle(
        root, controller, schema=schema, files=files, config_schema=config_schema
    )
    return load_bundle(written)


def configmap(component: str, name: str | None = None, data: str = "{}") -> str:
    """YAML of one component holding a ConfigMap (``data`` is a YAML flow mapping)."""
    return f"""\
  - name: {component}
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: "{{{{ scoped_name('{name or component}') }}}}"}}
          data: {data}
"""


@dataclass
class Harness:
    """One bundle's controller, reconciling CRs in an in-memory cluster."""

    bundle: Bundle
    simulator: DefaultSimulator = field(default_factory=DefaultSimulator)
    max_workers: int = 1
    clock: FakeClock = field(default_factory=FakeClock)
    cluster: MemoryCluster = field(init=False)
    reconciler: Reconciler = field(init=False)

    def __post_init__(self) -> None:
        self.cluster = MemoryCluster(
            clock=self.clock.now, uid_factory=sequential_uids("test"), simulator=self.simulator
        )
        controller = self.bundle.controllers[0]
        res = controller.resource
        self.cluster.register_kind(res.api_version, res.kind, namespaced=res.namespaced)
        self.reconciler = self.new_reconciler()

    def new_reconciler(self, bundle: Bundle | None = None) -> Reconciler:
        """A fresh Reconciler (as after an operator restart), optionally for a changed bundle."""
        if bundle is not None:
            self.bundle = bundle
        return Reconciler(
            self.bundle,
            self.bundle.controllers[0],
            self.cluster,
            ReconcilerOptions(field_manager="demo", max_workers=self.max_workers, clock=self.clock),
        )

    # -- the CR ----------------------------------------------------------------------------
    def create(
        self,
        spec: Mapping[str, Any] | None = None,
        *,
        name: str = "demo",
        annotations: Mapping[str, str] | None = None,
        **top: Any,
    ) -> Obj:
        meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
        if annotations:
            meta["annotations"] = dict(annotations)
        body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": dict(spec or {})}
        body.update(top)
        return self.cluster.create(body, field_manager="kubectl")

    def cr(self, name: str = "demo") -> Obj:
        live = self.cluster.get(API_VERSION, KIND, name, NAMESPACE)
        assert live is not None, f"CR {name} does not exist"
        return live

    def edit_cr(self, change: Any, name: str = "demo") -> Obj:
        """Apply ``change(cr)`` to the live CR (as a user's kubectl edit) and PUT it."""
        live = copy.deepcopy(self.cr(name))
        change(live)
        return self.cluster.update(live, field_manager="kubectl")

    def set_spec(self, name: str = "demo", **values: Any) -> Obj:
        return self.edit_cr(lambda cr: cr["spec"].update(values), name)

    # -- reconciling -----------------------------------------------------------------------
    def reconcile(self, name: str = "demo") -> ReconcileResult:
        return self.reconciler.reconcile(NAMESPACE, name)

    def settle(self, name: str = "demo", passes: int = 10) -> ReconcileResult:
        """Reconcile until the CR is stable (or ``passes`` reconciles), ticking the
        simulator and the clock between passes like a requeue would."""
        result = self.reconcile(name)
        for _ in range(passes - 1):
            if result.paused or is_ready(self.cluster.get(API_VERSION, KIND, name, NAMESPACE)):
                break
            self.cluster.tick()
            self.clock.advance(result.requeue_after or 1.0)
            result = self.reconcile(name)
        return result

    # -- reading the cluster ---------------------------------------------------------------
    def objects(self, kind: str | None = None) -> list[Obj]:
        """Every object but the CR (optionally of one kind)."""
        return [
            o
            for o in self.cluster.objects()
            if o["kind"] != KIND and (kind is None or o["kind"] == kind)
        ]

    def names(self, kind: str | None = None) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self.objects(kind))

    def get(self, kind: str, name: str, api_version: str = "v1") -> Obj | None:
        return self.cluster.get(api_version, kind, name, NAMESPACE)


def condition(cr: Mapping[str, Any] | None, type_: str) -> dict[str, Any]:
    """The condition ``type_`` of a CR (an empty dict when absent)."""
    for cond in ((cr or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def is_ready(cr: Mapping[str, Any] | None) -> bool:
    return condition(cr, "Ready").get("status") == "True"


class EventLog:
    """Records ``(event, kind, name)`` of a cluster's watch events."""

    def __init__(self, cluster: MemoryCluster):
        self.events: list[tuple[str, str, str]] = []
        self.stop = cluster.watch(self._record)

    def _record(self, event: str, obj: Obj) -> None:
        self.events.append((event, obj["kind"], obj["metadata"]["name"]))

    def names(self, event: str, *, kind: str | None = None) -> list[str]:
        return [n for e, k, n in self.events if e == event and (kind is None or k == kind)]
