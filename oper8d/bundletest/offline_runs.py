"""The offline runs bundle tests make: the ``oper8d render`` text, and rollouts that
remember every object they ever wrote.

Used by ``bundletest.runner``. :func:`render_text` produces exactly the bytes ``oper8d
render`` prints for a finished offline run (the objects, then ``# would delete`` and
``# not complete`` comment lines), so a golden file written by ``oper8d test --update``
is interchangeable with one written by ``oper8d render > file``. :class:`RecordingSimulator`
wraps the readiness simulator to see every write, which is how a test can say an object
*never* existed even if it was deleted again before the run ended.
"""

from __future__ import annotations

from oper8d.bundle.model import Bundle
from oper8d.cluster.memory.simulate import ClusterView, Simulator
from oper8d.objects import Obj
from oper8d.offline import OfflineRun, why_incomplete, would_delete
from oper8d.render_output import render_stream

__all__ = ["RecordingSimulator", "render_text", "why_incomplete"]


def render_text(bundle: Bundle, run: OfflineRun) -> str:
    """What ``oper8d render`` prints for ``run`` (a run without a fatal error)."""
    incomplete = None if run.stable else why_incomplete(run)
    return render_stream(
        list(run.applied.values()), would_delete(bundle, run), incomplete, sensitive=run.sensitive
    )


class RecordingSimulator:
    """A ``Simulator`` that records every object written (created, or its spec/metadata
    changed) and lets ``inner`` decide the statuses."""

    def __init__(self, inner: Simulator) -> None:
        self.inner = inner
        #: every object as written, in write order (the in-memory cluster passes copies)
        self.written: list[Obj] = []

    def on_write(self, cluster: ClusterView, obj: Obj) -> Obj | None:
        self.written.append(obj)
        return self.inner.on_write(cluster, obj)

    def on_tick(self, cluster: ClusterView, obj: Obj) -> Obj | None:
        return self.inner.on_tick(cluster, obj)
