"""``oper8d diff``: normalisation, Secret masking, diff formatting, and the whole comparison
against an in-memory "cluster" where the webapp operator has already rolled a CR out."""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from oper8d import yamlio
from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import Bundle
from oper8d.cli.diff_cmd import diff
from oper8d.cluster.base import Obj
from oper8d.cluster.memory import MemoryCluster
from oper8d.diff import (
    DiffReport,
    compare,
    diff_cr,
    diff_name,
    mask_secret_data,
    normalise,
    render_for_diff,
    unified_diff,
)
from oper8d.errors import ClusterError, ConfigError
from oper8d.objects import OWNER_LABEL
from oper8d.offline import reconcile_offline
from oper8d.template.filters import to_json

REPO = Path(__file__).resolve().parents[2]
WEBAPP = REPO / "examples" / "operators" / "webapp"
SAMPLE = WEBAPP / "samples" / "webapp.yaml"
INGRESS = ("networking.k8s.io/v1", "Ingress", "hello-web", "default")


def webapp_cr(**spec: Any) -> Obj:
    cr = yaml.safe_load(SAMPLE.read_text(encoding="utf-8"))
    cr["spec"].update(spec)
    return cr


@pytest.fixture(scope="module")
def bundle() -> Bundle:
    return load_bundle(WEBAPP)


class FakeServer:
    """Reads from ``live`` (where the operator rolled the CR out); dry-run applies go to
    ``scratch``, a twin of ``live`` built the same way, so ``live`` never changes. The
    twin applies as the field manager that owns the live objects (offline runs apply as
    ``oper8d``), so fields the render stops setting are removed as on a real server;
    the manager the diff asked for is recorded."""

    def __init__(self, live: MemoryCluster, scratch: MemoryCluster, *, refuse: str = ""):
        self.live = live
        self.scratch = scratch
        self.refuse = refuse  # a kind whose dry runs fail with 422
        self.dry_runs: list[tuple[str, str, bool]] = []

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None):
        return self.live.get(api_version, kind, name, namespace)

    def list(self, api_version: str, kind: str, namespace=None, label_selector=None):
        return self.live.list(api_version, kind, namespace, label_selector)

    def dry_run_apply(self, obj: Obj, *, field_manager: str, force: bool = True) -> Obj:
        self.dry_runs.append((obj["kind"], field_manager, force))
        if obj["kind"] == self.refuse:
            raise ClusterError(f"{obj['kind']} is invalid: spec: Required value", status=422)
        return self.scratch.apply(copy.deepcopy(obj), field_manager="oper8d", force=force)


def server_after_rollout(bundle: Bundle, cr: Obj, **kw: Any) -> FakeServer:
    """A server where the operator has made ``cr`` Ready (reading objects back in the
    server's key order, as a real one does)."""
    live = render_for_diff(bundle, cr)
    assert live.stable
    return FakeServer(live.cluster, render_for_diff(bundle, cr).cluster, **kw)


def empty_server() -> FakeServer:
    return FakeServer(MemoryCluster(), MemoryCluster())


def by_kind(report: DiffReport) -> dict[str, Any]:
    return {d.name.split(".")[-3]: d for d in report.diffs}


# -- normalisation ----------------------------------------------------------------------
def deployment(**meta: Any) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", **meta},
        "spec": {"replicas": 2},
        "status": {"readyReplicas": 2},
    }


def test_server_managed_metadata_and_status_are_left_out() -> None:
    obj = deployment(
        uid="u-1",
        resourceVersion="42",
        generation=7,
        creationTimestamp="2026-01-01T00:00:00Z",
        managedFields=[{"manager": "webapp"}],
        labels={"app": "web"},
    )
    assert normalise(obj) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"labels": {"app": "web"}, "name": "web", "namespace": "prod"},
        "spec": {"replicas": 2},
    }


