"""Pairing the steps of several hosts into pod steps (ALL_HOSTS, pod viewer).

Two ways, and the result always says which and what it left out:

- **by step number**, when the hosts share most step numbers (the common numbers are more
  than half of the steps of the host with the fewest): a pod step is a number every host
  has; a host's steps whose number is missing elsewhere are left out.
- **by position** otherwise (inferred steps, or workers whose step counters differ), as
  XProf's step intersection does it: the host whose steps span the least time is the
  reference; every other host is shifted against it by the number of steps that makes their
  step spans overlap the most (each host's times on its own profile clock); pod steps are
  the positions every host covers, numbered 0, 1, 2...

Hosts without any step take no part (they are named in the description).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stepscope.distinct import distinct
from stepscope.records import record
from stepscope.words import counted

BY_NUMBER = "step_number"
BY_POSITION = "position"
SINGLE = "single"


@record
class HostSteps:
    """One host's steps, as the pairing needs them (a StepDb's columns)."""

    host: str
    step_num: np.ndarray  # int64
    start_ns: np.ndarray  # int64, on the host's own profile clock
    dur_ns: np.ndarray  # int64


@record
class StepPairing:
    """Pod steps: ``rows[h][k]`` is host ``h``'s row (step index) in pod step ``k``, or -1."""

    mode: str  # BY_NUMBER, BY_POSITION or SINGLE
    step_num: np.ndarray  # int64 label of each pod step
    rows: tuple[np.ndarray, ...]  # per host, int64
    left_out: tuple[int, ...]  # per host: its steps in no pod step
    description: str  # for people: how steps were paired and what was left out

    @property
    def n_steps(self) -> int:
        return len(self.step_num)


def _overlap_by_shift(sub: HostSteps, ref: HostSteps) -> tuple[int, int, int]:
    """(first sub row, first ref row, count) of the shift of ``sub`` against ``ref`` whose
    paired steps overlap in time the most (ties: the first shift tried, from ref's side)."""
    ns, nr = len(sub.step_num), len(ref.step_num)
    sub_end, ref_end = sub.start_ns + sub.dur_ns, ref.start_ns + ref.dur_ns
    best = (-1, 0, 0, 0)
    # shift d: sub row i pairs with ref row i + d
    for d in [*range(0, nr), *range(-1, -ns, -1)]:
        i0 = max(0, -d)
        count = min(ns - i0, nr - (i0 + d))
        if count <= 0:
            continue
        s = slice(i0, i0 + count)
        r = slice(i0 + d, i0 + d + count)
        lo = np.maximum(sub.start_ns[s], ref.start_ns[r])
        hi = np.minimum(sub_end[s], ref_end[r])
        overlap = int(np.maximum(hi - lo, 0).sum())
        if overlap > best[0]:
            best = (overlap, i0, i0 + d, count)
    return best[1], best[2], best[3]


def _by_position(hosts: Sequence[HostSteps]) -> tuple[np.ndarray, list[np.ndarray]]:
    spans = [int((h.start_ns + h.dur_ns).max() - h.start_ns.min()) for h in hosts]
    ref = hosts[int(np.argmin(spans))]
    aligned = [(0, 0, len(h.step_num)) if h is ref else _overlap_by_shift(h, ref) for h in hosts]
    begin = max(a[1] for a in aligned)
    end = min(a[1] + a[2] for a in aligned)
    count = max(end - begin, 0)
    rows = [np.arange(count, dtype=np.int64) + (sub0 + begin - ref0) for sub0, ref0, _ in aligned]
    return np.arange(count, dtype=np.int64), rows


def _by_number(hosts: Sequence[HostSteps], common: np.ndarray) -> list[np.ndarray]:
    rows = []
    for h in hosts:
        order = np.argsort(h.step_num, kind="stable")
        k = np.searchsorted(h.step_num[order], common)
        rows.append(order[k].astype(np.int64))
    return rows


