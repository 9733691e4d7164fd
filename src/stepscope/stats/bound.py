"""The "bound by" headline: what limits the steps, ranked by share, with the evidence.

XProf's first sentence answers "is the program input-bound?"; a user asks what bounds the
step. The headline ranks the step's limits (`stepscope.stats.steps.limits`: input, compute,
dispatch / launch, Python / host, collectives, copies, compilation, idle / waits) by their
share of the step time and says, for the largest, what the trace shows: the input waits and
the batch built in the step, the computation waited for, the ops dispatched per step, the
Python functions sampled. The overview, `stepscope report`, the diagnostics' findings and the
Compare page all read it; XProf's input-bound sentence stays beside it, unchanged.
"""

from __future__ import annotations

from stepscope.fields import out
from stepscope.records import record
from stepscope.stats.host.python_samples import PythonTime, function_key
from stepscope.stats.host.untraced import where_untraced
from stepscope.stats.steps.collective_kinds import kinds_words
from stepscope.stats.steps.fetch import LOADER_NEXT_FRAMES
from stepscope.stats.steps.limits import LIMIT_LABELS, LIMIT_NAMES, LimitType, label_words
from stepscope.stats.summary import StepSummary, eager_per_step
from stepscope.vocab.compiled import WHAT as COMPILED_WHAT

# the model's ops' time beside the map's Python said when this share of the step time (%, the
# advice's MODERATE_INPUT: `advice` imports this module)
_BESIDE_SAID = 5.0

# the share of the traced host time inside compiled calls from which they are its subject
COMPILED_MOST = 0.5
SHOWN_FROM = 10.0  # % of step time: a limit this large is named after the first
MAX_NAMED = 3  # limits named in the headline
LISTED_FROM = 0.05  # % of step time: smaller limits are left out of the list


@record
class Limit:
    """One limit of the steps: its share and what the trace shows about it."""

    key: str = out(
        "`input`, `compute`, `dispatch`, `host`, `collectives`, `copies`, `compilation`, `waits`"
    )
    label: str = out("how the headline names it")
    percent: float = out("share of the total step time", "%", 3)
    ms_per_step: float = out("average per step", "ms", 6)
    evidence: str = out("what the trace shows about it, in words")


@record
class BoundBy:
    """What bounds the steps: the headline and every limit, largest first."""

    headline: str = out(
        "the first sentence: the largest limits by share and the evidence for the first"
    )
    limits: tuple[Limit, ...] = out("every limit with time, largest first")

    @property
    def first(self) -> str:
        """The key of the largest limit ("" without steps)."""
        return self.limits[0].key if self.limits else ""


def _iterators(summary: StepSummary) -> str:
    """``batches (train.py), 14 samples``: the loop's Python iterators the sampler saw it
    getting batches from (`stepscope.stats.steps.fetch`), when enough samples saw them."""
    fetched = summary.fetched
    if not fetched.counted:
        return ""
    return ", ".join(
        f"{fetched.function[k]} ({fetched.evidence(k)})" for k in range(min(len(fetched), 2))
    )


def _in_loader_next(python: PythonTime, k: int) -> bool:
    """Whether function ``k`` is a loader's own ``__next__`` or runs under it (its most
    common call path): the loader's fetch, which the framework's profiler traces."""
    frames = [function_key(f) for f in python.stack[k].split(";") if f]
    return python.function[k] in LOADER_NEXT_FRAMES or any(f in LOADER_NEXT_FRAMES for f in frames)


def _in_fetch(python: PythonTime, k: int, fetching: set[str]) -> bool:
    """Whether function ``k`` is one of the loop's Python iterators ``fetching`` or runs
    under one (its most common call path)."""
    if not fetching:
        return False
    frames = {function_key(f) for f in python.stack[k].split(";") if f}
    return python.function[k] in fetching or bool(frames & fetching)


def _fits_in(python: PythonTime, k: int, step_ns: int, percent: float) -> bool:
    """Whether function ``k``'s time can lie within ``percent`` of the step time: its traced
    share, or the low end of its sampled share's 95% interval (on `MIN_SAMPLES` samples at
    least), is no larger. The samples
    are the whole steps': in a CPU loop whose batch building took 0.6% of the step, the
    staged input's "Python sampled in the steps" named the model's backward at 31.7%
    (95% CI 18-50%) and forward at 22.5%, as if they built the batch (decision 484)."""
    if python.traced[k] if len(python.traced) > k else False:
        return 100.0 * float(python.ns[k]) / max(step_ns, 1) <= percent
    if python.too_few(k):  # its interval spans everything: nothing says it is there
        return False
    low = float(python.ci_low[k]) if len(python.ci_low) > k else 0.0
    return 100.0 * low <= percent


