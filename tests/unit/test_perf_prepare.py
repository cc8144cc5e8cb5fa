"""DeployManager.prepare without a deep copy, and the skip-unchanged check (engine.deploy):
what they must keep doing now that they copy less."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from bundles import Harness, build
from hypothesis import given
from hypothesis import strategies as st

from oper8d.cluster.memory import MemoryCluster
from oper8d.engine.deploy import AppliedMemory, DeployManager
from oper8d.engine.unchanged import HASH_ANNOTATION, content_hash, is_current, projection_digest

CR = {
    "apiVersion": "demo.oper8d.io/v1alpha1",
    "kind": "Demo",
    "metadata": {"name": "demo", "namespace": "team", "uid": "cr-uid"},
}


def deployer() -> DeployManager:
    return DeployManager(MemoryCluster(), CR, field_manager="demo")


def rendered() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a": "1"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web"}]}}},
    }


def test_changing_a_prepared_objects_metadata_leaves_the_rendered_object_alone() -> None:
    source = rendered()
    before = copy.deepcopy(source)
    prepared = deployer().prepare(source, "app.web", "app")
    prepared["metadata"]["labels"]["extra"] = "x"
    prepared["metadata"]["annotations"]["extra"] = "x"
    prepared["metadata"]["ownerReferences"].append({"uid": "other"})
    prepared["metadata"]["name"] = "renamed"
    assert source == before


def test_changing_the_rendered_objects_metadata_later_leaves_the_prepared_one_alone() -> None:
    source = rendered()
    prepared = deployer().prepare(source, "app.web", "app")
    before = copy.deepcopy(prepared)
    source["metadata"]["labels"]["app"] = "changed"
    source["metadata"]["annotations"].clear()
    source["metadata"]["name"] = "renamed"
    assert prepared == before


def test_the_hash_annotation_is_the_content_hash_and_ignores_a_stale_one() -> None:
    d = deployer()
    fresh = d.prepare(rendered(), "app.web", "app")
    stale = rendered()
    stale["metadata"]["annotations"][HASH_ANNOTATION] = "stale"
    again = d.prepare(stale, "app.web", "app")
    assert fresh["metadata"]["annotations"][HASH_ANNOTATION] == content_hash(fresh)
    assert again["metadata"]["annotations"][HASH_ANNOTATION] == content_hash(fresh)
    # the annotation keeps the place it had among the input's annotations
    assert list(again["metadata"]["annotations"])[:2] == ["a", HASH_ANNOTATION]


ALIASED_LABELS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: &labels
    app: web
spec:
  selector:
    matchLabels: *labels
  template:
    metadata:
      labels: *labels
    spec:
      containers: [{name: web, image: nginx}]
"""


def test_labels_shared_through_a_yaml_alias_do_not_reach_the_selector(tmp_path: Path) -> None:
    bundle = build(
        tmp_path,
        """
        components:
          - name: app
            resources:
              - name: web
                template: templates/web.yaml
        """,
        files={"templates/web.yaml": ALIASED_LABELS},
    )
    h = Harness(bundle)
    h.create({})
    h.settle()
    live = h.get("Deployment", "web", "apps/v1")
    assert live is not None
    assert live["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert live["spec"]["template"]["metadata"]["labels"] == {"app": "web"}
    assert "oper8d.io/owner-uid" in live["metadata"]["labels"]


CONFIG_FROM_SPEC = """
components:
  - name: app
    resources:
      - name: cm
        object:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: settings, labels: {tier: web}}
          data: "{{ spec.settings }}"
"""


def test_applied_objects_do_not_change_when_the_cr_they_came_from_changes(
    tmp_path: Path,
) -> None:
    h = Harness(build(tmp_path, CONFIG_FROM_SPEC))
    cr = h.create({"settings": {"mode": "fast"}})
    result = h.reconciler.reconcile_object(cr)
    applied = result.applied["app.cm"]
    cr["spec"]["settings"]["mode"] = "changed"
    cr["spec"]["settings"]["added"] = "x"
    assert applied["data"] == {"mode": "fast"}


def test_changing_applied_objects_does_not_change_the_next_render(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, CONFIG_FROM_SPEC))
    h.create({"settings": {"mode": "fast"}})
    first = h.reconcile().applied["app.cm"]
    expected = copy.deepcopy(first)
    first["data"]["mode"] = "changed"
    first["metadata"]["labels"]["tier"] = "changed"
    second = h.reconcile().applied["app.cm"]
    assert second == expected


