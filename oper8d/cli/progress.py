"""The live view of ``oper8d run --dry-run``: what changed in each reconcile pass.

One line per component state change, under a ``reconcile #N`` heading that carries the
simulated time. It says only what is new: a component that redeployed nothing, is still
verified, or still waits for the same thing prints nothing, and a pass in which nothing
changed prints no heading. Components are aligned in one column; ``waiting`` lines say
what the component waits for, ``failed`` lines why it failed. Receives updates from the
rollout's worker threads (``engine.rollout.Progress``), inside the reconcile, so a detail
(an error message) is shown without the reconcile's sensitive values (``oper8d.logs``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import click

from oper8d.logs import redact

__all__ = ["LineProgress", "format_seconds"]

#: state -> (symbol, ASCII fallback, colour)
_STYLE = {
    "deployed": ("↑", "+", "blue"),
    "disabled": ("∅", "-", "bright_black"),
    "waiting": ("…", "~", "yellow"),
    "verified": ("✓", "v", "green"),
    "failed": ("✗", "x", "red"),
}
#: transitions the rollout reports that say nothing a reader needs
_TRANSIENT = ("deploying", "verifying")


def format_seconds(seconds: float) -> str:
    """``0s``, ``45s``, ``5m``, ``1h2m5s``."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v]
    return "".join(parts) or "0s"


class LineProgress:
    """Prints component progress as it happens. ``width`` aligns component names (pass
    the longest name); ``ascii_only`` swaps the symbols for ASCII."""

    def __init__(
        self,
        echo: Callable[[str], None] | None = None,
        *,
        width: int = 12,
        ascii_only: bool = False,
    ):
        self.echo = echo or click.echo
        self.width = width
        self.ascii_only = ascii_only
        self._printed: dict[str, tuple[str, str]] = {}  # component -> last (state, detail)
        self._pass: tuple[int, float] = (0, 0.0)
        self._heading_shown = True
        self._lock = threading.Lock()

    def start_pass(self, number: int, seconds: float) -> None:
        """A reconcile pass begins (``seconds``: simulated time since the first one)."""
        with self._lock:
            self._pass = (number, seconds)
            self._heading_shown = False

    def update(self, component: str, state: str, detail: str = "") -> None:
        if state in _TRANSIENT:
            return
        if state == "deployed" and detail.endswith(" unchanged"):
            return  # nothing written: the verify line that follows says where it stands
        if state == "verified" and detail == "disabled":
            return  # already shown as disabled when deployed
        if state == "waiting" and detail.startswith("waiting "):
            detail = detail[len("waiting ") :]
        detail = redact(detail)  # an error may quote a value read from a Secret
        with self._lock:
            if self._printed.get(component) == (state, detail):
                return
            self._printed[component] = (state, detail)
            if not self._heading_shown:
                self._heading_shown = True
                number, seconds = self._pass
                self.echo(
                    click.style(f"reconcile #{number}", bold=True)
                    + click.style(f"  at {format_seconds(seconds)}", fg="bright_black")
                )
            symbol, fallback, colour = _STYLE.get(state, ("·", ".", "white"))
            line = (
                f"  {click.style(fallback if self.ascii_only else symbol, fg=colour)} "
                f"{component:<{self.width}}  {state:<8}"
            )
            self.echo(f"{line}  {detail}".rstrip())
