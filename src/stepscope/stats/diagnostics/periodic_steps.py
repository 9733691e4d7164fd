"""The periodic_steps finding: every N steps, a step does extra work (decision 580).

A checkpoint saved every 10 steps, an evaluation every 15, metrics gathered every 50: what
the user changes is that work's frequency or its thread, so the finding names the period,
the steps, the limit the extra time is in (`stepscope.stats.steps.periodic`) and what the
stack sampler saw there more than in the other steps. The slow_steps finding judges the
other steps without them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from stepscope.stats.diagnostics.base import EventEvidence, Finding, HostData, severity
from stepscope.stats.diagnostics.host_steps import SLOW_SHARE, slow_fix
from stepscope.stats.diagnostics.other_pass_words import IN_STEPS_FIX, listed_steps
from stepscope.stats.grown_functions import grown_functions
from stepscope.stats.steps.limits import limit_words
from stepscope.stats.steps.periodic import Periodic
from stepscope.stats.steps.periodic_parts import periodic_parts
from stepscope.stats.steps.run_ahead import RunAhead
from stepscope.stats.warmup import warmup_count

# the fix when the period is the loop's waits for the computation it queued (decision 640)
CATCH_UP_FIX = (
    "Nothing to remove: it is how an asynchronous loop runs. Read the step time as the loop's "
    "rate from one wait to the next ({rate:.2f} ms per step), not as the steps' own times; "
    "to see each step's own computation in the trace, wait for its result in every step while "
    "profiling (jax.block_until_ready, or reading its loss). Wait less often (log every N "
    "steps, fetch metrics in one read) only where a wait leaves the computation idle"
)


def periodic_steps(data: HostData, options: dict[str, str]) -> Finding | None:
    """Steps at one place of a period that spend more time in one limit than the others:
    their whole extra time, the limits it is in, another loader's pass inside them, what the
    sampler saw there, and the fix for the largest part."""
    steps = data.steps
    dur = steps.dur_ns
    warm = warmup_count(dur, mid_run=steps.mid_run)
    found = data.periodic
    if found is None:
        return None
    total = int(dur[warm:].sum())
    nums = data.step_numbers(found.steps)
    elsewhere = np.ones(steps.n_steps, bool)
    elsewhere[:warm] = False
    elsewhere[found.steps] = False
    median = float(np.median(dur[elsewhere] if elsewhere.any() else dur[warm:])) / 1e6
    ahead = data.run_ahead
    # the profile's last step is judged by none (what follows the loop ends it)
    if ahead is not None and np.isin(found.steps, np.r_[ahead.waits, steps.n_steps - 1]).all():
        lost = int(found.extra_ns.sum())
        level = severity(lost / total, *SLOW_SHARE) if total else None
        if level is None:
            return None
        return _catching_up(data, found, ahead, nums, lost, total, median)
    # the whole extra of those steps, not only the limit the period was found in (decision 780)
    parts = periodic_parts(
        data.profile, steps.start_ns, dur, steps.limit_ns(), found.steps, elsewhere, found.extra_ns
    )
    lost = int(parts.extra_ns.sum())
    level = severity(lost / total, *SLOW_SHARE) if total else None
    if level is None:
        return None
    inside = np.zeros(steps.n_steps, bool)
    inside[found.steps] = True
    among = np.arange(steps.n_steps) >= warm  # a warm-up's imports are no other step's work
    seen = grown_functions(data.profile, steps, inside, among)
    extra_ms = float(np.median(parts.extra_ns)) / 1e6
    only = [name for name, _ in parts.by_limit] in ([], [found.limit])
    where = (
        f" in {limit_words(found.limit)} than the other steps do"
        if only
        else " than the other steps do, "
        + _and([f"{ns / 1e6:.2f} ms in {limit_words(n)}" for n, ns in parts.by_limit])
        + " (medians)"
    )
    loader = (
        f"; each holds {parts.extra_fetches} more DataLoader fetches than the other steps: "
        "another loader's pass (an evaluation or validation loop) runs inside them"
        if parts.extra_fetches
        else ""
    )
    cause = parts.by_limit[0][0] if parts.by_limit else found.limit
    fix = (
        IN_STEPS_FIX.format(n=parts.extra_fetches) if parts.extra_fetches else slow_fix(data, cause)
    )
    detail = f" in {limit_words(found.limit)}" if only else ""
    return Finding(
        id="periodic_steps",
        title="Some steps do extra work every N steps",
        severity=level,
        host=data.host,
        summary=(
            f"Every {found.every} steps (steps {listed_steps(nums)}), a step spends "
            f"{extra_ms:.2f} ms more (median){where}: {lost / 1e6:.2f} ms in all "
            f"({100 * lost / total:.1f}% of the step time); those steps take "
            f"{float(np.median(dur[found.steps])) / 1e6:.2f} ms (median) against "
            f"{median:.2f} ms for the others"
            + loader
            + (
                f"; the stack sampler saw there, more than in the other steps, {seen}"
                if seen
                else ""
            )
            + "."
        ),
        fix=fix,
        time_ns=lost,
        steps=nums,
        events=_evidence(found, nums, dur, lambda i: f"+{parts.extra_ns[i] / 1e6:.2f} ms{detail}"),
        metrics=_metrics(found, nums, lost, total)
        | {
            "extra_ms_median": extra_ms,
            "limits": ",".join(name for name, _ in parts.by_limit) or found.limit,
            "extra_fetches": parts.extra_fetches,
        },
    )


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _catching_up(
    data: HostData,
    found: Periodic,
    ahead: RunAhead,
    nums: tuple[int, ...],
    lost: int,
    total: int,
    median: float,
) -> Finding:
    """The periodic steps are the waits of a loop running ahead of its computation: each
    waits for what the steps since the previous wait queued, no extra work (decision 640)."""
    dur = data.steps.dur_ns
    return Finding(
        id="periodic_steps",
        title="Every N steps the loop waits for the computation it queued",
        severity="low",
        host=data.host,
        summary=(
            f"Every {found.every} steps (steps {listed_steps(nums)}), a step waits for the "
            f"computation of the {found.every - 1} steps before it as well as its own: "
            f"the loop runs ahead of its computation (asynchronous dispatch), and those steps "
            f"return once it is queued ({ahead.ahead_median_ns / 1e6:.2f} ms, median), the "
            f"waiting ones take {float(np.median(dur[found.steps])) / 1e6:.2f} ms (median; "
            f"the other steps' {median:.2f} ms). That is no extra work: the loop takes "
            f"{ahead.per_step_ns / 1e6:.2f} ms per step from one wait to the next."
        ),
        fix=CATCH_UP_FIX.format(rate=ahead.per_step_ns / 1e6) + ".",
        time_ns=lost,
        steps=nums,
        events=_evidence(found, nums, dur, lambda _: f"waits for {found.every} steps' computation"),
        metrics=_metrics(found, nums, lost, total)
        | {"run_ahead_ms_per_step": ahead.per_step_ns / 1e6},
    )


def _evidence(
    found: Periodic, nums: tuple[int, ...], dur: np.ndarray, detail: Callable[[int], str]
) -> tuple[EventEvidence, ...]:
    """The first five periodic steps as evidence, each with its time and ``detail(i)`` (``i``:
    its place among the periodic steps), both findings'."""
    return tuple(
        EventEvidence(f"step {nums[i]}", 1, int(dur[k]), detail(i))
        for i, k in enumerate(found.steps.tolist()[:5])
    )


def _metrics(
    found: Periodic, nums: tuple[int, ...], lost: int, total: int
) -> dict[str, float | int | str]:
    """The period's metrics, both findings' (extra work, or a loop catching up)."""
    return {
        "every_n_steps": found.every,
        "limit": found.limit,
        "periodic_steps": len(nums),
        "extra_ms_median": float(np.median(found.extra_ns)) / 1e6,
        "lost_ms": lost / 1e6,
        "lost_pct": 100 * lost / total,
    }
