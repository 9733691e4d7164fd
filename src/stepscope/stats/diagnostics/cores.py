"""The finding of a job whose every rank waits for a CPU core (decision 687): the whole job,
not one rank (`stats.stragglers_cores`), with what to change."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.stats.diagnostics.base import Finding, severity
from stepscope.stats.steps.pairing import HostSteps, pair_host_steps
from stepscope.stats.stragglers_cores import CORES_FIX, cores_wait
from stepscope.stats.stragglers_types import Rank

HIGH_WAIT = 0.5  # every rank runnable, not running, half its steps' time: high


def job_cores_wait(ranks: Sequence[Rank], options: dict[str, str]) -> Finding | None:
    """Every rank's steps' thread runnable but waiting for a core much of its steps."""
    usable = [r for r in ranks if r.steps.n_steps]
    if len(usable) < 2:
        return None
    pairing = pair_host_steps(
        [HostSteps(r.host, r.steps.step_num, r.steps.start_ns, r.steps.dur_ns) for r in usable]
    )
    step_ns = float(np.median(np.concatenate([r.steps.dur_ns for r in usable])))
    found = cores_wait(usable, pairing, step_ns)
    if found is None:
        return None
    least = float(found.runnable.min())
    return Finding(
        id="job_cores_wait",
        title="Every rank waits for a CPU core",
        severity=severity(least, 0.0, HIGH_WAIT) or "medium",
        host="",
        summary=f"{found.text}.",
        fix=CORES_FIX,
        time_ns=found.runnable_ns,
        metrics={
            "min_runnable_pct": 100 * least,
            "max_runnable_pct": 100 * float(found.runnable.max()),
            "min_on_cpu_pct": 100 * float(found.on_cpu.min()),
            "max_on_cpu_pct": 100 * float(found.on_cpu.max()),
        },
    )
