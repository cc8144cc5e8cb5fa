"""Fixtures for integration tests against a real control plane (see oper8d.envtest).

``envtest`` builds the binaries if needed (testenv/build.sh; cached, so seconds when
warm) and starts one Environment for the whole session. A failed build or start fails
the tests that use it, with the tail of the log: it never skips.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from apiserver import SUMMARY, ApiServer

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


def _started(
    tmp_path_factory: pytest.TempPathFactory, name: str, feature_gates: tuple[str, ...]
) -> Environment:
    """Build if needed (or take $OPER8D_TESTENV_BIN_DIR) and start an Environment with
    these kube-apiserver feature gates; a failure fails the test with the log's tail."""
    log = tmp_path_factory.mktemp(name) / "build.log"
    configured = os.environ.get(BIN_DIR_ENV)
    error = None
    try:
        bin_dir = Path(configured) if configured else build(log_path=log)
    except BuildError as e:
        error = f"building the test environment failed:\n{e}"
    if error:
        pytest.fail(error, pytrace=False)
    env = Environment(bin_dir=bin_dir, feature_gates=feature_gates)
    try:
        env.start()
    except StartError as e:
        error = f"starting the test environment ({name}) failed:\n{e}"
    if error:
        pytest.fail(error, pytrace=False)
    return env


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The one-line results of the differential tests (``apiserver.SUMMARY``), to quote."""
    for line in config.stash.get(SUMMARY, []):
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def envtest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    """A started Environment (etcd, apiserver, controller-manager, scheduler, kwok) with
    the apiserver's default feature gates, as a cluster has them: the alpha
    ShardedListAndWatch is off, so ``shardSelector`` is ignored."""
    env = _started(tmp_path_factory, "testenv", feature_gates=())
    yield env
    env.stop()


@pytest.fixture(scope="session")
def apiserver(envtest: Environment) -> Iterator[ApiServer]:
    """The test apiserver for differential tests (``apiserver.py``): kept-alive connections."""
    server = ApiServer(envtest)
    yield server
    server.close()


@pytest.fixture
def k8s(envtest: Environment) -> Iterator[ApiClient]:
    """An admin ``kubernetes.client.ApiClient`` for the test environment."""
    with envtest.api_client() as api_client:
        yield api_client


#: the kube-apiserver feature gate of server-side sharded list and watch (alpha in 1.36)
SHARDED_GATE = "ShardedListAndWatch"


@pytest.fixture(scope="session")
def envtest_sharded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    """A second started Environment, with the ShardedListAndWatch gate on."""
    env = _started(tmp_path_factory, "testenv-sharded", feature_gates=(SHARDED_GATE,))
    yield env
    env.stop()
