"""The interface between the Python tracer and its backends (C, sys.monitoring, setprofile).

A backend is a module with three functions taking the `TracerState`: ``install`` hooks the
threads (possibly before recording begins, when ``delay_ms`` is set: until ``record`` the
hooks keep their call stacks balanced but keep no event and take nothing from the budget),
``record`` starts keeping events, ``stop`` unhooks. Everything a backend may read or change
is on `TracerState`; it never touches the tracer itself.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from time import perf_counter_ns
from types import CodeType
from typing import Protocol

from stepscope.capture.host_tracer import EventBudget
from stepscope.capture.python_tracer.events import (
    PAUSED,
    PyThreadEvents,
    internal_files,
    registered_name,
)


@dataclass(eq=False)
class TracerState:
    """One recording's shared state: the budget, the mode the hooks read, and the threads."""

    budget: EventBudget
    # A one-item list: hooks read it through a closure cell (PAUSED, RECORDING or STOPPED).
    mode: list[int] = field(default_factory=lambda: [PAUSED])
    threads: list[PyThreadEvents] = field(default_factory=list)
    start_ns: int = 0  # perf_counter_ns at install: when frames already open are said to start
    # co_filenames of stepscope's capture code: their frames take nothing from the budget
    internal_files: frozenset[str] = field(default_factory=internal_files)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def new_thread(self) -> PyThreadEvents:
        """Registers the calling thread and returns where its events go."""
        ident = threading.get_ident()
        state = PyThreadEvents(threading.get_native_id(), ident, registered_name(ident))
        with self._lock:
            self.threads.append(state)
        return state

    def open_frames(self, skip: int) -> list[tuple[CodeType, int]]:
        """The calling thread's frames, outermost first, as if they started at install."""
        frames = []
        frame = sys._getframe(skip + 1)
        while frame is not None:
            frames.append((frame.f_code, self.start_ns))
            frame = frame.f_back  # type: ignore[assignment]
        frames.reverse()
        return frames

    def begin(self) -> None:
        self.start_ns = perf_counter_ns()


class Backend(Protocol):
    """A backend module (``c_backend``, ``monitoring``, ``setprofile``)."""

    def install(self, tracer: TracerState) -> None: ...
    def record(self, tracer: TracerState) -> None: ...
    def stop(self, tracer: TracerState) -> None: ...
