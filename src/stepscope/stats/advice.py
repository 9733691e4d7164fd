"""XProf's input-bound classification and the advice that follows the "bound by" limits.

Input (XProf's thresholds and wording, ``xprof/convert/op_stats_to_input_pipeline_analysis.cc``
and ``op_stats_to_overview_page.cc``, unchanged so that its line can be checked against
XProf): input share of the total step time >= 20% -> "high", >= 5% -> "moderate", else
"potential" when "all others" >= 3%, else "no". What bounds the steps is stepscope's own
headline (`stepscope.stats.bound`); the advice here follows its limits: dispatch / launch,
Python / host, copies, collectives and idle waits, each flagged "moderate" from its low
threshold and "high" from its high one (kernel launch / dispatch 3/15, all others / host
3/15, output / copies 5/20, collectives (device, and host collective wait) 3/15, waits 3/15).
"""

from __future__ import annotations

from stepscope.fields import out
from stepscope.records import record
from stepscope.stats.bound import BoundBy, compiled_host, host_place, traced_host_device
from stepscope.stats.input.ahead import PYTHON_ITERATOR_AHEAD, QUEUE_AHEAD, input_ahead
from stepscope.stats.steps.limits import label_words
from stepscope.stats.summary import StepSummary, eager_per_step
from stepscope.vocab.compiled import FIX as COMPILED_FIX
from stepscope.vocab.serving import INFERENCE_INPUT_FIX, SERVING_FRAMEWORKS

HIGH_INPUT = 20.0
MODERATE_INPUT = 5.0
POTENTIAL_OTHER = 3.0
HIGH_OTHER = 15.0
THRESHOLDS: dict[str, tuple[float, float]] = {  # category -> (moderate, high), in %
    "output": (5.0, 20.0),
    "kernel_launch": (3.0, 15.0),
    "other": (3.0, 15.0),
    "device_collectives": (3.0, 15.0),
    "collective_wait": (3.0, 15.0),
}
# The advice's limits (`stepscope.stats.steps.limits`) and their (moderate, high) thresholds:
# XProf's for the category each one refines.
LIMIT_THRESHOLDS: dict[str, tuple[float, float]] = {
    "input": (MODERATE_INPUT, HIGH_INPUT),
    "dispatch": THRESHOLDS["kernel_launch"],
    "host": THRESHOLDS["other"],
    "copies": THRESHOLDS["output"],
    "collectives": THRESHOLDS["device_collectives"],
    "waits": (3.0, 15.0),
}
# Diagnostics findings that say (with evidence) what a generic limit line would: with the
# finding in the advice, the generic line is left out so no advice is given twice.
FINDING_TOPICS = {
    "kernel_launch_bound": "dispatch",
    "dispatch_bound": "dispatch",
    "untraced_host_work": "host",
    "collectives": "collectives",
    "low_tensor_core_use": "precision",
}
MIXED_PRECISION_BELOW = 10.0  # % of device compute in 16 bit
# ... and only where the compute is worth speeding up: the limits' lowest grade (% of step
# time). a100_triton_tiny's one 1.8 us kernel in a 13.3 s step was told "Only 0.0% of the
# device compute time runs in 16-bit precision: mixed precision could speed it up".
MIXED_PRECISION_MIN_COMPUTE = 3.0
EAGER_ABOVE = 10.0  # % of op time run eagerly


@record
class InputBound:
    """How input-bound the steps are, and why."""

    classification: str = out(
        "XProf's: `high` (input >= 20%), `moderate` (>= 5%), `potential` (input < 5% but "
        '"other" >= 3%: "could be I/O or Python"), `no` otherwise, `unknown` (no steps)'
    )
    percent: float = out("input share of the total step time (XProf's input)", "%", 3)
    statement: str = out(
        "XProf's conclusion in its words, unchanged (what bounds the steps is `bound_by`)"
    )


def classify_steps(summary: StepSummary) -> InputBound:
    """`classify_input` for a step summary: XProf's classification of its categories."""
    return classify_input(summary.percent("input"), summary.percent("other"), summary.n_steps > 0)


