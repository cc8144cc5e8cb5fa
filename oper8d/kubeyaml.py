"""YAML read the way ``kubectl apply`` reads it: :class:`KubernetesLoader`.

Text templates' rendered text (``template.slotloader``), the bundle's own YAML files and the
CRD files of ``--crds`` (``kubeschema.crds``) are read with it, so a literal means there what
it means to the API server's clients.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from oper8d.objects import json_key_text

BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
#: YAML 1.1's "value key" (a plain ``=``), which PyYAML resolves but cannot construct
VALUE_TAG = "tag:yaml.org,2002:value"


class KubernetesLoader(BaseLoader):  # type: ignore[misc, valid-type]
    """The safe loader read the way ``kubectl apply`` reads YAML (sigs.k8s.io/yaml, which
    is go-yaml v2's YAML 1.1 and then JSON):

    - no YAML 1.1 timestamps: ``2024-01-01`` stays a string (go-yaml keeps it one too);
    - a plain ``=`` is the string it is to go-yaml (PyYAML's safe loader fails on it: a
      CRD enum of label matchers, ``[=, "!=", =~, "!~"]``, is written so);
    - go-yaml's numbers beside PyYAML's: ``0o17`` is an octal integer, ``1e3`` and ``08``
      floats; base-60 forms (``12:30``) stay strings. Unlike go-yaml, ``y`` and ``n`` stay
      strings (a key ``y:`` becoming ``"true"`` is a known kubectl trap, kubernetes#34146;
      where a boolean is wanted, the schema check says so offline);
    - keys are JSON's strings: an integer or boolean key becomes its text (``1: a`` is
      ``"1"``), as sigs.k8s.io/yaml converts it; a null or float key is an error;
    - duplicate keys (after that conversion) are an error, as the API server's strict
      field validation has it."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]
        own = sum(1 for key, _value in node.value if key.tag != _MERGE_TAG)
        if own < len(node.value):
            self.flatten_mapping(node)  # merged keys first: the mapping's own ones win
        merged = len(node.value) - own  # (a merged key may repeat; an own key may not)
        mapping: dict[str, Any] = {}
        own_keys: set[str] = set()
        for index, (key_node, value_node) in enumerate(node.value):
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):  # (a str subclass: ``slotloader.SpliceMark``)
                key = json_key(key, key_node)
            if index >= merged:
                if key in own_keys or (key in mapping and self.value_made(key_node)):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found the key {self.shown_key(key_node, key)!r} twice",
                        key_node.start_mark,
                    )
                own_keys.add(key)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def value_made(self, node: Any) -> bool:
        """Whether a key's text came from a printed value (which may not replace a key the
        template merged in with ``<<``)."""
        return False

    def shown_key(self, node: Any, key: str) -> str:
        """A key as an error message may quote it."""
        return key


_MERGE_TAG = "tag:yaml.org,2002:merge"


def json_key(key: Any, node: Any) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it to JSON (``objects.json_key_text``)."""
    text = json_key_text(key)
    if text is not None:
        return text
    what = "null" if key is None else f"a {type(key).__name__}"
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"the key {key!r} is {what}: a Kubernetes object's keys are strings; quote the key",
        node.start_mark,
    )


def _not_json(loader: KubernetesLoader, node: Any) -> Any:
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"the tag {node.tag!r} has no JSON form: a Kubernetes object cannot hold it",
        node.start_mark,
    )


def _number_or_text(tag: str) -> Any:
    """YAML 1.1's int/float constructor, except for base-60 forms: ``12:30:00`` stays the
    string it is for Helm's YAML library and for a Kubernetes reader (PyYAML would make it
    the number 45000)."""
    base = BaseLoader.yaml_constructors[tag]

    def construct(loader: KubernetesLoader, node: Any) -> Any:
        if ":" in str(node.value):
            return loader.construct_scalar(node)
        return base(loader, node)

    return construct


for _tag in ("int", "float"):
    KubernetesLoader.add_constructor(
        f"tag:yaml.org,2002:{_tag}", _number_or_text(f"tag:yaml.org,2002:{_tag}")
    )

# tags the safe loader knows that build Python values JSON cannot carry (sets, bytes, ...)
for _tag in ("set", "omap", "pairs", "binary", "timestamp"):
    KubernetesLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _not_json)

KubernetesLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (TIMESTAMP_TAG, VALUE_TAG)]
    for first, resolvers in BaseLoader.yaml_implicit_resolvers.items()
}
# go-yaml v2's scalars that PyYAML reads as strings; checked after PyYAML's own resolvers
KubernetesLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?0[oO][0-7_]+$"), list("-+0")
)
KubernetesLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9_]+)?$"),
    list("-+.0123456789"),
)
