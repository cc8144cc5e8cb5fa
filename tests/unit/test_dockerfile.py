"""The container image recipe (``Dockerfile``, ``.dockerignore``) without a container engine.

The Dockerfile is parsed; its ``pip`` steps are run as written (paths moved into a temporary
folder) on a build context copied the way ``COPY`` and ``.dockerignore`` would copy it, into
a fresh virtual environment; the installed ``oper8d`` then validates and renders the bundle
the image bakes in, from a folder where the source checkout is not importable. PyPI (or the
local pip cache) provides the dependencies, as it does for ``docker build``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

from oper8d.runtime.options import ManagerOptions

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"


@dataclass(frozen=True)
class Instruction:
    stage: int  # 0 for the first FROM, 1 for the next, ...
    keyword: str  # upper case: FROM, RUN, COPY, ...
    args: str  # continuation lines joined, ARG references resolved


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions in order. Handles comments, ``\\`` continuations and ``${ARG}`` defaults
    (global ARGs before the first FROM, stage ARGs after it)."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        logical.append(pending + line)
        pending = ""
    global_args: dict[str, str] = {}
    stage_args: dict[str, str] = {}
    out: list[Instruction] = []
    stage = -1
    for line in logical:
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        # FROM sees only the global ARGs; other instructions their stage's
        scope = global_args if stage < 0 or keyword == "FROM" else stage_args
        args = _substitute(args.strip(), scope)
        if keyword == "FROM":
            stage += 1
            stage_args = {}
        elif keyword == "ARG":
            name, _, default = args.partition("=")
            # a bare ARG in a stage brings the global default into it
            scope[name] = default if default else global_args.get(name, "")
        out.append(Instruction(stage, keyword, args))
    return out


def _substitute(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), text)


def final_stage(instructions: list[Instruction]) -> list[Instruction]:
    last = max(i.stage for i in instructions)
    return [i for i in instructions if i.stage == last]


def ignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text().splitlines()
    return [p.strip() for p in lines if p.strip() and not p.strip().startswith("#")]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def is_ignored(rel_path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching pattern wins; ``!`` re-includes; a pattern that
    matches a folder leaves out everything in it."""
    parts = rel_path.strip("/").split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        regex = _pattern_regex(pattern.lstrip("!").strip("/"))
        if any(regex.fullmatch(p) for p in prefixes):
            ignored = not negated
    return ignored


def copy_sources(instruction: Instruction) -> tuple[list[str], str]:
    """The sources and destination of a ``COPY`` from the build context."""
    words = [w for w in shlex.split(instruction.args) if not w.startswith("--")]
    return words[:-1], words[-1]


def docker_copy(sources: list[str], dest: Path, patterns: list[str]) -> None:
    """Copy like ``COPY``: a folder's contents go into ``dest``; symlinks stay symlinks."""

    def skip(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(REPO)
        return {n for n in names if is_ignored(str(rel / n), patterns)}

    for source in sources:
        path = REPO / source
        if path.is_dir():
            shutil.copytree(path, dest, symlinks=True, ignore=skip, dirs_exist_ok=True)
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / path.name)


def pip_commands(instructions: list[Instruction]) -> list[str]:
    """The ``pip`` commands of a stage's RUN lines (other commands need root or Debian)."""
    out = []
    for ins in instructions:
        if ins.keyword != "RUN":
            continue
        body = re.sub(r"^(--\S+\s+)+", "", ins.args)
        out += [c.strip() for c in body.split("&&") if c.strip().split()[0] == "pip"]
    return out


def run_pip(command: str, python: Path | str, cwd: Path, wheels: Path) -> None:
    # the local pip cache may serve the dependencies here (the image keeps none)
    command = command.replace("--no-cache-dir", "").replace("/wheels", shlex.quote(str(wheels)))
    command = re.sub(r"^pip\b", f"{shlex.quote(str(python))} -m pip", command)
    done = subprocess.run(
        command, shell=True, cwd=cwd, env=clean_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_ROOT_USER_ACTION": "ignore"}


@pytest.fixture(scope="module")
def instructions() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text())


