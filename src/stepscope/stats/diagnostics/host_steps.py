"""Host-side findings from the step breakdown: input-bound steps and untraced host work.

They use the overview's own thresholds and wording (`stepscope.stats.advice`), so the overview's
verdict, `stepscope report` and the diagnostics page say the same thing:

- ``input_bound``: input >= 20% of the step time (high) or >= 5% (medium), with the input
  events that take the time;
- ``untraced_host_work`` (host-only profiles): "All Others" >= 15% of the step time (high from
  30%), located on
  the step thread (the traced events around the gaps) and, with the Python stack sampler,
  named by Python function. When input is near zero this is the verdict's own reason.
"""

from __future__ import annotations

import numpy as np

from stepscope.stats.advice import HIGH_INPUT, HIGH_OTHER, MODERATE_INPUT, where_untraced
from stepscope.stats.diagnostics.base import EventEvidence, Finding, HostData, top_by_name
from stepscope.stats.events import EventType
from stepscope.stats.intervals import merge, overlap_with

VERY_HIGH_OTHER = 30.0  # % of step time: untraced host work this large is "high"


def _percent(data: HostData, category: str) -> tuple[float, int]:
    total = data.total_step_ns
    ns = int(data.steps.category_ns()[category].sum())
    return (100.0 * ns / total if total else 0.0), ns


def _input(data: HostData) -> tuple[float, int, int]:
    """Input share, input time and the part of it staged inside the steps (building the batch
    and copying it to the device, `stepscope.stats.steps.staging`), as the verdict counts."""
    _, ns = _percent(data, "input")
    staged = int(data.steps.staged_ns.sum()) if len(data.steps.staged_ns) else 0
    total = data.total_step_ns
    return (100.0 * (ns + staged) / total if total else 0.0), ns + staged, staged


def input_bound(data: HostData, options: dict[str, str]) -> Finding | None:
    """Steps waiting for input, as the overview classifies them."""
    pct, ns, staged = _input(data)
    if pct < MODERATE_INPUT:
        return None
    p = data.profile
    waits = np.flatnonzero(data.types == int(EventType.HOST_WAIT_INPUT))
    lo, hi = data.step_windows
    w_lo, w_hi = merge(lo, hi)
    inside = overlap_with(p.start_ns[waits], p.end_ns[waits], w_lo, w_hi)
    events = top_by_name(p, waits[inside > 0], inside[inside > 0])
    return Finding(
        id="input_bound",
        title="Steps wait for input",
        severity="high" if pct >= HIGH_INPUT else "medium",
        host=data.host,
        summary=(
            f"{pct:.1f}% of the step time ({ns / 1e6 / max(data.steps.n_steps, 1):.2f} ms per "
            "step) is spent waiting for input"
            + (
                f" ({staged / 1e6 / max(data.steps.n_steps, 1):.2f} ms of it inside the step, "
                "building the batch and copying it to the device before the step's compute)"
                if staged
                else ""
            )
            + (f", led by '{events[0].name}'." if events else ".")
        ),
        fix=(
            "Prepare batches ahead of the step: tf.data .prefetch(tf.data.AUTOTUNE) and "
            ".map(..., num_parallel_calls=tf.data.AUTOTUNE); PyTorch DataLoader(num_workers=N, "
            "pin_memory=True, persistent_workers=True); a background thread or process for a "
            "Python loader. input_pipeline_analyzer shows which stage is slow."
        ),
        time_ns=ns,
        events=events,
        metrics={"input_pct": pct, "input_ms": ns / 1e6},
    )


def untraced_host_work(data: HostData, options: dict[str, str]) -> Finding | None:
    """'All Others': step time no traced event covers, where it sits and (sampled) which
    Python functions run then."""
    pct, ns = _percent(data, "other")
    # With a device, "All Others" is mostly the device idle with nothing launching: the
    # device checks (launch-bound steps, synchronization...) explain it.
    if pct < HIGH_OTHER or data.steps.has_device:
        return None
    steps = data.steps
    where = where_untraced(steps.untraced, steps.n_steps, data.total_step_ns)
    python = steps.untraced.python
    events = tuple(
        EventEvidence(python.function[k], int(python.samples[k]), int(python.ns[k]), "Python")
        for k in range(min(5, len(python)))
    ) + tuple(
        EventEvidence(f"after '{g.after}', before '{g.before}'", g.steps, g.ns, "gap")
        for g in steps.untraced.places[:3]
    )
    input_pct, _, _ = _input(data)
    reason = (
        "this is not waiting for input (input is "
        f"{input_pct:.1f}%): it is host work no traced op covers"
        if input_pct < 1.0
        else "host work no traced op covers (Python, synchronization or untraced I/O)"
    )
    return Finding(
        id="untraced_host_work",
        title="Untraced host work in the steps",
        severity="high" if pct >= VERY_HIGH_OTHER else "medium",
        host=data.host,
        summary=f"{pct:.1f}% of the step time is 'All Others': {reason}"
        + (f", {where}." if where else "."),
        fix=(
            "Find the Python code in those gaps (the Python functions above, or "
            "ProfilerOptions(python_sampler_hz=...) / python_tracer_level=1 to see it): move "
            "metric/logging work out of the step or run it every N steps, avoid per-step "
            ".item()/.numpy() synchronization, and put the rest inside tf.function / jit / "
            "torch.compile; wrap what must stay in stepscope.trace to measure it."
        ),
        time_ns=ns,
        events=events,
        metrics={"other_pct": pct, "other_ms": ns / 1e6, "thread": steps.untraced.thread},
    )
