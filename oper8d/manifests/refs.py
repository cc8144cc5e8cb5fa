"""``$ref`` inside a bundle's spec schema: a CRD holds no references, so
``manifests.structural`` inlines each one (``#/...`` JSON pointers into the same schema)
and ``manifests.junctors`` follows them in allOf/anyOf/oneOf/not branches.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import unquote

from oper8d.manifests.openapi import SchemaPath


def child_pointer(pointer: str, relative: SchemaPath) -> str:
    """The JSON pointer of a node ``relative`` keys below the node at ``pointer``."""
    return pointer + "".join(f"/{_escape(part)}" for part in relative)


def inline(
    root: Any, schema: Any, pointer: str, ancestors: Collection[str]
) -> tuple[Any, str, str | None]:
    """``schema`` (found at ``pointer``) with its ``$ref`` chain inlined, the referenced
    keys overridden by the ones beside ``$ref``; with the pointer it now stands for, and
    None, or a message saying why the chain cannot be inlined (then the schema is None).

    A reference to one of ``ancestors`` (the pointers of the nodes above) is recursion.
    """
    chain = [pointer]
    while isinstance(schema, Mapping) and "$ref" in schema:
        ref = schema["$ref"]
        target, why = _target(root, ref)
        if why is not None:
            return None, pointer, why
        ref = _normal(ref)
        if ref in chain or ref in ancestors:
            return (
                None,
                pointer,
                (
                    f"has a recursive $ref {ref!r}; a CRD cannot describe data nested without "
                    "bound: end the recursion with `x-kubernetes-preserve-unknown-fields: true`"
                ),
            )
        chain.append(ref)
        schema = _merged(target, schema)
    return schema, chain[-1], None


def quiet_inline(root: Any, schema: Any) -> Any:
    """``schema`` with its ``$ref`` chain inlined, or None when it cannot be."""
    seen: list[str] = []
    while isinstance(schema, Mapping) and "$ref" in schema:
        target, why = _target(root, schema["$ref"])
        if why is not None or schema["$ref"] in seen:
            return None
        seen.append(schema["$ref"])
        schema = _merged(target, schema)
    return schema


def _merged(target: Any, referring: Mapping[str, Any]) -> Any:
    siblings = {k: v for k, v in referring.items() if k != "$ref"}
    return {**target, **siblings} if isinstance(target, Mapping) else target


def _target(root: Any, ref: Any) -> tuple[Any, str | None]:
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None, (
            f"has $ref {ref!r}, which points outside the schema; a CRD cannot refer to "
            "other documents: copy the referenced schema in"
        )
    node: Any = root
    for token in _tokens(ref):
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None, f"has $ref {ref!r}, which points at nothing in the schema"
    return node, None


def _tokens(ref: str) -> list[str]:
    return [unquote(p).replace("~1", "/").replace("~0", "~") for p in ref[1:].split("/") if p]


def _escape(part: str | int) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def _normal(ref: str) -> str:
    """``#/a/b%20c`` -> ``#/a/b c``: one spelling per place, to recognise recursion."""
    return "#" + "".join(f"/{_escape(token)}" for token in _tokens(ref))
