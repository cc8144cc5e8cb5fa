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