def _ranges(numbers: np.ndarray) -> str:
    """``numbers`` (never empty: the steps a host leaves out) as one number or lo-hi."""
    lo, hi = int(numbers.min()), int(numbers.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _xprof_shift(sub: HostSteps, chief: HostSteps) -> tuple[int, int, int]:
    """XProf's alignment of ``sub`` against ``chief``: (first sub row, first chief row,
    count). Overlaps are summed per shift while walking both step sequences in time order
    (XProf's CalculateSimilarities), and the best shift is the first maximum in the order
    0, 1, ... then -1, -2, ... (FindBestOffset)."""
    n, m = len(sub.step_num), len(chief.step_num)
    s_lo, s_hi = sub.start_ns.tolist(), (sub.start_ns + sub.dur_ns).tolist()
    c_lo, c_hi = chief.start_ns.tolist(), (chief.start_ns + chief.dur_ns).tolist()
    similarity = [0] * (n + m - 1)
    i = j = 0
    while i < n and j < m:
        if s_hi[i] == s_lo[i]:
            i += 1
            continue
        if c_hi[j] == c_lo[j]:
            j += 1
            continue
        similarity[j - i + n - 1] += max(0, min(s_hi[i], c_hi[j]) - max(s_lo[i], c_lo[j]))
        if s_hi[i] < c_hi[j]:
            i += 1
        elif c_hi[j] < s_hi[i]:
            j += 1
        else:
            i, j = i + 1, j + 1
    best, best_k = -1, 0
    for k in [*range(0, m), *range(-1, -n, -1)]:
        if similarity[k + n - 1] > best:
            best, best_k = similarity[k + n - 1], k
    first_sub, first_chief = (0, best_k) if best_k >= 0 else (-best_k, 0)
    return first_sub, first_chief, min(n - first_sub, m - first_chief)


def _xprof_span(host: HostSteps) -> int:
    """The time ``host``'s steps span, as XProf measures it to choose the chief: from the
    first start to the last end of its steps with a duration (0 when it has none)."""
    timed = host.dur_ns > 0
    if not timed.any():
        return 0
    return int((host.start_ns + host.dur_ns)[timed].max() - host.start_ns[timed].min())


def xprof_rows(hosts: Sequence[HostSteps]) -> list[np.ndarray]:
    """XProf 2.24.2's step intersection (its ALL_HOSTS pod steps) whatever the step numbers:
    the host whose steps span the least time is the chief; every other host is shifted
    against it to overlap the most, on the times as stored (each host's own clock: stepscope's
    and TensorFlow's captures store them from their own start); the pod steps are the chief's
    steps every host covers. Per host, its row in each pod step (an empty array for a host
    without steps)."""
    present = [h for h in hosts if len(h.step_num)]
    if not present:
        return [np.zeros(0, np.int64) for _ in hosts]
    chief = present[int(np.argmin([_xprof_span(h) for h in present]))]
    aligned = [(0, 0, len(h.step_num)) if h is chief else _xprof_shift(h, chief) for h in present]
    begin = max(a[1] for a in aligned)
    end = min(a[1] + a[2] for a in aligned)
    count = max(end - begin, 0)
    rows = iter(
        np.arange(count, dtype=np.int64) + (sub0 + begin - chief0) for sub0, chief0, _ in aligned
    )
    return [next(rows) if len(h.step_num) else np.zeros(0, np.int64) for h in hosts]


def pair_host_steps(hosts: Sequence[HostSteps]) -> StepPairing:
    """Pair the steps of ``hosts`` (see the module docstring for the rules)."""
    n = len(hosts)
    empty = np.zeros(0, dtype=np.int64)
    present = [k for k, h in enumerate(hosts) if len(h.step_num)]
    rows = [np.full(0, -1, np.int64) for _ in hosts]
    idle = [hosts[k].host for k in range(n) if k not in present]
    idle_note = f"; no steps on {', '.join(idle)}" if idle else ""
    if len(present) <= 1:
        if not present:
            return StepPairing(SINGLE, empty, tuple(rows), (0,) * n, "no steps" + idle_note)
        only = hosts[present[0]]
        count = len(only.step_num)
        rows[present[0]] = np.arange(count, dtype=np.int64)
        rows = [r if len(r) else np.full(count, -1, np.int64) for r in rows]
        note = f"steps of {only.host} only{idle_note}" if n > 1 else ""
        return StepPairing(SINGLE, only.step_num.copy(), tuple(rows), (0,) * n, note)
    used = [hosts[k] for k in present]
    numbers = [distinct(h.step_num) for h in used]
    common = numbers[0]
    for other in numbers[1:]:
        common = np.intersect1d(common, other, assume_unique=True)
    fewest = min(map(len, numbers))
    if 2 * len(common) > fewest:
        mode, labels, paired = BY_NUMBER, common, _by_number(used, common)
        how = f"paired by step number: {counted(len(common))} every host has"
    else:
        mode = BY_POSITION
        labels, paired = _by_position(used)
        starts = ", ".join(
            f"{h.host} {int(h.step_num[r[0]])}" if len(r) else h.host
            for h, r in zip(used, paired, strict=True)
        )
        shared = counted(len(common), "step number") if len(common) else "no step number"
        how = (
            f"paired by position (the hosts share {shared}): "
            f"{counted(len(labels), 'pod step')}, the first being {starts}"
        )
    left_out = [0] * n
    notes = []
    for k, r in zip(present, paired, strict=True):
        rows[k] = r
        missing = np.setdiff1d(np.arange(len(hosts[k].step_num)), distinct(r), assume_unique=True)
        left_out[k] = len(missing)
        if len(missing):
            notes.append(
                f"{hosts[k].host}: {len(missing)} (steps {_ranges(hosts[k].step_num[missing])})"
            )
    for k in range(n):
        if k not in present:
            rows[k] = np.full(len(labels), -1, np.int64)
    dropped = f"; left out, not on every host: {', '.join(notes)}" if notes else ""
    return StepPairing(
        mode, labels.astype(np.int64), tuple(rows), tuple(left_out), how + dropped + idle_note
    )
