"""Operator logs: every line of a reconcile names its CR, reconcile id and component, in text
and in JSON; Secret values and values marked sensitive never reach a log line or an event
note, whichever thread logs them."""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from oper8d.logformat import JsonFormatter, TextFormatter, configure_logging
from oper8d.logs import (
    REDACTED,
    component_context,
    cr_key,
    current_reconcile,
    mark_secret,
    mark_sensitive,
    new_reconcile_id,
    propagate_context,
    reconcile_context,
    redact,
)

LOGGER = "oper8d.test_logs"

Capture = Callable[[str], tuple[logging.Logger, io.StringIO]]


@pytest.fixture
def capture() -> Iterator[Capture]:
    """A logger configured like ``oper8d run`` configures ``oper8d``, writing to a buffer."""

    def setup(fmt: str) -> tuple[logging.Logger, io.StringIO]:
        stream = io.StringIO()
        configure_logging(fmt, stream=stream, level="DEBUG", logger=LOGGER)
        logger = logging.getLogger(LOGGER)
        logger.propagate = False
        return logger, stream

    yield setup
    logging.getLogger(LOGGER).handlers.clear()


def secret(**string_data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "shop"},
        "stringData": string_data,
    }


def test_a_line_of_a_reconcile_names_the_cr_the_reconcile_and_the_component(
    capture: Capture,
) -> None:
    log, out = capture("text")
    with reconcile_context("ab12cd34", "shop/web"):
        log.info("rollout started")
        with component_context("app"):
            log.info("deployed %d objects", 3)
        log.info("reconciled")
    lines = out.getvalue().splitlines()
    assert [line.split(f"{LOGGER}: ", 1)[1] for line in lines] == [
        "[cr=shop/web rid=ab12cd34] rollout started",
        "[cr=shop/web rid=ab12cd34 component=app] deployed 3 objects",
        "[cr=shop/web rid=ab12cd34] reconciled",
    ]
    assert lines[0].split()[1] == "INFO"


def test_a_line_outside_any_reconcile_has_no_context_label(capture: Capture) -> None:
    log, out = capture("text")
    log.warning("operator starting")
    assert out.getvalue().rstrip("\n").endswith(f"WARNING {LOGGER}: operator starting")


def test_json_lines_carry_the_reconcile_id_cr_and_component_as_fields(capture: Capture) -> None:
    log, out = capture("json")
    log.info("before")
    with reconcile_context("ab12cd34", "shop/web"), component_context("db"):
        log.info("applied %s", "db-statefulset")
    before, during = (json.loads(line) for line in out.getvalue().splitlines())
    assert {k: before[k] for k in ("level", "logger", "msg")} == {
        "level": "info",
        "logger": LOGGER,
        "msg": "before",
    }
    assert not {"reconcile_id", "cr", "component"} & before.keys()
    assert (during["reconcile_id"], during["cr"], during["component"]) == (
        "ab12cd34",
        "shop/web",
        "db",
    )
    assert during["msg"] == "applied db-statefulset"


def test_json_timestamps_are_utc_with_milliseconds() -> None:
    record = logging.LogRecord(LOGGER, logging.ERROR, __file__, 1, "boom", (), None)
    record.created = 1767323045.678  # 2026-01-02T03:04:05.678Z
    assert json.loads(JsonFormatter().format(record))["ts"] == "2026-01-02T03:04:05.678Z"


def test_a_value_given_with_extra_wins_over_the_context(capture: Capture) -> None:
    log, out = capture("json")
    with reconcile_context("ab12cd34", "shop/web"), component_context("app"):
        log.info("hook ran", extra={"component": "hook-migrate"})
    assert json.loads(out.getvalue())["component"] == "hook-migrate"


def test_secret_values_never_reach_the_log_in_any_form(capture: Capture) -> None:
    log, out = capture("text")
    encoded = base64.b64encode(b"token-from-data").decode()
    with reconcile_context("ab12cd34", "shop/web"):
        mark_secret({**secret(password="hunter2-long"), "data": {"token": encoded}})
        log.info("password is %s", "hunter2-long")
        log.info("object: %r", {"stringData": {"password": "hunter2-long"}})
        log.info("token %s decodes to token-from-data", encoded)
        log.info("as the API server stores it: %s", base64.b64encode(b"hunter2-long").decode())
    text = out.getvalue()
    for shown in ("hunter2-long", "token-from-data", encoded, "aHVudGVyMi1sb25n"):
        assert shown not in text
    assert text.count(REDACTED) == 5


def test_a_multi_line_secret_shown_escaped_or_a_line_at_a_time_is_redacted(
    capture: Capture,
) -> None:
    key = "-----BEGIN KEY-----\nMIIEvQIBADANBg\n-----END KEY-----"
    log, out = capture("json")
    with reconcile_context("ab12cd34", "shop/web"):
        mark_secret(secret(**{"tls.key": key}))
        log.info("rendered %r", key)
        log.info("bad line: MIIEvQIBADANBg")
    text = out.getvalue()
    assert "MIIEvQIBADANBg" not in text
    assert "BEGIN KEY" not in text


def test_a_secret_in_a_traceback_is_redacted(capture: Capture) -> None:
    for fmt in ("text", "json"):
        log, out = capture(fmt)
        with reconcile_context("ab12cd34", "shop/web"):
            mark_sensitive("s3cr3t-value")
            try:
                raise ValueError("cannot parse s3cr3t-value")
            except ValueError:
                log.exception("reconcile crashed")
        assert "s3cr3t-value" not in out.getvalue(), fmt
        assert "ValueError: cannot parse ***" in out.getvalue(), fmt


