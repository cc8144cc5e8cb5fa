"""``oper8d diff`` of a change the API server refuses as immutable: with
``onImmutableChange: fail`` an error naming the object, the field and the way out; with
``recreate`` a warning that the operator recreates the object, and its diff."""

from __future__ import annotations

from pathlib import Path

from bundles import build, demo_cr
from immutable_corpus import BUNDLE
from test_diff import FakeServer

from oper8d.diff import diff_cr, render_for_diff


def _server(tmp_path: Path, policy: str) -> tuple[object, FakeServer]:
    bundle = build(tmp_path, BUNDLE.format(policy=policy))
    cr = demo_cr(track="a")
    live, scratch = render_for_diff(bundle, cr), render_for_diff(bundle, cr)
    assert live.stable
    return bundle, FakeServer(live.cluster, scratch.cluster)


def test_a_refused_immutable_change_names_the_field_and_the_way_out(tmp_path: Path) -> None:
    bundle, server = _server(tmp_path, "")
    report = diff_cr(bundle, demo_cr(track="b"), server)  # type: ignore[arg-type]
    assert report.errors == (
        "Deployment default/demo-web: spec.selector cannot change once the object exists "
        "(the API server refuses it: field is immutable): the operator will fail on it; to "
        "proceed, revert the change, or set `onImmutableChange: recreate` on resource "
        "'app.deployment' to delete the object and create it again",
    )


def test_a_recreated_object_is_a_warning_and_a_diff(tmp_path: Path) -> None:
    bundle, server = _server(tmp_path, "onImmutableChange: recreate")
    report = diff_cr(bundle, demo_cr(track="b"), server)  # type: ignore[arg-type]
    assert report.errors == ()
    assert any("the operator will delete it and create it again" in w for w in report.warnings)
    (changed,) = [d for d in report.diffs if d.action == "change"]
    assert changed.name == "apps.v1.Deployment.default.demo-web"
    assert "-      track: a\n+      track: b\n" in changed.text
