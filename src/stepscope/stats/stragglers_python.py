"""What a straggler's thread ran untraced before the collectives it was last at, beyond the
other ranks: the stack sampler's functions in those run-ups (`runup_python.RunupPython`).

The steps' sampled Python (the overview's) is the wrong evidence for a straggler: over whole
steps it holds what every rank does, and in a DDP job the wait for the all-reduce inside
``backward`` is a third to a half of every rank's samples. A 4-rank gloo job whose rank 2
slept 30 ms in its loop body was explained by ``_engine_run_backward (graph.py) 49.1%``
first, beside the sleep's line at 46.5% (decision 417). The run-ups of the calls it arrived
last at, less its thread's traced work, are the time that made it late; the other ranks'
samples over the same calls say what is no cause (they did it too).

Each function's time there is its share of the samples' weight (each sample weighted by the
time since its thread's previous one, as the overview's shares) times the run-ups' untraced
time, which the trace measures; the other ranks' figure is their median, each rank's own
share of its own untraced run-ups. Named: up to 2 functions with the largest excess over
the other ranks, each outside the call path of one already named (the second with at least
`MIN_SAMPLES` samples), when the first's excess is at least half the reason's excess over the
other ranks (samples spread over many functions explain nothing) and each one's a tenth;
when no other rank's sampler took a sample in those run-ups, against nothing, the first
holding half the straggler's own untraced time there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.stats.host.python_samples import MIN_SAMPLES, function_key, is_own_line
from stepscope.stats.runup_python import RunupPython

NAMED = 2  # functions named at most
EXPLAINS = 0.5  # the first named holds at least this share of the reason's excess
PART = 0.1  # and any named at least this share (ranks' equal shares differ by rounding)


def _per_key(p: RunupPython, calls: np.ndarray, untraced_ns: float) -> tuple[np.ndarray, ...]:
    """(ns per key, samples per key, samples in all) over the calls ``calls`` of one rank."""
    n_keys = len(p.keys)
    if not n_keys or not len(p.call_weight):
        z = np.zeros(n_keys)
        return z, z.astype(np.int64), np.zeros(1, np.int64)
    sel = np.isin(p.call, calls)
    weight = np.bincount(p.key[sel], weights=p.weight[sel], minlength=n_keys)
    samples = np.bincount(p.key[sel], weights=p.samples[sel], minlength=n_keys).astype(np.int64)
    total_w = float(p.call_weight[calls].sum())
    share = weight / total_w if total_w > 0 else np.zeros(n_keys)
    return share * untraced_ns, samples, np.array([int(p.call_samples[calls].sum())])


def runup_functions(
    python: Sequence[RunupPython],
    call_index: np.ndarray | None,
    j: int,
    mine: np.ndarray,
    untraced_ns: np.ndarray,
    n_steps: int,
    reason_excess_ns: float,
    per: str = "per step",
) -> str:
    """The functions to name for rank ``j`` (a row of the matched calls) late at the matched
    calls ``mine`` (bool over the columns), ``untraced_ns[r]`` being rank r's untraced time
    in those run-ups: ``"worker (train.py:37) (the loop's own line) 29.85 ms per step (24 of
    26 samples; the other ranks 0.00 ms)"``, or "" when none is worth naming. Each time is
    over ``n_steps``, said ``per`` one ("per stall" for a rank stalling the job)."""
    if not python or call_index is None or not mine.any() or n_steps <= 0:
        return ""
    cols = np.flatnonzero(mine)
    own = python[j]
    own_ns, own_n, total = _per_key(own, call_index[j, cols], float(untraced_ns[j]))
    if not own_n.any():
        return ""
    # the other ranks' time in each of its functions (by name), their median, over the ranks
    # whose sampler saw their run-ups (one that took no sample there says nothing of them)
    peers = []
    for r, p in enumerate(python):
        if r == j:
            continue
        ns, _, seen = _per_key(p, call_index[r, cols], float(untraced_ns[r]))
        if seen[0]:
            at = {k: i for i, k in enumerate(p.keys)}
            peers.append([float(ns[at[k]]) if k in at else 0.0 for k in own.keys])
    peer_ns = np.median(np.array(peers), axis=0) if peers else np.zeros(len(own.keys))
    excess = own_ns - peer_ns
    # without the others' samples, its own untraced time is the measure: the first named
    # holds half of it
    bar = EXPLAINS * (reason_excess_ns if peers else float(untraced_ns[j]))
    order = sorted(
        (i for i in range(len(own.keys)) if own_n[i] and excess[i] >= PART * reason_excess_ns),
        key=lambda i: (-excess[i], own.keys[i]),
    )
    chosen: list[int] = []
    for i in order:
        if len(chosen) == NAMED:
            break
        if chosen and own_n[i] < MIN_SAMPLES:  # a second name on 1-4 samples says nothing
            continue
        path = own.paths[i].split(";")[:-1] if i < len(own.paths) else []
        callers = {function_key(f) for f in path}
        if not any(own.keys[c] in callers for c in chosen):
            chosen.append(i)
    if not chosen or excess[chosen[0]] < bar or excess[chosen[0]] <= 0:
        return ""
    words = []
    for i in chosen:
        name = own.keys[i]
        if is_own_line(name):
            name = f"{name} (the loop's own line)"
        n = int(own_n[i])
        if n < MIN_SAMPLES:
            words.append(f"{name}: too few samples (n={n})")
            continue
        others = f"; the other ranks {peer_ns[i] / n_steps / 1e6:.2f} ms" if peers else ""
        words.append(
            f"{name} {own_ns[i] / n_steps / 1e6:.2f} ms {per} ({n} of {int(total[0])} "
            f"samples{others})"
        )
    return ", ".join(words)
