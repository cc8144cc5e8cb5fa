"""``oper8d manifests``: the operator's Deployment (hardened, leader-elected, probes), the
bundle ConfigMap that recreates the bundle folder, and the output (a deterministic YAML
stream, or a kustomize folder)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from oper8d import __version__
from oper8d.bundle.compile import load_bundle
from oper8d.cli.manifests_cmd import manifests
from oper8d.manifests.bundle_configmap import (
    bundle_configmap,
    bundle_files,
    configmap_keys,
    write_bundle_files,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operators"
WEBAPP = EXAMPLES / "webapp"
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(manifests, [str(a) for a in args])


def docs(*args: str | Path) -> list[dict[str, Any]]:
    result = run(*args)
    assert result.exit_code == 0, result.output
    return list(yaml.safe_load_all(result.stdout))


def one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind]
    return found


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    return c


# -- the Deployment --------------------------------------------------------------------------
def test_the_operator_runs_as_a_hardened_non_root_container() -> None:
    deployment = one(docs(WEBAPP), "Deployment")
    security = container(deployment)["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] == 65532
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    pod = deployment["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["seccompProfile"] == {"type": "RuntimeDefault"}


def test_two_replicas_elect_a_leader_with_the_lease_in_their_own_namespace() -> None:
    deployment = one(docs(WEBAPP, "--namespace", "ops"), "Deployment")
    assert deployment["metadata"]["namespace"] == "ops"
    assert deployment["spec"]["replicas"] == 2
    c = container(deployment)
    assert c["args"] == [
        "run",
        "/bundle",
        "--leader-elect",
        "--leader-election-namespace",
        "$(POD_NAMESPACE)",
    ]
    assert c["env"] == [
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}
    ]


def test_watched_namespaces_become_namespace_flags() -> None:
    c = container(
        one(docs(WEBAPP, "--watch-namespace", "b", "--watch-namespace", "a"), "Deployment")
    )
    assert c["args"][:6] == ["run", "/bundle", "--namespace", "a", "--namespace", "b"]


def test_every_flag_the_deployment_passes_is_one_oper8d_run_accepts() -> None:
    from oper8d.cli.main import main

    run_flags = {opt for p in main.commands["run"].params for opt in p.opts}
    c = container(one(docs(WEBAPP, "--watch-namespace", "a"), "Deployment"))
    assert c["args"][0] == "run"
    assert {a for a in c["args"] if a.startswith("--")} <= run_flags


def test_generating_manifests_does_not_import_the_kubernetes_client() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from oper8d.cli.manifests_cmd import manifests\n"
        f"result = CliRunner().invoke(manifests, [{str(WEBAPP)!r}])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_probes_metrics_and_resources_match_what_oper8d_run_serves() -> None:
    c = container(one(docs(WEBAPP), "Deployment"))
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"metrics": 8080, "probes": 8081}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    assert c["resources"] == {
        "requests": {"cpu": "100m", "memory": "128Mi"},
        "limits": {"memory": "512Mi"},
    }


def test_the_image_defaults_to_this_oper8d_version_and_can_be_chosen() -> None:
    assert container(one(docs(WEBAPP), "Deployment"))["image"] == f"oper8d:{__version__}"
    chosen = one(docs(WEBAPP, "--image", "registry.example/webapp:1"), "Deployment")
    assert container(chosen)["image"] == "registry.example/webapp:1"


def test_the_bundle_is_mounted_read_only_at_slash_bundle_from_its_configmap() -> None:
    objs = docs(WEBAPP)
    configmap = one(objs, "ConfigMap")
    deployment = one(objs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if "configMap" in v]
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    mounts = container(deployment)["volumeMounts"]
    (mount,) = [m for m in mounts if m["name"] == volume["name"]]
    assert mount == {"name": volume["name"], "mountPath": "/bundle", "readOnly": True}


def test_a_bundle_baked_into_the_image_needs_no_configmap_and_no_volume() -> None:
    objs = docs(WEBAPP, "--bundle-from", "image")
    assert [o for o in objs if o["kind"] == "ConfigMap"] == []
    c = container(one(objs, "Deployment"))
    assert all(m["mountPath"] != "/bundle" for m in c["volumeMounts"])
    assert c["args"][:2] == ["run", "/bundle"]


def test_a_changed_bundle_file_rolls_the_operator_pods(tmp_path: Path) -> None:
    bundle = shutil.copytree(WEBAPP, tmp_path / "webapp")

    def pod_annotations() -> dict[str, str]:
        deployment = one(docs(bundle), "Deployment")
        return deployment["spec"]["template"]["metadata"]["annotations"]

    before = pod_annotations()
    sample = bundle / "samples" / "webapp.yaml"
    sample.write_text(sample.read_text() + "# changed\n")
    assert pod_annotations() != before


# -- the bundle ConfigMap ---------------------------------------------------------------------
@pytest.mark.parametrize("example", ["webapp", "stateful", "fanout"])
def test_the_configmap_recreates_a_bundle_that_loads_the_same(example: str, tmp_path: Path) -> None:
    objs = docs(EXAMPLES / example)
    configmap = one(objs, "ConfigMap")
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if "configMap" in v]
    dest = tmp_path / "bundle"
    write_bundle_files(configmap, volume["configMap"]["items"], dest)
    for rel in bundle_files(EXAMPLES / example):
        assert (dest / rel).read_bytes() == (EXAMPLES / example / rel).read_bytes(), rel
    original, restored = load_bundle(EXAMPLES / example), load_bundle(dest)
    assert restored.name == original.name
    assert [c.resource for c in restored.controllers] == [c.resource for c in original.controllers]
    assert [c.deployed_kinds() for c in restored.controllers] == [
        c.deployed_kinds() for c in original.controllers
    ]


def test_colliding_and_odd_file_names_and_binary_files_survive_the_configmap(
    tmp_path: Path,
) -> None:
    root = tmp_path / "b"
    files = {
        "operator.yaml": b"kind: Operator\n",
        "components/database.yaml": b"a: 1\n",
        "components_database.yaml": b"b: 2\n",
        "templates/with space.yaml": b"c: 3\n",
        "logo.png": bytes(range(256)),
        ".git/HEAD": b"ref\n",
        "templates/.swp": b"x",
    }
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content)
    cm = bundle_configmap(root, name="b", namespace="ns")
    keys = [*cm.configmap.get("data", {}), *cm.configmap.get("binaryData", {})]
    assert len(keys) == len(set(keys)) == 5
    assert all(CONFIGMAP_KEY.match(k) for k in keys)
    assert "logo.png" in cm.configmap["binaryData"]
    # the YAML the user applies is what the kubelet gets
    configmap = yaml.safe_load(yaml.safe_dump(cm.configmap))
    write_bundle_files(configmap, cm.items, tmp_path / "out")
    for rel, content in files.items():
        hidden = any(part.startswith(".") for part in Path(rel).parts)
        assert (tmp_path / "out" / rel).exists() is not hidden
        if not hidden:
            assert (tmp_path / "out" / rel).read_bytes() == content


_segment = st.text(alphabet="ab_-./ xY1", min_size=1, max_size=6).filter(
    lambda s: s not in (".", "..") and "/" not in s
)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.lists(_segment, min_size=1, max_size=3).map("/".join), max_size=12))
def test_configmap_keys_are_valid_and_never_collide(paths: set[str]) -> None:
    keys = configmap_keys(sorted(paths))
    assert set(keys) == paths
    assert len(set(keys.values())) == len(paths)
    assert all(CONFIGMAP_KEY.match(k) and k not in (".", "..") for k in keys.values())


def test_a_bundle_too_big_for_a_configmap_says_to_bake_it_into_the_image(tmp_path: Path) -> None:
    bundle = shutil.copytree(WEBAPP, tmp_path / "webapp")
    (bundle / "samples" / "big.yaml").write_text("# " + "x" * (1024 * 1024) + "\n")
    result = run(bundle)
    assert result.exit_code == 1
    assert "--bundle-from image" in result.stderr
    assert run(bundle, "--bundle-from", "image").exit_code == 0


# -- the output -------------------------------------------------------------------------------
def test_the_stream_is_ordered_so_kubectl_apply_can_create_everything_in_one_pass() -> None:
    kinds = [o["kind"] for o in docs(WEBAPP)]
    assert kinds == [
        "Namespace",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
    ]
    crds = [o["metadata"]["name"] for o in docs(WEBAPP) if o["kind"] == "CustomResourceDefinition"]
    assert crds == ["webapps.demo.oper8d.io", "temporarypatches.oper8.org"]


def test_the_namespace_is_created_unless_it_already_exists_in_every_cluster() -> None:
    assert one(docs(WEBAPP), "Namespace")["metadata"]["name"] == "webapp-system"
    assert [o for o in docs(WEBAPP, "--namespace", "default") if o["kind"] == "Namespace"] == []
    namespaced = [o for o in docs(WEBAPP, "--namespace", "ops") if "namespace" in o["metadata"]]
    assert {o["metadata"]["namespace"] for o in namespaced} == {"ops"}


def test_the_output_is_the_same_byte_for_byte_wherever_the_bundle_lives(tmp_path: Path) -> None:
    copy = shutil.copytree(WEBAPP, tmp_path / "elsewhere" / "webapp")
    first, again, moved = run(WEBAPP), run(WEBAPP), run(copy)
    assert first.exit_code == 0
    assert first.stdout == again.stdout == moved.stdout
    assert str(tmp_path) not in moved.stdout


def test_a_folder_gets_one_file_per_object_and_a_kustomization(tmp_path: Path) -> None:
    out = tmp_path / "deploy"
    stream = docs(WEBAPP, "--watch-namespace", "a", "--watch-namespace", "b")
    result = run(WEBAPP, "--watch-namespace", "a", "--watch-namespace", "b", "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    files = kustomization["resources"]
    assert sorted(p.name for p in out.iterdir()) == sorted([*files, "kustomization.yaml"])
    assert files == sorted(files)  # kubectl apply -f DIR takes them in name order
    assert files[0] == "00-namespace-webapp-system.yaml"
    assert "02-customresourcedefinition-temporarypatches.oper8.org.yaml" in files
    assert any(re.fullmatch(r"\d\d-role-a-webapp-operator\.yaml", f) for f in files)
    from_files = [yaml.safe_load((out / f).read_text()) for f in files]
    assert from_files == stream


def test_rewriting_a_folder_removes_files_of_objects_no_longer_generated(tmp_path: Path) -> None:
    out = tmp_path / "deploy"
    assert run(WEBAPP, "-o", out).exit_code == 0
    assert any("configmap" in p.name for p in out.iterdir())
    (out / "README.md").write_text("mine")
    assert run(WEBAPP, "-o", out, "--bundle-from", "image").exit_code == 0
    names = {p.name for p in out.iterdir()}
    assert not any("configmap" in n for n in names)
    assert "README.md" in names
    listed = yaml.safe_load((out / "kustomization.yaml").read_text())["resources"]
    assert names == {*listed, "kustomization.yaml", "README.md"}


def test_a_kind_computed_by_a_template_must_be_declared(tmp_path: Path) -> None:
    bundle = shutil.copytree(WEBAPP, tmp_path / "webapp")
    text = (bundle / "operator.yaml").read_text()
    (bundle / "operator.yaml").write_text(
        text.replace("kind: HorizontalPodAutoscaler", "kind: \"{{ 'HorizontalPodAutoscaler' }}\"")
    )
    result = run(bundle)
    assert result.exit_code == 1
    assert "operator.yaml:" in result.stderr and "declare the kinds" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--extra-kind", "CronJob"], "apiVersion/Kind"),
        (["--extra-kind", "a/b/c/CronJob"], "apiVersion/Kind"),
        (["--namespace", "Not_A_Namespace"], "not a namespace name"),
        (["--watch-namespace", "ok", "--watch-namespace", "-bad"], "not a namespace name"),
        (["--bundle-from", "git"], "configmap"),
    ],
)
def test_bad_options_are_usage_errors_that_say_what_is_expected(
    args: list[str], message: str
) -> None:
    result = run(WEBAPP, *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_extra_kinds_from_the_command_line_are_granted() -> None:
    objs = docs(WEBAPP, "--extra-kind", "batch/v1/CronJob", "--extra-kind", "v1/PodTemplate")
    rules = one(objs, "ClusterRole")["rules"]
    assert any(r["apiGroups"] == ["batch"] and "cronjobs" in r["resources"] for r in rules)
    assert any(r["apiGroups"] == [""] and "podtemplates" in r["resources"] for r in rules)


def test_a_broken_bundle_is_reported_with_its_position(tmp_path: Path) -> None:
    bundle = shutil.copytree(WEBAPP, tmp_path / "webapp")
    (bundle / "operator.yaml").write_text("apiVersion: oper8d.io/v1alpha1\nkind: Operator\n")
    result = run(bundle)
    assert result.exit_code == 1
    assert "operator.yaml" in result.stderr