def test_a_log_call_with_arguments_that_do_not_fit_neither_raises_nor_leaks(
    capture: Capture,
) -> None:
    log, out = capture("text")
    with reconcile_context("ab12cd34", "shop/web"):
        mark_sensitive("s3cr3t-value")
        log.info("two %s %s", "s3cr3t-value")  # one argument short
    assert "s3cr3t-value" not in out.getvalue()
    assert "two %s %s" in out.getvalue()


def test_other_objects_and_short_values_are_left_alone(capture: Capture) -> None:
    log, out = capture("text")
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"mode": "production"}}
    with reconcile_context("ab12cd34", "shop/web"):
        mark_secret(config_map)
        mark_secret(secret(enabled="yes"))
        log.info("mode production, tls yes")
    assert out.getvalue().rstrip("\n").endswith("mode production, tls yes")


def test_sensitive_values_are_forgotten_when_the_reconcile_ends(capture: Capture) -> None:
    log, out = capture("text")
    with reconcile_context("ab12cd34", "shop/web"):
        mark_sensitive("s3cr3t-value")
    mark_sensitive("outside-any-reconcile")  # nothing to attach it to: dropped
    assert current_reconcile() is None
    assert redact("s3cr3t-value outside-any-reconcile") == "s3cr3t-value outside-any-reconcile"
    with reconcile_context("ef56ab78", "shop/web"):
        log.info("next reconcile: s3cr3t-value")
    assert (
        out.getvalue()
        .rstrip("\n")
        .endswith("[cr=shop/web rid=ef56ab78] next reconcile: s3cr3t-value")
    )


def test_event_notes_are_redacted_in_a_reconcile() -> None:
    with reconcile_context("ab12cd34", "shop/web"):
        mark_secret({**secret(), "data": {"pw": base64.b64encode(b"pa55word").decode()}})
        assert redact("Ready False: login with pa55word failed") == (
            "Ready False: login with *** failed"
        )


def test_work_on_a_thread_pool_keeps_the_reconcile_and_shares_its_marks(
    capture: Capture,
) -> None:
    log, out = capture("json")

    def deploy(component: str) -> None:
        with component_context(component):
            mark_secret(secret(password=f"{component}-password"))
            log.info("deployed")

    with reconcile_context("ab12cd34", "shop/web"):
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(propagate_context(deploy), ["db", "app"]))
        log.info("passwords: db-password app-password")  # marked on the pool's threads
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted(line.get("component", "-") for line in lines) == ["-", "app", "db"]
    assert {(line["cr"], line["reconcile_id"]) for line in lines} == {("shop/web", "ab12cd34")}
    assert lines[-1]["msg"] == "passwords: *** ***"


def test_two_reconciles_on_two_threads_keep_their_own_context_and_secrets(
    capture: Capture,
) -> None:
    log, out = capture("json")
    both_marked = threading.Barrier(2)

    def reconcile(name: str) -> None:
        with reconcile_context(new_reconcile_id(), cr_key("shop", name)):
            mark_sensitive(f"{name}-password")
            both_marked.wait(timeout=10)
            log.info("seen: web-password api-password")

    threads = [threading.Thread(target=reconcile, args=(n,)) for n in ("web", "api")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    lines = {json.loads(line)["cr"]: json.loads(line) for line in out.getvalue().splitlines()}
    assert lines["shop/web"]["msg"] == "seen: *** api-password"
    assert lines["shop/api"]["msg"] == "seen: web-password ***"
    assert lines["shop/web"]["reconcile_id"] != lines["shop/api"]["reconcile_id"]


def test_a_cluster_scoped_cr_is_named_without_a_namespace() -> None:
    assert cr_key(None, "cluster-config") == "cluster-config"
    assert cr_key("shop", "web") == "shop/web"


def test_configure_logging_refuses_an_unknown_format() -> None:
    with pytest.raises(ValueError, match="'yaml'"):
        configure_logging("yaml", stream=io.StringIO(), logger=LOGGER)


def test_the_text_formatter_works_without_the_filter() -> None:
    record = logging.LogRecord(LOGGER, logging.INFO, __file__, 1, "hi %s", ("there",), None)
    assert TextFormatter().format(record).endswith(f"INFO    {LOGGER}: hi there")


def test_a_short_secret_value_is_masked_as_a_whole_value_never_inside_text(
    capture: Capture,
) -> None:
    log, out = capture("text")
    with reconcile_context("ab12cd34", "default/shop"):
        mark_secret(secret(username="notes"))
        log.info("applying Secret default/notes-db-credentials")
        log.info("host notes.db.svc, file notes.txt, user_notes and notes2 left alone")
        log.info("image notes/api:1, login as notes failed")
        log.info("login as %s failed: %r unknown", "notes", "notes")
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        "applying Secret default/notes-db-credentials",
        "host notes.db.svc, file notes.txt, user_notes and notes2 left alone",
        # a short word inside text: masking it would mangle every line that has the word
        "image notes/api:1, login as notes failed",
        # a log argument, or a quoted value, is the value as a whole
        "login as *** failed: '***' unknown",
    ]


def test_the_crs_own_name_is_never_masked(capture: Capture) -> None:
    # the dbUser is the CR's name: masking it would hide nothing and mangle every line
    log, out = capture("text")
    with reconcile_context("ab12cd34", "default/notes"):
        mark_secret(secret(username="notes", password="s3cr3t-value"))
        log.info("NotesApp default/notes: Ready; user notes, password s3cr3t-value")
    assert (
        out.getvalue()
        .rstrip("\n")
        .endswith("NotesApp default/notes: Ready; user notes, password ***")
    )
