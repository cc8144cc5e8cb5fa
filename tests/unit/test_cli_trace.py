"""``oper8d trace`` as a user runs it: its formats, ``--watch`` frames, and bad input as one
line and a non-zero exit, never a traceback. The cluster is the in-memory one here
(``show``); tests/integration/test_trace_real.py runs the command on the real API server."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from oper8d.bundle.compile import load_bundle
from oper8d.bundle.model import Bundle
from oper8d.cli.main import main
from oper8d.cli.trace_cmd import CLEAR, show
from oper8d.cli.trace_view import age
from oper8d.clock import FakeClock
from oper8d.cluster.memory import MemoryCluster
from oper8d.objects import Obj
from oper8d.offline import EPOCH
from oper8d.testing import run_offline
from oper8d.trace import find_controller

ROOT = Path(__file__).resolve().parents[2]
WEBAPP = ROOT / "examples/operators/webapp"
SCHEMA = json.loads((ROOT / "schemas/trace.schema.json").read_text())


@pytest.fixture(scope="module")
def webapp() -> Bundle:
    return load_bundle(WEBAPP)


@pytest.fixture
def cluster(webapp: Bundle) -> MemoryCluster:
    return run_offline(webapp, WEBAPP / "samples/webapp.yaml").cluster


def shown(
    bundle: Bundle, reader: Any, fmt: str = "text", *, watch: bool = False, tty: bool = False
) -> tuple[int, str]:
    clock = FakeClock(EPOCH + timedelta(minutes=5))
    out = io.StringIO()
    code = show(
        bundle,
        find_controller(bundle, "webapp"),
        reader,
        "hello",
        "default",
        fmt,
        watch=watch,
        interval=2.0,
        clock=clock,
        out=out,
        tty=tty,
    )
    return code, out.getvalue()


def test_the_default_format_is_a_tree_in_dependency_order(
    webapp: Bundle, cluster: MemoryCluster
) -> None:
    code, text = shown(webapp, cluster)
    assert code == 0
    lines = text.splitlines()
    assert lines[0] == (
        "WebApp default/hello, Ready=True (Stable), Updating=False (Stable), "
        "generation 1 (observed 1), age 5m"
    )
    assert lines[1].split() == ["NAME", "STATE", "REASON", "AGE", "MESSAGE"]
    assert lines[2].startswith("WebApp/hello ")
    width = lines[1].index("STATE")
    tree = [line[:width].rstrip() for line in lines[3:]]
    assert tree == [
        "├─ config",
        "│  └─ ConfigMap/hello-config",
        "├─ app",
        "│  └─ Deployment/hello-app",
        "├─ service",
        "│  └─ Service/hello-web",
        "├─ ingress",
        "│  └─ Ingress/hello-web",
        "└─ autoscaler",
        "   └─ HorizontalPodAutoscaler/hello-app",
    ]
    deployment = next(line for line in lines if "Deployment/hello-app" in line)
    assert deployment[width:].split() == [
        "ready",
        "Ready",
        "5m",
        "3",
        "of",
        "3",
        "replicas",
        "available",
    ]


def test_wide_adds_managers_finalizers_and_uids(webapp: Bundle, cluster: MemoryCluster) -> None:
    _code, text = shown(webapp, cluster, "wide")
    header = text.splitlines()[1].split()
    assert header == [
        "NAME",
        "STATE",
        "REASON",
        "AGE",
        "MANAGERS",
        "FINALIZERS",
        "UID",
        "MESSAGE",
    ]
    cr_row = text.splitlines()[2]
    assert "finalizers.webapp.demo.oper8d.io" in cr_row


def test_json_and_yaml_are_the_documented_structure(webapp: Bundle, cluster: MemoryCluster) -> None:
    _code, text = shown(webapp, cluster, "json")
    data = json.loads(text)
    jsonschema.validate(data, SCHEMA)
    assert (data["apiVersion"], data["kind"]) == ("oper8d.io/v1alpha1", "Trace")
    assert data["observedAt"] == "2026-01-01T00:05:00Z"
    _code, text = shown(webapp, cluster, "yaml")
    assert yaml.safe_load(text) == data


class Changing:
    """A reader whose cluster changes as it is read: the Service goes at the second look,
    the CR at the fourth (a look reads the CR first)."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self.looks = 0

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
        if kind == "WebApp":
            self.looks += 1
            if self.looks == 2:
                self.cluster.delete("v1", "Service", "hello-web", "default")
            if self.looks >= 4:
                return None
        return self.cluster.get(api_version, kind, name, namespace)

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[Obj]:
        return self.cluster.list(api_version, kind, namespace, label_selector)


