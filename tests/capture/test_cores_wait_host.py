"""A host whose steps' thread waits for a CPU core is told so first (decision 700): its ops
only take longer, so the step-time breakdown calls the wait compute; the stack sampler's CPU
readings (schedstat, decision 646) tell the wait apart. The readings are given here (the
sampler's schedstat read replaced), the capture and the analysis are the real ones."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

import stepscope
from stepscope.capture.python_sampler import SampledThread
from stepscope.stats.diagnostics import runner
from stepscope.stats.diagnostics.base import Finding
from stepscope.stats.diagnostics.cores import HOST_FIX, SLOW_WAITED_FIX

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="schedstat is Linux's")


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _given_share(monkeypatch: pytest.MonkeyPatch, runnable: float) -> None:
    """The sampler's schedstat reads say, from now on: on a core 20% of the time, runnable
    (waiting for a core) ``runnable`` of it."""
    t0 = time.perf_counter_ns()

    def read(self: SampledThread, now: int) -> None:
        self.cpu.extend((now, (now - t0) // 5, int((now - t0) * runnable)))

    monkeypatch.setattr(SampledThread, "read_sched", read)


def _capture(path: Path, monkeypatch: pytest.MonkeyPatch, runnable: float) -> Path:
    """Six 30 ms steps whose thread's readings say it was on a core 20% of the time and
    runnable, waiting for a core, ``runnable`` of it."""
    _given_share(monkeypatch, runnable)
    stepscope.start(path, stepscope.ProfilerOptions(python_sampler_hz=200))
    for s in range(6):
        with stepscope.step(s):
            _spin(0.03)
    out = stepscope.stop()
    assert out is not None
    return out


def test_a_thread_waiting_for_a_core_is_said_before_the_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = stepscope.Analysis(_capture(tmp_path, monkeypatch, 0.75), use_cache=False)
    overview = run.tool("overview_page")
    assert overview.bound_by.headline.startswith(
        "Waiting for a CPU core: the steps' thread was runnable but off its core 75% of the "
        "step time (the stack sampler's readings), and every part below includes that wait. "
        "Bound by "
    )
    (finding,) = [f for f in run.tool("diagnostics").findings if f.id == "cores_wait"]
    assert finding.severity == "high"
    assert round(finding.metrics["runnable_pct"]) == 75
    assert round(finding.metrics["on_cpu_pct"]) == 20
    assert finding.fix == HOST_FIX
    first = overview.recommendation.details[0]
    assert "waits for a CPU core" in first and HOST_FIX in first


def test_a_thread_on_its_core_is_not_said_to_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = stepscope.Analysis(_capture(tmp_path, monkeypatch, 0.05), use_cache=False)
    assert not run.tool("overview_page").bound_by.headline.startswith("Waiting")
    assert not [f for f in run.tool("diagnostics").findings if f.id == "cores_wait"]


def test_inferred_steps_beside_another_sampled_thread_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps inferred from the loop's repeated work (no markers), a second thread sampled
    too (as a DataLoader's workers are): the steps' thread is the inferred steps' one, and
    its readings are read (decision 703: none were, so no core wait was said)."""
    _given_share(monkeypatch, 0.75)
    stop = threading.Event()

    def loader() -> None:
        sys.modules["stepscope.capture.step"]._sample_this_thread()  # as `stepscope.step` does
        with stepscope.trace("setup"):
            pass
        while not stop.wait(0.005):
            pass

    stepscope.start(tmp_path, stepscope.ProfilerOptions(python_sampler_hz=200))
    thread = threading.Thread(target=loader, name="loader")
    thread.start()
    for _ in range(8):
        with stepscope.trace("forward"):
            _spin(0.02)
        time.sleep(0.002)
    stop.set()
    thread.join()
    out = stepscope.stop()
    assert out is not None
    run = stepscope.Analysis(out, use_cache=False)
    assert run.tool("overview_page").step_source == "inferred"
    (found,) = [f for f in run.tool("diagnostics").findings if f.id == "cores_wait"]
    assert round(found.metrics["runnable_pct"]) == 75


def _slow_step(path: Path, monkeypatch: pytest.MonkeyPatch, waiting: bool) -> list[Finding]:
    """Ten steps on a core 20 ms each, the seventh 320 ms: its extra 300 ms runnable, waiting
    for a core (``waiting``), else on a core too; the findings of the run. (300 ms: a step
    that a loaded machine slows for real, its readings not given, stays a small part.)"""
    t0 = time.perf_counter_ns()
    held: list[list[int]] = []  # the spans [lo, hi) runnable, waiting (perf ns)

    def read(self: SampledThread, now: int) -> None:
        # schedstat's sums at ``now`` from the spans, however late the sampler reads
        runnable = sum(max(min(now, hi) - lo, 0) for lo, hi in held)
        self.cpu.extend((now, now - t0 - runnable, runnable))

    monkeypatch.setattr(SampledThread, "read_sched", read)
    stepscope.start(path, stepscope.ProfilerOptions(python_sampler_hz=500))
    for s in range(10):
        with stepscope.step(s):
            _spin(0.02)
            if s == 6:
                if waiting:  # open until the spin ends: the sums grow while it runs
                    held.append([time.perf_counter_ns(), 2**62])
                _spin(0.3)
                if waiting:
                    held[-1][1] = time.perf_counter_ns()
    out = stepscope.stop()
    assert out is not None
    return list(stepscope.Analysis(out, use_cache=False).tool("diagnostics").findings)


def test_slow_steps_that_waited_for_a_core_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow step's extra time spent runnable is the cores' doing, not its work's."""
    (slow,) = [f for f in _slow_step(tmp_path, monkeypatch, True) if f.id == "slow_steps"]
    assert slow.steps[0] == 6 and slow.metrics["waited_for_core"] is True
    assert "their thread was waiting for a CPU core, beyond the other steps' median" in (
        slow.summary
    )
    assert slow.fix == SLOW_WAITED_FIX


def test_slow_steps_on_their_core_do_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (slow,) = [f for f in _slow_step(tmp_path, monkeypatch, False) if f.id == "slow_steps"]
    assert slow.steps[0] == 6 and slow.metrics["waited_for_core"] is False
    assert "waiting for a CPU core" not in slow.summary and slow.fix != SLOW_WAITED_FIX


def _finding(id_: str, host: str) -> Finding:
    return Finding(id_, id_, "high", host, "seen", "fix", 1, metrics={"runnable_pct": 80.0})


def test_a_job_whose_every_rank_waits_says_it_once() -> None:
    """Every rank waiting is the job's finding (decision 687): the hosts' own are left out."""
    per_host = [_finding("cores_wait", h) for h in ("a", "b")]
    job = _finding("job_cores_wait", "")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(runner, "diagnose_across", lambda ranks, options: [job])
        m.setattr(runner, "discount_waiting", lambda f, ranks: list(f))
        out = runner.combine_hosts(per_host, [object(), object()], {})  # type: ignore[list-item]
    assert [f.id for f in out] == ["job_cores_wait"]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(runner, "diagnose_across", lambda ranks, options: [])
        m.setattr(runner, "discount_waiting", lambda f, ranks: list(f))
        out = runner.combine_hosts(per_host, [object(), object()], {})  # type: ignore[list-item]
    assert [f.id for f in out] == ["cores_wait"]  # the two hosts' said once
