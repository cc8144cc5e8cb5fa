"""References between the objects rendered for one CR that cannot resolve: warnings.

The API server takes each of these objects alone, so nothing refuses them, yet they do not
work: an HPA whose ``scaleTargetRef`` names no rendered workload scales nothing, a Service
whose ``targetPort`` name no selected container declares gets no endpoints for that port,
an Ingress backend naming a Service or a Service port that is not there answers 503.
:func:`reference_warnings` judges the whole rendered set of one CR (every component, hooks
included), so a target rendered by another component of the same CR resolves; the
reconciler calls it only when every component rendered (nothing waiting or failed), and
``oper8d render``/``test``/``run --dry-run`` print what it finds, the live operator logs it.

A warning, never an error, and only where the rendered set can tell: a Service whose
selector matches no rendered pod template (its pods come from elsewhere), a numeric
``targetPort``, a backend that is not a Service, say nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oper8d.bundle.schema_messages import suggest
from oper8d.errors import Problem, SourcePos
from oper8d.kinds import ref_of
from oper8d.objects import Obj

__all__ = ["ReferenceWarnings", "Rendered", "reference_warnings"]

#: kinds whose pods come from a pod template, and where it is: (group, kind) -> path
_POD_TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): (),
    ("", "ReplicationController"): ("spec", "template"),
    ("apps", "Deployment"): ("spec", "template"),
    ("apps", "ReplicaSet"): ("spec", "template"),
    ("apps", "StatefulSet"): ("spec", "template"),
    ("apps", "DaemonSet"): ("spec", "template"),
    ("batch", "Job"): ("spec", "template"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
}


@dataclass(frozen=True)
class Rendered:
    """One rendered object, the internal name it goes by and where its resource is."""

    internal: str
    obj: Obj
    pos: SourcePos | None = None


def reference_warnings(objects: Sequence[Rendered], namespace: str | None) -> list[Problem]:
    """What in ``objects`` (everything rendered for one CR in ``namespace``) refers to
    something the set does not hold, one warning each, at its resource's position."""
    found: list[Problem] = []
    index = _Index(objects, namespace)
    for item in objects:
        group, kind = _group(item.obj), item.obj.get("kind")
        if (group, kind) == ("autoscaling", "HorizontalPodAutoscaler"):
            messages = list(_hpa(item.obj, index))
        elif (group, kind) == ("", "Service"):
            messages = list(_service(item.obj, index))
        elif (group, kind) == ("networking.k8s.io", "Ingress"):
            messages = list(_ingress(item.obj, index))
        else:
            continue
        for message in messages:
            text = f"resource '{item.internal}' renders {ref_of(item.obj)}, whose {message}"
            found.append(Problem(text, item.pos))
    return found


class ReferenceWarnings:
    """The warnings already logged for each CR (by uid), so that a reconcile logs only
    those that are new; a CR's are forgotten when it goes."""

    def __init__(self) -> None:
        self._seen: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()

    def new(self, uid: str, warnings: Iterable[Problem]) -> list[Problem]:
        current = {str(w): w for w in warnings}
        with self._lock:
            seen = self._seen.get(uid, frozenset())
            if current:
                self._seen[uid] = frozenset(current)
            else:
                self._seen.pop(uid, None)
        return [w for key, w in current.items() if key not in seen]

    def forget(self, uid: str) -> None:
        with self._lock:
            self._seen.pop(uid, None)


class _Index:
    """The rendered objects by (namespace, kind, name), and the pod templates."""

    def __init__(self, objects: Sequence[Rendered], namespace: str | None) -> None:
        self.namespace = namespace
        self.by_key: dict[tuple[str | None, str, str], list[Obj]] = {}
        #: (namespace, owner, pod template) of every workload
        self.templates: list[tuple[str | None, Obj, Mapping[str, Any]]] = []
        for item in objects:
            obj = item.obj
            kind, name = obj.get("kind"), _meta(obj).get("name")
            if not isinstance(kind, str) or not isinstance(name, str):
                continue
            ns = self.ns_of(obj)
            self.by_key.setdefault((ns, kind, name), []).append(obj)
            path = _POD_TEMPLATES.get((_group(obj), kind))
            if path is not None:
                template = _at(obj, path)
                if isinstance(template, Mapping):
                    self.templates.append((ns, obj, template))

    def ns_of(self, obj: Obj) -> str | None:
        ns = _meta(obj).get("namespace")
        return ns if isinstance(ns, str) and ns else self.namespace

    def names(self, ns: str | None, kind: str) -> list[str]:
        return [n for (s, k, n) in self.by_key if s == ns and k == kind]


