"""The Python functions the stack sampler saw in some steps more than in the others.

A warm-up (decision 363) or a step that comes every N steps (a checkpoint, an evaluation:
decision 580) is told with what ran there and not elsewhere: the functions whose share of
those steps' samples grew against the other steps' share. Shares of one sampler's samples do
not depend on its rate, where the samples' time estimates do: with the sampler starved of the
GIL in a warm-up, a forward seen in 2 of its 3 samples there read as 47 ms of a 70 ms step
whose model took 10.
"""

from __future__ import annotations

import numpy as np

from stepscope.model import Profile
from stepscope.stats.host.python_samples import (
    PythonTime,
    function_key,
    functions_in_steps,
    sampled_thread_line,
)
from stepscope.stats.input.loader_workers import worker_stage_ids
from stepscope.stats.steps.breakdown import StepDb
from stepscope.vocab.pytorch import DATALOADER_ITER_FRAME, DATALOADER_NEXT_FRAME

# A function is named from this many of those steps' samples (one sample, 40 ms apart at the
# default rate, is a guess)...
GROWN_MIN_SAMPLES = 2
GROWN_NAMED = 3  # functions named at most
# ... when its share of those steps' samples is at least this many times its share of the
# other steps' samples
GROWN_RATIO = 2.0


def loop_lines(profile: Profile, db: StepDb) -> tuple[int, ...]:
    """The thread lines the steps' samples are read on: the steps' own, when the sampler
    sampled them; else the one thread it sampled (a jitted JAX loop's steps are found on
    XLA's client thread, the loop runs on the thread that called `stepscope.start`)."""
    thread_of = sampled_thread_line(profile)
    sampled = {int(t) for t in thread_of.tolist() if t >= 0}
    steps = set(db.untraced.lines)
    if steps & sampled:
        return tuple(sorted(steps & sampled))
    return tuple(sampled) if len(sampled) == 1 else ()


def grown_functions(
    profile: Profile, db: StepDb, inside: np.ndarray, among: np.ndarray | None = None
) -> str:
    """Up to `GROWN_NAMED` functions the sampler saw in the steps where ``inside`` (a mask
    over the step database) more than in the others (those of ``among``, a mask: all by
    default), by how much their share of the samples there exceeds their share in the
    others, each on `GROWN_MIN_SAMPLES` samples at least, at `GROWN_RATIO` times that share
    at least, and off the call path of one named before, as a user reads them ("f (n of its
    N samples there), ..."); '' when none is (or the sampler was off)."""
    lines = loop_lines(profile, db) if inside.any() else ()
    if not lines:
        return ""
    end = db.start_ns + db.dur_ns
    seen = functions_in_steps(profile, lines, db.start_ns[inside], end[inside])
    if not len(seen):
        return ""
    rest = ~inside if among is None else among & ~inside
    others = functions_in_steps(profile, lines, db.start_ns[rest], end[rest])
    others_share = {
        f: n / max(others.total_samples, 1)
        for f, n in zip(others.function, others.samples.tolist(), strict=True)
    }
    share = seen.samples / max(seen.total_samples, 1)
    grown = [
        float(share[k]) - others_share.get(f, 0.0)
        if share[k] >= GROWN_RATIO * others_share.get(f, 0.0)
        else 0.0
        for k, f in enumerate(seen.function)
    ]
    order = sorted(range(len(seen)), key=lambda k: -grown[k])
    chosen: list[int] = []
    for k in order:
        if len(chosen) == GROWN_NAMED or grown[k] <= 0:
            break
        path = {function_key(f) for f in seen.stack[k].split(";")[:-1]}
        if int(seen.samples[k]) >= GROWN_MIN_SAMPLES and not any(
            seen.function[j] in path for j in chosen
        ):
            chosen.append(k)
    workers = bool(worker_stage_ids(profile))
    total = seen.total_samples
    return ", ".join(
        _doing(seen, k, workers, f"{int(seen.samples[k])} of its {total} samples there")
        for k in chosen
    )


def _doing(python: PythonTime, k: int, workers: bool, samples: str) -> str:
    """Function ``k`` as a user reads it, with ``samples``: what the DataLoader does there
    when its stack passes the DataLoader's frames, the function in parentheses."""
    function = python.function[k]
    path = {function_key(f) for f in python.stack[k].split(";")} | {function}
    if DATALOADER_ITER_FRAME in path:
        what = (
            "the DataLoader starting its worker processes"
            if workers
            else "the DataLoader making its iterator (iter())"
        )
        return f"{what} ({function}, {samples})"
    if DATALOADER_NEXT_FRAME in path:
        return f"the DataLoader's next() waiting for a batch ({function}, {samples})"
    return f"{function} ({samples})"
