"""The Python tracer on ``sys.setprofile`` plus ``threading.setprofile`` (Python < 3.12
without the C accelerator): a Python profile function per thread."""

from __future__ import annotations

import sys
import threading
from time import perf_counter_ns
from typing import Any

from stepscope.capture.python_tracer.backend import TracerState
from stepscope.capture.python_tracer.events import RECORDING, STOPPED, PyThreadEvents


def _profile_function(tracer: TracerState, state: PyThreadEvents) -> Any:
    stack = state.stack
    events = state.events
    take = tracer.budget.take
    max_events = tracer.budget.max_events
    report_full = tracer.budget.report_full
    mode = tracer.mode
    now = perf_counter_ns
    internal = tracer.internal_files

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
                if code.co_filename in internal:  # never saved: takes nothing from the budget
                    return
                n = take()
                if n < max_events:
                    events.append((code, start, now(), len(stack)))
                elif n == max_events:
                    report_full()

    return profile


def install(tracer: TracerState) -> None:
    def bootstrap(frame: Any, event: str, arg: Any) -> None:
        # First event in a thread started during the session: install its own function.
        if tracer.mode[0] == STOPPED:
            sys.setprofile(None)
            return
        profile = _profile_function(tracer, tracer.new_thread())
        sys.setprofile(profile)
        profile(frame, event, arg)

    state = tracer.new_thread()
    # Every frame up to this one: each 'return' (this function's first) pops its own entry.
    state.stack.extend(tracer.open_frames(skip=0))
    threading.setprofile(bootstrap)
    sys.setprofile(_profile_function(tracer, state))


def record(tracer: TracerState) -> None:
    pass


def stop(tracer: TracerState) -> None:
    threading.setprofile(None)
    sys.setprofile(None)
