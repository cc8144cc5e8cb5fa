"""Kubernetes object names the way oper8 builds them.

Used by the template filters (``trunc63``), by the template context the engine
builds (``scoped_name``, ``truncate_name``) and by anything that must reproduce
oper8's names so objects deployed by oper8 are adopted rather than duplicated.
"""

from __future__ import annotations

import hashlib

#: DNS-1123 label length, the limit on most Kubernetes names and label values
NAME_LIMIT = 63
#: hex digits of sha256 appended to a truncated name (oper8's rule)
_DIGEST_LENGTH = 4


def truncate_name(name: str, limit: int = NAME_LIMIT) -> str:
    """Return ``name`` unchanged when it fits in ``limit`` characters; otherwise its first
    ``limit - 4`` characters followed by the first 4 hex digits of sha256 of the full name.

    The digest keeps two long names that share a prefix apart (oper8 computes the same
    string, so names stay stable across a migration from oper8).
    """
    if limit <= _DIGEST_LENGTH:
        raise ValueError(f"name limit must be more than {_DIGEST_LENGTH} characters, got {limit}")
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_DIGEST_LENGTH]
    return name[: limit - _DIGEST_LENGTH] + digest


def scoped_name(cr_name: str, name: str) -> str:
    """The name of an object that belongs to the CR ``cr_name``: ``<cr_name>-<name>``,
    truncated by :func:`truncate_name`."""
    return truncate_name(f"{cr_name}-{name}")