def classify_input(
    input_percent: float, other_percent: float, has_steps: bool = True
) -> InputBound:
    """XProf's input-bound classification and sentence (``xprof/convert/
    op_stats_to_input_pipeline_analysis.cc``)."""
    if not has_steps:
        return InputBound(
            "unknown",
            0.0,
            "No step time measured, so where the time goes in a step cannot be told.",
        )
    if input_percent >= HIGH_INPUT:
        return InputBound(
            "high",
            input_percent,
            f"Your program is HIGHLY input-bound because {input_percent:.1f}% of the "
            "total step time sampled is waiting for input. Therefore, you should "
            "first focus on reducing the input time.",
        )
    if input_percent >= MODERATE_INPUT:
        return InputBound(
            "moderate",
            input_percent,
            f"Your program is MODERATELY input-bound because {input_percent:.1f}% of "
            "the total step time sampled is waiting for input. Therefore, you would "
            "need to reduce both the input time and other time.",
        )
    if other_percent >= POTENTIAL_OTHER:
        return InputBound(
            "potential",
            input_percent,
            f"Your program is POTENTIALLY input-bound because {other_percent:.1f}% of "
            "the total step time sampled is spent on 'All Others' time (which could "
            "be due to I/O or Python execution or both).",
        )
    return InputBound(
        "no",
        input_percent,
        f"Your program is NOT input-bound because only {input_percent:.1f}% of the "
        "total step time sampled is waiting for input. Therefore, you should "
        "focus on reducing other time.",
    )


def level(category: str, percent: float) -> str:
    """ "high", "moderate" or "no" for a category with thresholds."""
    moderate, high = THRESHOLDS[category]
    return "high" if percent >= high else "moderate" if percent >= moderate else "no"


_LIMIT_ADVICE = {
    "input": "{pct:.1f}% {of} is input: {evidence}. Prepare batches ahead of the step ({ahead}).",
    "copies": "{pct:.1f}% {of} is spent copying between host and device or between "
    "devices with nothing else running: fetch fewer or smaller results per step, or fetch them "
    "less often.",
    "dispatch": "{pct:.1f}% {of} is spent dispatching ops and launching kernels "
    "while nothing else runs: {evidence}{thread_mode}.",
    "host": "{pct:.1f}% {of} is Python / host work: {evidence}.",
    "collectives": "{pct:.1f}% {of} is spent in collective communication with "
    "nothing else running (on the devices, or on the host: gloo, MPI, XLA or TensorFlow "
    "collectives, mostly waiting for the rank that arrives last: see the pod viewer's "
    "stragglers for who and why): overlap communication with compute, use larger buckets, or "
    "check the interconnect.",
    "waits": "{pct:.1f}% {of} the step's thread waits (synchronize, "
    "block_until_ready, .item()) while nothing traced computes: look in the trace viewer for "
    "what it waits on (another process, a lock, a descheduled thread).",
}

# What to change for the headline's own limit (decision 456): the headline says its share and
# what the trace shows, not the fix, so the advice's first line gives it. Dispatch's evidence
# carries its fix when it found the ops (`stepscope.stats.bound`); compute and compilation
# have no generic fix here (the op tables and the warm-up say where they go).
_HEADLINE_FIX = {
    "input": "prepare batches ahead of the step ({ahead})",
    "host": "move the untraced Python work (metrics, logging, bookkeeping) out of the step or "
    "run it every N steps, and put the rest inside tf.function / jit / torch.compile; the "
    "trace viewer shows where in the step it sits, stepscope.trace times what must stay",
    "copies": "fetch fewer or smaller results per step, or fetch them less often",
    # with a device, when traced host events hold the host limit (decision 1058)
    "host_traced": "this is traced host work, not untraced Python: framework ops running on "
    "the CPU, on whichever thread runs them{autograd}; op_stats' host rows name them by self "
    "time and the trace viewer shows their thread. Run fewer, larger ops: compile the step "
    "(tf.function / jit / torch.compile), use fused optimizers, and keep tensor work on the "
    "device",
    "collectives": "see the pod viewer's stragglers for the rank the others wait for; overlap "
    "communication with compute, use larger buckets, or check the interconnect",
    "waits": "look in the trace viewer for what the step's thread waits on (another process, "
    "a lock, a descheduled thread)",
}


def _serves(summary: StepSummary) -> bool:
    """Whether the steps are PyTorch or JAX inference fed by no DataLoader or tf.data: ops
    traced, never a backward or an optimizer (`LimitTable.serves`), so batch advice is about
    requests, not a loader."""
    return summary.limits.framework in SERVING_FRAMEWORKS and summary.limits.serves


