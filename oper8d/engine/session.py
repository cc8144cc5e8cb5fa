"""One reconcile of one CR: the CR, its defaulted spec and merged config, the template
context and what was rendered so far. Created by the reconciler (and by
``offline.would_delete``), read by the rollout and templates.

The CR is kept as the API server last returned it; the spec with the schema's defaults
applied (``engine.inputs``) is kept beside it, not written into it, and the two are
combined only in the view templates see (:attr:`Session.view`).
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
import string
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from oper8d.bundle.model import Bundle, ControllerSpec
from oper8d.bundle.reads import cluster_scoped, refusal
from oper8d.cluster.base import Cluster, ClusterReader
from oper8d.engine.config import get_path
from oper8d.engine.kubecheck import KindWarnings
from oper8d.engine.ownership import refuse_foreign
from oper8d.errors import ConfigError, PreconditionError
from oper8d.kinds import api_version_problem, path_segment_problem
from oper8d.kubeschema import KubeSchemas
from oper8d.logs import mark_secret, mark_sensitive
from oper8d.objects import MANAGED_BY_LABEL, OWNER_LABEL, Obj
from oper8d.template.filters import MissingRequiredValue
from oper8d.template.names import scoped_name, truncate_name
from oper8d.template.sandbox import plain_callable

_ALPHABET = string.ascii_letters + string.digits


class RandomSource(Protocol):
    """Where ``random_string(key, length)`` gets values that stay stable across reconciles."""

    def get(self, key: str, length: int) -> str: ...


class SeededRandoms:
    """Deterministic values derived from the CR's identity: for offline render and tests.

    Not secret: anybody who knows the CR's namespace and name can compute them. So that
    nobody takes one for a real password, a value of 12 characters or more starts with
    ``offline`` (same length and alphabet as a real one, so templates behave the same).
    """

    MARK = "offline"

    def __init__(self, seed: str):
        self.seed = seed

    def get(self, key: str, length: int) -> str:
        mark = self.MARK if length >= 12 else ""
        return mark + self._derived(key, length - len(mark))

    def _derived(self, key: str, length: int) -> str:
        out: list[str] = []
        counter = 0
        while len(out) < length:
            digest = hashlib.sha256(f"{self.seed}/{key}/{counter}".encode()).digest()
            out.extend(_ALPHABET[b % len(_ALPHABET)] for b in digest)
            counter += 1
        return "".join(out[:length])


def generated_secret_name(cr_name: str) -> str:
    """The Secret ``random_string()`` keeps a CR's values in: ``<cr>-oper8d-generated``."""
    return truncate_name(f"{cr_name}-oper8d-generated")


def generated_values(reader: ClusterReader, cr_name: str, namespace: str | None) -> dict[str, str]:
    """The values ``random_string()`` generated for a CR, from its live
    ``<cr>-oper8d-generated`` Secret, by data key (empty when there is none): what
    ``KnownRandoms`` is given by the commands that render for a live CR."""
    import base64

    secret = reader.get("v1", "Secret", generated_secret_name(cr_name), namespace or "default")
    values: dict[str, str] = {}
    for key, value in ((secret or {}).get("data") or {}).items():
        try:
            values[key] = base64.b64decode(str(value)).decode()
        except (ValueError, UnicodeDecodeError):
            continue  # not one of ours: a fresh value is rendered for it
    return values


class KnownRandoms:
    """Values generated earlier (the live ``<cr>-oper8d-generated`` Secret's ``data``,
    decoded), else ``fallback``'s: ``oper8d diff`` renders with the passwords the operator
    keeps, so an unchanged one is no difference."""

    def __init__(self, known: Mapping[str, str], fallback: RandomSource):
        self.known = dict(known)
        self.fallback = fallback

    def get(self, key: str, length: int) -> str:
        value = self.known.get(_slot(key, length))
        if value is None:
            return self.fallback.get(key, length)
        mark_sensitive(value)
        return value


