"""The Python tracer on the C accelerator ``_pytracer`` (see _pytracer.c for the why).

Each hooked thread gets a C ``Recorder``; at stop their events are copied into the
`PyThreadEvents` the saver reads, then the C buffers are freed.
"""

from __future__ import annotations

import sys
import threading
from time import perf_counter_ns
from typing import Any

from stepscope import accelerators
from stepscope.capture.python_tracer.backend import TracerState
from stepscope.capture.python_tracer.events import PAUSED, RECORDING, STOPPED, PyThreadEvents

_hooked: list[tuple[PyThreadEvents, Any]] = []
# The extension, taken by `available` (the tracer asks before choosing this backend) and kept
# for the session: a switch of STEPSCOPE_PURE_PYTHON meanwhile does not strand a recording.
_pytracer: Any = None


def available() -> bool:
    """Built, and its clock is the one of `time.perf_counter_ns` (true on Linux)."""
    global _pytracer
    _pytracer = accelerators.get("_pytracer")
    if _pytracer is None:
        return False
    before = perf_counter_ns()
    theirs = _pytracer.now()
    after = perf_counter_ns()
    return before - 1_000_000 <= theirs <= after + 1_000_000


def install(tracer: TracerState) -> None:
    budget = tracer.budget
    _hooked.clear()
    _pytracer.configure(
        budget._counter, budget.max_events, budget.report_full, tracer.internal_files
    )
    _pytracer.set_mode(PAUSED)

    def bootstrap(frame: Any, event: str, arg: Any) -> None:
        # First event of a thread started during the session: hand it to the C hook.
        if tracer.mode[0] == STOPPED:
            sys.setprofile(None)
            return
        opened = [(frame.f_code, perf_counter_ns())] if event == "call" else []
        state = tracer.new_thread()
        _hooked.append((state, _pytracer.hook_current_thread(opened)))

    state = tracer.new_thread()
    # Every frame up to this one: each RETURN (this function's first) pops its own entry.
    recorder = _pytracer.hook_current_thread(tracer.open_frames(skip=0))
    _hooked.append((state, recorder))
    threading.setprofile(bootstrap)


def record(tracer: TracerState) -> None:
    _pytracer.set_mode(RECORDING)


def forget() -> None:
    """`stop` without collecting: hooked threads unhook themselves at their next event."""
    _pytracer.set_mode(STOPPED)
    _hooked.clear()


def stop(tracer: TracerState) -> None:
    _pytracer.set_mode(STOPPED)
    _pytracer.unhook_current_thread()
    threading.setprofile(None)
    for state, recorder in _hooked:
        state.events = recorder.events()
        state.stack = recorder.stack()
        recorder.clear()
    _hooked.clear()