def _headline_fix(summary: StepSummary, bound: BoundBy, of: str, producer: str = "") -> str:
    """The fix for the headline's limit, or "" when the headline already gives one;
    ``producer``: what the capture traced of the thread filling the loop's queue."""
    first = bound.limits[0]
    if first.key == "dispatch":
        if "fix:" in first.evidence:
            return ""
        limits = summary.limits
        fix = limits.dispatch.fix(limits.framework, limits.trains)
    elif (
        first.key == "input"
        and summary.fetched.counted
        and summary.fetched_percent() > 0
        and summary.fetched.from_queue()
    ):
        # the advice is the producer's: what the capture shows of it first (decision 1024)
        fix = (
            f"the loop waits in {summary.fetched.function[0]} for its next batch: "
            + (f"{producer}; " if producer else "")
            + QUEUE_AHEAD
        )
    elif first.key == "input" and summary.fetched.counted and summary.fetched_percent() > 0:
        fix = (
            f"the loop's Python iterator {summary.fetched.function[0]} makes each batch on the "
            f"step's own thread, so the step waits for all of it: {PYTHON_ITERATOR_AHEAD}"
        )
    elif first.key == "input" and _serves(summary):
        fix = INFERENCE_INPUT_FIX
    elif first.key == "host" and compiled_host(summary):
        # a compiled step's host time: compiling it is no fix (decision 1083)
        fix = COMPILED_FIX[compiled_host(summary)].format(compute=summary.limit_percent("compute"))
    elif first.key == "host" and traced_host_device(summary):
        autograd = (
            " (a backward pass runs on PyTorch's autograd thread while the step's thread waits)"
            if summary.limits.framework == "pytorch" and summary.limits.trains
            else ""  # no backward pass in a run that never trains (decision 1075)
        )
        fix = _HEADLINE_FIX["host_traced"].format(autograd=autograd)
    elif first.key in _HEADLINE_FIX:
        fix = _HEADLINE_FIX[first.key].format(
            ahead=input_ahead(summary.limits.framework, summary.has_device)
        )
    else:
        return ""
    return (
        f"What bounds the steps{of[len(OF_STEPS) :]}, {label_words(first.label)} "
        f"({first.percent:.1f}% {of}): {fix}."
    )


OF_STEPS = "of the step time"
OF_WARM = "of the step time once warm"  # the advice of the steps after a warm-up


@record
class EagerShares:
    """JAX run op by op (`stepscope.stats.steps.eager`), as shares of the step time."""

    span: float  # the stretches of eager calls, their compute included
    overhead: float  # their dispatch and host time: what jax.jit removes
    dispatch: float  # its part in dispatch runs


def eager_shares(summary: StepSummary) -> EagerShares:
    """The shares of JAX run op by op of the steps' time (all 0 without)."""
    table = summary.limits
    eager = table.eager
    total = int(table.ns.sum())
    if not total or len(eager.ns) != len(table.ns):
        return EagerShares(0.0, 0.0, 0.0)
    return EagerShares(
        *(100.0 * float(ns.sum()) / total for ns in (eager.span_ns, eager.ns, eager.dispatch_ns))
    )


def _eager_fix(summary: StepSummary, shares: EagerShares, of: str) -> str:
    """The advice for JAX run op by op: what the profile saw, and jax.jit."""
    eager = summary.limits.eager
    name, _, where = eager.caller.partition(" (")
    calls = ", ".join(f"{op} x{count}" for op, count in eager.top_ops)
    steps = f"{len(eager.ops)} step{'' if len(eager.ops) == 1 else 's'}"  # "over 1 steps"
    evidence = (
        f"{shares.dispatch:.1f}% dispatching its {eager.ops_per_step():.0f} JAX calls a step "
        f"one at a time ({calls} over {steps}) and "
        f"{shares.overhead - shares.dispatch:.1f}% in JAX's Python between them (eager "
        f"autodiff and dispatch, again on every call); from its first call to its last it "
        f"spans {shares.span:.1f}% {of}, its ops' compute included."
    )
    compiled = (
        "so JAX traces it once and runs it as one compiled XLA program; its first call then "
        "compiles (a warm-up step)."
    )
    if name.startswith("<"):
        # `<module>`, `<lambda>`, `<listcomp>`: the JAX calls are written in the loop itself
        # (a script's top level); no function to put under jax.jit, so say to make one
        return (
            f"{shares.overhead:.1f}% {of} is the overhead of JAX running the update written "
            f"in the loop itself ({where.rstrip(')') or 'the script'}) op by op, not under "
            f"jax.jit: {evidence} Move the step's JAX calls (the gradient and the parameter "
            "update) into a function, e.g. `def update(params, batch)` returning the new "
            f"parameters, and call `update = jax.jit(update)` once before the loop, {compiled}"
        )
    return (
        f"{shares.overhead:.1f}% {of} is the overhead of JAX running "
        f"{eager.caller or 'the update'} op by op, not under jax.jit: {evidence} Put "
        f"{name or 'the update (the function making these calls)'} under jax.jit (@jax.jit "
        f"on it, or {name or 'update'} = jax.jit({name or 'update'}) once) {compiled}"
    )


