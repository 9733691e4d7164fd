"""What the ranks' run-ups show of their own work, when scheduling noise makes them late by
turns (decision 501): a rank woken late from its previous collective on a busy machine
arrives late with the others' run-up, while a slow one has done more since its previous
collective. Per rank and pod step, how much of its lateness its own run-ups explain, and
which ranks do more than the others in most steps (`OwnWork`, read by
`stragglers_types.repeatedly_late_rows`)."""

from __future__ import annotations

import numpy as np

from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.stragglers_types import LATE_MIN_NS, Matched, OwnWork

# The categories that can make a rank late (its waits are not its own work)
REASONS = tuple(c for c in CATEGORY_NAMES if c not in ("collective_wait", "device_collectives"))
# What a rank's run-ups show of its own work at a step when the ranks take turns at being
# late: untraced time there is what being descheduled looks like. (In the median step it is
# work of its own all the same: `_steady_excess`.)
TRACED = tuple(c for c in REASONS if c != "other")


def _explained(m: Matched, last: np.ndarray, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per rank (rows of ``held``: the run's hosts) and pod step, how much of its lateness
    ``held`` its own run-ups explain: at the calls it arrived last at (``last``: the
    position in ``m.rows`` of each call's last rank), its time since its previous
    collective beyond the other ranks' median for the same call, summed over the categories
    that can make a rank late (`REASONS`, each only where it exceeds): in the traced ones
    (`TRACED`), and in all of them (untraced time too). A rank woken late from its previous
    collective on a busy machine arrives late with the others' run-up: none of that
    lateness is its own (decision 501)."""
    traced = np.zeros_like(held, dtype=np.float64)
    every = np.zeros_like(held, dtype=np.float64)
    n_r = len(m.rows)
    if n_r < 2:
        return traced, every
    reasons = [CATEGORY_NAMES.index(c) for c in REASONS]
    seen = np.array([c in TRACED for c in REASONS])
    runup = m.runup_ns[:, :, reasons].astype(np.float64)  # (R, calls, reasons)
    in_pod = m.pod_step >= 0
    for j, row in enumerate(m.rows.tolist()):
        mine = (last == j) & in_pod
        if not mine.any():
            continue
        others = np.delete(np.arange(n_r), j)
        excess = runup[j, mine] - np.median(runup[others][:, mine], axis=0)
        per_step = np.zeros((held.shape[1], len(reasons)))
        np.add.at(per_step, m.pod_step[mine], excess)
        per_step = np.clip(per_step, 0.0, None)
        traced[row] = np.minimum(held[row], per_step[:, seen].sum(axis=1))
        every[row] = np.minimum(held[row], per_step.sum(axis=1))
    return traced, every


def own_work(
    m: Matched, last: np.ndarray, held: np.ndarray, threshold: np.ndarray, stepped: np.ndarray
) -> OwnWork:
    """What the run-ups of the ranks ``m`` show of their own work (`OwnWork`): how much of
    their lateness ``held`` they explain (`_explained`), and which do more than the others
    by the late threshold (its median over the ``stepped`` pod steps) in most steps."""
    traced, every = _explained(m, last, held)
    bar = float(np.median(threshold[stepped])) if stepped.any() else float(LATE_MIN_NS)
    steady = _steady_excess(m, held.shape[1], held.shape[0]) >= bar
    return OwnWork(traced, every, steady)


def _steady_excess(m: Matched, n_steps: int, rows: int) -> np.ndarray:
    """Per rank (``rows``: the run's hosts; 0 for a rank without calls), how much longer
    than the other ranks it works in most steps: the largest, over the categories that can
    make a rank late, of the median over the pod steps with calls of its run-ups' time there
    beyond the other ranks' median for the same calls, summed per step. A rank doing 15%
    more host compute every step is last at few steps on a busy machine, where being
    descheduled makes the ranks late by turns by more; its run-ups show the work (decision
    501). Untraced time counts too (decision 1036): being descheduled by turns leaves none
    of it in the median step, and a rank doing 2.9 ms of Python every step (a metric,
    logging; 2.85 ms of untraced run-up against the others' 0.49-0.53) on a 4-rank job
    late by turns was no straggler.

    And at most its whole run-up's excess (all the categories together, against the other
    ranks' whole run-ups) in the median step: a rank doing more of one thing but less in all
    arrives first in most steps, and its lead in that one is no work that holds anyone (a
    2-worker TF job's worker 0 did 1.70 ms more host compute than worker 1 in its median
    step and 4.57 ms less input, 1.31 ms less in all: named a straggler at 3 steps of 40,
    1.07 ms late; decision 1078)."""
    out = np.zeros(rows)
    n_r = len(m.rows)
    in_pod = m.pod_step >= 0
    if n_r < 2 or not in_pod.any():
        return out
    reasons = [CATEGORY_NAMES.index(c) for c in REASONS]  # untraced too (decision 1036)
    runup = m.runup_ns[:, in_pod][:, :, reasons].astype(np.float64)  # (R, calls, reasons)
    pod = m.pod_step[in_pod]
    stepped = np.unique(pod)
    whole = runup.sum(axis=2)  # (R, calls)
    for j, row in enumerate(m.rows.tolist()):
        excess = runup[j] - np.median(np.delete(runup, j, axis=0), axis=0)
        per_step = np.zeros((n_steps, len(reasons)))
        np.add.at(per_step, pod, excess)
        in_all = np.zeros(n_steps)
        np.add.at(in_all, pod, whole[j] - np.median(np.delete(whole, j, axis=0), axis=0))
        most = float(np.median(per_step[stepped], axis=0).max())
        out[row] = min(most, float(np.median(in_all[stepped])))
    return out