def test_watch_prints_a_frame_when_something_changed_until_the_cr_is_gone(
    webapp: Bundle, cluster: MemoryCluster
) -> None:
    code, text = shown(webapp, Changing(cluster), watch=True)
    assert code == 0
    frames = text.split("\n\n")
    # looks 1 and 2 differ (the Service went), look 3 is the same as 2: two frames
    assert len(frames) == 2, text
    assert "Service/hello-web" in frames[1] and "missing" in frames[1]
    assert text.endswith("WebApp default/hello is gone\n")
    assert CLEAR not in text


def test_watch_on_a_terminal_redraws_in_place(webapp: Bundle, cluster: MemoryCluster) -> None:
    _code, text = shown(webapp, Changing(cluster), watch=True, tty=True)
    assert text.startswith(CLEAR)
    assert text.count(CLEAR) == 3  # every look redraws


class Interrupted(FakeClock):
    def sleep(self, seconds: float) -> None:
        raise KeyboardInterrupt


def test_ctrl_c_ends_a_watch_cleanly(webapp: Bundle, cluster: MemoryCluster) -> None:
    out = io.StringIO()
    code = show(
        webapp,
        find_controller(webapp, "wa"),
        cluster,
        "hello",
        "default",
        "text",
        watch=True,
        interval=2.0,
        clock=Interrupted(EPOCH),
        out=out,
        tty=False,
    )
    assert code == 0
    assert out.getvalue().startswith("WebApp default/hello, Ready=True")


def test_a_missing_cr_is_one_line(
    webapp: Bundle, cluster: MemoryCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    code = show(
        webapp,
        find_controller(webapp, "webapp"),
        cluster,
        "nope",
        "default",
        "text",
        watch=False,
        interval=2.0,
        clock=FakeClock(EPOCH),
        out=io.StringIO(),
        tty=False,
    )
    assert code == 1
    assert capsys.readouterr().err == "error: WebApp default/nope not found\n"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["webapp"], 2, "error: expected KIND/NAME or KIND NAME, got 'webapp'\n"),
        (["webapp/a/b"], 2, "error: expected KIND/NAME or KIND NAME, got 'webapp/a/b'\n"),
        (
            ["pods/hello"],
            1,
            "error: bundle 'webapp' has no kind 'pods': its kinds are WebApp (webapps, wa)\n",
        ),
    ],
)
def test_bad_input_is_one_line(args: list[str], code: int, message: str) -> None:
    result = CliRunner().invoke(main, ["trace", str(WEBAPP), *args])
    assert result.exit_code == code, result.output
    assert result.stderr.startswith(message)
    assert "Traceback" not in result.output


def test_no_cluster_is_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    result = CliRunner().invoke(
        main, ["trace", str(WEBAPP), "wa/hello", "--kubeconfig", str(kubeconfig)]
    )
    assert result.exit_code == 1, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and line.endswith(
        "is the cluster reachable? (check --kubeconfig)"
    )
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (190, "3m10s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (20 * 3600, "20h"),
        (3 * 86400 + 3600, "3d1h"),
        (12 * 86400, "12d"),
    ],
)
def test_ages_read_as_kubectls(seconds: int, text: str) -> None:
    assert age("2026-01-01T00:00:00Z", EPOCH + timedelta(seconds=seconds)) == text
