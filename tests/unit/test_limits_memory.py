"""The exhaustion cases end quickly, with the limit named, in well under 300 MB.

Each case runs in a fresh Python process and reads its own peak resident memory
(``VmHWM``). Not ``ru_maxrss``: Linux carries the parent's high-water mark across
vfork + exec, so a child of a pytest that once held 380 MB reported 380 MB whatever the
case did. Before the limits these cases used from 389 MB to several GB, hung, or crashed
(see the trust-boundary issue); the cases are the same, the sizes are bounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAX_RSS_MB = 300

_PROLOGUE = """
import json, time
started = time.monotonic()
error = None
try:
{body}
except Exception as exc:  # the test reads the message
    error = f"{{type(exc).__name__}}: {{exc}}"
print(json.dumps({{
    "error": error,
    "seconds": time.monotonic() - started,
    "rss_mb": next(int(line.split()[1]) for line in open("/proc/self/status")
                   if line.startswith("VmHWM:")) / 1024,
}}))
"""

_TEMPLATE = """
from oper8d.errors import SourcePos
from oper8d.template import TemplateEngine
engine = TemplateEngine()
engine.expression({source!r}, SourcePos("operator.yaml", 1, 1)).evaluate({{}})
"""

_TEXT = """
from oper8d.template import TemplateEngine
TemplateEngine().text({source!r}, "templates/t.yaml").render({{}})
"""

_BOMB = "\n".join(
    ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 9)]
)

_CR_FILE = """
from oper8d.bundle.loader import load_cr_file
load_cr_file({path!r})
"""

_FOR_EACH = """
from oper8d.bundle import load_bundle
from oper8d.offline import reconcile_offline
bundle = load_bundle({bundle!r})
cr = {{"apiVersion": "demo.oper8d.io/v1alpha1", "kind": "WorkerPool",
      "metadata": {{"name": "p", "namespace": "default"}},
      "spec": {{"workers": [{{"name": f"w{{i}}"}} for i in range(20000)]}}}}
run = reconcile_offline(bundle, cr, max_reconciles=2)
raise run.fatal_error
"""

_BOMB_BUNDLE = """
import shutil, pathlib
from oper8d.bundle import load_bundle
bundle = pathlib.Path({tmp!r}) / "bundle"
shutil.copytree({example!r}, bundle)
operator = bundle / "operator.yaml"
operator.write_text(operator.read_text() + "x-bomb:\\n" + {bomb!r})
load_bundle(bundle)
"""


def run_isolated(code: str, cwd: Path) -> dict[str, object]:
    script = _PROLOGUE.format(body=textwrap.indent(textwrap.dedent(code), "    "))
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


CASES = {
    "compile-time repetition": (_TEMPLATE.format(source="'a' * 10**9"), "stringBytes"),
    "compile-time power": (_TEMPLATE.format(source="10 ** 10000000"), "intBits"),
    "huge compile-time power": (_TEMPLATE.format(source="10 ** 100000000"), "intBits"),
    "format width": (_TEMPLATE.format(source="'%0*d' | format(10**9, 1)"), "stringBytes"),
    "nested loops": (
        _TEXT.format(
            source="x: {% for i in range(100000) %}{% for j in range(100000) %}"
            "{% endfor %}{% endfor %}\n"
        ),
        "loopIterations",
    ),
    "alias bomb in a text template": (
        _TEXT.format(
            source="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nbomb:\n"
            + "".join(f"  {line}\n" for line in _BOMB.splitlines())
        ),
        "yamlAliasNodes",
    ),
    "forEach over 20,000 CR items": (
        _FOR_EACH.format(bundle=str(REPO / "examples/operators/fanout")),
        "forEachItems",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_exhaustion_case_stops_within_its_limit(name: str, tmp_path: Path) -> None:
    code, limit = CASES[name]
    result = run_isolated(code, tmp_path)
    assert result["error"] is not None and f"limit {limit} exceeded" in str(result["error"])
    assert float(result["rss_mb"]) < MAX_RSS_MB  # type: ignore[arg-type]
    assert float(result["seconds"]) < 20  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "text", "limit"),
    [
        ("alias bomb", _BOMB + "\n", "yamlAliasNodes"),
        (
            "250 levels deep",
            "".join("  " * i + f"k{i}:\n" for i in range(250)) + "v: 1\n",
            "nestingDepth",
        ),
    ],
)
def test_cr_file_exhaustion_stops_within_its_limit(
    name: str, text: str, limit: str, tmp_path: Path
) -> None:
    path = tmp_path / "cr.yaml"
    path.write_text(text)
    result = run_isolated(_CR_FILE.format(path=str(path)), tmp_path)
    assert result["error"] is not None and f"limit {limit} exceeded" in str(result["error"])
    assert float(result["rss_mb"]) < MAX_RSS_MB  # type: ignore[arg-type]


def test_alias_bomb_in_operator_yaml_stops_within_its_limit(tmp_path: Path) -> None:
    bomb = "".join(f"  {line}\n" for line in _BOMB.splitlines())
    code = _BOMB_BUNDLE.format(
        tmp=str(tmp_path), example=str(REPO / "examples/operators/webapp"), bomb=bomb
    )
    result = run_isolated(code, tmp_path)
    assert result["error"] is not None and "limit yamlAliasNodes exceeded" in str(result["error"])
    assert float(result["rss_mb"]) < MAX_RSS_MB  # type: ignore[arg-type]
