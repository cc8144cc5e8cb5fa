"""What the in-memory cluster's API server refuses or rewrites on a write.

Used by ``cluster.memory`` before it stores an object, so that a dry run or a bundle test
fails the way a real cluster would (a template with a selector that does not match its
pod labels, a StatefulSet change the API server forbids, a number in an annotation...)
instead of passing offline and failing in production.

``mutate`` does the server-side rewrites (Secret ``stringData`` folded into ``data``,
Service cluster IPs kept and allocated); ``validate`` raises ``ClusterError`` with status
422 (invalid) or 400 (malformed), naming the object and the field; ``check_values``
refuses what breaks the kind's schema (``oper8d.kubeschema``: types, required fields,
enums, formats, base64 Secret data), the same check the engine runs before it applies. Of
the rules outside the schemas, the ones most likely to bite an operator are modelled.
Unknown fields follow the kind's schema (``cluster.listtypes``): a server-side apply with
one is refused (``refuse_unknown``), other writes drop them (``prune_unknown``), as the
apiserver does by default.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from oper8d.cluster.listtypes import Shape
from oper8d.cluster.selectors import (
    label_key_problem,
    label_value_problem,
    selector_from_dict,
)
from oper8d.errors import ClusterError
from oper8d.kinds import DNS_LABEL, group_of
from oper8d.kubeschema import KubeSchemas
from oper8d.kubeschema.immutable import immutable_changes
from oper8d.kubeschema.objectmeta import NAME_RULES, subdomain_problem
from oper8d.logs import Logger
from oper8d.objects import Obj

_MAX_ANNOTATIONS_BYTES = 256 * 1024
#: schema problems quoted in one refusal; the rest are counted
_MAX_SHOWN = 5
#: JSON scalars: nothing below them to check
_SCALARS = frozenset({str, int, float, bool, type(None)})
#: how kubeschema words a value of the wrong JSON type
_TYPE_ERROR = ": must be of type "
#: metadata the server sets whatever a client sends, but decodes first
_SERVER_SET = frozenset({"creationTimestamp", "deletionTimestamp", "uid", "generation"})

#: workloads whose spec.selector is required and must select the pod template
_SELECTING_WORKLOADS = frozenset(
    {("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("apps", "DaemonSet")}
)


_LOG = Logger("oper8d.cluster.memory")


def describe(obj: Mapping[str, Any]) -> str:
    """``Deployment demo/web`` (or ``Namespace demo``) for messages."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    name = meta.get("name") or meta.get("generateName") or "<no name>"
    return f"{obj.get('kind')} {ns}/{name}" if ns else f"{obj.get('kind')} {name}"


def _invalid(obj: Mapping[str, Any], field: str, why: str, status: int = 422) -> ClusterError:
    return ClusterError(f"{describe(obj)} is invalid: {field}: {why}", status=status)


def mutate(new: Obj, old: Obj | None, allocate_cluster_ip: Callable[[], str]) -> None:
    """Rewrite ``new`` in place as the API server would before storing it."""
    meta = new.get("metadata")
    for field in ("labels", "annotations"):
        entries = meta.get(field) if isinstance(meta, dict) else None
        if isinstance(entries, dict):  # Go decodes a null string as ""
            entries.update({k: "" for k, v in entries.items() if v is None})
    group, kind = group_of(str(new.get("apiVersion", ""))), new.get("kind")
    if group == "" and kind == "Secret" and isinstance(new.get("stringData"), Mapping):
        data = new.setdefault("data", {})
        for key, value in new.pop("stringData").items():
            data[key] = base64.b64encode(str(value).encode()).decode()
    if group == "" and kind == "Service":
        spec = new.get("spec")
        if spec is None:  # absent or null: the apiserver decodes both as an empty spec
            spec = new["spec"] = {}
        if not isinstance(spec, dict) or spec.get("type", "ClusterIP") == "ExternalName":
            return  # (a spec of another type is refused by check_values)
        previous = ((old or {}).get("spec") or {}).get("clusterIP")
        # a PUT without clusterIP keeps the allocated one, as the API server does
        ip = spec.get("clusterIP") or previous or allocate_cluster_ip()
        spec["clusterIP"] = ip
        spec.setdefault("clusterIPs", [ip])


