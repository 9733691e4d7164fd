"""The ``steps`` table, and the step each event, kernel or allocation falls in.

One row per host and step, from the host's step database: the intermediate the overview,
the input pipeline and the pod viewer read, so ``steps`` is the overview's steps and
categories to the nanosecond (for one host; with several hosts the overview shows pod
steps, and each host's own steps are its ``--host`` page).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from stepscope.sql import arrow

if TYPE_CHECKING:
    import pyarrow as pa

    from stepscope.stats import StepDb

COLUMNS = {
    "host": "the host (profile file) of the step",
    "step_num": "step number (`step_num`, `N` of `ProfilerStep#N`, or 0.. for inferred steps)",
    "step": "the step's name, e.g. `train 6` (as `events.step`)",
    "start_ns": "start on the host's profile clock (ns)",
    "dur_ns": "step time (ns); the `*_ns` categories add up to it",
    "end_ns": "`start_ns + dur_ns` (ns)",
}
STAGED = {
    "staged_input_ns": "input prepared inside the step beyond `input_ns` (ns; the overview's "
    "`staged_input_ms` per step)",
}


def columns() -> dict[str, str]:
    """Every column of ``steps``: ``<category>_ns`` for each breakdown category, in the
    overview's order, between the step's times and the staged input."""
    from stepscope.stats.events import CATEGORY_LABELS, CATEGORY_NAMES

    categories = {
        f"{name}_ns": f'time in "{CATEGORY_LABELS[name]}" (ns; the overview\'s '
        f"`breakdown_ns.{name}`)"
        for name in CATEGORY_NAMES
    }
    return {**COLUMNS, **categories, **STAGED}


def steps_table(host: str, db: StepDb) -> pa.Table:
    n = db.n_steps
    names = list(db.names)
    staged = db.staged_ns if len(db.staged_ns) == n else np.zeros(n, np.int64)
    columns = {
        "host": arrow.constant(host, n),
        "step_num": arrow.numbers(np.asarray(db.step_num, np.int64)),
        "step": arrow.labels(np.arange(n), names),
        "start_ns": arrow.numbers(np.asarray(db.start_ns, np.int64)),
        "dur_ns": arrow.numbers(np.asarray(db.dur_ns, np.int64)),
        "end_ns": arrow.numbers(np.asarray(db.start_ns + db.dur_ns, np.int64)),
    }
    for name, values in db.category_ns().items():
        columns[f"{name}_ns"] = arrow.numbers(np.asarray(values, np.int64))
    columns["staged_input_ns"] = arrow.numbers(np.asarray(staged, np.int64))
    return arrow.table(columns)


def step_rows(db: StepDb, when_ns: np.ndarray) -> np.ndarray:
    """Per time, the row of the step whose span [start, end) holds it (the latest-starting
    one where spans overlap), -1 outside every step."""
    when_ns = np.asarray(when_ns)
    if not db.n_steps or not len(when_ns):
        return np.full(len(when_ns), -1, np.int64)
    order = np.argsort(db.start_ns, kind="stable")
    starts = np.asarray(db.start_ns)[order]
    ends = starts + np.asarray(db.dur_ns)[order]
    k = np.searchsorted(starts, when_ns, side="right") - 1
    at = np.maximum(k, 0)
    inside = (k >= 0) & (when_ns < ends[at])
    return np.where(inside, order[at], -1).astype(np.int64)


def step_columns(db: StepDb, when_ns: np.ndarray) -> dict[str, pa.Array]:
    """``step_num`` and ``step`` (name) of the step holding each time (NULL outside steps)."""
    rows = step_rows(db, when_ns)
    inside = rows >= 0
    numbers = np.asarray(db.step_num, np.int64)[np.maximum(rows, 0)] if db.n_steps else rows
    return {
        "step_num": arrow.numbers(numbers, inside),
        "step": arrow.labels(rows, list(db.names)),
    }
