"""The stack sampler reads each sampled thread's CPU time (Linux schedstat) at every sample
and the profile keeps it as the thread's ``Thread CPU`` line (docs/formats/python_samples.md,
decision 646): intervals between two readings, with the thread's time on a CPU and runnable
in each. Observations, never work: steps and their breakdown ignore the line."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

import stepscope
from stepscope.capture.host_tracer import EventBudget, HostTracer
from stepscope.capture.python_sampler import PythonSampler, SampledThread
from stepscope.capture.recorder.ring import Ring
from stepscope.stats import build_step_db
from stepscope.stats.host.python_samples import sampled_thread_line
from stepscope.stats.host.thread_cpu import thread_cpu
from tests.support.capture import load_run, main_thread_track

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="schedstat is Linux's")


def _spin(s: float) -> None:
    end = time.thread_time() + s
    while time.thread_time() < end:
        pass


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    stepscope.start(
        tmp_path_factory.mktemp("cpu"), stepscope.ProfilerOptions(python_sampler_hz=200)
    )
    for s in range(6):
        with stepscope.step(s):
            _spin(0.02)  # on a core (or waiting for one)
            time.sleep(0.02)  # neither: asleep
    out = stepscope.stop()
    assert out is not None
    return out


def test_thread_cpu_line_layout(run: Path) -> None:
    profile = load_run(run)
    events = main_thread_track(profile, "Thread CPU", 50)
    assert len(events) > 10
    starts, ends = profile.start_ns[events], profile.end_ns[events]
    assert (ends[:-1] == starts[1:]).all()  # one interval after the other
    on = [profile.event_stats(e)["on_cpu_ns"] for e in events.tolist()]
    waiting = [profile.event_stats(e)["runnable_ns"] for e in events.tolist()]
    assert min(on) >= 0 and min(waiting) >= 0
    # the thread spun half the time: it ran, or waited for a core, for some of it; and it
    # slept the other half, so not all of it
    busy = sum(on) + sum(waiting)
    assert 0 < busy < int(ends[-1] - starts[0])


def test_readings_are_read_back_and_leave_the_steps_alone(run: Path) -> None:
    profile = load_run(run)
    thread_of = sampled_thread_line(profile)
    lines = [int(t) for t in thread_of[thread_of >= 0]]
    cpu = thread_cpu(profile, lines)
    assert cpu.read and cpu.interval_ns() > 0
    db = build_step_db(profile, "auto")
    assert db.n_steps >= 4  # XProf's rule may drop the first and the last
    covered, on, waiting = cpu.within(db.start_ns, db.start_ns + db.dur_ns)
    assert (covered > 0).all() and (on + waiting > 0).any()
    # no step time is given to the line's events: the steps' types hold only the thread's
    assert not any(profile.lines[ln].name == "Thread CPU" for ln in profile.line[db.event])


def _sampled(budget: int, spins: int) -> SampledThread:
    """This thread sampled at 500 Hz with room for ``budget`` runs, while its stack changes
    every 4 ms (each sample a new run) ``spins`` times."""
    sampler = PythonSampler(500, EventBudget(budget))
    sampler.add_current_thread()
    sampler.start()
    try:
        for k in range(spins):
            (_spin if k % 2 else _spin_too)(0.004)
    finally:
        sampler.stop()
    return sampler.threads[threading.get_ident()]


def _spin_too(s: float) -> None:
    _spin(s)


def test_readings_stop_with_the_samples_kept_at_the_event_limit() -> None:
    """Past the event budget the stacks were dropped but the CPU readings went on: 24 bytes a
    sample and thread for as long as the capture ran."""
    thread = _sampled(budget=3, spins=40)
    kept = sum(int(run[3]) for run in thread.runs)
    assert len(thread.runs) <= 3
    assert 0 < len(thread.cpu) // 3 <= kept


def test_the_recorders_ring_keeps_the_readings_of_its_kept_runs() -> None:
    """The ring trimmed a thread's runs, never its readings: an always-on recorder grew
    them without bound."""
    thread = _sampled(budget=10_000, spins=30)
    sampler = PythonSampler(500, EventBudget(1))
    sampler.threads[threading.get_ident()] = thread
    ring = Ring(HostTracer(EventBudget(10)), keep_steps=5, max_bytes=1 << 20, history_steps=5)
    ring.sampler = sampler
    readings = len(thread.cpu) // 3
    assert len(thread.runs) > 4 and readings > 4
    first = int(thread.runs[len(thread.runs) // 2][0])
    del thread.runs[: len(thread.runs) // 2]  # as the byte or step bound cuts them
    ring.trim()
    times = thread.cpu[0::3]
    assert times[0] == first and len(times) < readings
    thread.runs.clear()
    ring.trim()
    assert len(thread.cpu) == 3  # the latest reading alone


def test_a_schedstat_that_cannot_be_read_leaves_no_readings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where /proc cannot be read (a sandbox, a thread gone, a short read), the sampler keeps
    no readings for the thread and asks no more; its samples go on. Nothing is raised."""
    gone = SampledThread(1, 2**31 - 1, "gone")  # no such task: the open fails
    gone.read_sched(5)
    assert gone.sched == -1 and len(gone.cpu) == 0
    me = SampledThread(threading.get_ident(), threading.get_native_id(), "me")
    me.read_sched(1)
    assert len(me.cpu) == 3
    monkeypatch.setattr(os, "pread", lambda *_: b"")  # read, but nothing in it
    me.read_sched(2)
    me.read_sched(3)
    assert me.sched == -1 and len(me.cpu) == 3
    denied = SampledThread(threading.get_ident(), threading.get_native_id(), "denied")

    def refuse(*_: object) -> int:
        raise PermissionError("/proc is not readable here")

    monkeypatch.setattr(os, "open", refuse)
    denied.read_sched(4)
    assert denied.sched == -1 and len(denied.cpu) == 0