def check_values(
    new: Obj, schemas: KubeSchemas, old: Obj | None = None, warned: set[str] | None = None
) -> None:
    """Raise when ``new`` breaks its kind's schema (types, required fields, enums, formats,
    unknown kinds of a served group, CEL rules: transition rules against ``old``, the
    stored object, on update), as the API server does: 400 when a built-in kind's body
    does not decode (a value of the wrong JSON type), 422 otherwise. A kind with no known
    schema is not checked; a CEL rule that cannot be evaluated is logged once per
    ``warned`` set (the store's)."""
    result = schemas.validate(new, old)
    for line in result.unchecked:
        if warned is None or line not in warned:
            _LOG.warning("%s: %s", describe(new), line)
            if warned is not None:
                warned.add(line)
    if result.ok:
        return
    shown = [str(f) for f in result.errors[:_MAX_SHOWN]]
    more = len(result.errors) - len(shown)
    listed = "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
    info = schemas.kind_info(str(new.get("apiVersion")), str(new.get("kind")))
    undecodable = info is not None and info.builtin and _TYPE_ERROR in result.errors[0].message
    raise ClusterError(f"{describe(new)} is invalid: {listed}", status=400 if undecodable else 422)


def check_sent_metadata(sent: Obj, schemas: KubeSchemas) -> None:
    """Raise 400 when the metadata a client sent does not decode (a server-set field such
    as ``creationTimestamp`` of the wrong form): the API server refuses it although it
    would overwrite the field."""
    meta = sent.get("metadata")
    if not isinstance(meta, dict):
        return
    server_set = {k: v for k, v in meta.items() if k in _SERVER_SET}
    if not server_set:
        return
    result = schemas.validate_metadata(server_set)
    if not result.ok:
        first = result.errors[0]
        raise ClusterError(f"{describe(sent)} cannot be decoded: {first}", status=400)


def validate(new: Obj, old: Obj | None) -> None:
    """Raise ``ClusterError`` when the API server would refuse to store ``new``."""
    meta = new.get("metadata")
    if type(meta) is not dict and not isinstance(meta, Mapping):
        raise _invalid(new, "metadata", "required map", 400)
    if old is None:
        _check_name(new)
    namespace = meta.get("namespace")
    if namespace and not DNS_LABEL.fullmatch(str(namespace)):
        raise _invalid(new, "metadata.namespace", f"{namespace!r} is not a valid namespace name")
    _check_string_map(new, "labels", values_are_labels=True)
    _check_string_map(new, "annotations", values_are_labels=False)
    _check_finalizers(new)
    _check_owner_references(new)
    key = (group_of(str(new.get("apiVersion", ""))), new.get("kind"))
    if key in _SELECTING_WORKLOADS:
        _check_selector_matches_template(new)
    if old is not None:
        _check_immutable(old, new)


def _check_name(obj: Obj) -> None:
    name = obj["metadata"].get("name")
    if not name:
        raise _invalid(obj, "metadata.name", "Required value: name or generateName is required")
    if not isinstance(name, str):
        raise _invalid(obj, "metadata.name", f"must be a string, got {name!r}", 400)
    group, kind = group_of(str(obj.get("apiVersion", ""))), str(obj.get("kind"))
    # the rule of each kind is the offline check's (one place: kubeschema.objectmeta)
    problem = NAME_RULES.get((group, kind), subdomain_problem)(name)
    if problem is not None:
        raise _invalid(obj, "metadata.name", f"Invalid value {name!r}: {problem}")