def test_bookkeeping_annotations_of_kubectl_and_controllers_are_dropped() -> None:
    noisy = deployment(
        annotations={
            "kubectl.kubernetes.io/last-applied-configuration": '{"big": "json"}',
            "deployment.kubernetes.io/revision": "3",
        }
    )
    assert "annotations" not in normalise(noisy)["metadata"]
    kept = deployment(annotations={"deployment.kubernetes.io/revision": "3", "team": "a"})
    assert normalise(kept)["metadata"]["annotations"] == {"team": "a"}


def test_normalise_leaves_its_input_alone() -> None:
    obj = deployment(uid="u-1")
    before = copy.deepcopy(obj)
    normalise(obj)
    assert obj == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(min_size=1, max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(spec=st.dictionaries(st.text(min_size=1, max_size=4), json_values, max_size=6))
def test_key_order_never_shows_up_as_a_difference(spec: dict[str, Any]) -> None:
    obj = {**deployment(), "spec": spec}
    reordered = _reversed_keys(obj)
    assert yamlio.dump(normalise(obj)) == yamlio.dump(normalise(reordered))
    assert compare(obj, reordered).text == ""


@given(spec=st.dictionaries(st.text(min_size=1, max_size=4), json_values, max_size=6))
def test_normalising_twice_changes_nothing(spec: dict[str, Any]) -> None:
    once = normalise({**deployment(uid="u"), "spec": spec})
    assert normalise(once) == once


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed_keys(v) for v in value]
    return value


# -- Secrets ----------------------------------------------------------------------------
def secret(**data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "prod"},
        "data": data,
    }


def test_secret_values_are_masked_and_a_changed_value_shows_before_and_after() -> None:
    live, merged = mask_secret_data(
        secret(user="YWRtaW4=", password="b2xk"),
        secret(user="YWRtaW4=", password="bmV3", new="eA=="),
    )
    assert live is not None and merged is not None
    assert live["data"] == {"user": "***", "password": "*** (before)"}
    assert merged["data"] == {"user": "***", "password": "*** (after)", "new": "***"}


#: a Secret value to compare against: every other value must give the same diff
REFERENCE_VALUE = "c2VjcmV0LXZhbHVl"

SECRET_DIFFS: list[Callable[[str], tuple[Obj | None, Obj | None]]] = [
    lambda value: (None, secret(key=value)),  # created
    lambda value: (secret(key=value), None),  # deleted
    lambda value: (secret(key=value), secret(key=value + "x")),  # changed
]


def test_a_secret_value_is_not_printed() -> None:
    for pair in SECRET_DIFFS:
        text = compare(*pair(REFERENCE_VALUE)).text
        assert REFERENCE_VALUE not in text and "***" in text


# Not "the value is not in the text": a drawn value can be part of the text anyway (e.g.
# "/dev/nul" of the header, or "creds"). A diff that hides the values reads the same
# whatever they are.
@given(value=st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789+/=", min_size=1))
def test_the_diff_of_a_secret_is_the_same_whatever_its_values(value: str) -> None:
    for pair in SECRET_DIFFS:
        assert compare(*pair(value)).text == compare(*pair(REFERENCE_VALUE)).text


def test_data_of_other_kinds_is_shown_as_it_is() -> None:
    cm = {**secret(key="visible"), "kind": "ConfigMap"}
    assert "visible" in compare(None, cm).text


# -- formatting -------------------------------------------------------------------------
def test_objects_are_named_as_kubectl_names_its_diff_files() -> None:
    assert diff_name(deployment()) == "apps.v1.Deployment.prod.web"
    assert diff_name(secret()) == "v1.Secret.prod.creds"
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}
    assert diff_name(namespace) == "v1.Namespace.prod"


