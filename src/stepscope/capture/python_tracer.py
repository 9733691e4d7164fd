"""Python tracer (``python_tracer_level=1``): every Python function call, on every thread.

Where the events go: on ``/host:CPU``, in the line of the thread that ran them (line id = OS
thread id), interleaved with that thread's annotations. That is the layout TensorFlow's own
files have after its post-processing merges ``/host:python-tracer`` into ``/host:CPU``, so
XProf and the trace viewer nest ``train`` > ``$model.py:12 forward`` > ``conv`` as one stack.
Names follow TensorFlow's convention ``$<file basename>:<first line> <qualified name>``.
Calls into C functions are not recorded (that is what keeps the tracer's cost down).

Mechanisms, fastest first:
- the C accelerator ``_pytracer`` (built at install when a compiler exists): a C profile
  function per thread via ``PyEval_SetProfile``;
- Python 3.12+: ``sys.monitoring`` (PY_START/RESUME/THROW open a frame, PY_RETURN/YIELD/UNWIND
  close it), which covers every thread at once;
- otherwise ``sys.setprofile`` plus ``threading.setprofile`` for threads started later.
With ``sys.setprofile`` (and the C tracer before 3.12) threads that were already running at
start, other than the one calling `start`, cannot be hooked; threads started during the
session are. Frames already on the calling thread's stack at start are recorded as starting
at start; frames still open at stop end at stop. Every event counts against ``max_events``.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from time import perf_counter_ns
from types import CodeType
from typing import Any

from stepscope.capture.host_tracer import EventBudget

PAUSED, RECORDING, STOPPED = 0, 1, 2
# (code, start_ns, end_ns, depth) in perf_counter_ns
PyEvent = tuple[CodeType, int, int, int]
_CAPTURE_DIR = os.path.dirname(os.path.abspath(__file__))


@dataclass(eq=False)
class PyThreadEvents:
    """One thread's recorded calls, plus the calls still open (code, start) when it stopped."""

    native_id: int
    ident: int
    name: str
    events: list[PyEvent] = field(default_factory=list)
    stack: list[tuple[CodeType, int]] = field(default_factory=list)


def registered_name(ident: int) -> str:
    """The thread's name, or "" if `threading` has not registered it yet.

    Not `threading.current_thread()`: called that early in a new thread (sys.monitoring sees
    its bootstrap frames) it would create and register a bogus ``Dummy-N`` thread.
    """
    thread = getattr(threading, "_active", {}).get(ident)
    return thread.name if thread is not None else ""


def event_name(code: CodeType, cache: dict[CodeType, str]) -> str:
    """``$file.py:LINE qualname``, TensorFlow's name for a Python function event."""
    name = cache.get(code)
    if name is None:
        qualname = getattr(code, "co_qualname", code.co_name)
        name = f"${os.path.basename(code.co_filename)}:{code.co_firstlineno} {qualname}"
        cache[code] = name
    return name


def is_internal(code: CodeType) -> bool:
    """Frames of stepscope's own capture code (kept out of the saved profile)."""
    return os.path.dirname(code.co_filename) == _CAPTURE_DIR


class PythonTracer:
    """Start/stop one Python-call recording; the events land in per-thread lists."""

    def __init__(self, budget: EventBudget, force_pure_python: bool = False) -> None:
        self.budget = budget
        self.threads: list[PyThreadEvents] = []
        self._lock = threading.Lock()
        self._mode = [PAUSED]  # a list: the hooks read it through a closure cell
        self._start_ns = 0
        self._impl = self._choose(force_pure_python)

    @staticmethod
    def _choose(force_pure_python: bool) -> str:
        if force_pure_python or os.environ.get("STEPSCOPE_PURE_PYTHON") == "1":
            return "monitoring" if sys.version_info >= (3, 12) else "setprofile"
        from stepscope.capture import python_tracer_c

        if python_tracer_c.available():
            return "c"
        return "monitoring" if sys.version_info >= (3, 12) else "setprofile"

    @property
    def implementation(self) -> str:
        return self._impl

    def _new_thread(self) -> PyThreadEvents:
        ident = threading.get_ident()
        state = PyThreadEvents(threading.get_native_id(), ident, registered_name(ident))
        with self._lock:
            self.threads.append(state)
        return state

    # ---- install / record / stop ----------------------------------------------------------------
    # install() runs on the thread calling stepscope.start() (sys.setprofile only reaches the
    # calling thread), possibly before recording begins (delay_ms): until record(), hooks keep
    # their call stacks balanced but keep no event and take nothing from the budget.
    def install(self) -> None:
        self._start_ns = perf_counter_ns()
        if self._impl == "c":
            from stepscope.capture import python_tracer_c

            python_tracer_c.install(self)
        elif self._impl == "monitoring":
            from stepscope.capture import python_tracer_monitoring

            python_tracer_monitoring.install(self)
        else:
            self._install_setprofile()

    def record(self) -> None:
        self._mode[0] = RECORDING
        if self._impl == "c":
            from stepscope.capture import python_tracer_c

            python_tracer_c.record(self)

    def stop(self) -> int:
        """Stop recording; returns the perf_counter_ns time used to close open frames."""
        self._mode[0] = STOPPED
        if self._impl == "c":
            from stepscope.capture import python_tracer_c

            python_tracer_c.stop(self)
        elif self._impl == "monitoring":
            from stepscope.capture import python_tracer_monitoring

            python_tracer_monitoring.stop(self)
        else:
            threading.setprofile(None)
            sys.setprofile(None)
        return perf_counter_ns()

    def open_frames(self, skip: int) -> list[tuple[CodeType, int]]:
        """The calling thread's frames, outermost first, as if they started now."""
        frames = []
        frame = sys._getframe(skip + 1)
        while frame is not None:
            frames.append((frame.f_code, self._start_ns))
            frame = frame.f_back  # type: ignore[assignment]
        frames.reverse()
        return frames

    # ---- sys.setprofile implementation (Python < 3.12 without the C accelerator) ---------------
    def _profile_function(self, state: PyThreadEvents) -> Any:
        stack = state.stack
        events = state.events
        take = self.budget.take
        max_events = self.budget.max_events
        report_full = self.budget.report_full
        mode = self._mode
        now = perf_counter_ns

        def profile(frame: Any, event: str, arg: Any) -> None:
            if event == "call":
                stack.append((frame.f_code, now()))
            elif event == "return":
                if mode[0] != RECORDING:
                    if mode[0] == STOPPED:
                        sys.setprofile(None)  # threads stop() cannot reach unhook themselves
                    elif stack:
                        stack.pop()
                    return
                if stack:
                    code, start = stack.pop()
                    n = take()
                    if n < max_events:
                        events.append((code, start, now(), len(stack)))
                    elif n == max_events:
                        report_full()

        return profile

    def _install_setprofile(self) -> None:
        def bootstrap(frame: Any, event: str, arg: Any) -> None:
            # First event in a thread started during the session: install its own function.
            if self._mode[0] == STOPPED:
                sys.setprofile(None)
                return
            profile = self._profile_function(self._new_thread())
            sys.setprofile(profile)
            profile(frame, event, arg)

        state = self._new_thread()
        # Every frame up to this one: each 'return' (this method's first) pops its own entry.
        state.stack.extend(self.open_frames(skip=0))
        threading.setprofile(bootstrap)
        sys.setprofile(self._profile_function(state))
