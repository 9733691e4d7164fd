"""Warm-up apart from the steady state: the first steps that compile or warm up.

A loop's first step under ``torch.compile``, ``jax.jit`` or ``tf.function`` compiles (a
torch.compile MLP's first step took 9.8 s, the next ones 1.7 ms); the first steps on a GPU
autotune convolutions and grow the allocator. Averaged over 40 steps, such a step makes the
step time 247 ms and the headline "bound by compilation: 99%": true of the profile, not of
the loop the user will run for hours. XProf's figures (step time, breakdown, input verdict)
stay over all steps; stepscope adds the steady state beside them (decision 362):

- Warm-up steps are the leading steps, each at least `WARMUP_RATIO` times the median of the
  steps after it and `WARMUP_MIN_EXCESS_NS` longer, at most a quarter of the steps, leaving
  at least `MIN_STEADY_STEPS` steps; a first step within 3x of the others is no warm-up,
  nor one within `RECUR_RATIO` of a step that recurs after it (`RECUR_STEPS` later steps
  as long: the same wait every other step, decision 630).
  A recording that began mid-run (a flight recorder's ring of a running loop, the capture
  says: `StepSummary.mid_run`) has none: its first kept step is a step like the others.
- Their cause is compilation when the compile is at least `COMPILE_SHARE` of what they grew
  over the steady steps' median (decision 431: a ``jax.jit`` function's first call traces
  and lowers in Python, host compute, then compiles: the backend compile was 44-49% of
  step 0's growth in a small JAX loop, and "mostly host compute" misled); else the category
  (XProf's) that grew the most.
- The steady state is the steps after them: step time, XProf's categories and what bounds
  the steps (`stepscope.stats.bound`), computed as for all steps.
- What the Python stack sampler saw in the warm-up more than once warm (`warmup_python`,
  decision 483): a cause by category ("all others", "input") says where, not what; a
  DataLoader starting its worker processes in step 0 read "mostly all others".
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

import numpy as np

from stepscope.fields import out
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.bound import BoundBy, bound_by
from stepscope.stats.events import CATEGORY_LABELS, CATEGORY_NAMES
from stepscope.stats.grown_functions import grown_functions
from stepscope.stats.host.python_samples import PythonTime, functions_in_steps
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.limit_table import LimitTable
from stepscope.stats.steps.warm import warmup_count as warmup_count
from stepscope.stats.summary import StepStats, StepSummary


def steps_from(summary: StepSummary, first: int, python: PythonTime | None = None) -> StepSummary:
    """The summary of the steps from ``first`` on: every per-step column cut (per-step
    arrays and dicts of them, the limit table's per-step evidence: `_limits_from`); the
    untraced places of those steps with ``python``, the sampler's functions over them
    (`steady_python`), where the summary is one host's with its per-step places (decision
    547); else the untraced places and the Python sampled stay the whole profile's, as
    shares of all steps, as do the dispatch evidence's medians, names and caller."""
    n = summary.n_steps
    changes: dict[str, object] = {}
    for f in fields(summary):
        value = getattr(summary, f.name)
        if f.name in ("rank_dur_ns", "rank_start_ns"):  # (ranks, steps)
            changes[f.name] = value[:, first:] if value.shape[1] == n else value
        elif (isinstance(value, np.ndarray) and value.ndim == 1 and len(value) == n) or (
            f.name == "names"
        ):
            changes[f.name] = value[first:]
        elif (
            isinstance(value, dict)
            and value
            and all(isinstance(v, np.ndarray) and len(v) == n for v in value.values())
        ):
            changes[f.name] = {k: v[first:] for k, v in value.items()}
        else:
            rows = getattr(value, "ns", None)
            # per-step rows of a record: the limits' (steps, limits) table, the fetch times
            if isinstance(value, LimitTable) and len(value.ns) == n:
                changes[f.name] = _limits_from(value, first)
            elif is_dataclass(value) and isinstance(rows, np.ndarray) and len(rows) == n:
                changes[f.name] = replace(value, ns=rows[first:])  # type: ignore[type-var]
    untraced = summary.untraced
    steady = (
        untraced.from_step(first, python)
        if python is not None and len(untraced.place_of_step) == n
        else None
    )
    if steady is not None:
        changes["untraced"] = steady
    elif not untraced.host:  # its times are all steps': divide them by all steps
        host = summary.hosts[0] if summary.hosts else "?"
        changes["untraced"] = replace(untraced, host=host, n_steps=n, step_ns=summary.total_ns())
    return replace(summary, **changes)  # type: ignore[arg-type]


def _limits_from(table: LimitTable, first: int) -> LimitTable:
    """The limit table of the steps from ``first`` on, with its per-step evidence (the
    dispatched ops, the eager JAX overhead, the input held up by a pipeline's Python); the
    rest of the evidence is all steps'."""
    eager = table.eager
    if len(eager.ns) == len(table.ns):
        eager = replace(
            eager,
            span_ns=eager.span_ns[first:],
            ns=eager.ns[first:],
            dispatch_ns=eager.dispatch_ns[first:],
            ops=eager.ops[first:],
        )
    dispatch = table.dispatch
    if len(dispatch.ops) == len(table.ns):
        dispatch = replace(dispatch, ops=dispatch.ops[first:])
    held = table.held_ns
    if len(held) == len(table.ns):  # the input held up by a pipeline's Python, per step
        held = held[first:]
    slowed = table.slowed_ns
    if len(slowed) == len(table.ns):  # the model's ops slowed beside it, per step
        slowed = slowed[first:]
    return replace(
        table,
        ns=table.ns[first:],
        dispatch=dispatch,
        eager=eager,
        held_ns=held,
        slowed_ns=slowed,
    )


