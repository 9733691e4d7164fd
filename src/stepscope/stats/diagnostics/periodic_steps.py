"""The periodic_steps finding: every N steps, a step does extra work (decision 580).

A checkpoint saved every 10 steps, an evaluation every 15, metrics gathered every 50: what
the user changes is that work's frequency or its thread, so the finding names the period,
the steps, the limit the extra time is in (`stepscope.stats.steps.periodic`) and what the
stack sampler saw there more than in the other steps. The slow_steps finding judges the
other steps without them.
"""

from __future__ import annotations

import numpy as np

from stepscope.stats.diagnostics.base import EventEvidence, Finding, HostData, severity
from stepscope.stats.diagnostics.host_steps import SLOW_SHARE, slow_fix
from stepscope.stats.grown_functions import grown_functions
from stepscope.stats.steps.limits import limit_words
from stepscope.stats.warmup import warmup_count

LISTED = 6  # step numbers listed in the summary; more are given as the first ones and a count


def _numbers(nums: tuple[int, ...]) -> str:
    if len(nums) > LISTED:
        return ", ".join(str(k) for k in nums[: LISTED - 1]) + f", ... ({len(nums)} steps)"
    return ", ".join(str(k) for k in nums[:-1]) + f" and {nums[-1]}"


def periodic_steps(data: HostData, options: dict[str, str]) -> Finding | None:
    """Steps at one place of a period that spend more time in one limit than the others:
    how much, in what, what the sampler saw there, and the fix for that limit."""
    steps = data.steps
    dur = steps.dur_ns
    warm = warmup_count(dur, mid_run=steps.mid_run)
    found = data.periodic
    if found is None:
        return None
    total = int(dur[warm:].sum())
    lost = int(found.extra_ns.sum())
    level = severity(lost / total, *SLOW_SHARE) if total else None
    if level is None:
        return None
    nums = data.step_numbers(found.steps)
    elsewhere = np.ones(steps.n_steps, bool)
    elsewhere[:warm] = False
    elsewhere[found.steps] = False
    median = float(np.median(dur[elsewhere] if elsewhere.any() else dur[warm:])) / 1e6
    inside = np.zeros(steps.n_steps, bool)
    inside[found.steps] = True
    among = np.arange(steps.n_steps) >= warm  # a warm-up's imports are no other step's work
    seen = grown_functions(data.profile, steps, inside, among)
    label = limit_words(found.limit)
    return Finding(
        id="periodic_steps",
        title="Some steps do extra work every N steps",
        severity=level,
        host=data.host,
        summary=(
            f"Every {found.every} steps (steps {_numbers(nums)}), a step spends "
            f"{float(np.median(found.extra_ns)) / 1e6:.2f} ms more (median) in {label} than "
            f"the other steps do: {lost / 1e6:.2f} ms in all "
            f"({100 * lost / total:.1f}% of the step time); those steps take "
            f"{float(np.median(dur[found.steps])) / 1e6:.2f} ms (median) against "
            f"{median:.2f} ms for the others"
            + (
                f"; the stack sampler saw there, more than in the other steps, {seen}"
                if seen
                else ""
            )
            + "."
        ),
        fix=slow_fix(data, found.limit),
        time_ns=lost,
        steps=nums,
        events=tuple(
            EventEvidence(
                f"step {nums[i]}", 1, int(dur[k]), f"+{found.extra_ns[i] / 1e6:.2f} ms in {label}"
            )
            for i, k in enumerate(found.steps.tolist()[:5])
        ),
        metrics={
            "every_n_steps": found.every,
            "limit": found.limit,
            "periodic_steps": len(nums),
            "extra_ms_median": float(np.median(found.extra_ns)) / 1e6,
            "lost_ms": lost / 1e6,
            "lost_pct": 100 * lost / total,
        },
    )
