"""Fixtures for integration tests against a real control plane (see oper8d.envtest).

``envtest`` builds the binaries if needed (testenv/build.sh; cached, so seconds when
warm) and starts one Environment for the whole session. A failed build or start fails
the tests that use it, with the tail of the log: it never skips.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from oper8d.envtest import BuildError, Environment, StartError, build
from oper8d.envtest.build import BIN_DIR_ENV

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``integration`` marker."""
    config.addinivalue_line(
        "markers",
        "integration: runs against the real kube-apiserver test environment (tests/integration)",
    )


@pytest.fixture(scope="session")
def envtest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    """A started Environment (etcd, apiserver, controller-manager, scheduler, kwok)."""
    log = tmp_path_factory.mktemp("testenv") / "build.log"
    configured = os.environ.get(BIN_DIR_ENV)
    error = None
    try:
        bin_dir = Path(configured) if configured else build(log_path=log)
    except BuildError as e:
        error = f"building the test environment failed:\n{e}"
    if error:
        pytest.fail(error, pytrace=False)
    env = Environment(bin_dir=bin_dir)
    try:
        env.start()
    except StartError as e:
        error = f"starting the test environment failed:\n{e}"
    if error:
        pytest.fail(error, pytrace=False)
    yield env
    env.stop()


@pytest.fixture
def k8s(envtest: Environment) -> Iterator[ApiClient]:
    """An admin ``kubernetes.client.ApiClient`` for the test environment."""
    with envtest.api_client() as api_client:
        yield api_client


#: the Kubernetes release with server-side sharded list and watch (build.sh's argument)
SHARDED_K8S = "1.36"


@pytest.fixture(scope="session")
def envtest_sharded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    """A started Environment of Kubernetes 1.36 with the ShardedListAndWatch gate on.

    Built binaries are used as they are (``bash testenv/build.sh 1.36`` builds them;
    scripts/test does); when they are not built, the tests that need it are skipped."""
    log = tmp_path_factory.mktemp("testenv-136") / "build.log"
    try:
        bin_dir = build(log_path=log, k8s_version=SHARDED_K8S, cached_only=True)
    except BuildError:
        pytest.skip(f"Kubernetes {SHARDED_K8S} is not built (bash testenv/build.sh 1.36)")
    env = Environment(bin_dir=bin_dir)
    error = None
    try:
        env.start()
    except StartError as e:
        error = f"starting the Kubernetes {SHARDED_K8S} test environment failed:\n{e}"
    if error:
        pytest.fail(error, pytrace=False)
    yield env
    env.stop()
