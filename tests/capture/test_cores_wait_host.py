"""A host whose steps' thread waits for a CPU core is told so first (decision 700): its ops
only take longer, so the step-time breakdown calls the wait compute; the stack sampler's CPU
readings (schedstat, decision 646) tell the wait apart. The readings are given here (the
sampler's schedstat read replaced), the capture and the analysis are the real ones."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import stepscope
from stepscope.capture.python_sampler import SampledThread
from stepscope.stats.diagnostics import runner
from stepscope.stats.diagnostics.base import Finding
from stepscope.stats.diagnostics.cores import HOST_FIX

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="schedstat is Linux's")


def _capture(path: Path, monkeypatch: pytest.MonkeyPatch, runnable: float) -> Path:
    """Six 30 ms steps whose thread's readings say it was on a core 20% of the time and
    runnable, waiting for a core, ``runnable`` of it."""
    t0 = time.perf_counter_ns()

    def read(self: SampledThread, now: int) -> None:
        self.cpu.extend((now, (now - t0) // 5, int((now - t0) * runnable)))

    monkeypatch.setattr(SampledThread, "read_sched", read)
    stepscope.start(path, stepscope.ProfilerOptions(python_sampler_hz=200))
    for s in range(6):
        with stepscope.step(s):
            end = time.perf_counter() + 0.03
            while time.perf_counter() < end:
                pass
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
