"""The straggler analysis in a user's words, where it is read first: the job's headline
(`held_by`) and the diagnostics finding's summary (`finding_summary`).

Each straggler's own explanation (`Straggler.explanation`) gives every late step, the calls
it arrived last at and every figure: the ranks' section of the report and the pod viewer
show it whole. Read first, the same facts must fit a sentence: who holds the job, when, by
how much, why (with the other ranks' figure beside its own) and what the others lose. The
finding listed all fifteen ranges of a worker's late steps, the other stragglers' whole
explanations, every waiting rank and the clock offsets (decision 556); a long list of steps
is now its count and first ranges (decision 545), the offsets are the pod viewer's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.stats.events import CATEGORY_LABELS
from stepscope.stats.stragglers_cores import CORES_NOTE
from stepscope.stats.stragglers_types import (
    BY_ARRIVAL,
    MIN_REPEATS,
    ONE_COMPARED,
    PERSISTENT_SHARE,
    PodLateness,
    Straggler,
    fetch_words,
    nan_reduce,
    ranges,
    steps_said,
    waiting_for_it,
)

HEADLINE_RANGES = 4  # step ranges the headline and the finding name before "..."
FINDING_STRAGGLERS = 3  # stragglers the finding names (the pod viewer lists them all)


# A straggler's input in its tf.data map's Python (decision 670), in its own page's words
# (`bound.py`): XProf's categories count that time as host compute
PIPELINE_HELD = (
    "its steps' thread held in TensorFlow's calls while the tf.data pipeline's Python "
    "(tf.py_function / numpy_function) ran and no model op did, and the model's ops slowed "
    "beside it: input in its own steps' limits, host compute in XProf's categories"
)


def what(category: str, pipeline: bool = False) -> str:
    """A category's words as the reason a rank is late; ``pipeline``: its input is the
    tf.data pipeline's Python (`Straggler.pipeline`)."""
    if category == "other":  # the category's label, "All others", says nothing here
        return "untraced host work ('All Others': Python, I/O, waits no traced op covers)"
    if pipeline and category == "input":
        return "input, the tf.data pipeline's Python (tf.py_function / numpy_function)"
    return CATEGORY_LABELS[category].lower()


def period(steps: Sequence[int]) -> int:
    """k when the steps are every k-th step (k >= 2, at least `MIN_REPEATS` of them: a
    checkpoint written every 10 steps), else 0."""
    if len(steps) < MIN_REPEATS:
        return 0
    gaps = np.diff(np.asarray(steps, np.int64))
    return int(gaps[0]) if gaps[0] >= 2 and (gaps == gaps[0]).all() else 0


def which_steps(steps: Sequence[int], n_compared: int) -> str:
    """ "steps 10-14 (5 of 35 steps)" ("step 3 (1 of 35 steps)", decision 567); a rank late
    at most steps, "32 of 35 steps"; a long list, its first `HEADLINE_RANGES` ranges: "28
    of 40 steps (steps 0-1, 3, 5, 7, ...)"; every k-th step: "steps 6, 16, 26, 36 (every 10
    steps: 4 of 40 steps)"."""
    n = len(steps)
    parts = ranges(steps).split(", ")
    if n_compared == 1:
        return f"{steps_said(steps)} ({ONE_COMPARED})"
    if n >= PERSISTENT_SHARE * n_compared:
        return f"{n} of {n_compared} steps"
    if k := period(steps):
        shown = ", ".join(parts[:HEADLINE_RANGES]) + (", ..." if n > HEADLINE_RANGES else "")
        return f"steps {shown} (every {k} steps: {n} of {n_compared} steps)"
    if len(parts) > HEADLINE_RANGES:
        return f"{n} of {n_compared} steps (steps {', '.join(parts[:HEADLINE_RANGES])}, ...)"
    return f"{steps_said(steps)} ({n} of {n_compared} steps)"


def late_words(s: Straggler, n_compared: int) -> str:
    """One straggler in a clause: "b is late at steps 10-14 (5 of 35 steps), 36.84 ms per step
    after the next rank, from host compute (36.77 ms per step where the other ranks spent 1.51
    ms)"; late mostly in a few steps, its two parts (decision 546)."""
    n = len(s.steps)
    if s.stall and n == 1:  # "d stalled every rank once, at step 12, for 100.00 ms (...)"
        return f"{s.host} {s.focus}"
    if s.focus:
        return f"{s.host} is late at {n} of {n_compared} steps, {s.focus}"
    return (
        f"{s.host} is late at {which_steps(s.steps, n_compared)}, "
        f"{s.late_ns / n / 1e6:.2f} ms per step after the next rank, from "
        f"{what(s.reason, s.pipeline)} ({s.reason_ns / n / 1e6:.2f} ms per step where the other "
        f"ranks spent {s.reason_peers_ns / n / 1e6:.2f} ms"
        + (f"; its traced ops the others', run {s.slowed:.1f}x longer" if s.slowed else "")
        + (f"; Python sampled on it: {s.python}" if s.python else "")
        + ")"
    )