class SecretRandoms:
    """Cryptographically random values, kept in a Secret owned by the CR so they stay
    the same across reconciles and operator restarts. The Secret is written only when
    a new key is first used."""

    def __init__(self, cluster: Cluster, cr: Obj, *, field_manager: str):
        meta = cr["metadata"]
        self.cluster = cluster
        self.field_manager = field_manager
        self.name = generated_secret_name(meta["name"])
        self.namespace = meta.get("namespace") or "default"
        self.owner = {
            "apiVersion": cr["apiVersion"],
            "kind": cr["kind"],
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "controller": True,
        }
        self._lock = threading.Lock()
        self._values: dict[str, str] | None = None

    def get(self, key: str, length: int) -> str:
        import base64

        with self._lock:
            if self._values is None:
                found = self.cluster.get("v1", "Secret", self.name, self.namespace)
                refuse_foreign(
                    found, self.owner["uid"], f"{self.owner['kind']} {self.owner['name']}"
                )
                live = found or {}
                self._values = {
                    k: base64.b64decode(v).decode() for k, v in (live.get("data") or {}).items()
                }
            slot = _slot(key, length)
            if slot not in self._values:
                self._values[slot] = "".join(secrets.choice(_ALPHABET) for _ in range(length))
                data = {k: base64.b64encode(v.encode()).decode() for k, v in self._values.items()}
                self.cluster.apply(
                    {
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {
                            "name": self.name,
                            "namespace": self.namespace,
                            # the owner label lets the runtime's Secret informer (which
                            # selects on it) cache this Secret like every managed object
                            "labels": {
                                MANAGED_BY_LABEL: "oper8d",
                                OWNER_LABEL: self.owner["uid"],
                            },
                            "ownerReferences": [self.owner] if self.owner["uid"] else [],
                        },
                        "type": "Opaque",
                        "data": data,
                    },
                    field_manager=self.field_manager,
                )
            # a generated password is a secret even where a template puts it in a ConfigMap
            mark_sensitive(self._values[slot])
            return self._values[slot]