def test_a_changed_field_is_one_removed_and_one_added_line() -> None:
    live = deployment(uid="a", resourceVersion="1")
    merged = {**deployment(uid="a", resourceVersion="2", generation=2), "spec": {"replicas": 5}}
    result = compare(live, merged)
    assert result.action == "change"
    lines = result.text.splitlines()
    assert lines[:2] == [
        "--- live/apps.v1.Deployment.prod.web",
        "+++ merged/apps.v1.Deployment.prod.web",
    ]
    assert [ln for ln in lines[2:] if ln[:1] in "+-"] == ["-  replicas: 2", "+  replicas: 5"]


def test_equal_objects_give_no_diff() -> None:
    result = compare(deployment(resourceVersion="1"), deployment(resourceVersion="9"))
    assert (result.action, result.text) == (None, "")


def test_a_new_object_is_a_diff_from_dev_null() -> None:
    result = compare(None, deployment())
    assert result.action == "create"
    lines = result.text.splitlines()
    assert lines[:2] == ["--- /dev/null", "+++ merged/apps.v1.Deployment.prod.web"]
    assert all(ln.startswith("+") for ln in lines[3:])
    assert "+kind: Deployment" in lines


def test_a_deleted_object_is_a_diff_to_dev_null() -> None:
    result = compare(deployment(), None)
    assert result.action == "delete"
    lines = result.text.splitlines()
    assert lines[:2] == ["--- live/apps.v1.Deployment.prod.web", "+++ /dev/null"]
    assert all(ln.startswith("-") for ln in lines[3:])


def test_the_diff_of_nothing_against_nothing_is_empty() -> None:
    assert unified_diff(None, None, "x") == ""


# -- rendering --------------------------------------------------------------------------
def test_the_diff_renders_the_objects_oper8d_render_renders(bundle: Bundle) -> None:
    ours = render_for_diff(bundle, webapp_cr()).applied
    theirs = reconcile_offline(bundle, webapp_cr()).applied
    # to_json sorts keys like Helm, so even values derived from live data agree
    assert ours == theirs


def test_a_hash_of_live_configmap_data_is_the_one_the_operator_computes_on_a_server(
    bundle: Bundle,
) -> None:
    # a real API server returns a ConfigMap's data keys sorted (it is a Go map)
    server_data = {"LOG_LEVEL": "info", "MESSAGE": "hello from oper8d"}
    expected = hashlib.sha256(to_json(server_data).encode()).hexdigest()
    deployment = render_for_diff(bundle, webapp_cr()).applied["app.deployment"]
    assert deployment["spec"]["template"]["metadata"]["annotations"] == {
        "oper8d.io/config-hash": expected
    }


def test_the_live_crs_uid_is_the_owner_of_every_rendered_object(bundle: Bundle) -> None:
    run = render_for_diff(bundle, webapp_cr(), live_uid="0d9c5a3e-live")
    for obj in run.applied.values():
        assert obj["metadata"]["labels"][OWNER_LABEL] == "0d9c5a3e-live"
        assert [r["uid"] for r in obj["metadata"]["ownerReferences"]] == ["0d9c5a3e-live"]


# -- the whole diff ---------------------------------------------------------------------
def test_the_cr_the_operator_rolled_out_shows_no_difference(bundle: Bundle) -> None:
    report = diff_cr(bundle, webapp_cr(), server_after_rollout(bundle, webapp_cr()))
    assert not report.changed and report.text == ""
    assert report.errors == () and report.warnings == ()
    assert len(report.diffs) == 5


def test_a_cr_saved_from_the_cluster_diffs_like_the_cr_it_describes(bundle: Bundle) -> None:
    # `kubectl get -o yaml` keeps the server's metadata: that gave a false "was deleted"
    server = server_after_rollout(bundle, webapp_cr())
    saved = copy.deepcopy(webapp_cr())
    saved["metadata"].update(
        uid="6f1d2a9c-0000-4000-8000-000000000001",
        resourceVersion="123456",
        generation=4,
        creationTimestamp="2026-12-01T10:00:00Z",
        managedFields=[{"manager": "kubectl", "operation": "Apply"}],
    )
    report = diff_cr(bundle, saved, server)
    assert report == diff_cr(bundle, webapp_cr(), server)
    assert not report.errors