@record
class SteadyState:
    """The steps once warm, and the warm-up steps before them."""

    warmup_steps: tuple[int, ...] = out(
        "step numbers of the warm-up steps: the leading steps each at least 3x the median of "
        "the steps after it (and 1 ms longer), at most a quarter of the steps"
    )
    warmup_ms: float = out("the warm-up steps' total time", "ms", 6)
    warmup_step_ms: tuple[float, ...] = out("each warm-up step's time", "ms", 6)
    warmup_percent: float = out("the warm-up steps' share of the total step time", "%", 3)
    warmup_cause: str = out(
        "what the warm-up steps grew by over the steady steps' median: `compilation` when "
        "their compile is a third of it or more (a jit's tracing and lowering are host "
        "compute), else the category (XProf's) that grew the most; '' when none grew"
    )
    steps: int = out("steady steps: the steps after the warm-up")
    median_ms: float = out("median steady step time", "ms", 6)
    step_time: StepStats = out(
        "the steady step time: average, spread and extremes", "ms", key="step_time_ms"
    )
    breakdown_ms: dict[str, float] = out("average per steady step of each category", "ms", 6)
    breakdown_percent: dict[str, float] = out(
        "each category's share of the steady steps' total time", "%", 3
    )
    bound_by: BoundBy = out("what bounds the steady steps, as the overview's `bound_by`")
    statement: str = out("the warm-up and the steady state in one sentence")


# The least share of the warm-up's growth its compile must hold to be named the cause: the
# compiler's own part of a jit's first call (its tracing and lowering are host compute).
COMPILE_SHARE = 1 / 3


def _cause(summary: StepSummary, count: int) -> str:
    """Compilation when the warm-up steps' compile is `COMPILE_SHARE` of what they grew over
    the steady median, else the category that grew the most."""
    grown = {
        name: int(np.maximum(ns[:count] - np.median(ns[count:]), 0).sum())
        for name, ns in summary.category_ns.items()
    }
    total = sum(grown.values())
    if total > 0 and grown.get("compilation", 0) >= COMPILE_SHARE * total:
        return "compilation"
    cause = max(grown, key=lambda name: grown[name])
    return cause if grown[cause] > 0 else ""


def _steps_text(nums: tuple[int, ...]) -> str:
    if len(nums) == 1:
        return f"step {nums[0]}"
    return f"steps {nums[0]}-{nums[-1]}"


def warmup_python(profile: Profile, db: StepDb) -> str:
    """What the stack sampler saw in the warm-up steps (`warmup_count`) more than in the
    steps after, for the warm-up's sentence (`grown_functions`); '' when the sampler saw none
    (or was off)."""
    count = warmup_count(db.dur_ns, mid_run=db.mid_run)
    if not count:
        return ""
    inside = np.zeros(len(db.dur_ns), bool)
    inside[:count] = True
    grown = grown_functions(profile, db, inside)
    return "; the stack sampler saw there, more than once warm, " + grown if grown else ""


def steady_python(profile: Profile, db: StepDb) -> PythonTime:
    """The Python the stack sampler saw in the steps after the warm-up (`warmup_count`), as
    the step database's own (`StepDb.untraced`) is over all of them; empty without a
    warm-up or samples."""
    count = warmup_count(db.dur_ns, mid_run=db.mid_run)
    if not count or not db.untraced.lines:
        return PythonTime.empty()
    end = db.start_ns + db.dur_ns
    return functions_in_steps(profile, db.untraced.lines, db.start_ns[count:], end[count:])


def steady_state(
    summary: StepSummary, seen: str = "", python: PythonTime | None = None
) -> SteadyState | None:
    """The steady state after the warm-up steps, or None when the first step is no outlier;
    ``seen``: what the stack sampler saw in the warm-up (`warmup_python`), said after a
    cause other than compilation (a compile is its own explanation); ``python``: the
    sampler's functions once warm (`steady_python`; see `steps_from`)."""
    count = warmup_count(summary.dur_ns, mid_run=summary.mid_run)
    if not count:
        return None
    steady = steps_from(summary, count, python)
    nums = tuple(int(k) for k in summary.step_num[:count].tolist())
    warm_ns = summary.dur_ns[:count]
    total = summary.total_ns()
    cause = _cause(summary, count)
    median = float(np.median(steady.dur_ns)) / 1e6
    bound = bound_by(steady)
    each = ", ".join(f"{ns / 1e6:.2f} ms" for ns in warm_ns.tolist())
    # the share right after the times it is of: after the cause it read as the cause's share
    statement = (
        f"Warm-up: {_steps_text(nums)} took {each}"
        f" ({100.0 * float(warm_ns.sum()) / total:.1f}% of all the steps' time)"
        + (f", mostly {CATEGORY_LABELS[cause].lower()}" if cause else "")
        + (seen if cause != "compilation" else "")
        + f"; once warm, the {steady.n_steps} steps after take {median:.2f} ms (median)."
    )
    steady_total = steady.total_ns()
    return SteadyState(
        warmup_steps=nums,
        warmup_ms=float(warm_ns.sum()) / 1e6,
        warmup_step_ms=tuple(ns / 1e6 for ns in warm_ns.tolist()),
        warmup_percent=100.0 * float(warm_ns.sum()) / total if total else 0.0,
        warmup_cause=cause,
        steps=steady.n_steps,
        median_ms=median,
        step_time=steady.step_stats(),
        breakdown_ms={c: steady.avg_ms(c) for c in CATEGORY_NAMES},
        breakdown_percent={
            c: 100.0 * float(steady.category_ns[c].sum()) / steady_total if steady_total else 0.0
            for c in CATEGORY_NAMES
        },
        bound_by=bound,
        statement=statement,
    )