def _traced_frames(frames: tuple[tuple[str, int], ...], n_steps: int) -> str:
    """``in preprocess (a.py:12) (217.47 ms per step), mostly in f (b.py:3) (178.20 ms per
    step)``: the traced Python calls that built the batch (`stepscope.stats.steps.
    staged_frames`); "per step" as the headline's "(221.67 ms per step)" beside it."""
    per = [f"{name} ({ns / max(n_steps, 1) / 1e6:.2f} ms per step)" for name, ns in frames]
    return "in " + per[0] + (f", mostly in {per[1]}" if len(per) > 1 else "")


def _too_large(python: PythonTime, k: int, step_ns: int, percent: float) -> bool:
    """Whether function ``k`` surely takes more than ``percent`` of the step time: its
    traced share, or the low end of its sampled share's 95% interval, is larger. A function
    on too few samples is not (its text says so, with no number)."""
    if python.too_few(k) and not (python.traced[k] if len(python.traced) > k else False):
        return False
    return not _fits_in(python, k, step_ns, percent)


def _beside_not_counted(summary: StepSummary) -> list[str]:
    """The model's ops' time beside the tf.data map's Python whose slowdown the trace does
    not show (`slowed_ops`), when at least `_BESIDE_SAID` of the step time: said, not
    counted (decision 525)."""
    beside = summary.limits.python
    n = max(summary.n_steps, 1)
    ns = beside.beside_ns + beside.unmeasured_ns
    if 100.0 * ns / max(summary.total_ns(), 1) < _BESIDE_SAID:
        return []
    how = (
        f"those ops took {beside.ratio:.2f}x as long as the same ops without it, within their "
        "own spread"
        if beside.beside_ns >= beside.unmeasured_ns and beside.ratio > 0
        else "no run of the same ops without it to compare"
    )
    return [
        f"not counted: the model's ops ran {ns / n / 1e6:.2f} ms per step beside the map's "
        f"Python ({how}); where it keeps a core busy on a host with few free cores, it slows "
        "them too"
    ]


# A part of the input evidence under this share prints as "0.0%" and is left out: a jitted
# JAX loop's once-warm line read "...; 0.0% building the batch inside the step" (decision 554)
_SHOWN = 0.05