def test_a_replicas_change_shows_in_the_deployment(bundle: Bundle) -> None:
    no_hpa = {"enabled": False}
    server = server_after_rollout(bundle, webapp_cr(autoscaling=no_hpa))
    report = diff_cr(bundle, webapp_cr(replicas=5, autoscaling=no_hpa), server)
    assert report.changed
    diffs = by_kind(report)
    assert "-  replicas: 3\n+  replicas: 5\n" in diffs["Deployment"].text
    assert diffs["ConfigMap"].action is None and diffs["Service"].action is None
    assert server.live.get("apps/v1", "Deployment", "hello-app", "default")["spec"]["replicas"] == 3


def test_replicas_left_to_the_autoscaler_are_not_a_change_of_the_deployment(
    bundle: Bundle,
) -> None:
    server = server_after_rollout(bundle, webapp_cr())
    live = copy.deepcopy(server.live.get("apps/v1", "Deployment", "hello-app", "default"))
    live["spec"]["replicas"] = 4  # the autoscaler scaled it
    server.live.update(live, field_manager="autoscaler")
    report = diff_cr(bundle, webapp_cr(replicas=5), server)
    diffs = by_kind(report)
    assert diffs["Deployment"].action is None  # the operator never reverts the autoscaler
    assert "-  minReplicas: 3\n+  minReplicas: 5\n" in diffs["HorizontalPodAutoscaler"].text


def test_dry_runs_apply_as_the_operator_does(bundle: Bundle) -> None:
    server = server_after_rollout(bundle, webapp_cr())
    diff_cr(bundle, webapp_cr(), server)
    assert {(manager, force) for _kind, manager, force in server.dry_runs} == {("webapp", True)}


def test_disabling_a_component_shows_its_objects_as_deletions(bundle: Bundle) -> None:
    server = server_after_rollout(bundle, webapp_cr())
    report = diff_cr(bundle, webapp_cr(ingress={"enabled": False}), server)
    ingress = by_kind(report)["Ingress"]
    assert ingress.action == "delete"
    assert ingress.text.startswith(
        "--- live/networking.k8s.io.v1.Ingress.default.hello-web\n+++ /dev/null\n"
    )
    assert [d.action for d in report.diffs if d is not ingress] == [None] * 4
    assert server.live.get(*INGRESS) is not None


def test_owned_objects_of_a_removed_component_are_deletions_and_unmarked_ones_stay(
    bundle: Bundle,
) -> None:
    server = server_after_rollout(bundle, webapp_cr())
    uid = server.live.get("demo.oper8d.io/v1alpha1", "WebApp", "hello", "default")["metadata"][
        "uid"
    ]

    def owned(name: str, annotations: dict[str, str]) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": {OWNER_LABEL: uid},
                "annotations": annotations,
            },
        }

    server.live.apply(owned("old", {"oper8d.io/component": "legacy"}), field_manager="oper8d")
    server.live.apply(owned("randoms", {}), field_manager="oper8d")
    report = diff_cr(bundle, webapp_cr(), server)
    assert [d.name for d in report.diffs if d.action] == ["v1.ConfigMap.default.old"]


def test_a_cr_not_in_the_cluster_makes_every_object_new(bundle: Bundle) -> None:
    report = diff_cr(bundle, webapp_cr(), empty_server())
    assert [d.action for d in report.diffs] == ["create"] * 5
    assert report.text.count("--- /dev/null\n") == 5
    assert OWNER_LABEL not in report.text and "ownerReferences" not in report.text
    assert any("does not exist in the cluster" in w for w in report.warnings)


def test_a_cr_without_a_namespace_goes_to_the_given_one(bundle: Bundle) -> None:
    cr = webapp_cr()
    del cr["metadata"]["namespace"]
    report = diff_cr(bundle, cr, empty_server(), namespace="team-a")
    assert {d.name.split(".")[-2] for d in report.diffs} == {"team-a"}