@record
class Recommendation:
    """What bounds the steps and what to do about it."""

    bottleneck: str = out(
        'the largest "bound by" limit (`input`, `compute`, `dispatch`, `host`, '
        "`collectives`, `copies`, `compilation`, `waits`; `unknown` without steps) of the "
        "steps the advice is about: once warm when the first steps are warm-up (the "
        "overview's `steady_state`), else all"
    )
    statement: str = out('the "bound by" headline of those steps')
    details: tuple[str, ...] = out(
        "further findings, most important first, their shares of the steps once warm when "
        "the first steps are warm-up (`of the step time once warm`): what to change for the "
        "headline's own limit (input, Python / host, copies, collectives, waits, or dispatch "
        "when its evidence has no fix; not when the loader's or tf.data's advice or a "
        "finding says it), the tf.data bottleneck and its fix, JAX run op by op (an update "
        "not under jax.jit: its dispatch and Python overhead, 3/15%, first when no other "
        "limit's share is larger; dispatch and Python / host are then graded on the rest), "
        "then the other limits past their thresholds: dispatch / launch 3/15% (with "
        "`TF_GPU_THREAD_MODE=gpu_private` advice when tf.data is used), Python / host 3/15%, "
        "copies 5/20%, collectives 3/15%, idle waits 3/15% (`HIGH:` past the high threshold), "
        "reduced-precision (below 32-bit) share below 10% (mixed precision), eager time above "
        "10% (tf.function / jit; the host's eager ops per step where known, a job's the ranks' "
        "mean), the "
        "diagnostics tool's high and medium findings with their fixes"
    )
    tips: tuple[str, ...] = out("where to look next")


def limit_level(limit: str, percent: float) -> str:
    """ "high", "moderate" or "no" for a limit of `LIMIT_THRESHOLDS`."""
    moderate, high = LIMIT_THRESHOLDS[limit]
    return "high" if percent >= high else "moderate" if percent >= moderate else "no"


