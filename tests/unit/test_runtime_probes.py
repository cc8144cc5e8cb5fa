"""The probe server, queried over loopback HTTP as the kubelet and Prometheus would."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from oper8d.runtime.metrics import Metrics
from oper8d.runtime.probes import ProbeServer, parse_address


def fetch(server: ProbeServer, path: str) -> tuple[int, str, str]:
    """(status, body, content type) of GET ``path``."""
    url = f"http://127.0.0.1:{server.port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode(), response.headers["Content-Type"]
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.read().decode(), err.headers["Content-Type"]


class Switch:
    """A check whose answer the test sets."""

    def __init__(self, answer: bool | tuple[bool, str]):
        self.answer = answer

    def __call__(self) -> bool | tuple[bool, str]:
        return self.answer


@pytest.fixture
def serve() -> Iterator[Callable[..., ProbeServer]]:
    started: list[ProbeServer] = []

    def start(
        healthy: Callable[[], bool | tuple[bool, str]] = lambda: True,
        ready: Callable[[], bool | tuple[bool, str]] = lambda: True,
        metrics: Metrics | None = None,
    ) -> ProbeServer:
        server = ProbeServer("127.0.0.1:0", healthy=healthy, ready=ready, metrics=metrics)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def test_healthz_and_readyz_say_ok_while_their_checks_pass(serve: Callable[..., ProbeServer]):
    server = serve()
    assert fetch(server, "/healthz")[:2] == (200, "ok\n")
    assert fetch(server, "/readyz")[:2] == (200, "ok\n")


def test_readyz_answers_503_with_the_reason_the_check_gives(serve: Callable[..., ProbeServer]):
    ready = Switch((False, "caches not synced: WebApp"))
    server = serve(ready=ready)
    assert fetch(server, "/readyz")[:2] == (503, "not ready: caches not synced: WebApp\n")
    ready.answer = (True, "ok")
    assert fetch(server, "/readyz")[:2] == (200, "ok\n")


def test_a_plain_false_check_fails_the_probe(serve: Callable[..., ProbeServer]) -> None:
    server = serve(ready=lambda: False, healthy=lambda: False)
    status, body, _ = fetch(server, "/readyz")
    assert (status, body.startswith("not ready:")) == (503, True)
    status, body, _ = fetch(server, "/healthz")
    assert (status, body.startswith("not healthy:")) == (503, True)


def test_healthz_follows_its_own_check_not_readiness(serve: Callable[..., ProbeServer]):
    healthy = Switch(True)
    server = serve(healthy=healthy, ready=lambda: (False, "not leading"))
    assert fetch(server, "/healthz")[0] == 200
    healthy.answer = False
    assert fetch(server, "/healthz")[0] == 503


def test_a_check_that_raises_fails_the_probe_and_names_the_error(
    serve: Callable[..., ProbeServer],
) -> None:
    def broken() -> bool:
        raise RuntimeError("informer crashed")

    server = serve(ready=broken)
    assert fetch(server, "/readyz")[:2] == (
        503,
        "not ready: check raised RuntimeError: informer crashed\n",
    )
    assert fetch(server, "/healthz")[0] == 200  # the server itself survives


def test_metrics_serves_the_prometheus_exposition(serve: Callable[..., ProbeServer]) -> None:
    metrics = Metrics(runtime_collectors=False)
    metrics.reconcile_total("webapp", "success")
    server = serve(metrics=metrics)
    status, body, content_type = fetch(server, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain; version=0.0.4")
    assert 'oper8d_reconcile_total{controller="webapp",result="success"} 1.0' in body


def test_metrics_is_not_found_on_a_server_without_metrics(serve: Callable[..., ProbeServer]):
    assert fetch(serve(), "/metrics")[0] == 404


def test_other_paths_are_not_found(serve: Callable[..., ProbeServer]) -> None:
    status, body, _ = fetch(serve(), "/livez")
    assert status == 404
    assert "/healthz" in body


def test_a_query_string_does_not_change_the_endpoint(serve: Callable[..., ProbeServer]):
    assert fetch(serve(), "/readyz?verbose")[:2] == (200, "ok\n")


def test_requests_are_not_logged_to_stderr(
    serve: Callable[..., ProbeServer], capfd: pytest.CaptureFixture[str]
) -> None:
    server = serve()
    fetch(server, "/healthz")
    fetch(server, "/nope")
    server.stop()
    assert capfd.readouterr().err == ""


def test_a_stopped_server_refuses_connections_and_stopping_again_is_harmless() -> None:
    server = ProbeServer("127.0.0.1:0", healthy=lambda: True, ready=lambda: True)
    server.start()
    port = server.port
    server.stop()
    server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10)


def test_the_port_is_known_only_once_started() -> None:
    server = ProbeServer("127.0.0.1:0", healthy=lambda: True, ready=lambda: True)
    with pytest.raises(RuntimeError, match="start"):
        _ = server.port


def test_starting_twice_is_refused(serve: Callable[..., ProbeServer]) -> None:
    with pytest.raises(RuntimeError, match="already started"):
        serve().start()


def test_a_port_in_use_fails_at_start(serve: Callable[..., ProbeServer]) -> None:
    taken = serve().port
    second = ProbeServer(f"127.0.0.1:{taken}", healthy=lambda: True, ready=lambda: True)
    with pytest.raises(OSError):
        second.start()


@pytest.mark.parametrize(
    ("address", "parsed"),
    [
        (":8081", ("", 8081)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("0.0.0.0:8080", ("0.0.0.0", 8080)),
        ("localhost:9443", ("localhost", 9443)),
        ("[::1]:8081", ("::1", 8081)),
    ],
)
def test_addresses_are_host_colon_port_with_an_empty_host_meaning_every_interface(
    address: str, parsed: tuple[str, int]
) -> None:
    assert parse_address(address) == parsed


@pytest.mark.parametrize("address", ["8081", "host:", "host:http", ":65536", ":-1", ""])
def test_a_malformed_address_is_refused_with_an_example(address: str) -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_address(address)
