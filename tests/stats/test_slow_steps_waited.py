"""Slow steps whose extra time their thread spent waiting for a CPU core say so (decision
701), also when another slow step was hardly read by the sampler: the first step, begun
before the sampler's first reading on a loaded machine, or one the sampler stalled in, made
the finding say nothing of the wait (decision 732). Synthetic profiles: marked steps and
the `Thread CPU` line."""

from __future__ import annotations

import itertools

from stepscope.model import Profile
from stepscope.stats.diagnostics.base import Finding
from stepscope.vocab.profiler import THREAD_CPU_LINE, THREAD_CPU_LINE_OFFSET
from tests.support.analysis import MS, build
from tests.support.fetch_loop import TRAIN, sampled_main
from tests.support.findings import host_findings

STEPS = 12  # the first and the last are dropped (XProf's rule): steps 1-10 are read
SLOW = 6  # 320 ms, its extra 300 ms runnable
OTHER = 3  # slow too, hardly read (the sampler stalled)


def _loop(other_ms: int, unread_ms: int) -> Profile:
    """Marked 20 ms steps on MainThread, step `SLOW` 320 ms, step `OTHER` ``other_ms``; CPU readings
    every 5 ms but over the first ``unread_ms`` of step `OTHER` (the sampler stalled: one reading
    spans it); on a core all the time but the slow step's extra 300 ms, runnable."""
    builder, main, samples = sampled_main()
    cpu = builder.plane("/host:CPU").line(
        THREAD_CPU_LINE_OFFSET + 7, THREAD_CPU_LINE, f"{THREAD_CPU_LINE}: MainThread"
    )
    cpu.display_id = 7
    t = 0
    starts = []
    for k in range(STEPS):
        dur = other_ms if k == OTHER else 320 if k == SLOW else 20
        main.event("train", t * MS, dur * MS, {"step_num": k, "_r": 1})
        main.event("forward", t * MS, dur * MS)
        samples.event("forward", t * MS, dur * MS, {"stack": TRAIN, "samples": max(dur // 5, 1)})
        starts.append(t)
        t += dur
    cuts = sorted(
        {at for at in range(0, t + 1, 5) if not starts[OTHER] < at < starts[OTHER] + unread_ms}
    )
    slow_lo, slow_hi = starts[SLOW] + 20, starts[SLOW] + 320
    for lo, hi in itertools.pairwise(cuts):
        runnable = max(min(hi, slow_hi) - max(lo, slow_lo), 0)
        on = (hi - lo) - runnable if unread_ms == 0 or hi - lo == 5 else 0
        cpu.event(
            "cpu", lo * MS, (hi - lo) * MS, {"on_cpu_ns": on * MS, "runnable_ns": runnable * MS}
        )
    return build(builder)


def _slow_steps(profile: Profile) -> Finding:
    return host_findings(profile)["slow_steps"]


def test_the_slow_steps_wait_is_said() -> None:
    found = _slow_steps(_loop(20, 0))
    assert found.steps == (SLOW,)
    assert found.metrics["waited_for_core"] is True
    assert "300.00 ms of that (100%) their thread was waiting for a CPU core" in found.summary


def test_a_slow_first_step_the_sampler_hardly_read_does_not_hide_it() -> None:
    """Step 3 took 80 ms, unread over its first 60: nothing is known of its wait, and the
    slow step's 300 ms are 300 of the 360 ms lost."""
    found = _slow_steps(_loop(80, 60))
    assert found.steps == (SLOW, OTHER)
    assert found.metrics["waited_for_core"] is True
    assert "300.00 ms of that (83%) their thread was waiting for a CPU core" in found.summary


def test_unread_slow_steps_holding_most_of_the_loss_say_nothing() -> None:
    """Step 3 took 700 ms, hardly read: the slow step's 300 ms are under half the loss."""
    found = _slow_steps(_loop(700, 690))
    assert found.metrics["waited_for_core"] is False
    assert "waiting for a CPU core" not in found.summary
