"""Python tracer (``python_tracer_level=1``): every Python function call, on every thread.

Where the events go: on ``/host:CPU``, in the line of the thread that ran them (line id = OS
thread id), interleaved with that thread's annotations. That is the layout TensorFlow's own
files have after its post-processing merges ``/host:python-tracer`` into ``/host:CPU``, so
XProf and the trace viewer nest ``train`` > ``$model.py:12 forward`` > ``conv`` as one stack.
Names follow TensorFlow's convention ``$<file basename>:<first line> <qualified name>``.
Calls into C functions are not recorded (that is what keeps the tracer's cost down).

Backends (`backend.Backend`), fastest first:
- `c_backend`: the C accelerator ``_pytracer`` (built at install when a compiler exists), a C
  profile function per thread via ``PyEval_SetProfile``;
- `monitoring`: Python 3.12+ ``sys.monitoring`` (PY_START/RESUME/THROW open a frame,
  PY_RETURN/YIELD/UNWIND close it), which covers every thread at once;
- `setprofile`: ``sys.setprofile`` plus ``threading.setprofile`` for threads started later.
With ``sys.setprofile`` (and the C tracer before 3.12) threads that were already running at
start, other than the one calling `start`, cannot be hooked; threads started during the
session are. Frames already on the calling thread's stack at start are recorded as starting
at start; frames still open at stop end at stop. Every event counts against ``max_events``.
"""

from __future__ import annotations

import importlib
import sys
from time import perf_counter_ns
from typing import cast

from stepscope import accelerators
from stepscope.capture.host_tracer import EventBudget
from stepscope.capture.python_tracer.backend import Backend, TracerState
from stepscope.capture.python_tracer.events import RECORDING, STOPPED, PyThreadEvents


def _choose(force_pure_python: bool) -> str:
    if not force_pure_python and not accelerators.switched_off("_pytracer"):
        from stepscope.capture.python_tracer import c_backend

        if c_backend.available():
            return "c"
    return "monitoring" if sys.version_info >= (3, 12) else "setprofile"


_BACKENDS = {"c": "c_backend", "monitoring": "monitoring", "setprofile": "setprofile"}


class PythonTracer:
    """Start/stop one Python-call recording; the events land in per-thread lists."""

    def __init__(self, budget: EventBudget, force_pure_python: bool = False) -> None:
        self.state = TracerState(budget)
        self._impl = _choose(force_pure_python)
        module = importlib.import_module(f"{__package__}.{_BACKENDS[self._impl]}")
        self._backend = cast(Backend, module)

    @property
    def implementation(self) -> str:
        return self._impl

    @property
    def threads(self) -> list[PyThreadEvents]:
        return self.state.threads

    # install() runs on the thread calling stepscope.start() (sys.setprofile only reaches the
    # calling thread), possibly before recording begins (delay_ms).
    def install(self) -> None:
        self.state.begin()
        self._backend.install(self.state)

    def record(self) -> None:
        self.state.mode[0] = RECORDING
        self._backend.record(self.state)

    def forget(self) -> None:
        """In a process forked while recording: record nothing more here, cheaply (the
        parent process keeps the recording; hooks left on unhook at their next event)."""
        self.state.mode[0] = STOPPED
        if self._impl == "c":
            from stepscope.capture.python_tracer import c_backend

            c_backend.forget()
        else:
            self._backend.stop(self.state)

    def stop(self) -> int:
        """Stop recording; returns the perf_counter_ns time used to close open frames."""
        self.state.mode[0] = STOPPED
        self._backend.stop(self.state)
        return perf_counter_ns()
