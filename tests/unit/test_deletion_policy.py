"""``deletionPolicy`` of a resource (engine.teardown): what becomes of its objects when the
CR is deleted or the resource stops being rendered, and what a teardown that waits says."""

from __future__ import annotations

from pathlib import Path

import pytest
from bundles import Harness, build, condition
from deletion_bundles import POLICIES

from oper8d.errors import BundleError
from oper8d.objects import OWNER_LABEL

API, KIND, NS = "demo.oper8d.io/v1alpha1", "Demo", "default"


def _oper8d_marks(obj: dict) -> list[str]:  # type: ignore[type-arg]
    meta = obj["metadata"]
    marks = [k for k in meta.get("labels") or {} if "oper8d" in k]
    marks += [k for k in meta.get("annotations") or {} if k.startswith(("oper8d.io/", "oper8."))]
    return marks + [r["uid"] for r in meta.get("ownerReferences") or []]


def test_retained_objects_have_no_owner_reference_and_survive_the_cr(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, POLICIES))
    h.create({})
    h.settle()
    kept = h.get("ConfigMap", "demo-kept")
    assert kept is not None and not kept["metadata"].get("ownerReferences")
    assert kept["metadata"]["labels"][OWNER_LABEL] == h.cr()["metadata"]["uid"]
    assert h.get("ConfigMap", "demo-app")["metadata"]["ownerReferences"]  # type: ignore[index]

    h.cluster.delete(API, KIND, "demo", NS)
    assert h.reconcile().finalized
    assert h.cluster.get(API, KIND, "demo", NS) is None
    assert h.names("ConfigMap") == ["demo-app-o", "demo-handed", "demo-kept"]
    # orphans are released: nothing of oper8d or the CR is left on them
    for name in ("demo-app-o", "demo-handed"):
        orphan = h.get("ConfigMap", name)
        assert orphan is not None and _oper8d_marks(orphan) == [], orphan["metadata"]
    # the retained one still says whose it was, so no new CR takes it over unasked
    assert h.get("ConfigMap", "demo-kept")["metadata"]["labels"][OWNER_LABEL]  # type: ignore[index]


def test_prune_releases_an_orphan_and_keeps_a_retained_object(tmp_path: Path) -> None:
    h = Harness(build(tmp_path, POLICIES))
    h.create({})
    h.settle()
    h.set_spec(app=False)
    h.cluster.reset_requests()
    h.settle()
    assert h.names("ConfigMap") == ["demo-app-o", "demo-handed", "demo-kept"]
    assert h.cluster.requests["delete"] == 1  # demo-app only
    orphan = h.get("ConfigMap", "demo-app-o")
    assert orphan is not None and _oper8d_marks(orphan) == []


def test_a_teardown_held_by_a_foreign_finalizer_says_which_object_and_since_when(
    tmp_path: Path,
) -> None:
    h = Harness(build(tmp_path, POLICIES))
    h.create({})
    h.settle()
    cm = h.get("ConfigMap", "demo-app")
    assert cm is not None
    cm["metadata"]["finalizers"] = ["example.com/hold"]
    h.cluster.update(cm, field_manager="someone")
    h.cluster.delete(API, KIND, "demo", NS)
    result = h.reconcile()
    assert not result.finalized and result.requeue_after
    ready = condition(h.cr(), "Ready")
    since = h.get("ConfigMap", "demo-app")["metadata"]["deletionTimestamp"]  # type: ignore[index]
    assert ready["status"] == "False" and ready["reason"] == "Deleting"
    assert "ConfigMap default/demo-app" in ready["message"]
    assert f"example.com/hold since {since}" in ready["message"]
    assert condition(h.cr(), "Updating")["reason"] == "DeletionWait"
    # upstream is not touched while downstream waits
    assert h.get("ConfigMap", "demo-handed")["metadata"]["ownerReferences"]  # type: ignore[index]
    h.cluster.reset_requests()
    h.reconcile()
    assert h.cluster.requests["update_status"] == 0  # nothing changed: nothing written

    held = h.get("ConfigMap", "demo-app")
    assert held is not None
    held["metadata"]["finalizers"] = []
    h.cluster.update(held, field_manager="someone")
    assert h.reconcile().finalized
    assert h.cluster.get(API, KIND, "demo", NS) is None


def test_orphan_without_the_finalizer_is_refused_at_its_line(tmp_path: Path) -> None:
    body = POLICIES.replace("finalize:\n  enabled: true\n", "")
    with pytest.raises(BundleError) as err:
        build(tmp_path, body)
    text = str(err.value)
    assert "deletionPolicy: Orphan needs" in text and "finalize" in text
    assert "operator.yaml:" in text


def test_render_says_what_a_disabled_component_would_release_and_keeps_quiet_on_retain(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from oper8d.cli.main import main

    bundle = tmp_path / "b"
    build(bundle, POLICIES)
    cr = tmp_path / "cr.yaml"
    cr.write_text(
        f"apiVersion: {API}\nkind: {KIND}\nmetadata: {{name: demo, namespace: {NS}}}\n"
        "spec: {app: false}\n"
    )
    result = CliRunner().invoke(main, ["render", str(bundle), "--cr", str(cr)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "is disabled" in line]
    assert lines == [
        "# would delete (component 'app' is disabled): v1 ConfigMap default/demo-app",
        "# would release (component 'app' is disabled): v1 ConfigMap default/demo-app-o",
    ]


def test_a_kind_the_server_no_longer_serves_owns_nothing() -> None:
    # prune, teardown, diff and trace find what a CR owns with one function; an inventory
    # kind whose CRD is gone (404) must not fail the CR's reconcile or teardown forever
    from oper8d.engine.deploy import list_owned
    from oper8d.errors import ClusterError

    class Reader:
        def get(self, *args: object) -> None:
            return None

        def list(self, api_version: str, kind: str, *args: object, **kwargs: object) -> list:  # type: ignore[type-arg]
            if kind == "Gone":
                raise ClusterError("the server could not find the requested resource", status=404)
            return [{"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}]

    found = list_owned(Reader(), "uid-1", NS, ["v1/ConfigMap", "example.com/v1/Gone"])  # type: ignore[arg-type]
    assert [o["kind"] for o in found] == ["ConfigMap"]
    assert list_owned(Reader(), "", NS, ["v1/ConfigMap"]) == []  # type: ignore[arg-type]


def test_an_orphan_released_from_a_stale_copy_is_released_from_the_live_one(
    tmp_path: Path,
) -> None:
    # prune and teardown list objects from the informers' cache, which may be behind
    import copy

    from oper8d.engine.teardown import release

    h = Harness(build(tmp_path, POLICIES))
    h.create({})
    h.settle()
    stale = copy.deepcopy(h.get("ConfigMap", "demo-handed"))
    assert stale is not None
    live = copy.deepcopy(stale)
    live["metadata"]["labels"]["team"] = "data"  # someone else wrote it since
    h.cluster.update(live, field_manager="someone")
    release(h.cluster, stale, h.cr()["metadata"]["uid"])
    orphan = h.get("ConfigMap", "demo-handed")
    assert orphan is not None and _oper8d_marks(orphan) == []
    assert orphan["metadata"]["labels"] == {"team": "data"}  # their change kept