@dataclass
class Session:
    """State of one reconcile. ``cr`` is the CR as the server last returned it (the
    reconciler replaces it after each write); ``spec`` its spec with schema defaults
    (None: the CR's own); ``rendered`` maps internal name -> the object we applied."""

    bundle: Bundle
    controller: ControllerSpec
    cr: Obj
    config: Mapping[str, Any]
    cluster: Cluster
    randoms: RandomSource
    reconcile_id: str = ""
    spec: Any = None
    #: Kubernetes' schemas rendered objects are checked against (None: not checked)
    schemas: KubeSchemas | None = None
    #: where "no schema for this kind" is said once per process
    kind_warnings: KindWarnings | None = None
    rendered: dict[str, Obj] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: ``live`` and ``lookup`` marking Secrets they read, made once (``context`` is built
    #: for every component, and wrapping a function copies its attributes)
    _marked_reads: tuple[Callable[..., Obj | None], Callable[..., Obj | None]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def view(self) -> Obj:
        """The CR as templates see it: the server's object with the defaulted spec."""
        return self.cr if self.spec is None else {**self.cr, "spec": self.spec}

    @property
    def version(self) -> Any:
        return get_path(self.view, self.controller.resource.version_path)

    @property
    def name(self) -> str:
        return cast(str, self.cr["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        return cast(str | None, self.cr["metadata"].get("namespace"))

    def record(self, internal_name: str, obj: Obj) -> None:
        with self._lock:
            self.rendered[internal_name] = obj

    # -- template context ----------------------------------------------------------------
    def context(self, **extra: Any) -> dict[str, Any]:
        """The template context: the CR (``cr``, ``spec`` defaulted, ``metadata``,
        ``status``), ``config``, the version, and the functions templates may call."""
        cr = self.view
        reads = self._marked_reads
        if reads is None:
            reads = self._marked_reads = (
                plain_callable(_marking_secrets(self.live)),
                plain_callable(_marking_secrets(self.lookup)),
            )
        ctx: dict[str, Any] = {
            "cr": cr,
            "spec": cr.get("spec") or {},
            "metadata": cr.get("metadata") or {},
            "status": cr.get("status") or {},
            "name": self.name,
            "namespace": self.namespace,
            "config": self.config,
            "version": get_path(cr, self.controller.resource.version_path),
            "operator": {"name": self.bundle.name, "version": self.bundle.operator_version},
            "scoped_name": plain_callable(lambda n: scoped_name(self.name, str(n))),
            "truncate_name": truncate_name,
            # a Secret read here is sensitive from now on, wherever its values go
            "live": reads[0],
            "lookup": reads[1],
            "require": _require,
            "config_error": _config_error,
            "random_string": plain_callable(
                lambda key, length=16: _sensitive(self.randoms.get(str(key), int(length)))
            ),
        }
        ctx.update(extra)
        return ctx

    def live(self, ref: str) -> Obj | None:
        """The live object of internal name ``ref`` rendered earlier in this reconcile;
        read under the same rule as ``lookup``."""
        with self._lock:
            obj = self.rendered.get(ref)
        if obj is None:
            return None
        meta = obj["metadata"]
        return self._read(
            f"live({ref!r})", obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")
        )

    def lookup(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        """Any live object the bundle may read (``bundle.reads``): one in the CR's
        namespace that is not a Secret, or one the controller declares under ``reads:``."""
        call = f"lookup({api_version!r}, {kind!r}, {name!r}, {namespace!r})"
        return self._read(call, api_version, kind, name, namespace)

    def _read(
        self, call: str, api_version: Any, kind: Any, name: Any, namespace: Any
    ) -> Obj | None:
        if not all(isinstance(v, str) for v in (api_version, kind, name)) or not (
            namespace is None or isinstance(namespace, str)
        ):
            raise UndeclaredRead(f"{call}: apiVersion, kind, name and namespace are strings")
        problem = api_version_problem(api_version)
        if problem is not None:  # before the rule below reads a group from it, or a URL
            raise UndeclaredRead(f"{call}: {problem}")
        for what, value in (("name", name), ("namespace", namespace or None)):
            problem = "it is empty" if value == "" else value and path_segment_problem(value)
            if problem:  # refused here, at the template's line, before any request
                raise UndeclaredRead(f"{call}: invalid {what}: {problem}")
        # a cluster-scoped object has no namespace, whatever the CR's is
        scoped = cluster_scoped(self.bundle, self.controller.reads, api_version, kind)
        target = None if scoped else namespace or self.namespace
        if not scoped and target is None:
            raise UndeclaredRead(f"{call}: {kind} is namespaced: give the namespace to read")
        why = refusal(self.controller, api_version, kind, name, target, self.namespace)
        if why is not None:
            raise UndeclaredRead(f"{call}: {why}")
        obj = self.cluster.get(api_version, kind, name, target)
        if obj is not None and not scoped and not (obj.get("metadata") or {}).get("namespace"):
            # a kind oper8d does not know, which the server says is cluster-scoped
            why = refusal(self.controller, api_version, kind, name, None, self.namespace)
            if why is not None:
                raise UndeclaredRead(
                    f"{call}: {kind} is cluster-scoped: {why}, with `scope: Cluster`"
                )
        return obj


class UndeclaredRead(MissingRequiredValue):
    """A template read something the bundle does not declare (``bundle.reads``). A
    ``ConfigError``; like the ``required`` filter's error, the template engine re-raises it
    with the position of the template that made the call."""


#: what a Secret's data key may hold (the API server refuses anything else)
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]{1,200}")


def _slot(key: str, length: int) -> str:
    """The Secret data key of ``random_string(key, length)``: readable when ``key`` is a
    valid data key, else a digest of it."""
    if not _SECRET_KEY.fullmatch(key):
        key = "k-" + hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"{key}.{length}"


def _marking_secrets(read: Callable[..., Obj | None]) -> Callable[..., Obj | None]:
    """``read`` that marks the values of a Secret it returns as sensitive."""

    @functools.wraps(read)
    def marked(*args: Any, **kwargs: Any) -> Obj | None:
        obj = read(*args, **kwargs)
        if obj is not None:
            mark_secret(obj)
        return obj

    return marked


def _sensitive(value: str) -> str:
    mark_sensitive(value)
    return value


@plain_callable
def _require(condition: Any, message: str = "precondition not met") -> str:
    if not condition:
        raise PreconditionError(str(message))
    return ""


@plain_callable
def _config_error(message: str) -> str:
    raise ConfigError(str(message))
