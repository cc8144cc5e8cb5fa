"""The dry-run rollout view: one line per component state change, then a summary."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import click

_SYMBOLS = {
    "deploying": ("…", "cyan"),
    "deployed": ("↑", "blue"),
    "disabled": ("∅", "bright_black"),
    "waiting": ("⏳", "yellow"),
    "verifying": ("?", "cyan"),
    "verified": ("✓", "green"),
    "failed": ("✗", "red"),
}


class LineProgress:
    """Prints component progress as it happens; quiet about repeats of the same state."""

    def __init__(self, echo: Callable[[str], None] | None = None, *, color: bool | None = None):
        self.echo = echo or (lambda s: click.echo(s, color=color))
        self.states: dict[str, tuple[str, str]] = {}
        self.pass_no = 0
        self._lock = threading.Lock()
        self._t0 = time.monotonic()

    def start_pass(self, number: int) -> None:
        self.pass_no = number
        self.echo(click.style(f"reconcile #{number}", bold=True))

    def update(self, component: str, state: str, detail: str = "") -> None:
        with self._lock:
            if self.states.get(component) == (state, detail) or state in ("deploying", "verifying"):
                self.states[component] = (state, detail)
                return
            self.states[component] = (state, detail)
        symbol, color = _SYMBOLS.get(state, ("·", "white"))
        ms = (time.monotonic() - self._t0) * 1000
        line = f"  {click.style(symbol, fg=color)} {component:<24} {state:<9}"
        if detail:
            line += f" {detail}"
        self.echo(f"{line}  {click.style(f'{ms:7.1f} ms', fg='bright_black')}")