def _input(summary: StepSummary, pct: float) -> str:
    staged = summary.staged_percent()
    waiting = summary.percent("input")
    fetching = summary.fetched_percent()
    iterators = _iterators(summary)
    parts = []
    if waiting >= _SHOWN:
        parts.append(f"{waiting:.1f}% waiting for the next batch")
    if fetching >= _SHOWN:
        seen = (
            "the capture timed its first fetches there"
            if summary.fetched.timed.any()
            else "the stack sampler saw the loop there"
        )
        parts.append(
            f"{fetching:.1f}% getting the next batch from {summary.fetched.source()} "
            f"{iterators}: {seen}, the trace times it"
            # a queue's: the thread filling it, as the advice names it (decision 1028)
            + (f"; {summary.producer}" if summary.producer and summary.fetched.from_queue() else "")
        )
    frames = summary.limits.staged_frames if staged >= _SHOWN else ()
    if staged >= _SHOWN:
        parts.append(
            f"{staged:.1f}% building the batch inside the step, before its first model op "
            + (
                _traced_frames(frames, summary.n_steps)
                if frames
                else "(Python, numpy, torch.tensor / from_numpy, device_put)"
            )
            + (
                f", fetched from {summary.fetched.source()} {iterators}"
                if iterators and fetching <= 0
                else ""
            )
        )
    pipeline = (
        100.0
        * float(summary.limits.ns[:, int(LimitType.INPUT_WORK) // 10].sum())
        / max(summary.total_ns(), 1)
        if len(summary.limits.ns) == summary.n_steps
        else 0.0
    )
    held = summary.held_percent()
    beside = summary.limits.python
    if held >= _SHOWN:
        parts.append(
            f"{held:.1f}% with the step's thread held in TensorFlow's calls while the tf.data "
            "pipeline's Python (tf.py_function / numpy_function) ran and no model op did"
            + (": it holds the GIL" if beside.holds_gil else "")
        )
    slowed = summary.slowed_percent()
    if slowed >= _SHOWN:
        per_step = float(summary.limits.slowed_ns.mean()) / 1e6
        parts.append(
            f"{slowed:.1f}% ({per_step:.2f} ms per step) of the model's ops ran slowed beside "
            "the tf.data map's Python"
            + (", on the cores it kept busy" if beside.holds_gil else "")
            + f" (those ops took {beside.ratio:.1f}x as long as the same ops without it)"
        )
    elif held >= _SHOWN:
        parts.extend(_beside_not_counted(summary))
    if pipeline >= 0.05:
        parts.append(
            f"{pipeline:.1f}% in the input pipeline's own work (tf.data stages on the step's "
            "thread) while nothing of the model ran"
        )
    text = "; ".join(parts) or f"{pct:.1f}% in input"
    if staged >= _SHOWN and not iterators and not frames:
        python = summary.untraced.python
        _, step_ns = summary.untraced.per(summary.n_steps, summary.total_ns())
        # the loaders' own fetch, traced (the wait above), is not named again (decision 428);
        # nor a function too large to lie in the staging (decision 484)
        others = [
            k
            for k in python.leading(len(python))
            if (waiting <= 0 or not _in_loader_next(python, k))
            and _fits_in(python, k, step_ns, staged)
        ]
        if others:
            text += "; Python sampled in the steps: " + python.describe_all(others[:2], step_ns)
    return text


# the eager share of the host ops' time from which the compute evidence says it (decision 1026)
EAGER_SAID = 25.0


def _compute(summary: StepSummary) -> str:
    if summary.has_device:
        return "the device computing (kernels)"
    waited = summary.limits.waited_for
    text = "the model's computation on the host (framework ops)"
    if summary.eager_percent >= EAGER_SAID:
        # a TensorFlow loop whose ops run mostly eagerly: its compute is op by op on the
        # Python thread, not a tf.function's graph (decision 1026)
        ops = ", ".join(summary.eager_ops)
        per_step = eager_per_step(summary)  # as a user times a step (decision 1029)
        text += (
            f"; {summary.eager_percent:.1f}% of the host ops' time ran eagerly, one op at a "
            f"time from the Python thread ({ops}), outside any tf.function"
            + (f": {per_step}" if per_step else "")
        )
    if waited:
        text += (
            "; the step's thread waits for it while it runs on "
            + ", ".join(waited)
            + " (block_until_ready / a tf.function call): that wait is this compute, "
            "not host overhead"
        )
    return text


def _dispatch(summary: StepSummary) -> str:
    d = summary.limits.dispatch
    if not len(d.ops) or not d.top_ops:  # launches, no run of small ops (decision 1075)
        return "the host launching work while the device waits (kernel launch time)"
    ops = ", ".join(f"{name} x{count}" for name, count in d.top_ops)
    steps = max(len(d.ops), 1)
    text = (
        f"{d.ops_per_step():.0f} small ops dispatched one at a time per step ({ops} over "
        f"{steps} step{'s' if steps != 1 else ''}), {d.median_op_ns / 1e3:.1f} µs each "
        "(median) and "
        f"{d.median_gap_ns / 1e3:.1f} µs apart"
    )
    # the function that called JAX's API, when JAX ran it op by op (`stats.steps.eager`),
    # rather than the deepest frame on the samples (JAX's own ``apply_primitive``)
    caller = summary.limits.eager.caller or d.caller
    if caller:
        text += f", issued by {caller}"
    fix = d.fix(summary.limits.framework, summary.limits.trains)
    return text + f"; fix: {fix}"


def _host(summary: StepSummary, pct: float) -> str:
    python = summary.untraced.python
    _, step_ns = summary.untraced.per(summary.n_steps, summary.total_ns())
    # the samples are the whole steps': a loader's own fetch is the traced input wait, not
    # this host work (decision 428's rule, as the input evidence has it; decision 449)
    waiting = summary.percent("input") > 0
    # nor the loop's Python iterator whose fetch the limits count as input: the loop's own
    # Python beside it (metrics, logging) is this host work, the fetch is not (decision 505)
    fetched = summary.fetched
    fetching = set(fetched.function) if fetched.counted and fetched.ns.any() else set()
    # nor a function too large to lie in this host work (decision 484's rule for the staged
    # input: the samples are the whole steps', and a CPU loop with 4% of host work was told
    # "backward (_tensor.py) 50.8% of the step time")
    keys = [
        k
        for k in python.leading(len(python))
        if (not waiting or not _in_loader_next(python, k))
        and not _in_fetch(python, k, fetching)
        and not _too_large(python, k, step_ns, pct)
    ]
    named = python.describe_all(keys[:3], step_ns)
    where = (
        "host work no traced op covers (Python, untraced I/O or synchronization)"
        if not summary.has_device
        else "host work while the device waits (Python, host ops)"
    )
    inside, rest_pct = _inside_traced(summary, pct)
    place = _place(summary, inside, rest_pct)
    if inside:
        where = inside + (f"; the untraced rest ({rest_pct:.1f}%) {place}" if place else "")
    else:
        where += f", {place}" if place else ""
    if named:
        return where + "; Python sampled in the steps: " + named
    if fetching and fetched.loop:
        # what is left of the untraced time once the fetch is input: the loop's own Python
        # outside the model and the fetch, which the sampler hardly sees (it waits for the GIL)
        return (
            where + f"; outside the model and the fetch: the loop {fetched.loop}'s own Python "
            "or what it calls (the samples named none of it)"
        )
    if len(python):  # sampled, but only in the loader's fetch
        return where
    if summary.limits.python_frames:
        # recorded with Python frames already (vLLM's trace, with_stack=True): asking for
        # them again misleads; they are where this time is named
        return where + "; the trace records its Python calls: the trace viewer shows which ran then"
    # the profile may come from the framework's own profiler: its switch too
    how = "stepscope's stack sampler (python_sampler_hz)" + _FRAMES_SWITCH.get(
        summary.limits.framework, ""
    )
    return where + f"; record with {how} to name the functions"


def host_place(summary: StepSummary, pct: float) -> str:
    """Where the host limit's untraced time sits ('on thread T, mostly after A and before B
    (x ms per step ...)'); "" when there is none, or when traced regions hold the limit and
    the untraced rest prints as 0.0% (decision 554's floor): the demo's 8.1% of host work
    inside its annotations was placed "after 'forward' and before 'backward' (0.00 ms per
    step in 1 of 3 steps)"."""
    return _place(summary, *_inside_traced(summary, pct))


def traced_host_device(summary: StepSummary) -> bool:
    """Whether, with a device, traced host events hold most of the host limit (framework ops
    on the CPU, their launches, annotations, on any thread), not untraced Python: its fix is
    then theirs (decision 1058)."""
    return summary.has_device and bool(_inside_traced(summary, 100.0)[0])


def compiled_host(summary: StepSummary) -> str:
    """The framework whose compiled calls (torch.compile, jax.jit, tf.function) hold most of
    the traced host time of a profile with a device, or "": such a step is compiled already,
    and "compile the step" does not help it (decision 1083). Not JAX run op by op (its ops
    are ``PjitFunction`` calls too, each one a jitted primitive: `eager`)."""
    compiled = summary.limits.compiled
    if not summary.has_device or compiled.share < COMPILED_MOST:
        return ""
    if compiled.framework == "jax" and summary.limits.eager.ns.sum() > 0:
        return ""
    return compiled.framework


def _place(summary: StepSummary, inside: str, rest_pct: float) -> str:
    """`host_place` from `_inside_traced`'s answer."""
    if inside and rest_pct < _SHOWN:
        return ""
    return where_untraced(summary.untraced, summary.n_steps, summary.total_ns(), with_python=False)


def _inside_traced(summary: StepSummary, pct: float) -> tuple[str, float]:
    """Without a device, the host limit is also the time inside traced events that run no
    framework op (the user's `stepscope.trace` annotations, Python-tracer frames: `limits`).
    When those hold most of it, saying "host work no traced op covers", placed at the
    largest untraced gap, misleads: a loop whose `stepscope.trace("forward")` held 20 ms of
    Python a step read "no traced op covers ... mostly after 'IteratorGetNextOp::DoCompute'
    and before 'forward' (0.04 ms per step)" (decision 575). "" when untraced time holds most
    of it, or with a device (there the host limit is every host event, already said); with
    it, the untraced rest's share of the step time.

    With a device the host limit is every host event that launches nothing while the device
    waits; when those hold most of it, placing the limit at the largest untraced gap misleads
    the same way: a DDP step's 100.5 ms of host ops (optimizer, loss, bookkeeping on the
    CPU) read "mostly after '## backward ##' and before '## optimizer ##' (0.05 ms per
    step)" (decision 620)."""
    ns = summary.limits.ns
    if not len(ns):
        return "", 0.0
    traced = float(ns[:, int(LimitType.HOST) // 10].sum())
    untraced = float(ns[:, int(LimitType.UNTRACED) // 10].sum())
    if traced <= untraced:
        return "", 0.0
    share = pct * traced / (traced + untraced)
    # the share only beside an untraced rest worth a figure: alone it is the limit's own
    # percentage, said just before ("5.2% of the step time is Python / host work: ... 5.2%")
    figure = f": {share:.1f}% of the step time" if pct - share >= _SHOWN else ""
    compiled = compiled_host(summary)
    if compiled:
        # the step is compiled already: its host time is the compiled calls' (decision 1083)
        held = share * summary.limits.compiled.share
        what = COMPILED_WHAT[compiled].format(name=summary.limits.compiled.name)
        held_figure = f"; {held:.1f}% of the step time" if pct - held >= _SHOWN else ""
        text = f"host work while the device waits, {what}{held_figure})"
    elif summary.has_device:
        # the events' own time outside their launches (a launch is dispatch): an op that
        # launches kernels holds host time too, so not "events that launch nothing"
        text = (
            "host work while the device waits, in traced host events outside any kernel "
            f"launch (framework ops' own time, annotations{figure}; op_stats' host rows list "
            "them by self time)"
        )
    else:
        text = (
            "Python and host work inside traced regions that run no framework op "
            f"(stepscope.trace annotations, Python calls{figure}; op_stats lists them by name)"
        )
    return text, pct - share


# What compiles inside the steps, in the profile's framework (decision 553): an un-jitted
# JAX loop compiling in its first steps read "XLA / TensorFlow / torch.compile compilation".
_COMPILATION = {
    "jax": "XLA compilation inside the steps (JAX compiles each jitted function, and each op "
    "run outside jax.jit, at its first call and again for each new input shape or dtype)",
    "tensorflow": "XLA compilation inside the steps (a tf.function with jit_compile=True "
    "compiles at its first call and again for each new input signature)",
    "pytorch": "compilation by torch.compile inside the steps (at its first call and again "
    "whenever a guard fails, e.g. a new input shape)",
}
_COMPILATION_ANY = "XLA / TensorFlow / torch.compile compilation inside the steps"

_FRAMES_SWITCH = {
    "pytorch": " or torch.profiler(with_stack=True)",
    "tensorflow": " or the TensorFlow profiler's python_tracer_level=1",
}


def _collectives(summary: StepSummary) -> str:
    """The collective time's words, naming the kinds of collective the steps spent it in
    (decision 1037), the most time first; none when no event says its kind."""
    kinds = kinds_words(summary.limits.collectives)
    named = f" ({kinds})" if kinds else ""
    return f"collective communication{named} with nothing else running"


def _evidence(key: str, summary: StepSummary, pct: float) -> str:
    if key == "input":
        return _input(summary, pct)
    if key == "compute":
        return _compute(summary)
    if key == "dispatch":
        return _dispatch(summary)
    if key == "host":
        return _host(summary, pct)
    if key == "compilation":
        return _COMPILATION.get(summary.limits.framework, _COMPILATION_ANY)
    if key == "collectives":
        return _collectives(summary)
    return {
        "copies": "device-to-host and device-to-device copies",
        "waits": "the step's thread blocked in a wait (synchronize, block_until_ready, .item()) "
        "while nothing traced computes: another process, a lock, or a thread not scheduled",
    }[key]


def bound_by(summary: StepSummary) -> BoundBy:
    """The steps' limits, largest first, and the headline naming them."""
    if not summary.n_steps or not summary.limit_ns:
        return BoundBy("No steps measured, so what bounds a step cannot be told.", ())
    n = summary.n_steps
    found = []
    for key in LIMIT_NAMES:
        pct = summary.limit_percent(key)
        if pct < LISTED_FROM:
            continue
        ms = float(summary.limit_ns[key].sum()) / n / 1e6
        found.append(Limit(key, LIMIT_LABELS[key], pct, ms, _evidence(key, summary, pct)))
    found.sort(key=lambda limit: -limit.percent)
    if not found:
        return BoundBy("No step time measured.", ())
    first, rest = found[0], [f for f in found[1:MAX_NAMED] if f.percent >= SHOWN_FROM]
    also = "".join(f", then {label_words(f.label)} ({f.percent:.1f}%)" for f in rest)
    headline = (
        f"Bound by {label_words(first.label)}: {first.percent:.1f}% of the step time "
        f"({first.ms_per_step:.2f} ms per step){also}. {first.evidence[0].upper()}"
        f"{first.evidence[1:]}."
    )
    return BoundBy(headline, tuple(found))
