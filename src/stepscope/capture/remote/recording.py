"""Record for a while and hand the XSpace back (not saved): what a Profile request needs.

    capture = capture_xspace(options, duration_ms=2000, start_at_ns=..., stop=event)
    capture.space, capture.empty, capture.steps_ns

It takes the process's one session slot (shared with `stepscope.start`), so a local capture
and a remote one exclude each other: a second capture raises `ProfilerAlreadyRunningError`,
which the server turns into ALREADY_EXISTS as TensorFlow does. Recording starts at
``start_at_ns`` (wall clock, ``time.time_ns()``; TensorFlow's ``start_timestamp_ns``) or at
once, and ends after ``duration_ms`` or as soon as ``stop`` is set (Terminate, a client that
went away); either way the XSpace holds what was recorded until then.
"""

from __future__ import annotations

import threading
import time
from dataclasses import field

from stepscope.capture import session as _session
from stepscope.capture.options import ProfilerOptions
from stepscope.records import record
from stepscope.xspace.proto.xplane_pb2 import XSpace


@record(frozen=False)
class RemoteCapture:
    """The XSpace of one capture and what the server reports about it."""

    space: XSpace
    empty: bool  # no event on any line (TensorFlow's ``empty_trace``)
    recorded_ns: int  # how long it actually recorded (shorter when stopped early)
    steps_ns: list[int] = field(default_factory=list)  # durations of `stepscope.step` spans


def is_empty(space: XSpace) -> bool:
    """True when no line of any plane has an event (as TensorFlow decides ``empty_trace``)."""
    return not any(line.events for plane in space.planes for line in plane.lines)


def _step_durations(session: _session.Session) -> list[int]:
    """Durations of step markers (``_r=1`` spans, see `stepscope.step`) on any thread."""
    steps = []
    for buf in session.host.buffers():
        for _name, start, end, _depth, stats in buf.events:
            if stats and stats.get("_r") == 1:
                steps.append(end - start)
    return steps


def capture_xspace(
    options: ProfilerOptions,
    duration_ms: int,
    *,
    start_at_ns: int = 0,
    stop: threading.Event | None = None,
    hostname: str | None = None,
    repository_path: str = "",
    bridges: bool = True,
) -> RemoteCapture:
    """Record with ``options`` for ``duration_ms`` from ``start_at_ns`` (0: now); see the module.
    ``bridges``: run the framework bridges too (`stepscope.capture.bridges`)."""
    stop = stop or threading.Event()
    delay_ns = max(0, start_at_ns - time.time_ns()) if start_at_ns else 0
    resolved = options.replace(duration_ms=duration_ms, delay_ms=delay_ns // 1_000_000)
    # The session clock's alarms end the delay and the duration, as for `stepscope.start`
    # (tests fire them instead of waiting). The duration's alarm is ``stop``: once recording
    # ends, ending it early or on time are the same.
    clock = _session.CLOCK
    session = _session.Session(repository_path, resolved, hostname, clock)
    session.write = False
    _session.claim(session)  # ProfilerAlreadyRunningError when busy
    began: list[int] = []
    alarms: list[_session.Timer] = []

    def begin(s: _session.Session) -> None:  # after the delay, on the alarm's thread
        if not stop.is_set() and _session.begin(s):
            began.append(time.perf_counter_ns())
            alarms.append(clock.call_later(duration_ms / 1e3, lambda _s: stop.set(), s))

    try:
        session.install_python_tracer()
        if bridges:  # framework profilers (PyTorch, TensorFlow, JAX), as `stepscope.start` does
            session.install_bridges()
        if delay_ns:
            alarms.append(clock.call_later(delay_ns / 1e9, begin, session))
        else:
            begin(session)
        stop.wait()
        recorded_ns = time.perf_counter_ns() - began[0] if began else 0
    finally:
        for alarm in alarms:
            alarm.cancel()
        _session.release(session)
    space = session.space if session.space is not None else XSpace()
    # the alarms' threads (`threading.Timer`) ran only this function's callbacks
    ours = {threading.get_native_id(), *(getattr(a, "native_id", None) for a in alarms)}
    _drop_threads(space, {i for i in ours if i is not None})
    return RemoteCapture(space, is_empty(space), recorded_ns, _step_durations(session))


def _drop_threads(space: XSpace, native_ids: set[int]) -> None:
    """Remove the lines of the calling thread and of the alarms' threads: they hold only the
    server's own work (with the Python tracer on, this function waiting, an alarm ending the
    recording), which would read as if it were the program's; with framework bridges, an
    empty line where their clock markers were."""
    for plane in space.planes:
        for i in reversed(range(len(plane.lines))):
            if plane.lines[i].id in native_ids:
                del plane.lines[i]