def recommend(
    summary: StepSummary,
    bound: BoundBy,
    *,
    precision_16_percent: float | None = None,
    eager_percent: float = 0.0,
    uses_tf_data: bool = False,
    tf_data_advice: str = "",
    covered: frozenset[str] = frozenset(),
    once_warm: bool = False,
    producer: str = "",
) -> Recommendation:
    """The advice; ``bound`` is ``bound_by(summary)``; topics in ``covered`` (limits,
    "precision") are given elsewhere; ``once_warm``: ``summary`` is the steps after a
    warm-up (`stepscope.stats.warmup`), and the shares say so; ``producer``: the thread
    filling the loop's queue, in words (`stats.input.producer`)."""
    if not bound.limits:
        return Recommendation(
            "unknown",
            bound.headline,
            (summary.description,),
            ("trace_viewer: look for the repeating work of a step",),
        )
    details: list[str] = []
    of = OF_WARM if once_warm else OF_STEPS
    evidence = {limit.key: limit.evidence for limit in bound.limits}
    # JAX run op by op: its dispatch and host time is jax.jit's to remove, told once (its own
    # line); the dispatch and host limits are graded on what is left of them
    jax_eager = eager_shares(summary)
    eager_pct = jax_eager.overhead
    eager = limit_level("dispatch", eager_pct) != "no"
    rest = {
        "dispatch": jax_eager.dispatch if eager else 0.0,
        "host": eager_pct - jax_eager.dispatch if eager else 0.0,
    }

    lever: dict[str, float] = {}  # each limit's line: the share it is about

    def share(limit: str) -> float:
        return max(summary.limit_percent(limit) - rest.get(limit, 0.0), 0.0)

    # the headline's limit is told by its fix below, unless the eager line takes it over
    # (the rest of dispatch or host is then a limit like the others)
    headline_fix = not (eager and bound.first in rest)
    for limit in LIMIT_THRESHOLDS:
        if limit in covered or (limit == bound.first and headline_fix):
            continue
        pct = share(limit)
        grade = limit_level(limit, pct)
        if grade == "no":
            continue
        thread_mode = (
            " (set TF_GPU_THREAD_MODE=gpu_private so tf.data threads do not compete with "
            "kernel launches)"
            if uses_tf_data and limit == "dispatch"
            else ""
        )
        # a limit graded here (from 3%) is in the bound's list (from 0.05%) of these steps
        text = _LIMIT_ADVICE[limit].format(
            pct=pct,
            of=of,
            evidence=evidence[limit],
            thread_mode=thread_mode,
            ahead=input_ahead(summary.limits.framework, summary.has_device),
        )
        if limit == "input" and 2 * summary.map_python_percent() > pct:
            # held up by the pipeline's Python: its own fix (`tf_data_advice`), not a prefetch
            text = text[: text.index(". Prepare batches") + 1]
        elif limit == "input" and summary.fetched_percent() > 0 and summary.fetched.from_queue():
            # the loop already takes its batches from another thread: that producer's fix,
            # as the headline's (decision 1028), not "a background thread"
            cut = text.index(". Prepare batches") + 2
            text = text[:cut] + QUEUE_AHEAD[0].upper() + QUEUE_AHEAD[1:] + "."
        elif limit == "input" and _serves(summary):
            cut = text.index(". Prepare batches") + 2
            text = text[:cut] + INFERENCE_INPUT_FIX[0].upper() + INFERENCE_INPUT_FIX[1:] + "."
        if limit == "host":
            where = host_place(summary, pct)
            # the evidence names the place already when it has one (`bound._host`)
            text += f" The untraced part sits {where}." if where and where not in text else ""
        details.append(("HIGH: " if grade == "high" else "") + text)
        lever[details[-1]] = pct
    input_pct = summary.limit_percent("input")
    if input_pct >= MODERATE_INPUT and tf_data_advice:
        details.insert(0, tf_data_advice)
        lever[tf_data_advice] = input_pct
    first = bound.first
    # the headline's limit is not repeated above, but its fix comes first, unless a finding
    # (`covered`) or, for input, the input pipeline's or loader's advice gives it
    if (
        headline_fix
        and first in LIMIT_THRESHOLDS
        and first not in covered
        and not (first == "input" and input_pct >= MODERATE_INPUT and tf_data_advice)
        and limit_level(first, summary.limit_percent(first)) != "no"
    ):
        fix = _headline_fix(summary, bound, of, producer)
        if fix:
            high = limit_level(first, summary.limit_percent(first)) == "high"
            details.insert(0, ("HIGH: " if high else "") + fix)
            lever[details[0]] = summary.limit_percent(first)
    if eager:
        # first when it is the largest lever: no other limit with a fix here holds more
        levers = [share(k) for k in LIMIT_THRESHOLDS if k not in covered]
        at = 0
        if eager_pct < max(levers, default=0.0):  # after the lines of larger levers
            while at < len(details) and lever.get(details[at], 0.0) > eager_pct:
                at += 1
        high = limit_level("dispatch", eager_pct) == "high"
        text = _eager_fix(summary, jax_eager, of)
        details.insert(at, ("HIGH: " if high else "") + text)
    if (
        "precision" not in covered
        and precision_16_percent is not None
        and precision_16_percent < MIXED_PRECISION_BELOW
        and summary.limit_percent("compute") >= MIXED_PRECISION_MIN_COMPUTE
    ):
        details.append(
            f"Only {precision_16_percent:.1f}% of the device compute time runs in "
            "16-bit precision: mixed precision (bf16/fp16) could speed it up."
        )
    if eager_percent > EAGER_ABOVE:
        per_step = eager_per_step(summary)  # the host ops' eager time per step (decision 1029)
        whose = "the ranks'" if len(summary.rank_hosts) > 1 else "the host's"  # a job's (1061)
        details.append(
            f"{eager_percent:.1f}% of the op time runs eagerly"
            + (f" ({whose} eager ops: {per_step})" if per_step else "")
            + ": wrap the step in "
            "tf.function (or jit / torch.compile) to run it as a graph."
        )
    tips = (
        ["input_pipeline_analyzer: the breakdown of input time on the host"]
        if input_pct >= MODERATE_INPUT
        else []
    )
    tips += ["op_stats: the most time-consuming ops", "trace_viewer: the timeline of each step"]
    return Recommendation(bound.first, bound.headline, tuple(details), tuple(tips))
