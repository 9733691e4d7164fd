"""Per-thread event buffers and the session-wide event budget.

Hot-path rules (see `stepscope.capture.annotations`):
- each thread appends plain tuples ``(name, start_ns, end_ns, depth, stats)`` to its own list,
  found through a `threading.local`; no lock is taken after a thread's first event;
- the budget is one `itertools.count` shared by every thread and tracer: ``next()`` on it is a
  single C call, atomic under the GIL, so admission needs no lock and the number of dropped
  events is exact (attempts minus ``max_events``);
- timestamps are raw `time.perf_counter_ns()` values; the session converts them to wall-clock
  nanoseconds once, at save time, with the offset it measured when recording began.

The buffered event's ``name`` is the string the caller passed (a reference, not a copy);
names are interned into XSpace metadata ids only when the profile is built.
"""

from __future__ import annotations

import itertools
import threading

from stepscope import log

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # (name, start_ns, end_ns, depth, stats) -- start/end are perf_counter_ns values.
    HostEvent = tuple[str, int, int, int, dict[str, Any] | None]


class EventBudget:
    """At most ``max_events`` events are kept per session, whichever tracer produced them."""

    def __init__(self, max_events: int) -> None:
        self.max_events = max_events
        self._counter = itertools.count()
        # Bound method of a C iterator: the cheapest atomic "fetch and increment" in CPython.
        self.take: Callable[[], int] = self._counter.__next__
        self._final_attempts: int | None = None

    def report_full(self) -> None:
        """Called once, by the thread whose event was the first one over the budget."""
        log.warn(
            f"stepscope: max_events={self.max_events} reached; further events are dropped "
            "and counted (raise ProfilerOptions.max_events to keep more)"
        )

    def close(self) -> None:
        """Freeze the count: later ``take()`` calls (late spans) no longer change it."""
        if self._final_attempts is None:
            self._final_attempts = self.take()

    @property
    def attempts(self) -> int:
        """Events offered to the budget so far (kept or dropped)."""
        if self._final_attempts is not None:
            return self._final_attempts
        return int(repr(self._counter)[len("count(") : -1])

    @property
    def dropped(self) -> int:
        return max(0, self.attempts - self.max_events)


class ThreadBuffer:
    """One thread's events; only that thread appends to ``events``."""

    __slots__ = ("depth", "events", "ident", "name", "native_id")

    def __init__(self, native_id: int, ident: int, name: str) -> None:
        self.native_id = native_id
        self.ident = ident
        self.name = name
        self.events: list[HostEvent] = []
        self.depth = 0  # spans open on this thread


class HostTracer:
    """The buffers of one session. Created per session, so no buffer outlives its session."""

    def __init__(self, budget: EventBudget) -> None:
        self.budget = budget
        self.local = threading.local()
        self._buffers: list[ThreadBuffer] = []
        self._lock = threading.Lock()

    def buffer(self) -> ThreadBuffer:
        """This thread's buffer (created on its first event)."""
        try:
            return self.local.buffer
        except AttributeError:
            return self.new_buffer()

    def new_buffer(self) -> ThreadBuffer:
        """Slow path, once per thread and session: register a buffer for the calling thread."""
        thread = threading.current_thread()
        buf = ThreadBuffer(threading.get_native_id(), threading.get_ident(), thread.name)
        with self._lock:
            self._buffers.append(buf)
        self.local.buffer = buf
        return buf

    def admit(self) -> ThreadBuffer | None:
        """The calling thread's buffer if the budget allows one more event, else None."""
        n = self.budget.take()
        if n < self.budget.max_events:
            return self.buffer()
        if n == self.budget.max_events:
            self.budget.report_full()
        return None

    def buffers(self) -> list[ThreadBuffer]:
        """Every thread's buffer, with thread names refreshed (threads may rename themselves)."""
        with self._lock:
            buffers = list(self._buffers)
        names = {t.ident: t.name for t in threading.enumerate()}
        for buf in buffers:
            buf.name = names.get(buf.ident, buf.name)
        return buffers
