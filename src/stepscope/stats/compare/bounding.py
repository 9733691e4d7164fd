"""What bounds the steps in a diff: the report's "bound by" limits per step, tested as a
family of their own, and the row behind a limit's change (decision 1044).

The verdict names the limit that drove a change, as the report's headline names the limit
that bounds the steps. XProf's categories stay in the diff's table, but a wait left untraced
is no category of theirs: a loop blocked on a queue another thread fills read as host
compute there, where XProf's sweep holds a thread pool's zero-length event's type (the XLA
CPU client's) over the wait, or as "All Others", and the verdict said the host computed.
"""

from __future__ import annotations

import numpy as np

from stepscope.stats.compare.run_summary import NamedRows, RunSummary
from stepscope.stats.compare.significance import Interval, bootstrap_changes, holm_significant
from stepscope.stats.host.python_samples import PYTHON_OP_TYPE
from stepscope.stats.steps.fetch import QUEUE_GET_FRAMES
from stepscope.stats.steps.limits import LIMIT_LABELS, LIMIT_NAMES, label_words

PREFIX = "bound."
# limits whose time is the host's own ops; the rest but input and waits run on the device
# when the run has device ops (else on the host: a CPU backend's compute)
_HOST_LIMITS = ("host", "dispatch", "compilation")


def read(base: RunSummary, cand: RunSummary) -> bool:
    """Whether both runs say what bounds their steps (a summary file written before
    decision 1044 does not: the verdict then reads XProf's categories)."""
    return bool(base.limit_ns) and bool(cand.limit_ns)


def unread(base: RunSummary, cand: RunSummary) -> str:
    """The verdict's words when one run says what bounds its steps and the other (a summary
    file written before decision 1044) does not: the driver is then XProf's category."""
    if not base.limit_ns and not cand.limit_ns:
        return ""
    side = "baseline" if not base.limit_ns else "candidate"
    return (
        f" (by XProf's categories: the {side}'s summary file does not say what bounds its "
        "steps; write it again with `stepscope summary`)"
    )


def label(name: str) -> str:
    """A limit's row in the diff: ``Bound by input``."""
    return f"Bound by {label_words(LIMIT_LABELS[name])}"


def words(metric_name: str) -> str:
    """A limit metric in the verdict's sentence: ``input``, ``Python / host``."""
    return label_words(LIMIT_LABELS[metric_name.removeprefix(PREFIX)])


def columns(base: RunSummary, cand: RunSummary) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """(name, label, baseline's per-step ns, candidate's) of each limit either run has."""
    if not read(base, cand):
        return []
    out = []
    for c in LIMIT_NAMES:
        a, b = base.limit_ns[c], cand.limit_ns[c]
        if a.any() or b.any():
            out.append((PREFIX + c, label(c), a, b))
    return out


def tested(
    base: RunSummary, cand: RunSummary, floor_ns: float
) -> list[tuple[str, str, Interval, bool]]:
    """(name, label, interval, significant) per limit: the mean per step, Holm-corrected as a
    family of its own, so that the step time's and the categories' significance stay as they
    were."""
    found = columns(base, cand)
    if not found:
        return []
    groups = bootstrap_changes(
        [f[2] for f in found], [f[3] for f in found], [["mean"]] * len(found)
    )
    intervals = [g[0] for g in groups]
    holm = iter(holm_significant([iv.p_value for iv in intervals if iv.testable]))
    out = []
    for (name, text, _, _), iv in zip(found, intervals, strict=True):
        significant = bool(iv.testable and next(holm) and abs(iv.delta) >= floor_ns)
        out.append((name, text, iv, significant))
    return out


def ops(rows: NamedRows) -> NamedRows:
    """A host op table without the stack sampler's "Python" rows: they are where the sampler
    saw a thread that no op covered, blocked in a wait as much as computing (a loop's
    ``wait (threading.py)`` inside a queue's ``get``), estimates and not ops, as the
    overview's top ops leave them out."""
    keep = [i for i, t in enumerate(rows.types) if t != PYTHON_OP_TYPE]
    if len(keep) == len(rows.types):
        return rows
    at = np.array(keep, np.int64)
    return NamedRows(
        tuple(rows.keys[i] for i in keep),
        tuple(rows.names[i] for i in keep),
        tuple(rows.types[i] for i in keep),
        rows.count[at],
        rows.total_ns[at],
        rows.self_ns[at],
        rows.rest_ns,
    )


def fetch_detail(base: RunSummary, cand: RunSummary, delta_ns: float) -> tuple[str, float] | None:
    """The loop's fetch of its batch behind an input limit's change of ``delta_ns`` per step:
    (where, its change per step) when it changed the same way by half of it at least."""
    where = cand.fetch_from or base.fetch_from
    if not where:
        return None
    a = float(base.fetch_ns.mean()) if base.fetch_ns is not None and len(base.fetch_ns) else 0.0
    b = float(cand.fetch_ns.mean()) if cand.fetch_ns is not None and len(cand.fetch_ns) else 0.0
    moved = b - a
    if moved * delta_ns <= 0 or abs(moved) < 0.5 * abs(delta_ns):
        return None
    what = (
        "the wait on the queue"
        if where in QUEUE_GET_FRAMES
        else "the fetch from the loop's iterator"
    )
    return f"{what}, {where}", moved


def source_of(limit: str, has_device_rows: bool) -> str:
    """The table whose rows explain a limit's change: "input_stages", "host_ops",
    "device_ops", or "" (waits: no row is a wait)."""
    if limit == "input":
        return "input_stages"
    if limit == "waits":
        return ""
    if limit in _HOST_LIMITS or not has_device_rows:
        return "host_ops"
    return "device_ops"
