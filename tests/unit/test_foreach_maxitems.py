"""``forEach.maxItems``: a bundle's own bound on how many copies of a component a CR may ask
for. Render refuses a longer list naming the component, the bound and where the forEach is;
the generated CRD carries the bound when ``items`` is a plain spec path, so the API server
refuses such a CR before oper8d sees it; any other ``items`` leaves the CRD as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bundles import API_VERSION, KIND, NAMESPACE, build

from oper8d.bundle.model import Bundle
from oper8d.errors import BundleError, ConfigError
from oper8d.manifests import crd_for
from oper8d.testing import render

SCHEMA = {
    "type": "object",
    "properties": {
        "pool": {
            "type": "object",
            "properties": {"workers": {"type": "array", "items": {"type": "string"}}},
        },
        "zones": {"type": "array", "maxItems": 3, "items": {"type": "string"}},
    },
}


def _bundle(tmp_path: Path, items: str, max_items: int = 2) -> Bundle:
    return build(
        tmp_path,
        f"""
        components:
          - name: worker
            forEach:
              items: "{items}"
              as: w
              maxItems: {max_items}
            resources:
              - name: cm
                object:
                  apiVersion: v1
                  kind: ConfigMap
                  metadata: {{name: "{{{{ scoped_name('w-' ~ w) }}}}"}}
        """,
        schema=SCHEMA,
    )


def _cr(**spec: Any) -> dict[str, Any]:
    meta = {"name": "demo", "namespace": NAMESPACE}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": spec}


def _spec_schema(bundle: Bundle) -> dict[str, Any]:
    crd = crd_for(bundle.controllers[0])
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


def test_more_items_than_max_items_is_an_error_naming_component_bound_and_position(
    tmp_path: Path,
) -> None:
    bundle = _bundle(tmp_path, "spec.pool.workers", max_items=2)
    assert len(render(bundle, _cr(pool={"workers": ["a", "b"]}))) == 2
    with pytest.raises(ConfigError) as info:
        render(bundle, _cr(pool={"workers": ["a", "b", "c"]}))
    message = str(info.value)
    assert "component 'worker'" in message
    assert "has 3 items" in message and "at most 2" in message
    pos = info.value.pos
    assert pos is not None and pos.file.endswith("operator.yaml") and pos.line > 0
    assert f"operator.yaml:{pos.line}" in message  # the user sees where the forEach is


def test_the_process_wide_limit_still_applies_with_a_larger_max_items(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, "spec.pool.workers", max_items=5000)
    with pytest.raises(ConfigError, match="limit forEachItems exceeded"):
        render(bundle, _cr(pool={"workers": [f"w{i}" for i in range(1001)]}))


def test_a_plain_spec_path_puts_max_items_on_that_array_in_the_crd(tmp_path: Path) -> None:
    spec = _spec_schema(_bundle(tmp_path, "spec.pool.workers", max_items=20))
    assert spec["properties"]["pool"]["properties"]["workers"]["maxItems"] == 20
    assert spec["properties"]["zones"]["maxItems"] == 3  # other arrays untouched


def test_the_bundles_own_smaller_max_items_is_kept(tmp_path: Path) -> None:
    spec = _spec_schema(_bundle(tmp_path, "spec.zones", max_items=10))
    assert spec["properties"]["zones"]["maxItems"] == 3
    tighter = _spec_schema(_bundle(tmp_path / "b", "spec.zones", max_items=2))
    assert tighter["properties"]["zones"]["maxItems"] == 2


@pytest.mark.parametrize(
    "items",
    [
        "spec.pool.workers | list",
        "spec.pool.workers[:5]",
        "spec['zones']",
        "(spec.zones or [])",
    ],
)
def test_a_non_plain_items_expression_leaves_the_crd_unchanged(tmp_path: Path, items: str) -> None:
    plain = _spec_schema(_bundle(tmp_path / "plain", "spec.pool.workers", max_items=1000))
    unbounded = _spec_schema(_bundle(tmp_path / "other", items, max_items=1))
    workers = plain["properties"]["pool"]["properties"]["workers"]
    workers.pop("maxItems")
    assert unbounded == plain


def test_max_items_must_be_a_non_negative_integer(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="maxItems"):
        _bundle(tmp_path, "spec.zones", max_items=-1)
