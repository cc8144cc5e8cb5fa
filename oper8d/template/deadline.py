"""A hard deadline for a render: an exception raised in the rendering thread when a block
of code is still running after its time, wherever it is.

The render budget (``sandbox.Budget``) reads the clock at loop iterations, calls and
operators; code that never comes back to one of them (a filter's own Python loop, such as
``textwrap`` inside ``wordwrap(1)`` of a long string) would run on, and a worker of the live
operator would hang. Signals cannot help there: only the main thread receives them, and the
operator renders in worker threads. So a :class:`Watchdog` thread raises the exception in
the late thread with ``PyThreadState_SetAsyncExc``.

That exception arrives at the thread's next bytecode: one long call into C (``json.dumps``
or ``str()`` of a value with shared parts expanding to gigabytes) ends first, however long
it takes. ``limits.check_expanded`` bounds such a value before the C code runs; the two
together end a runaway render within ``templateSeconds`` plus the time of one bounded step.

It is race-free: the watchdog fires only while the block runs (a lock and the entry's
state), and a block leaving as its exception is being set takes it back, so the exception
never reaches code after the ``with`` statement. Nested deadlines of one thread arm only
the outermost one. The watchdog keeps one heap of deadlines and one daemon thread, started
at the first deadline and ended after a while without any, because renders are frequent:
entering and leaving a deadline costs a few microseconds and no thread.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from oper8d.limits import LimitExceeded

__all__ = ["Deadline", "HardDeadlineExceeded", "Watchdog"]

#: how long an idle watchdog thread waits for a deadline before it ends
IDLE_SECONDS = 30.0
#: entries in the heap from which those of ended blocks are dropped
_COMPACT_FROM = 256
#: exception classes (one per time limit) a watchdog keeps
_EXCEPTION_CLASSES = 16

# an entry's states: waiting for its time, its exception set in its thread, its block left
_ARMED, _FIRED, _DONE = 0, 1, 2


class HardDeadlineExceeded(LimitExceeded):
    """``templateSeconds`` reached, raised by the watchdog in the late thread.

    Python raises an asynchronous exception from its class, without arguments: the
    watchdog raises a subclass per time limit whose ``seconds`` names it in the message
    (the render's failure handling may quote the message before the block ends)."""

    seconds: float | None = None

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = type(self).seconds if seconds is None else seconds
        limit = f"{self.seconds:g} s" if self.seconds is not None else "its time limit"
        super().__init__("template_seconds", f"the template ran longer than {limit}")


class _Entry:
    """One armed deadline: the thread to stop, and how far its block has come."""

    __slots__ = ("exception", "state", "thread")

    def __init__(self, thread: int, exception: type[BaseException]) -> None:
        self.thread = thread
        self.exception = exception
        self.state = _ARMED


class Watchdog:
    """The deadlines of one owner (a ``TemplateEngine``), and the thread that enforces them.

    Deadlines are in real time (``time.monotonic``), not the engine's injected clock: a
    fake clock cannot stop a thread. ``idle_seconds``: how long the thread waits without a
    deadline before it ends (the next deadline starts another)."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, _Entry]] = []
        self._armed = 0  # entries of the heap still armed (the others are dropped lazily)
        self._order = itertools.count()  # ties in the heap never compare entries
        self._wake_at = float("inf")  # when the thread wakes up next, if it runs
        self._shortest = float("inf")  # the shortest time limit armed so far
        self._thread: threading.Thread | None = None
        self._local = threading.local()  # .entry: the outermost armed entry of a thread
        # ``PyThreadState_SetAsyncExc`` through ctypes, set up when first needed: importing
        # ctypes costs milliseconds, and nearly every render ends in time
        self._async_exc: tuple[Any, Any] | None = None
        self._exceptions: dict[float, type[HardDeadlineExceeded]] = {}

    def deadline(self, seconds: float, exception: type[BaseException] | None = None) -> Deadline:
        """A context manager: ``exception`` (a class Python can raise without arguments;
        by default a :class:`HardDeadlineExceeded` naming ``seconds``) is raised in this
        thread if the block still runs after ``seconds``. Inside another deadline of this
        watchdog it does nothing: the outer one holds."""
        if exception is None:
            exception = self._exceptions.get(seconds) or self._exception_for(seconds)
        return Deadline(self, seconds, exception)

    def _exception_for(self, seconds: float) -> type[HardDeadlineExceeded]:
        if len(self._exceptions) >= _EXCEPTION_CLASSES:  # (an engine has one time limit)
            self._exceptions.clear()
        name = HardDeadlineExceeded.__name__
        exception = type(name, (HardDeadlineExceeded,), {"seconds": seconds})
        self._exceptions[seconds] = exception
        return exception

    # -- used by Deadline --------------------------------------------------------------------

    def _arm(self, seconds: float, exception: type[BaseException]) -> _Entry | None:
        outer: _Entry | None = getattr(self._local, "entry", None)
        if outer is not None and outer.state == _ARMED:
            return None
        entry = _Entry(threading.get_ident(), exception)
        due = time.monotonic() + seconds
        with self._lock:
            if seconds < self._shortest:
                self._shortest = seconds
            heap = self._heap
            if len(heap) > _COMPACT_FROM and len(heap) > 4 * self._armed:
                # blocks that ended in time leave their entries: drop them now and then
                heap[:] = [item for item in heap if item[2].state == _ARMED]
                heapq.heapify(heap)
            heapq.heappush(heap, (due, next(self._order), entry))
            self._armed += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="oper8d-template-watchdog", daemon=True
                )
                self._thread.start()
            elif due < self._wake_at:
                self._wake_at = due
                self._wakeup.notify()
        self._local.entry = entry
        return entry

    def _disarm(self, entry: _Entry, outer: _Entry | None) -> None:
        """The block of ``entry`` has ended: no exception for it from now on, and one set
        but not yet raised is taken back. Safe to call twice."""
        with self._lock:
            if entry.state == _FIRED:
                self._functions()[1](entry.thread, None)
            elif entry.state == _ARMED:
                self._armed -= 1
            entry.state = _DONE
        self._local.entry = outer

    # -- the watchdog thread -----------------------------------------------------------------

    def _watch(self) -> None:
        with self._lock:
            try:
                self._fire_when_due()
            finally:  # (the next deadline starts another thread)
                self._thread = None
                self._wake_at = float("inf")

    def _fire_when_due(self) -> None:
        """The thread's loop, the lock held but while it waits; returns when idle."""
        heap = self._heap
        idle_since: float | None = None
        while True:
            now = time.monotonic()
            while heap and (heap[0][2].state != _ARMED or heap[0][0] <= now):
                entry = heapq.heappop(heap)[2]
                if entry.state == _ARMED:
                    self._fire(entry)
            if heap:
                idle_since = None
                self._wake_at = heap[0][0]
                self._wakeup.wait(self._wake_at - now)
                continue
            if idle_since is None:
                idle_since = now
            left = idle_since + self._idle_seconds - now
            if left <= 0:
                return
            # A deadline armed from now on with a time limit no shorter than those before
            # it is due after ``now + self._shortest``: waking by then, the thread need not
            # be woken for it (``_arm`` notifies only for one due earlier). Each wake-up
            # hands the GIL over twice, which every other render of an idle watchdog paid.
            self._wake_at = now + min(left, self._shortest)
            self._wakeup.wait(self._wake_at - now)

    def _fire(self, entry: _Entry) -> None:
        """Set the entry's exception in its thread (the lock held: the block is running)."""
        entry.state = _FIRED
        self._armed -= 1
        set_exc, clear_exc = self._functions()
        if set_exc(entry.thread, entry.exception) > 1:  # cannot happen: undo it
            clear_exc(entry.thread, None)

    def _functions(self) -> tuple[Any, Any]:
        if self._async_exc is None:
            self._async_exc = _async_exc_functions()
        return self._async_exc


def _async_exc_functions() -> tuple[
    Callable[[int, type[BaseException]], int], Callable[[int, None], int]
]:
    """``PyThreadState_SetAsyncExc(thread id, exception class or NULL)``, twice: to set an
    exception, and to take one back (NULL, which a ``py_object`` argument cannot be)."""
    import ctypes  # (here: it costs milliseconds to import, and only a late render needs it)

    name = ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
    set_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(name)
    clear_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(name)
    return set_exc, clear_exc


class Deadline:
    """One use of :meth:`Watchdog.deadline`; enter it once. Its block must not yield (a
    template's chunks are consumed inside it): the exception goes to the thread, whatever
    code it runs when the time is up."""

    __slots__ = ("_entry", "_exception", "_outer", "_seconds", "_watchdog")

    def __init__(self, watchdog: Watchdog, seconds: float, exception: type[BaseException]) -> None:
        self._watchdog = watchdog
        self._seconds = seconds
        self._exception = exception
        self._entry: _Entry | None = None
        self._outer: _Entry | None = None

    def __enter__(self) -> Deadline:
        self._outer = getattr(self._watchdog._local, "entry", None)
        self._entry = self._watchdog._arm(self._seconds, self._exception)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        entry = self._entry
        if entry is None:
            return
        # The exception may arrive during this very call, before the lock is taken: the
        # block has ended, so it is dropped and the disarming done again. Something else
        # arriving meanwhile (KeyboardInterrupt) is raised once the entry is disarmed.
        late: BaseException | None = None
        try:
            self._watchdog._disarm(entry, self._outer)
        except BaseException as arrived:
            if not isinstance(arrived, entry.exception):
                late = arrived
            self._watchdog._disarm(entry, self._outer)
        if late is not None:
            raise late

    @property
    def armed(self) -> bool:
        """Whether this deadline armed the timer (it is the outermost one)."""
        return self._entry is not None