def test_the_image_runs_oper8d_on_the_baked_in_bundle_as_a_non_root_user(
    instructions: list[Instruction],
) -> None:
    image = final_stage(instructions)
    by_keyword = {i.keyword: i.args for i in image}
    assert image[0].args == "python:3.11-slim"
    assert by_keyword["USER"].split(":")[0] == "65532"
    assert json.loads(by_keyword["ENTRYPOINT"]) == ["oper8d"]
    assert json.loads(by_keyword["CMD"]) == ["run", "/bundle"]
    bundle_copies = [
        copy_sources(i) for i in image if i.keyword == "COPY" and "--from" not in i.args
    ]
    assert bundle_copies == [(["examples/operators/webapp"], "/bundle")]


def test_the_exposed_ports_are_the_default_metrics_and_probe_ports(
    instructions: list[Instruction],
) -> None:
    exposed = next(i.args for i in final_stage(instructions) if i.keyword == "EXPOSE").split()
    defaults = ManagerOptions()
    assert exposed == [
        defaults.metrics_bind_address.rpartition(":")[2],
        defaults.health_probe_bind_address.rpartition(":")[2],
    ]


def test_the_build_context_keeps_everything_the_image_copies(
    instructions: list[Instruction],
) -> None:
    patterns = ignore_patterns()
    for ins in instructions:
        if ins.keyword != "COPY" or "--from" in ins.args:
            continue
        for source in copy_sources(ins)[0]:
            assert (REPO / source).exists(), f"COPY {source}: no such path"
            assert not is_ignored(source, patterns), f"COPY {source}: left out by .dockerignore"


def test_the_build_context_leaves_out_tests_and_caches() -> None:
    patterns = ignore_patterns()
    for path in (".git", "tests/unit/test_dockerfile.py", "oper8d/__pycache__/x.pyc"):
        assert is_ignored(path, patterns), path
    assert not is_ignored("oper8d/cli/main.py", patterns)


def test_the_dockerfile_pip_steps_install_an_oper8d_that_works_outside_the_checkout(
    instructions: list[Instruction], tmp_path: Path
) -> None:
    patterns = ignore_patterns()
    builder = [i for i in instructions if i.stage == 0]
    image = final_stage(instructions)
    assert builder != image, "the Dockerfile should build the wheels in a separate stage"
    builder_pip, image_pip = pip_commands(builder), pip_commands(image)
    assert [c.split()[1] for c in builder_pip] == ["wheel"]
    assert [c.split()[1] for c in image_pip] == ["install"]

    # the builder: its COPY lines into a context copy, then its pip steps
    workdir = next(i.args for i in builder if i.keyword == "WORKDIR")
    src = tmp_path / workdir.strip("/")
    for ins in builder:
        if ins.keyword == "COPY":
            sources, dest = copy_sources(ins)
            docker_copy(sources, src / dest, patterns)
    wheels = tmp_path / "wheels"
    for command in builder_pip:
        run_pip(command, sys.executable, src, wheels)

    # the image: a fresh environment, its pip steps, its bundle
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    for command in image_pip:
        run_pip(command, python, tmp_path, wheels)
    bundle = tmp_path / "bundle"
    for ins in image:
        if ins.keyword == "COPY" and "--from" not in ins.args:
            docker_copy(copy_sources(ins)[0], bundle, patterns)

    def oper8d(*args: str | Path) -> str:
        done = subprocess.run(
            [env_dir / "bin" / "oper8d", *map(str, args)],
            cwd=tmp_path,
            env=clean_env(),
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"oper8d {args}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    assert oper8d("validate", bundle).startswith("ok: bundle 'webapp'")
    rendered = oper8d("render", bundle, "--cr", bundle / "samples" / "webapp.yaml")
    assert "kind: Deployment" in rendered
    # the real mode's imports: the kubernetes client came with the wheels
    probe = "import oper8d, oper8d.cli.run_cluster, kubernetes; print(oper8d.__file__)"
    where = subprocess.run(
        [python, "-c", probe], cwd=tmp_path, env=clean_env(), capture_output=True, text=True
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(env_dir)
