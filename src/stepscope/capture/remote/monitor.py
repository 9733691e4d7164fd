"""The text a Monitor request answers: what the process is doing right now, in a few lines.

Level 1 (TensorFlow's default) measures this process's CPU use over ``duration_ms`` and repeats
the step time seen by the last remote capture, if any. Level 2 also records step markers
(`stepscope.step`, annotations only) during ``duration_ms`` to report the current step time;
that takes the session slot for the duration, so it is skipped while a capture runs.
"""

from __future__ import annotations

import os
import threading
import time

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.session import ProfilerAlreadyRunningError
from stepscope.records import record


@record
class StepSummary:
    """Step markers seen by one capture."""

    when_ns: int  # wall clock at the end of that capture
    count: int
    mean_ns: float
    min_ns: int
    max_ns: int

    @classmethod
    def of(cls, steps_ns: list[int], when_ns: int) -> StepSummary | None:
        if not steps_ns:
            return None
        return cls(
            when_ns, len(steps_ns), sum(steps_ns) / len(steps_ns), min(steps_ns), max(steps_ns)
        )

    def text(self) -> str:
        return (
            f"{self.count} steps, step time avg {self.mean_ns / 1e6:.2f} ms "
            f"(min {self.min_ns / 1e6:.2f}, max {self.max_ns / 1e6:.2f})"
        )


def _clock(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ns / 1e9))


def monitor_text(
    duration_ms: int,
    level: int,
    timestamp: bool,
    last_steps: StepSummary | None,
    stop: threading.Event,
) -> str:
    """A few lines: CPU use of this process, load, threads, step time (see the module)."""
    from stepscope.capture.remote.recording import capture_xspace

    wall0, cpu0 = time.perf_counter_ns(), time.process_time_ns()
    steps: StepSummary | None = None
    note = ""
    if level >= 2:
        try:
            options = ProfilerOptions(host_tracer_level=1, python_tracer_level=0)
            capture = capture_xspace(
                options.replace(device_tracer_level=0), duration_ms, stop=stop, bridges=False
            )
            steps = StepSummary.of(capture.steps_ns, time.time_ns())
            note = "" if steps else "no stepscope.step marker was seen"
        except ProfilerAlreadyRunningError:
            note = "a capture is running; step time not measured"
            stop.wait(duration_ms / 1e3)
    else:
        stop.wait(duration_ms / 1e3)
    wall_ns = max(1, time.perf_counter_ns() - wall0)
    cpu_pct = 100.0 * (time.process_time_ns() - cpu0) / wall_ns
    lines = []
    if timestamp:
        lines.append(f"Timestamp: {_clock(time.time_ns())}")
    cores = os.cpu_count() or 1
    lines.append(
        f"CPU utilization of process {os.getpid()}: {cpu_pct:.1f}% of one core "
        f"over {wall_ns / 1e6:.0f} ms ({cores} cores)"
    )
    if hasattr(os, "getloadavg"):
        load = os.getloadavg()
        lines.append(f"Load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    lines.append(f"Python threads: {threading.active_count()}")
    if steps is not None:
        lines.append(f"Steps in the last {duration_ms} ms: {steps.text()}")
    elif last_steps is not None:
        lines.append(
            f"Steps in the last capture ({_clock(last_steps.when_ns)}): {last_steps.text()}"
        )
    else:
        lines.append("Step time: unknown (" + (note or "no capture with step markers yet") + ")")
    return "\n".join(lines)