# -- the skip-unchanged check ------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b"]))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=12,
)


def holds_every_field(live: Any, wanted: Any) -> bool:
    """The rule is_current applies: maps by key (extra keys in live allowed), lists whole."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(
            k in live and holds_every_field(live[k], v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(live) == len(wanted)
            and all(holds_every_field(a, b) for a, b in zip(live, wanted, strict=True))
        )
    return bool(live == wanted)


def with_hash(spec: Any) -> dict[str, Any]:
    return {"metadata": {"annotations": {HASH_ANNOTATION: "h"}}, "spec": spec}


@given(values, values)
def test_an_object_is_current_exactly_when_the_live_one_holds_every_field(
    wanted: Any, live: Any
) -> None:
    assert is_current(with_hash(wanted), with_hash(live)) == holds_every_field(live, wanted)


@given(st.dictionaries(st.sampled_from("xyz"), values, max_size=3), values)
def test_fields_the_server_adds_do_not_make_an_object_stale(
    wanted: dict[str, Any], added: Any
) -> None:
    live = {**copy.deepcopy(wanted), "defaulted": added}
    assert is_current(with_hash(wanted), with_hash(live))


def projected(live: Any, wanted: Any) -> Any:
    """The projection's definition: live's values at wanted's paths, marked where absent."""
    if isinstance(wanted, dict):
        if not isinstance(live, dict):
            return "\x00absent" if live is None else live
        return {k: projected(live[k], v) if k in live else "\x00absent" for k, v in wanted.items()}
    if isinstance(wanted, list) and isinstance(live, list) and len(live) == len(wanted):
        return [projected(a, b) for a, b in zip(live, wanted, strict=True)]
    return live


def digest_of(value: Any) -> str:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:32]


#: with numbers that are equal but print differently (1, 1.0, True; 0.0, -0.0)
mixed = st.recursive(
    st.one_of(scalars, st.sampled_from([0.0, -0.0, 1.0])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(mixed, mixed)
def test_the_digest_of_live_values_is_that_of_their_projection(wanted: Any, live: Any) -> None:
    for pair in ((live, wanted), (copy.deepcopy(wanted), wanted)):
        assert projection_digest(*pair) == digest_of(projected(*pair))


def remembered_then_matched(wanted: Any, live: Any, later: Any) -> bool:
    memory = AppliedMemory()
    memory.remember(wanted, live)
    return memory.matches(wanted, later)


@given(mixed, mixed, mixed)
def test_the_memory_matches_as_a_digest_of_every_apply_would(
    wanted_spec: Any, live_spec: Any, later_spec: Any
) -> None:
    """Whatever it keeps, ``matches`` (asked when ``is_current`` fails) answers as the
    digest of the live object at apply time compared with the live object now would."""
    wanted = {**with_hash(wanted_spec), "kind": "ConfigMap"}
    for live_value, later_value in ((live_spec, later_spec), (wanted_spec, later_spec)):
        live = {**with_hash(copy.deepcopy(live_value)), "kind": "ConfigMap"}
        live["metadata"]["uid"] = "u1"
        later = {**with_hash(copy.deepcopy(later_value)), "kind": "ConfigMap"}
        later["metadata"]["uid"] = "u1"
        for now in (later, live):
            if is_current(wanted, now):
                continue
            digest_then = digest_of(projected(live, wanted))
            expected = digest_then == digest_of(projected(now, wanted))
            assert remembered_then_matched(wanted, live, now) == expected