def test_an_object_the_server_refuses_is_reported_and_the_rest_still_compared(
    bundle: Bundle,
) -> None:
    server = server_after_rollout(bundle, webapp_cr(), refuse="Service")
    report = diff_cr(bundle, webapp_cr(replicas=4), server)
    assert report.errors == ("Service default/hello-web: Service is invalid: spec: Required value",)
    assert by_kind(report)["HorizontalPodAutoscaler"].action == "change"


def test_a_paused_cr_changes_nothing_and_says_so(bundle: Bundle) -> None:
    server = server_after_rollout(bundle, webapp_cr())
    paused = webapp_cr(replicas=9, ingress={"enabled": False})
    paused["metadata"]["annotations"] = {"oper8.org/pause-execution": "true"}
    report = diff_cr(bundle, paused, server)
    assert report.diffs == () and not report.changed
    assert "paused" in report.warnings[0]


def test_a_template_that_fails_is_raised_as_the_renders_error(bundle: Bundle) -> None:
    with pytest.raises(ConfigError):
        diff_cr(bundle, webapp_cr(replicas=0), empty_server())


# -- the command ------------------------------------------------------------------------
def run_diff(*args: str | Path) -> Result:
    return CliRunner().invoke(diff, [str(a) for a in args])


@pytest.fixture
def fake_cluster(monkeypatch: pytest.MonkeyPatch, bundle: Bundle) -> FakeServer:
    """The command talking to a FakeServer where the sample CR was rolled out."""
    server = server_after_rollout(bundle, webapp_cr())
    monkeypatch.setattr("oper8d.cli.run_cluster.api_client", lambda _kubeconfig: object())
    monkeypatch.setattr("oper8d.cluster.kube.KubeCluster", lambda *_a, **_kw: server)
    return server


def write_cr(tmp_path: Path, **spec: Any) -> Path:
    path = tmp_path / "cr.yaml"
    path.write_text(yaml.safe_dump(webapp_cr(**spec)), encoding="utf-8")
    return path


def test_the_command_exits_0_and_prints_nothing_when_nothing_would_change(
    fake_cluster: FakeServer, tmp_path: Path
) -> None:
    result = run_diff(WEBAPP, "--cr", write_cr(tmp_path))
    assert (result.exit_code, result.output) == (0, "")


def test_the_command_exits_1_and_prints_the_diff_when_something_would_change(
    fake_cluster: FakeServer, tmp_path: Path
) -> None:
    result = run_diff(WEBAPP, "--cr", write_cr(tmp_path, replicas=5))
    assert result.exit_code == 1
    assert "+++ merged/autoscaling.v2.HorizontalPodAutoscaler.default.hello-app" in result.stdout
    assert "+  minReplicas: 5" in result.stdout


def test_a_refused_object_makes_the_command_exit_2(
    fake_cluster: FakeServer, tmp_path: Path
) -> None:
    fake_cluster.refuse = "Service"
    result = run_diff(WEBAPP, "--cr", write_cr(tmp_path, replicas=5))
    assert result.exit_code == 2
    assert "error: Service default/hello-web: Service is invalid" in result.stderr
    assert "+  minReplicas: 5" in result.stdout


def test_a_broken_bundle_exits_2_with_its_problems(tmp_path: Path) -> None:
    (tmp_path / "operator.yaml").write_text("apiVersion: oper8d.io/v1alpha1\nkind: Nope\n")
    result = run_diff(tmp_path, "--cr", SAMPLE)
    assert result.exit_code == 2
    assert "operator.yaml" in result.stderr and "Traceback" not in result.output


def test_a_cr_that_breaks_the_schema_exits_2_naming_the_field(tmp_path: Path) -> None:
    result = run_diff(WEBAPP, "--cr", write_cr(tmp_path, replicas=0))
    assert result.exit_code == 2
    assert "spec.replicas" in result.stderr


