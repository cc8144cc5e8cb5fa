"""Schema dicts -> ``kubeschema.nodes`` trees, once per kind.

``Compiler`` is used by ``kubeschema.catalog``: one for the built-in definitions (shared
nodes, memoised by definition name, so ObjectMeta or PodSpec compile once for all kinds),
and one per custom resource version (a CRD's ``openAPIV3Schema``, self-contained). A
built-in definition's properties compile when a checked object first reaches them
(``ObjectNode.defer``): a process that renders a few kinds compiles a few dozen of the
hundreds of definitions their schemas reach.

Built-in and custom schemas differ where the apiserver treats them differently:

- built-in: an ``object`` without properties is free-form (RawExtension, JSON); integers
  are Go ints (a float is refused); the ``enum`` of an optional field also accepts ``""``,
  which the Go types decode as unset and the apiserver defaults (``imagePullPolicy: ""``),
  but a required one does not (``pathType: ""``); a null list item is an empty object;
  a list of type ``map`` refuses duplicate keys and one of type ``set`` duplicate items,
  as server-side apply does;
- custom: an ``object`` without properties keeps nothing, so any field in it is unknown
  unless ``x-kubernetes-preserve-unknown-fields``; bounds, patterns, list types and
  ``allOf``/``anyOf``/``oneOf``/``not`` are checked here; ``x-kubernetes-validations``
  (CEL) by ``kubeschema.cel``, over the raw schema.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from oper8d.kubeschema import constraints
from oper8d.kubeschema.formats import (
    BUILTIN_FORMATS,
    CRD_FORMATS,
    INT_RANGES,
    port_name_problem,
    quantity_problem,
)
from oper8d.kubeschema.messages import Errors, Path, enum_check
from oper8d.kubeschema.nodes import (
    ArrayNode,
    BooleanNode,
    IntegerNode,
    IntOrStringNode,
    Node,
    NumberNode,
    ObjectNode,
    PortNode,
    QuantityNode,
    StringNode,
)
from oper8d.kubeschema.objectmeta import label_problem

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_OBJECT_WORDS = ("properties", "additionalProperties", "required")
_CORE = "io.k8s.api.core.v1."
#: built-in int-or-string fields that hold a port number or a port name
PORT_FIELDS = frozenset(
    {
        (_CORE + "ServicePort", "targetPort"),
        (_CORE + "HTTPGetAction", "port"),
        (_CORE + "TCPSocketAction", "port"),
        ("io.k8s.api.networking.v1.NetworkPolicyPort", "port"),
    }
)
#: built-in string fields that name a port, and the rule their names follow
PORT_NAME_FIELDS: dict[tuple[str, str], Callable[[str], str | None]] = {
    (_CORE + "ContainerPort", "name"): port_name_problem,
    (_CORE + "ServicePort", "name"): label_problem,
}
#: built-in fields the OpenAPI lists as required that the apiserver fills in when they are
#: left out (its Go defaulting runs before validation): a binding's ``roleRef.apiGroup``
#: becomes rbac.authorization.k8s.io
DEFAULTED_REQUIRED = frozenset({("io.k8s.api.rbac.v1.RoleRef", "apiGroup")})
Embedded = Callable[[dict[str, Any], Path, Errors], None]


class Compiler:
    """Compiles schemas of one source: the built-in ``defs`` or one CRD version's schema.

    ``embedded`` checks the apiVersion/kind/metadata of an embedded resource (custom only);
    ``object_meta`` is the node used for ``metadata`` there and at a custom kind's root.
    """

    def __init__(
        self,
        defs: Mapping[str, Any],
        *,
        builtin: bool,
        object_meta: Node | None = None,
        embedded: Embedded | None = None,
        lazy: bool = True,
    ) -> None:
        """``lazy``: a built-in definition's properties compile when first used (False:
        all at once, for a test to compare the two)."""
        self.defs = defs
        self.builtin = builtin
        self.lazy = lazy
        self.object_meta = object_meta
        self.embedded = embedded
        self._memo: dict[str, Node] = {}
        self._lock = threading.RLock()

    def definition(self, name: str) -> Node:
        """The node of a built-in definition (compiled on first use)."""
        node = self._memo.get(name)
        if node is None:
            with self._lock:  # (deferred properties compile outside the catalog's lock)
                node = self._memo.get(name)
                if node is None:
                    node = self.node(self.defs[name], name=name)
        return node

    def node(
        self,
        schema: Mapping[str, Any],
        *,
        name: str | None = None,
        strict: bool = True,
        optional: bool = False,
    ) -> Node:
        """One schema's node. ``name``: memoise as that definition; ``strict=False`` for
        junctor branches, which check values but never report unknown fields;
        ``optional``: an optional property (a built-in enum there also takes ``""``)."""
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.definition(ref)
        node = self._typed(schema, name, strict)
        node.null_ok = self.builtin or bool(schema.get("nullable"))
        if not self.builtin:
            node.extra = (*node.extra, *constraints.value_checks(schema, self))
        elif isinstance(node, ArrayNode):
            unique = constraints.list_map_check(schema) or constraints.list_set_check(schema)
            if unique is not None:
                node.extra = (*node.extra, unique)
        if "enum" in schema and not isinstance(node, ObjectNode | ArrayNode):
            empty_ok = ("",) if self.builtin and optional else ()
            node.extra = (enum_check(schema["enum"], empty_ok), *node.extra)
        return node

    def _typed(self, schema: Mapping[str, Any], name: str | None, strict: bool) -> Node:
        if schema.get("x-kubernetes-int-or-string"):
            return IntOrStringNode()
        fmt = schema.get("format")
        if fmt == "quantity":
            return QuantityNode(quantity_problem)
        kind = schema.get("type")
        if kind == "string":
            formats = BUILTIN_FORMATS if self.builtin else CRD_FORMATS
            return StringNode(formats.get(fmt) if isinstance(fmt, str) else None)
        if kind == "integer":
            low, high = INT_RANGES.get(str(fmt), INT_RANGES["int64"])
            return IntegerNode(fmt if fmt in INT_RANGES else None, low, high, not self.builtin)
        if kind == "number":
            return NumberNode()
        if kind == "boolean":
            return BooleanNode()
        if kind == "array":
            items = schema.get("items")
            if not isinstance(items, Mapping):
                return ArrayNode(Node())
            array = ArrayNode(self.node(items, strict=strict))
            # Go decodes a null struct in a list as the empty struct, then validates it
            array.null_items_empty = self.builtin and isinstance(array.items, ObjectNode)
            return array
        if kind == "object" or any(k in schema for k in _OBJECT_WORDS):
            node = self._object(schema, name, strict)
            if kind is None and isinstance(node, ObjectNode):
                node.objects_only = False  # a junctor branch: other types pass
            return node
        return Node()

    def _object(self, schema: Mapping[str, Any], name: str | None, strict: bool) -> Node:
        props = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        if self.builtin and not props and additional is None:
            return Node()  # RawExtension, JSON, FieldsV1: any content
        node = ObjectNode()
        if name is not None:
            self._memo[name] = node  # before the properties: definitions can recurse
        node.strict = strict
        node.preserve = preserve or additional is True
        node.required = tuple(
            key
            for key in schema.get("required") or ()
            if not (self.builtin and (name, key) in DEFAULTED_REQUIRED)
        )
        if isinstance(additional, Mapping):
            node.additional = self.node(additional, strict=strict)
        if name is not None and self.builtin and self.lazy:
            # a definition's properties compile when an object first reaches it (the
            # nodes are the same: ``test_kubeschema_lazy`` compares them with eager ones)
            node.defer(lambda: self._locked_properties(node, props, name, strict))
            return node
        node.props.update(self._properties(node, props, name, strict))
        if not self.builtin:
            node.nulls_refused = frozenset(
                key for key, sub in props.items() if _null_refused(sub) and key in node.props
            )
        if embedded and not self.builtin:
            if self.object_meta is not None:
                node.props["metadata"] = self.object_meta
            node.props.setdefault("apiVersion", StringNode(None))
            node.props.setdefault("kind", StringNode(None))
            node.embedded = self.embedded
        return node

    def _properties(
        self, node: ObjectNode, props: Mapping[str, Any], name: str | None, strict: bool
    ) -> dict[str, Node]:
        """The nodes of ``node``'s declared properties ``props``."""
        built: dict[str, Node] = {}
        for key, sub in props.items():
            if self.builtin and (name, key) in PORT_FIELDS:
                built[key] = PortNode(port_name_problem)
            elif self.builtin and (name, key) in PORT_NAME_FIELDS:
                built[key] = StringNode(PORT_NAME_FIELDS[(str(name), key)])
            else:
                optional = key not in node.required
                built[key] = self.node(sub, strict=strict, optional=optional)
        return built

    def _locked_properties(
        self, node: ObjectNode, props: Mapping[str, Any], name: str, strict: bool
    ) -> None:
        # a compiled tree serves several threads: one builds, the others wait for it
        with self._lock:
            if node.deferred:
                node.fill(self._properties(node, props, name, strict))


def _null_refused(schema: Any) -> bool:
    """Whether the apiserver refuses ``null`` as a custom resource's value of a property
    with this schema: a typed one that is neither ``nullable`` nor defaulted (a null
    there is pruned and the default applied)."""
    return (
        isinstance(schema, Mapping)
        and not schema.get("nullable")
        and "default" not in schema
        and (isinstance(schema.get("type"), str) or bool(schema.get("x-kubernetes-int-or-string")))
    )