def _hpa(hpa: Obj, index: _Index) -> Iterator[str]:
    ref = _at(hpa, ("spec", "scaleTargetRef"))
    if not isinstance(ref, Mapping):
        return
    kind, name, api_version = ref.get("kind"), ref.get("name"), ref.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(name, str):
        return
    ns = index.ns_of(hpa)
    group = _group({"apiVersion": api_version}) if isinstance(api_version, str) else None
    targets = index.by_key.get((ns, kind, name), [])
    if any(group is None or _group(t) == group for t in targets):
        return
    what = f"{api_version} {kind}" if isinstance(api_version, str) else kind
    others = sorted(k for (s, k, n) in index.by_key if s == ns and n == name and k != kind)
    same_name = f" (it renders {others[0]} '{name}')" if others else ""
    hint = same_name or suggest(name, index.names(ns, kind))
    yield (
        f"spec.scaleTargetRef names {what} '{name}', which is not among the objects "
        f"rendered for this CR{hint}: the autoscaler has nothing to scale"
    )


def _service(service: Obj, index: _Index) -> Iterator[str]:
    spec = service.get("spec")
    if not isinstance(spec, Mapping) or spec.get("type") == "ExternalName":
        return
    selector = spec.get("selector")
    ports = spec.get("ports")
    if not isinstance(selector, Mapping) or not selector or not isinstance(ports, list):
        return
    ns = index.ns_of(service)
    selected = [
        (owner, template)
        for t_ns, owner, template in index.templates
        if t_ns == ns and _selects(selector, template)
    ]
    if not selected:  # its pods are not rendered here: nothing to judge by
        return
    declared: dict[str, set[str]] = {}  # port name -> protocols
    for _owner, template in selected:
        for name, protocol in _container_ports(template):
            declared.setdefault(name, set()).add(protocol)
    pods = ", ".join(ref_of(owner) for owner, _t in selected[:3])
    pods += f" and {len(selected) - 3} more" if len(selected) > 3 else ""
    for number, port in enumerate(ports):
        if not isinstance(port, Mapping):
            continue
        target = port.get("targetPort")
        if not isinstance(target, str) or not target or target.isdigit():
            continue
        protocol = str(port.get("protocol") or "TCP")
        field = f"spec.ports[{number}].targetPort '{target}'"
        if target not in declared:
            hint = suggest(target, declared)
            yield (
                f"{field} names a port no container of the pods it selects ({pods}) "
                f"declares{hint}: the Service has no endpoints for it"
            )
        elif protocol not in declared[target]:
            have = "/".join(sorted(declared[target]))
            yield (
                f"{field} is a {protocol} port, but the containers of the pods it selects "
                f"({pods}) declare '{target}' as {have}: the Service has no endpoints for it"
            )


def _ingress(ingress: Obj, index: _Index) -> Iterator[str]:
    spec = ingress.get("spec")
    if not isinstance(spec, Mapping):
        return
    backends: list[tuple[str, Any]] = [("spec.defaultBackend", spec.get("defaultBackend"))]
    for r, rule in enumerate(_list(spec.get("rules"))):
        http = rule.get("http") if isinstance(rule, Mapping) else None
        paths = http.get("paths") if isinstance(http, Mapping) else None
        for p, path in enumerate(_list(paths)):
            backend = path.get("backend") if isinstance(path, Mapping) else None
            backends.append((f"spec.rules[{r}].http.paths[{p}].backend", backend))
    ns = index.ns_of(ingress)
    for where, backend in backends:
        service = backend.get("service") if isinstance(backend, Mapping) else None
        if not isinstance(service, Mapping) or not isinstance(service.get("name"), str):
            continue
        name = service["name"]
        found = index.by_key.get((ns, "Service", name))
        if not found:
            hint = suggest(name, index.names(ns, "Service"))
            yield (
                f"{where}.service.name names Service '{name}', which is not among the "
                f"objects rendered for this CR{hint}"
            )
            continue
        port = service.get("port")
        port_name = port.get("name") if isinstance(port, Mapping) else None
        if not isinstance(port_name, str):
            continue
        names = {
            p.get("name")
            for obj in found
            for p in _list((obj.get("spec") or {}).get("ports"))
            if isinstance(p, Mapping) and isinstance(p.get("name"), str)
        }
        if port_name not in names:
            hint = suggest(port_name, [n for n in names if isinstance(n, str)])
            yield (
                f"{where}.service.port.name '{port_name}' is not a port of Service '{name}'{hint}"
            )


def _selects(selector: Mapping[str, Any], template: Mapping[str, Any]) -> bool:
    labels = _meta(template).get("labels")
    if not isinstance(labels, Mapping):
        return False
    return all(labels.get(k) == v for k, v in selector.items())


def _container_ports(template: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    # init containers too: a sidecar (restartPolicy Always) serves ports
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return
    for key in ("containers", "initContainers"):
        for container in _list(spec.get(key)):
            if not isinstance(container, Mapping):
                continue
            for port in _list(container.get("ports")):
                if isinstance(port, Mapping) and isinstance(port.get("name"), str):
                    yield port["name"], str(port.get("protocol") or "TCP")


def _group(obj: Mapping[str, Any]) -> str:
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str) or "/" not in api_version:
        return ""
    return api_version.split("/", 1)[0]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _at(obj: Any, path: Sequence[str]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
