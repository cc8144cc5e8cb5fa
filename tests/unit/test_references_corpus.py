"""Reference warnings on real-world manifests (``../shared/corpus``: kube-prometheus,
ingress-nginx, Argo CD, read as test data): each published set, taken as the objects of one
CR, draws no warning, while a misspelt named ``targetPort`` in any of its Services draws
exactly one. A false warning is worse than a missed one."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from oper8d.engine.references import Rendered, reference_warnings

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


class _Loader(yaml.CSafeLoader):
    """PyYAML without the ``=`` (value) tag one Argo CD file holds as a plain string."""


_Loader.add_constructor(
    "tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node)
)  # type: ignore[arg-type, union-attr]


def _sets() -> dict[str, list[dict[str, Any]]]:
    """Each published set: kube-prometheus's folder, each other deploy/install file. CRDs
    (most of the bytes, and nothing a reference can name) are not parsed."""
    sets: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(CORPUS.rglob("*.yaml")):
        rel = path.relative_to(CORPUS)
        key = rel.parts[0] if rel.parts[0] == "kube-prometheus" else str(rel)
        for text in re.split(r"^---[^\n]*$", path.read_text(encoding="utf-8"), flags=re.M):
            if re.search(r"^kind: CustomResourceDefinition", text, flags=re.M):
                continue
            doc = yaml.load(text, Loader=_Loader)
            if isinstance(doc, dict) and isinstance(doc.get("kind"), str):
                items = doc.get("items") if doc["kind"].endswith("List") else [doc]
                sets.setdefault(key, []).extend(i for i in items or () if isinstance(i, dict))
    return sets


def _warnings(objs: list[dict[str, Any]]) -> list[str]:
    rendered = [Rendered(f"{o['kind']}/{o['metadata'].get('name')}", o) for o in objs]
    return [str(w) for w in reference_warnings(rendered, "default")]


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not checked out beside")
def test_no_warning_on_real_world_sets_and_one_for_each_misspelt_port() -> None:
    sets = _sets()
    assert sum(len(objs) for objs in sets.values()) > 450
    mutated = 0
    for key, objs in sets.items():
        assert _warnings(objs) == [], key
        for index, obj in enumerate(objs):
            if obj["kind"] != "Service":
                continue
            for number, port in enumerate((obj.get("spec") or {}).get("ports") or []):
                if not isinstance(port.get("targetPort"), str):
                    continue
                changed = copy.deepcopy(obj)
                changed["spec"]["ports"][number]["targetPort"] += "x"
                found = _warnings([*objs[:index], changed, *objs[index + 1 :]])
                if found:  # (none when its pods are not in the set: nothing to judge by)
                    assert len(found) == 1, found
                    assert f"targetPort '{port['targetPort']}x'" in found[0]
                    mutated += 1
    assert mutated >= 50  # 52 of the 68 named targetPorts select pods of their own set