def _check_string_map(obj: Obj, field: str, *, values_are_labels: bool) -> None:
    entries = obj["metadata"].get(field)
    if entries is None:
        return
    where = f"metadata.{field}"
    if type(entries) is not dict and not isinstance(entries, Mapping):
        raise _invalid(obj, where, f"must be a map of strings, got {type(entries).__name__}", 400)
    size = 0
    for key, value in entries.items():
        if type(value) is not str and not isinstance(value, str):
            raise _invalid(
                obj,
                f"{where}[{key!r}]",
                f"must be a string, got {type(value).__name__} {value!r}; quote it in the template",
                400,
            )
        text = key if type(key) is str else str(key)
        if values_are_labels:
            problem = label_key_problem(text) or label_value_problem(value)
        else:  # (an annotation key is checked lower-cased, as the apiserver does: "A/b" is taken)
            problem = label_key_problem(text.lower())
        if problem:
            raise _invalid(obj, where, problem)
        size += len(text) + len(value)
    if not values_are_labels and size > _MAX_ANNOTATIONS_BYTES:
        raise _invalid(obj, where, f"Too long: must have at most {_MAX_ANNOTATIONS_BYTES} bytes")


def _check_finalizers(obj: Obj) -> None:
    finalizers = obj["metadata"].get("finalizers") or []
    if not isinstance(finalizers, list):
        raise _invalid(obj, "metadata.finalizers", "must be a list of strings", 400)
    for name in finalizers:
        if not isinstance(name, str) or (problem := label_key_problem(name)):
            why = problem if isinstance(name, str) else "must be a string"
            raise _invalid(obj, "metadata.finalizers", f"{name!r}: {why}")


def _check_owner_references(obj: Obj) -> None:
    refs = obj["metadata"].get("ownerReferences") or []
    if not isinstance(refs, list):
        raise _invalid(obj, "metadata.ownerReferences", "must be a list", 400)
    for i, ref in enumerate(refs):
        missing = [k for k in ("apiVersion", "kind", "name", "uid") if not (ref or {}).get(k)]
        if missing:
            raise _invalid(obj, f"metadata.ownerReferences[{i}]", f"Required value: {missing}")
    if sum(1 for ref in refs if ref.get("controller")) > 1:
        raise _invalid(
            obj, "metadata.ownerReferences", "Only one reference can have Controller set to true"
        )


def _check_selector_matches_template(obj: Obj) -> None:
    spec = obj.get("spec") or {}
    raw = spec.get("selector")
    if not raw:
        raise _invalid(obj, "spec.selector", "Required value: a workload needs a label selector")
    selector = selector_from_dict(raw)
    if selector.empty:
        raise _invalid(obj, "spec.selector", "Invalid value: empty selector is invalid")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not selector.matches(labels):
        raise _invalid(
            obj,
            "spec.template.metadata.labels",
            f"Invalid value {labels!r}: `selector` does not match template `labels` "
            f"(selector {selector})",
        )


def _check_immutable(old: Obj, new: Obj) -> None:
    """Refuse a change of a field the kind's update validation keeps (``kubeschema``'s
    table), in the API server's words and with its causes: one per field it names (all
    of a StatefulSet's forbidden fields are one cause, ``spec``)."""
    changes = immutable_changes(old, new)
    if not changes:
        return
    causes: dict[tuple[str, str], str] = {}
    for change in changes:
        if change.forbidden:
            text = f"Forbidden: {change.message}"
        else:
            value = json.dumps(_value_at(new, change.reported), sort_keys=True)
            text = f"Invalid value: {value}: {change.message}"
        causes.setdefault((change.reported, change.message), text)
    listed = [f"{field}: {text}" for (field, _), text in causes.items()]
    shown = listed[0] if len(listed) == 1 else f"[{', '.join(listed)}]"
    raise ClusterError(
        f"{_server_name(new)} is invalid: {shown}",
        status=422,
        causes=tuple((field, text) for (field, _), text in causes.items()),
    )


def _server_name(obj: Obj) -> str:
    """How the API server names an object in a refusal: ``Deployment.apps "web"``."""
    group = group_of(str(obj.get("apiVersion", "")))
    kind = f"{obj.get('kind')}.{group}" if group else str(obj.get("kind"))
    return f'{kind} "{(obj.get("metadata") or {}).get("name")}"'


def _value_at(obj: Obj, path: str) -> Any:
    value: Any = obj
    for part in path.replace("[", ".").replace("]", "").split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, Mapping):
            value = value.get(part)
        else:
            return None
    return value