def own_time_words(s: Straggler, when: str) -> str:
    """A straggler of the own-time rule in a sentence, its steps said as ``when``: "w1 is
    late at steps 3-5 (3 of 8 steps) by 12.00 ms per step: its host compute takes 11.50 ms
    per step longer than the median rank's; 1 other rank waits for it in its collectives
    (30.00 ms in all)."
    """
    n = len(s.steps)
    text = (
        f"{s.host} is late at {when} by {s.late_ns / n / 1e6:.2f} ms per step: its "
        f"{what(s.reason)} takes {s.reason_excess_ns / n / 1e6:.2f} ms per step longer than "
        "the median rank's"
    )
    if s.iterator:
        text += f" ({fetch_words(s.iterator)})"
    if s.waiters:
        text += f"; {waiting_for_it(s.waiters)} ({s.waited_ns / 1e6:.2f} ms in all)"
    return text + "."


def held_by(pod: PodLateness) -> str:
    """The job's headline when a straggler holds it (``""`` when none does): at ALL_HOSTS
    the ranks' mean breakdown says "collectives" while the cause is one rank's own work."""
    first = next((s for s in pod.stragglers if not s.behind), None)
    if first is None:
        return ""
    text = (
        f"Held by a straggler: {late_words(first, len(pod.step_num))}; the other ranks wait for it"
    )
    hidden = [s.host for s in pod.stragglers if s.behind]
    if hidden:
        text += f". Next in line, hidden behind it: {', '.join(hidden)}"
    return text + "."


def held_alike(pod: PodLateness) -> str:
    """What held every rank alike (`PodLateness.notes`: every rank waiting for a core), for
    the job's headline: ``""`` when nothing did."""
    return "".join(f"{note}." for note in pod.notes)


def job_held(pod: PodLateness) -> str:
    """What holds the job, for its headline (``""`` when nothing): every rank waiting for a
    core first, then a straggler (`held_by`), then what else held every rank alike. With
    every rank runnable most of its steps, which one comes last at a collective is much the
    scheduler's pick: 4 ranks of 2 threads on one core read "Held by a straggler: vm.rank1
    is late at steps 1, 8, 16, 24 (4 of 40 steps)" before the core wait (decision 734)."""
    cores = [f"{note}." for note in pod.notes if note.startswith(CORES_NOTE)]
    other = [f"{note}." for note in pod.notes if not note.startswith(CORES_NOTE)]
    return " ".join(x for x in ("".join(cores), held_by(pod), "".join(other)) if x)


def finding_summary(pod: PodLateness) -> str:
    """The diagnostics finding's summary: each straggler (the first `FINDING_STRAGGLERS`) in
    a sentence, what the others lose waiting for it, and who holds the job once it is fixed."""
    n_compared = len(pod.step_num)
    # a waiter's time: the median rank's steps, summed (the job's step time, decision 545)
    job_ns = float(np.nansum(nan_reduce(pod.dur_ns, "median"))) if pod.dur_ns.size else 0.0
    out = []
    for s in pod.stragglers[:FINDING_STRAGGLERS]:
        if s.behind:
            n = len(s.steps)
            out.append(
                f"Next in line, hidden behind {s.behind}: {s.host}, the last of the other "
                f"ranks at {which_steps(s.steps, n_compared)}, {s.late_ns / n / 1e6:.2f} ms per "
                f"step, from {what(s.reason, s.pipeline)}."
            )
            continue
        if s.method != BY_ARRIVAL:  # the own-time rule's words: its figures are its own
            out.append(own_time_words(s, which_steps(s.steps, n_compared)))
            continue
        text = late_words(s, n_compared)
        if s.waiters:
            share = s.waited_ns / (s.waiters * job_ns) if job_ns > 0 else 0.0
            text += (
                f"; {waiting_for_it(s.waiters)}, {s.waited_ns / 1e6:.2f} ms in all "
                f"({share:.0%} of {'its' if s.waiters == 1 else 'their'} time)"
            )
        out.append(text + ".")
    if len(pod.stragglers) > FINDING_STRAGGLERS:
        out.append(f"And {len(pod.stragglers) - FINDING_STRAGGLERS} more (the pod viewer).")
    return " ".join(out)
