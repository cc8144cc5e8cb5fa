"""What the phases of one rollout share: the progress sink (the CLI's live view), what each
component rendered, and why components wait.

The deploy and verify phases (``engine.deploy_phase``, ``engine.verify_phase``) run on
the DAG runner's worker threads and write here; ``engine.rollout`` reads it once the
runs are over. Kept apart from the phases so that none of them imports another.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol

from oper8d.engine.render import RenderedComponent

__all__ = ["NoProgress", "Progress", "RolloutState"]


class Progress(Protocol):
    """Receives each component's state as the rollout goes (the CLI's live view)."""

    def update(self, component: str, state: str, detail: str = "") -> None: ...


class NoProgress:
    """A progress sink that shows nothing (the runtime, tests)."""

    def update(self, component: str, state: str, detail: str = "") -> None:
        return None


@dataclass
class RolloutState:
    """Thread-safe record of one rollout: ``components`` holds what each component
    rendered (prepared for apply), ``waiting`` why a component is not done yet."""

    progress: Progress = field(default_factory=NoProgress)
    components: dict[str, RenderedComponent] = field(default_factory=dict)
    waiting: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def rendered(self, name: str, component: RenderedComponent) -> None:
        with self._lock:
            self.components[name] = component

    def component(self, name: str) -> RenderedComponent | None:
        with self._lock:
            return self.components.get(name)

    def wait(self, name: str, why: str) -> None:
        """``name`` waits for something (an edge condition, readiness): noted and shown."""
        with self._lock:
            self.waiting[name] = why
        self.progress.update(name, "waiting", why)