def server_ordered(obj: Obj) -> Obj:
    """``obj`` with keys ordered as the API server writes them: Go maps (labels,
    annotations, ConfigMap and Secret data) sorted, and custom resources, which the server
    keeps as JSON maps, sorted throughout. Other fields of built-in kinds keep their order
    (the server's is its Go struct order, which we do not model)."""
    if _kept_as_json(obj):
        ordered: Obj = sorted_keys(obj)
        return ordered
    group = group_of(str(obj.get("apiVersion", "")))
    out = dict(obj)
    meta = out["metadata"] = dict(obj.get("metadata") or {})
    maps = [(meta, "labels"), (meta, "annotations")]
    if group == "" and obj.get("kind") in ("ConfigMap", "Secret"):
        maps += [(out, "data"), (out, "binaryData"), (out, "stringData")]
    for parent, key in maps:
        if isinstance(parent.get(key), Mapping):
            parent[key] = dict(sorted(parent[key].items()))
    return out


def status_ordered(obj: Obj) -> Obj:
    """``server_ordered(obj)`` for a new version of a stored object (which it ordered)
    that differs only in its status: a custom resource's status is sorted like the rest
    of it; a built-in kind's status keeps its order, and the maps it sorts (labels,
    annotations, data) are the stored version's, already sorted, so nothing moves. A
    test holds it to ``server_ordered``."""
    return server_ordered(obj) if _kept_as_json(obj) else obj


def _kept_as_json(obj: Obj) -> bool:
    """A custom resource: the server keeps it as JSON maps, sorted throughout."""
    group = group_of(str(obj.get("apiVersion", "")))
    return bool(group) and "." in group and not group.endswith(".k8s.io")


def sorted_keys(value: Any) -> Any:
    """``value`` with every mapping's keys sorted, recursively (how Go writes JSON maps)."""
    if type(value) is dict or isinstance(value, Mapping):
        return {k: sorted_keys(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def unknown_fields(tree: Mapping[str, Any], shape: Shape, at: tuple[str, ...] = ()) -> list[str]:
    """The fields of ``tree`` (a write's content, at ``shape``) its schema does not have,
    as ``.spec.replica`` paths (list items by index)."""
    out: list[str] = []
    for key, value in tree.items():
        path = (*at, str(key))
        sub = shape.stored(key)
        if sub is None:
            out.append("." + ".".join(path))
            continue
        # (type checks first: isinstance against the Mapping ABC is slow, and this runs
        # for every field of every write)
        kind = type(value)
        if kind in _SCALARS:
            continue
        if kind is dict or isinstance(value, Mapping):
            out += unknown_fields(value, sub, path)
        elif isinstance(value, list):
            items = sub.items()
            for i, item in enumerate(value):
                if type(item) is dict or isinstance(item, Mapping):
                    out += unknown_fields(item, items, (*path[:-1], f"{path[-1]}[{i}]"))
    return out


def prune_unknown(tree: dict[str, Any], shape: Shape) -> None:
    """Drop, in place, the fields the schema does not have: what the apiserver does on a
    create, update or patch (a built-in kind's decoder drops them, a custom resource's
    structural schema prunes them)."""
    for key in [k for k in tree if not shape.declares(k)]:
        del tree[key]
    for key, value in tree.items():
        sub = shape.field(key)
        if type(value) is dict:
            prune_unknown(value, sub)
        elif type(value) is list:
            items = sub.items()
            for item in value:
                if type(item) is dict:
                    prune_unknown(item, items)


def refuse_unknown(obj: Obj, content: Mapping[str, Any], shape: Shape) -> None:
    """A server-side apply with fields the schema does not have fails, as on the
    apiserver (which cannot type the applied configuration)."""
    unknown = unknown_fields(content, shape)
    if unknown:
        raise unknown_fields_error(obj, unknown)


def unknown_fields_error(obj: Obj, unknown: list[str]) -> ClusterError:
    """The refusal of a server-side apply of ``obj`` with the ``unknown`` fields."""
    listed = ", ".join(f"{p}: field not declared in schema" for p in unknown[:5])
    return ClusterError(
        f"{describe(obj)}: failed to create typed patch object: {listed}", status=500
    )
