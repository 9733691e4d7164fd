"""Host-side findings from the step database: input-bound steps, dispatch-bound steps and
untraced host work (from its "bound by" limits), and step-time outliers.

They read the limits the overview's headline ranks (`stepscope.stats.steps.limits`), with the
overview's thresholds, so the headline, `stepscope report` and the diagnostics page say the
same thing:

- ``input_bound``: the input limit (input waits and the batch prepared inside the step)
  >= 20% of the step time (high) or >= 5% (medium), with the input events that take the time;
- ``dispatch_bound``: runs of small dispatched ops (`stepscope.stats.steps.dispatch`) >= 15%
  of the step time (high from 30%), with the ops per step, their median duration and gap,
  the Python function issuing them and what to jit / compile / fuse;
- ``untraced_host_work`` (host-only profiles): step time no traced event covers and that is
  not a wait for a computation running elsewhere (`stepscope.stats.steps.waits`) >= 15%
  (high from 30%), located on the step thread and, with the Python stack sampler, named by
  Python function;
- ``slow_steps``: steps at least 1.5x the median step (and 1 ms longer), when the time they
  lose over the median is >= 2% of the step time (high from 10%), with the limit the extra
  time is in (the headline's, decision 457), and whether they recur every N steps or are
  the profile's first step (not said of a recording that began mid-run: a flight recorder
  save, `StepDb.mid_run`).
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import member
from stepscope.stats.advice import HIGH_INPUT, HIGH_OTHER, MODERATE_INPUT
from stepscope.stats.diagnostics.base import (
    EventEvidence,
    Finding,
    HostData,
    severity,
    top_by_name,
)
from stepscope.stats.diagnostics.cores import SLOW_WAITED_FIX, slow_steps_waited
from stepscope.stats.events import EventType
from stepscope.stats.host.untraced import where_untraced, wrapped_stage
from stepscope.stats.input.ahead import input_ahead
from stepscope.stats.input.input_pipeline import TF_DATA_FIX, held_by_python_fix
from stepscope.stats.input.loader_workers import (
    JUDGED_VERDICTS,
    captured_settings,
    dataloader_fix,
    loader_workers,
)
from stepscope.stats.intervals import merge, overlap_with
from stepscope.stats.steps.limits import LimitType, limit_words
from stepscope.stats.warmup import warmup_count
from stepscope.vocab import tensorflow as tf_names
from stepscope.vocab.serving import INFERENCE_INPUT_FIX, SERVING_FRAMEWORKS

VERY_HIGH_OTHER = 30.0  # % of step time: untraced host work this large is "high"
DISPATCH_SHARE = (15.0, 30.0)  # % of step time in dispatch runs: medium / high


def _capitalized(text: str) -> str:
    return text[0].upper() + text[1:]


def _limit(data: HostData, limit: str) -> tuple[float, int]:
    total = data.total_step_ns
    ns = int(data.steps.limit_ns()[limit].sum())
    return (100.0 * ns / total if total else 0.0), ns


def _input(data: HostData) -> tuple[float, int, int]:
    """Input share and time as the headline counts them (input waits and the batch prepared
    inside the steps, `stepscope.stats.steps.staging`), and the part prepared inside."""
    pct, ns = _limit(data, "input")
    staged = int(data.steps.staged_ns.sum()) if len(data.steps.staged_ns) else 0
    return pct, ns, min(staged, ns)


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
    waits, inside = waits[inside > 0], inside[inside > 0]
    if data.framework != "tensorflow":
        # `stepscope.data` wraps each fetch in TensorFlow's `IteratorGetNextOp::DoCompute`
        # (so XProf sees the wait): name it by the user's stage (`Iterator::Loader`) instead
        waits = _named_stages(data, waits)
    events = top_by_name(p, waits, inside) or _staged_evidence(data, staged)
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
                "building the batch before the step's first model op)"
                if staged
                else ""
            )
            + (
                ", mostly with the step's thread held in TensorFlow's calls while the tf.data "
                "map's Python ran"
                + (" or the model's ops slowed beside it." if _map_python_ns(data)[1] else ".")
                if _mostly_held(data, ns)
                else f", led by '{events[0].name}'."
                if events
                else "."
            )
        ),
        fix=_input_fix(data),
        time_ns=ns,
        events=events,
        metrics={"input_pct": pct, "input_ms": ns / 1e6},
    )


def _staged_evidence(data: HostData, staged: int) -> tuple[EventEvidence, ...]:
    """Evidence of input made inside the steps when nothing waited for a batch (a serving
    step preparing its inputs, an HF pipeline's preprocess): the traced Python function the
    staged time went to, else the staged windows themselves, with the steps that have one."""
    if not staged:
        return ()
    steps = int((data.steps.staged_ns > 0).sum())
    frames = data.steps.limits.staged_frames
    name = frames[0][0] if frames else "(host work before the step's first model op)"
    return (EventEvidence(name, steps, staged, "building the batch before the first model op"),)


def _map_python_ns(data: HostData) -> tuple[int, int]:
    """The input time the tf.data pipeline's Python cost the steps, all steps: held up by it
    (`LimitTable.held_ns`, decision 495) or the model's ops slowed beside it
    (`LimitTable.slowed_ns`, decision 525); and the slowed part."""
    limits, n = data.steps.limits, data.steps.n_steps
    held = int(limits.held_ns.sum()) if len(limits.held_ns) == n else 0
    slowed = int(limits.slowed_ns.sum()) if len(limits.slowed_ns) == n else 0
    return held + slowed, slowed


def _mostly_held(data: HostData, input_ns: int) -> bool:
    """Whether most of the input time is the tf.data pipeline's Python's (`_map_python_ns`)."""
    return 2 * _map_python_ns(data)[0] > input_ns


def _input_fix(data: HostData) -> str:
    """The generic fix, or, where a DataLoader's workers were captured: the workers'
    verdict's advice (what the overview says), else the changes that loader can make from
    its settings (not the settings it has); for steps held up mostly by the tf.data
    pipeline's Python, its own fix."""
    if _mostly_held(data, _input(data)[1]):
        cost, slowed = _map_python_ns(data)
        total = max(data.total_step_ns, 1)
        per_step = cost / max(data.steps.n_steps, 1) / 1e6
        gil = data.steps.limits.python.holds_gil
        return held_by_python_fix(100.0 * cost / total, per_step, 100.0 * slowed / total, gil)
    judged = [
        w.advice
        for w in loader_workers(
            data.profile, data.steps, warmup_count(data.steps.dur_ns, mid_run=data.steps.mid_run)
        )
        if w.verdict in JUDGED_VERDICTS and w.advice
    ]
    if judged:
        return judged[0]
    limits = data.steps.limits
    if limits.framework in SERVING_FRAMEWORKS and limits.serves:
        return (
            INFERENCE_INPUT_FIX[0].upper()
            + INFERENCE_INPUT_FIX[1:]
            + ". input_pipeline_analyzer shows where the time before the model goes."
        )
    settings = captured_settings(data.profile)
    if settings:
        return (
            "Prepare batches ahead of the step: "
            + dataloader_fix(settings, data.steps.has_device)
            + ". input_pipeline_analyzer shows which stage is slow and what the workers do."
        )
    # the profile's own framework's loader (decisions 548, 551), as the advice says it
    ahead = input_ahead(limits.framework, data.steps.has_device)
    return (
        f"Prepare batches ahead of the step: {ahead}. input_pipeline_analyzer shows which "
        "stage is slow."
    )


def _named_stages(data: HostData, waits: np.ndarray) -> np.ndarray:
    """Each ``IteratorGetNextOp::DoCompute`` of ``waits`` replaced by the root input stage it
    wraps on its thread (same order; others kept)."""
    p = data.profile
    wrapper = p.strings.id_of(tf_names.GET_NEXT_KERNELS[0])
    if wrapper < 0:
        return waits
    out = waits.copy()
    stages = p.strings.ids_matching(tf_names.is_root_iterator)
    for k in np.flatnonzero(p.name[waits] == wrapper).tolist():
        inner = wrapped_stage(p, int(waits[k]), stages)
        if inner >= 0:
            out[k] = inner
    return out


def dispatch_bound(data: HostData, options: dict[str, str]) -> Finding | None:
    """Steps spent dispatching many small ops one at a time (`stepscope.stats.steps.dispatch`)."""
    pct, ns = _limit(data, "dispatch")
    limits = data.steps.limits
    d = limits.dispatch
    if pct < DISPATCH_SHARE[0] or not len(d.ops):
        return None
    n = max(data.steps.n_steps, 1)
    top = d.top_ops[0][0] if d.top_ops else "?"
    caller = f", issued by {d.caller}" if d.caller else ""
    worst = np.argsort(-data.steps.limit_ns()["dispatch"], kind="stable")[:5]
    return Finding(
        id="dispatch_bound",
        title="Dispatch-bound steps",
        severity="high" if pct >= DISPATCH_SHARE[1] else "medium",
        host=data.host,
        summary=(
            f"{pct:.1f}% of the step time ({ns / 1e6 / n:.2f} ms per step) goes to issuing "
            f"{d.ops_per_step():.0f} small ops per step one at a time, led by '{top}'"
            f"{caller}: each takes {d.median_op_ns / 1e3:.1f} µs to dispatch (median), "
            f"{d.median_gap_ns / 1e3:.1f} µs of Python between them, while the work they "
            "queue is tiny."
        ),
        fix=_capitalized(d.fix(limits.framework, limits.trains)) + ".",
        time_ns=ns,
        steps=data.step_numbers(worst),
        events=tuple(EventEvidence(name, count, 0, "dispatched op") for name, count in d.top_ops),
        metrics={
            "dispatch_pct": pct,
            "dispatch_ms": ns / 1e6,
            "ops_per_step": d.ops_per_step(),
            "median_op_us": d.median_op_ns / 1e3,
            "median_gap_us": d.median_gap_ns / 1e3,
            "caller": d.caller,
        },
    )


def untraced_host_work(data: HostData, options: dict[str, str]) -> Finding | None:
    """Step time no traced event covers and that waits for no computation elsewhere: where
    it sits and (sampled) which Python functions run then."""
    total = data.total_step_ns
    table = data.steps.limits.ns
    # With a device, untraced time is mostly the device idle with nothing launching: the
    # device checks (launch-bound steps, synchronization...) explain it.
    if data.steps.has_device or not total or len(table) != data.steps.n_steps:
        return None
    ns = int(table[:, int(LimitType.UNTRACED) // 10].sum())
    pct = 100.0 * ns / total
    if pct < HIGH_OTHER:
        return None
    steps = data.steps
    where = where_untraced(steps.untraced, steps.n_steps, total)
    python = steps.untraced.python
    events = tuple(
        EventEvidence(
            python.function[k],
            int(python.samples[k]),
            int(python.ns[k]),
            "Python (traced)"
            if python.traced[k]
            else f"Python, too few samples (n={int(python.samples[k])})"
            if python.too_few(k)
            else "Python",
        )
        for k in python.leading(5)
    ) + tuple(
        EventEvidence(f"after '{g.after}', before '{g.before}'", g.steps, g.ns, "gap")
        for g in steps.untraced.places[:3]
    )
    input_pct, _, _ = _input(data)
    reason = (
        "this is not waiting for input (input is "
        f"{input_pct:.1f}%) nor for a computation: it is host work no traced op covers"
        if input_pct < 1.0
        else "host work no traced op covers (Python, synchronization or untraced I/O)"
    )
    return Finding(
        id="untraced_host_work",
        title="Untraced host work in the steps",
        severity="high" if pct >= VERY_HIGH_OTHER else "medium",
        host=data.host,
        summary=f"{pct:.1f}% of the step time is untraced: {reason}"
        + (f", {where}." if where else "."),
        fix=(
            "Find the Python code in those gaps (the Python functions above, or "
            "ProfilerOptions(python_sampler_hz=...) / python_tracer_level=1 to see it): move "
            "metric/logging work out of the step or run it every N steps, and put the rest "
            "inside tf.function / jit / torch.compile; wrap what must stay in stepscope.trace "
            "to measure it."
        ),
        time_ns=ns,
        events=events,
        metrics={"untraced_pct": pct, "untraced_ms": ns / 1e6, "thread": steps.untraced.thread},
    )


# Step-time outliers: a step at least SLOW_RATIO times the median step and SLOW_MIN_EXCESS_NS
# longer; judged from SLOW_MIN_STEPS steps (fewer give no median to trust). The finding
# counts when the time the slow steps lose (their excess over the median) is a share of the
# step time: medium from 2%, high from 10%.
SLOW_RATIO = 1.5
SLOW_MIN_EXCESS_NS = 1_000_000
SLOW_MIN_STEPS = 5
SLOW_SHARE = (0.02, 0.10)
# The fix for slow steps by the limit their extra time is in (`stepscope.stats.steps.limits`,
# the headline's; decision 457): XProf's categories put a loop's fetch from a Python iterator
# in "all others", where the limits count it as input. Input's fix is `_slow_input_fix`.
_SLOW_FIXES = {
    "compilation": "those steps compile again: a new input shape or a Python value traced as "
    "a constant; pad or bucket shapes, mark dynamic dimensions, pass such values as tensors",
    "collectives": "those steps wait longer in collectives: for another rank (the pod viewer "
    "and the host_skew finding name the late one), or a larger message or busier links on "
    "those steps",
    "host": "host work runs on those steps only: periodic logging, metrics, checkpointing, "
    "evaluation or garbage collection; run it less often, on another thread, or call "
    "gc.freeze() after start-up",
}
_SLOW_COMPUTE = {
    True: "the device computes more on those steps: longer sequences or larger batches; "
    "bucket inputs by length",
    # on the host, "compute" is every traced op: the model's and the program's own spans
    False: "the traced host work of those steps takes longer: work that runs on those steps "
    "only (periodic logging, metrics, checkpointing, evaluation: run it less often or on "
    "another thread), larger inputs on those steps, or the cores taken meanwhile (the "
    "loader's workers, other processes: the load average)",
}
_SLOW_FIX_DEFAULT = (
    "something runs on those steps only (periodic logging, checkpointing, evaluation, "
    "garbage collection); open the slowest step in the trace viewer"
)


def _slow_input_fix(data: HostData) -> str:
    """What to change when slow steps wait longer for their batch: for the loop's own Python
    iterator, or for the loaders captured, without asking for a setting they already have."""
    fetched = data.steps.fetched
    if fetched.counted and fetched.ns.any() and fetched.from_queue():
        return (
            f"the loop waits longer in {fetched.function[0]} on those steps: the thread or "
            "process filling its queue made those batches late (a cold cache, a file "
            "boundary, a CPU taken meanwhile); make batches in more producer processes"
        )
    if fetched.counted and fetched.ns.any():
        return (
            f"the loop's Python iterator {fetched.function[0]} takes longer to make those "
            "steps' batches (a cold cache, a file boundary, a CPU taken meanwhile), and the "
            "step waits for all of it: make batches ahead of the step, in worker processes"
        )
    settings = captured_settings(data.profile)
    if (
        not settings
        and data.framework == "tensorflow"
        and len(data.profile.strings.ids_matching(tf_names.is_root_iterator))
    ):
        # a tf.data pipeline's stages (a captured DataLoader's are named as stages too, with
        # its settings): the pipeline's own settings, not a loader's (decision 469)
        return (
            "the tf.data pipeline stalls on those steps (a cold cache, a shard or file "
            "boundary, a slow map or read): " + TF_DATA_FIX
        )
    changes = [
        f"prefetch deeper (prefetch_factor, now {settings[0]['prefetch_factor']})"
        if settings and "prefetch_factor" in settings[0]
        else "prefetch deeper",
        "add loader workers",
    ]
    if not settings or not all(s.get("persistent_workers") for s in settings):
        changes.append("keep workers persistent")
    return (
        "the input pipeline stalls on those steps (a cold cache, a shard or file boundary, a "
        "slow worker, an epoch's first batches): " + ", ".join(changes)
    )


def slow_fix(data: HostData, cause: str) -> str:
    """What to change for steps that spend more time in ``cause`` (a limit), as a sentence."""
    if cause == "input":
        fix = _slow_input_fix(data)
    elif cause == "compute":
        fix = _SLOW_COMPUTE[data.steps.has_device]
    else:
        fix = _SLOW_FIXES.get(cause, _SLOW_FIX_DEFAULT)
    return fix[0].upper() + fix[1:] + "."


def slow_steps(data: HostData, options: dict[str, str]) -> Finding | None:
    """Steps much slower than the median step: which, how much they lose, in which category,
    and whether they recur every N steps or are the profile's first step."""
    steps = data.steps
    if steps.n_steps < SLOW_MIN_STEPS:
        return None
    dur = steps.dur_ns
    # Warm-up steps (a first call's compile: `stepscope.stats.warmup`) are judged apart: the
    # steps after them against their own median, and the warm-up only when none of those is
    # slow enough to tell (decision 363).
    warm = warmup_count(dur, mid_run=steps.mid_run)
    median = int(np.median(dur[warm:]))
    excess = dur - median
    slow = np.flatnonzero((dur >= SLOW_RATIO * median) & (excess >= SLOW_MIN_EXCESS_NS))
    # steps doing extra work every N steps are the periodic_steps finding's (decision 580)
    periodic = data.periodic
    apart = periodic.steps if periodic is not None else np.zeros(0, np.int64)
    slow = slow[~member(slow, apart)]  # not np.setdiff1d: it loads numpy.ma (decision 1051)
    total = data.total_step_ns
    level = None
    if warm:
        later = slow[slow >= warm]
        lost = int(excess[later].sum())
        steady_ns = int(dur[warm:].sum())
        level = severity(lost / steady_ns, *SLOW_SHARE) if steady_ns and len(later) else None
        slow = later if level is not None else slow[slow < warm]
    if level is None:
        lost = int(excess[slow].sum())
        level = severity(lost / total, *SLOW_SHARE) if total and len(slow) else None
    else:
        total = int(dur[warm:].sum())
    if level is None:
        return None
    # the category the slow steps spend their extra time in, against the other steps' median
    normal = np.setdiff1d(np.arange(steps.n_steps), np.union1d(slow, apart))
    grown = {
        name: int(np.maximum(ns[slow] - np.median(ns[normal]), 0).sum())
        for name, ns in steps.limit_ns().items()
    }
    cause = max(grown, key=lambda name: grown[name])
    numbers = data.step_numbers(slow)
    every = np.diff(numbers)
    period = int(every[0]) if len(slow) >= 3 and every[0] > 1 and (every == every[0]).all() else 0
    # the profile's first step is the program's only when the recording began with it: a
    # flight recorder's ring of a running loop begins at any step (decision 530)
    first_only = len(slow) == 1 and slow[0] == 0 and not steps.mid_run
    warm_up = bool(warm) and int(slow[-1]) < warm
    worst = slow[np.argsort(-dur[slow], kind="stable")]
    waited = "" if first_only or warm_up else slow_steps_waited(data, slow, normal, lost)
    if first_only:
        when = "The profile's first step takes"
    elif warm_up:
        when = f"The profile's first {len(slow)} steps (warm-up) take up to"
    elif period:
        when = f"Every {period} steps, a step takes up to"
    elif warm:
        when = f"After the warm-up, {len(slow)} of {steps.n_steps - warm} steps take up to"
    else:
        when = f"{len(slow)} of {steps.n_steps} steps take up to"
    fix = (
        "The first step of a profile is seldom the steady state: a program's first steps "
        "compile, autotune and grow the allocator, and a profiler starting slows the step it "
        "starts in. Profile after warm-up (torch.profiler's schedule(wait=1, warmup=1), or "
        "stepscope.start() a few steps in) and judge the steps after it."
        + (
            " The overview's steady_state and stepscope report's 'Once warm' give the steps "
            "after the warm-up."
            if warm
            else ""
        )
        if first_only or warm_up
        else SLOW_WAITED_FIX
        if waited
        else slow_fix(data, cause)
    )
    return Finding(
        id="slow_steps",
        title="Some steps are much slower than the others",
        severity=level,
        host=data.host,
        summary=(
            f"{when} {dur[worst[0]] / median:.1f}x the median step "
            f"({dur[worst[0]] / 1e6:.2f} ms against {median / 1e6:.2f} ms), losing "
            f"{lost / 1e6:.2f} ms ({100 * lost / total:.1f}% of the step time)"
            + (f", mostly in {limit_words(cause)}" if grown[cause] else "")
            + (f"; {waited}" if waited else "")
            + "."
        ),
        fix=fix,
        time_ns=lost,
        steps=data.step_numbers(worst),
        events=tuple(
            EventEvidence(
                f"step {int(steps.step_num[k])}",
                1,
                int(dur[k]),
                f"{dur[k] / median:.1f}x the median, +{excess[k] / 1e6:.2f} ms",
            )
            for k in worst[:5].tolist()
        ),
        metrics={
            "slow_steps": len(slow),
            "median_step_ms": median / 1e6,
            "worst_ratio": float(dur[worst[0]] / median),
            "lost_ms": lost / 1e6,
            "lost_pct": 100 * lost / total,
            "cause": cause if grown[cause] else "",
            "every_n_steps": period,
            "waited_for_core": bool(waited),
        },
    )
