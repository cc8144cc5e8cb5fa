"""Building a text template's parsed documents from libyaml's nodes without PyYAML's
generic constructor.

``documents.DocumentCache`` parses each new rendered text once per process (the first
reconcile of a CR renders every text template for the first time). libyaml composes the
node tree in C; PyYAML then builds the Python values in Python, through
``construct_object``'s bookkeeping (a generator per mapping and list, recursion and
alias tables, deferred filling) for every node: half the parse. :func:`construct` builds
the same values with one plain recursive walk over the usual nodes: mappings, lists and
scalars of the tags the rendered text resolves to, a value printed into the text put back
by the loader's own methods (``SlotLoader``), and an aliased list or mapping shared as PyYAML
shares it (an aliased string or number, immutable, is simply built again).

Anything else (a merge key, an explicit tag of another kind, a duplicate key, a key that
is not a scalar, a recursive alias, any error) is left to the loader: the document is
built again by ``construct_document``, which gives the exact value or error it always
gave. The walk changes nothing in the nodes or the loader, so that second build starts
from the same state; ``tests/unit/test_template_construct.py`` holds the walk to it.
"""

from __future__ import annotations

from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from oper8d.kubeyaml import json_key
from oper8d.template.slotloader import SlotLoader, key_text

__all__ = ["construct"]

_YAML = "tag:yaml.org,2002:"
_STR = _YAML + "str"
_MAP = _YAML + "map"
_SEQ = _YAML + "seq"
#: scalar tags whose loader constructor is a plain function of the node (no state)
_SCALARS = frozenset(_YAML + tag for tag in ("null", "bool", "int", "float"))
_MERGE = _YAML + "merge"


class _Unusual(Exception):
    """A node the walk leaves to the loader."""


def construct(loader: SlotLoader, node: Node) -> Any:
    """The value of document ``node``, exactly as ``loader.construct_document(node)``
    builds it (which builds it whenever the walk meets something unusual)."""
    try:
        return _Walk(loader).value(node)
    except Exception:  # the loader builds it again: its value or its error
        return loader.construct_document(node)


class _Walk:
    """One document's walk: the values built so far by node, as PyYAML shares an
    aliased node's value between its occurrences."""

    def __init__(self, loader: SlotLoader) -> None:
        self._loader = loader
        self._nonce = loader.slots.nonce
        self._constructors = loader.yaml_constructors
        self._built: dict[Node, Any] = {}
        self._building: set[Node] = set()
        # key nodes holding a printed value: the loader fills them as untyped text, so one
        # also met as a value (through an alias) is left to the loader
        self._keys: set[Node] = set()

    def value(self, node: Node) -> Any:
        tag = node.tag
        kind = type(node)
        if kind is ScalarNode:  # immutable values need no sharing: built again if aliased
            if tag == _STR:
                text = node.value
                if self._nonce not in text:
                    return text
                if node in self._keys:
                    raise _Unusual
            elif tag in _SCALARS:
                return self._constructors[tag](self._loader, node)
            else:
                raise _Unusual
        built = self._built
        if node in built:
            return built[node]
        if kind is ScalarNode:  # a printed value: a list or mapping is shared if aliased
            data = self._loader.filled(node, node.value)
        elif node in self._building:
            raise _Unusual  # a recursive alias
        else:
            self._building.add(node)
            if kind is MappingNode and tag == _MAP:
                data = self._mapping(node)  # type: ignore[arg-type]
            elif kind is SequenceNode and tag == _SEQ:
                data = [self.value(item) for item in node.value]
            else:
                raise _Unusual
            self._building.discard(node)
        built[node] = data
        return data

    def _mapping(self, node: MappingNode) -> dict[str, Any]:
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if type(key_node) is not ScalarNode:
                raise _Unusual
            tag = key_node.tag
            text = key_node.value
            if tag == _STR:
                if self._nonce in text:  # a key holding a value: its text, untyped
                    if key_node.style in ("|", ">") or key_node in self._built:
                        raise _Unusual
                    self._keys.add(key_node)
                    text = key_text(text, key_node.style, self._loader.slots)
                key: Any = text
            elif tag in _SCALARS:
                key = json_key(self._constructors[tag](self._loader, key_node), key_node)
            else:
                raise _Unusual  # a merge key (``<<``) among them
            if key in mapping:
                raise _Unusual
            mapping[key] = self.value(value_node)
        return mapping
