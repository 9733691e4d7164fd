"""The Python tracer on ``sys.monitoring`` (Python 3.12+, PEP 669): one hook for all threads.

A frame opens at PY_START (first entry), PY_RESUME (a generator or coroutine resumed) and
PY_THROW; it closes at PY_RETURN, PY_YIELD and PY_UNWIND (left by an exception). These pairs
nest like ``sys.setprofile``'s call/return, so each thread's events form a proper stack.
Uses the ``PROFILER_ID`` tool slot; if another profiler holds it, start fails with a clear
message instead of silently recording nothing.
"""

from __future__ import annotations

import sys
import threading
from time import perf_counter_ns
from typing import Any

from stepscope.capture.python_tracer.backend import TracerState
from stepscope.capture.python_tracer.events import RECORDING, registered_name
from stepscope.errors import StepscopeError

_TOOL_NAME = "stepscope"


def _monitoring() -> Any:
    return getattr(sys, "monitoring")  # noqa: B009 - absent before 3.12, hidden from mypy


def install(tracer: TracerState) -> None:
    mon = _monitoring()
    tool = mon.PROFILER_ID
    try:
        mon.use_tool_id(tool, _TOOL_NAME)
    except ValueError as exc:
        raise StepscopeError(
            f"python_tracer_level=1 needs sys.monitoring's profiler slot, but "
            f"{mon.get_tool(tool)!r} holds it (stop cProfile or the other profiler first)"
        ) from exc
    local = threading.local()
    mode = tracer.mode
    take = tracer.budget.take
    max_events = tracer.budget.max_events
    report_full = tracer.budget.report_full
    internal = tracer.internal_files
    now = perf_counter_ns

    def state_of_thread() -> Any:
        try:
            return local.state
        except AttributeError:
            local.state = tracer.new_thread()
            return local.state

    def on_enter(code: Any, offset: int, *rest: Any) -> None:
        state_of_thread().stack.append((code, now()))

    def on_exit(code: Any, offset: int, *rest: Any) -> None:
        state = state_of_thread()
        if not state.name:  # a thread seen before `threading` registered it
            state.name = registered_name(state.ident)
        stack = state.stack
        if stack:
            opened, start_ns = stack.pop()
            if mode[0] != RECORDING or opened.co_filename in internal:
                return  # stepscope's own frames are never saved: they take no budget
            n = take()
            if n < max_events:
                state.events.append((opened, start_ns, now(), len(stack)))
            elif n == max_events:
                report_full()

    caller = state_of_thread()
    # The caller's frames, outermost first, this function included: monitoring instruments
    # running frames too, so each of their PY_RETURNs pops its own entry.
    caller.stack.extend(tracer.open_frames(skip=0))
    events = mon.events
    for event in (events.PY_START, events.PY_RESUME, events.PY_THROW):
        mon.register_callback(tool, event, on_enter)
    for event in (events.PY_RETURN, events.PY_YIELD, events.PY_UNWIND):
        mon.register_callback(tool, event, on_exit)
    mon.set_events(
        tool,
        events.PY_START
        | events.PY_RESUME
        | events.PY_THROW
        | events.PY_RETURN
        | events.PY_YIELD
        | events.PY_UNWIND,
    )


def record(tracer: TracerState) -> None:
    pass  # the hooks read tracer.mode


def stop(tracer: TracerState) -> None:
    mon = _monitoring()
    tool = mon.PROFILER_ID
    if mon.get_tool(tool) != _TOOL_NAME:
        return
    mon.set_events(tool, 0)
    events = mon.events
    for event in (
        events.PY_START,
        events.PY_RESUME,
        events.PY_THROW,
        events.PY_RETURN,
        events.PY_YIELD,
        events.PY_UNWIND,
    ):
        mon.register_callback(tool, event, None)
    mon.free_tool_id(tool)