def test_an_unreachable_cluster_exits_2_with_a_message(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    result = run_diff(WEBAPP, "--cr", SAMPLE, "--kubeconfig", kubeconfig)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
    assert "kubeconfig" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


# -- generated passwords ----------------------------------------------------------------
STATEFUL = REPO / "examples" / "operators" / "stateful"
LIVE_PASSWORD = "S3cretTheOperatorMadeLive"[:24]


def stateful_server_with_a_generated_password() -> tuple[Bundle, Obj, FakeServer]:
    """A server where the operator rolled the stateful sample out with a real generated
    password: the ``notes-oper8d-generated`` Secret holds it and the database credentials
    Secret uses it, as ``SecretRandoms`` leaves them."""
    bundle = load_bundle(STATEFUL)
    cr = yaml.safe_load((STATEFUL / "samples" / "notes.yaml").read_text(encoding="utf-8"))
    server = FakeServer(render_for_diff(bundle, cr).cluster, render_for_diff(bundle, cr).cluster)
    live_cr = server.live.get("demo.oper8d.io/v1alpha1", "NotesApp", "notes", "default")
    assert live_cr is not None
    uid = live_cr["metadata"]["uid"]
    encoded = base64.b64encode(LIVE_PASSWORD.encode()).decode()
    for cluster in (server.live, server.scratch):
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": "notes-oper8d-generated",
                    "namespace": "default",
                    "labels": {OWNER_LABEL: uid},
                },
                "data": {"db-password.24": encoded},
            },
            field_manager="oper8d",
        )
        creds = copy.deepcopy(cluster.get("v1", "Secret", "notes-db-credentials", "default"))
        assert creds is not None
        creds["data"]["password"] = encoded
        creds.pop("stringData", None)
        cluster.update(creds, field_manager="oper8d")
    return bundle, cr, server


def test_an_unchanged_generated_password_is_no_difference() -> None:
    bundle, cr, server = stateful_server_with_a_generated_password()
    report = diff_cr(bundle, cr, server)
    assert [d.name for d in report.diffs if d.action is not None] == []
    assert report.text == ""


def test_a_changed_input_next_to_a_generated_password_shows_only_that_change() -> None:
    bundle, cr, server = stateful_server_with_a_generated_password()
    changed = copy.deepcopy(cr)
    changed["spec"]["replicas"] = 3
    report = diff_cr(bundle, changed, server)
    assert [d.name for d in report.diffs if d.action is not None] == [
        "apps.v1.Deployment.default.notes-app"
    ]
    assert LIVE_PASSWORD not in report.text


def test_a_cr_update_its_crds_transition_rules_refuse_is_an_error(tmp_path: Path) -> None:
    from bundles import demo_cr, write_bundle

    from oper8d.kubeschema import KubeSchemas
    from oper8d.manifests import crd_for

    rule = {"rule": "self.size >= oldSelf.size", "message": "size may only grow"}
    schema = {
        "type": "object",
        "properties": {"size": {"type": "integer"}},
        "x-kubernetes-validations": [rule],
    }
    demo = load_bundle(write_bundle(tmp_path / "b", "components: []", schema=schema))
    schemas = KubeSchemas.builtin().with_crds([crd_for(demo.controllers[0])])
    server = server_after_rollout(demo, demo_cr(size=3))
    assert not diff_cr(demo, demo_cr(size=4), server, schemas=schemas).errors
    with pytest.raises(ConfigError, match=r"would refuse this update of Demo .*size may only grow"):
        diff_cr(demo, demo_cr(size=2), server, schemas=schemas)
    # a create has no old object: the transition rule does not run, nothing is refused
    created = diff_cr(demo, demo_cr(size=2), empty_server(), schemas=schemas)
    assert "does not exist in the cluster" in created.warnings[0]
