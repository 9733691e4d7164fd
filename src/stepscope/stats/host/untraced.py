"""Where the untraced host time sits: time of the steps' threads, located and explained.

The "host" limit is step time that no traced event covers and that the limits explain no
other way (staged input, a wait for a computation, a dispatch run: `limit_table.Covered`).
On the thread running the steps it falls into gaps; the largest gap of each step is named by
the traced events around it ("after A, before B"), and the places are ranked by the time
they hold over all steps. With the Python stack sampler's lines, the same time is also
split by Python function (`stepscope.stats.host.python_samples`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import field

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.host.python_samples import PythonTime
from stepscope.vocab.tensorflow import GET_NEXT_KERNELS, is_root_iterator
from stepscope.words import of_steps

START, END = "(step start)", "(step end)"


@record
class GapPlace:
    """Where the largest untraced gaps of steps sit: between which traced events."""

    after: str  # the traced event the gap follows, or START
    before: str  # the traced event that ends the gap, or END
    ns: int  # untraced time in such gaps, over the steps
    steps: int  # steps whose largest gap is here


@record
class Untraced:
    """Untraced time of the steps' threads (only what the steps' own threads show)."""

    thread: str  # the thread running the steps ("" when unknown)
    places: tuple[GapPlace, ...] = ()  # largest gap of each step, grouped, most time first
    python: PythonTime = field(default_factory=PythonTime.empty)
    # Set when this is one host's picture inside a multi-host summary: its times and step
    # counts are that host's, over all of its steps, not the pod steps'.
    host: str = ""
    n_steps: int = 0  # the host's steps
    step_ns: int = 0  # their total time
    lines: tuple[int, ...] = ()  # the steps' thread lines (of one host's profile)
    # per step: its largest gap's place (index in ``places``, -1: none) and host time there,
    # so that the picture of some of the steps can be told (`from_step`); empty when unknown
    place_of_step: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    host_ns_of_step: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def per(self, n_steps: int, step_ns: int) -> tuple[int, int]:
        """The steps and step time to divide this picture's times by: its own host's when
        set, else the caller's (the summary's steps)."""
        return (self.n_steps, self.step_ns) if self.host else (n_steps, step_ns)

    def from_step(self, first: int, python: PythonTime) -> Untraced | None:
        """The picture of the steps from ``first`` on, with their Python (``python``: the
        sampler's functions over those steps); None without the per-step columns. The
        "Once warm" line named a warm-up's imports as 79.5% of the steps' time and its
        place as "39.29 ms per step in 61 of 61 steps" under 7.26 ms steps (decision 547)."""
        if not len(self.place_of_step) or self.host:
            return None
        place = self.place_of_step[first:]
        ns = self.host_ns_of_step[first:]
        had = place >= 0
        time = np.bincount(place[had], weights=ns[had], minlength=len(self.places))
        steps = np.bincount(place[had], minlength=len(self.places))
        # most time first, then the whole picture's order (`Counter.most_common`'s ties)
        order = sorted(np.flatnonzero(steps).tolist(), key=lambda k: (-int(time[k]), k))
        places = tuple(
            GapPlace(self.places[k].after, self.places[k].before, int(time[k]), int(steps[k]))
            for k in order
        )
        index = np.full(len(self.places) + 1, -1, np.int32)  # the last: no place (-1)
        index[order] = np.arange(len(order), dtype=np.int32)
        return Untraced(
            self.thread,
            places,
            python,
            lines=self.lines,
            place_of_step=index[place],
            host_ns_of_step=ns.copy(),
        )


def _names_around(
    profile: Profile,
    events: np.ndarray,
    gap_lo: np.ndarray,
    gap_hi: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    name_stages: bool = False,
) -> tuple[list[str], list[str]]:
    """The event (of ``events``) ending last at or before each gap, and the one starting first
    at or after its end; START / END where the gap touches its step's bounds. ``name_stages``:
    a fetch's TensorFlow-named wrapper (`_loader_stages`) is named after its loader."""
    by_end = events[np.argsort(profile.end_at(events), kind="stable")]
    by_start = events[np.argsort(profile.start_ns[events], kind="stable")]
    k = np.searchsorted(profile.end_at(by_end), gap_lo, "right") - 1
    j = np.searchsorted(profile.start_ns[by_start], gap_hi, "left")
    first = (k < 0) | (gap_lo <= span_lo)
    last = (j >= len(by_start)) | (gap_hi >= span_hi)
    stage = _loader_stages(profile) if name_stages else None
    after = [
        START if f else (stage or profile.event_name)(int(by_end[i]))
        for i, f in zip(k.tolist(), first.tolist(), strict=True)
    ]
    before = [
        END if f else profile.event_name(int(by_start[i]))
        for i, f in zip(j.tolist(), last.tolist(), strict=True)
    ]
    return after, before


def wrapped_stage(profile: Profile, e: int, stages: np.ndarray) -> int:
    """The first root input stage (of the name ids ``stages``) starting inside event ``e`` on
    its thread, -1 for none: the loader that ``IteratorGetNextOp::DoCompute`` wraps when
    `stepscope.data` or `stepscope.steps` wrote it (they wrap each fetch in TensorFlow's
    event so that XProf counts the wait)."""
    sl = profile.events_of_line(profile.lines[int(profile.line[e])])
    start = int(profile.start_ns[e])
    inner = np.flatnonzero(
        np.isin(profile.name[sl], stages)
        & (profile.start_ns[sl] >= start)
        & (profile.start_ns[sl] < start + int(profile.dur_ns[e]))
    )
    return sl.start + int(inner[0]) if len(inner) else -1


def _loader_stages(profile: Profile) -> Callable[[int], str]:
    """An event's name, but for ``IteratorGetNextOp::DoCompute``: the root stage it wraps
    (`wrapped_stage`, ``Iterator::DataLoader``): a PyTorch loop's host time read "mostly
    after 'IteratorGetNextOp::DoCompute'" (decision 733)."""
    wrappers = {profile.strings.id_of(name) for name in GET_NEXT_KERNELS} - {-1}
    stages = profile.strings.ids_matching(is_root_iterator)
    named: dict[int, str] = {}

    def name_of(e: int) -> str:
        if int(profile.name[e]) not in wrappers or not len(stages):
            return profile.event_name(e)
        found = named.get(e)
        if found is None:
            inner = wrapped_stage(profile, e, stages)
            found = named[e] = profile.event_name(inner if inner >= 0 else e)
        return found

    return name_of


def _input_in(
    starts: np.ndarray, ends: np.ndarray, fetch: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> np.ndarray:
    """Per piece [start, end]: the time counted as the loop's fetch in the gaps ``fetch``
    (lo, hi, ns) that lie in it. A fetch gap is a piece, or part of one (the loop's own
    thread can add traced events when the steps are another thread's), never across two."""
    f_lo, f_hi, f_ns = fetch
    order = np.argsort(f_lo, kind="stable")
    f_lo, f_hi = f_lo[order], f_hi[order]
    total = np.r_[0, np.cumsum(f_ns[order])]
    first = np.searchsorted(f_lo, starts, "left")
    last = np.searchsorted(f_hi, ends, "right")
    return np.where(last > first, total[np.maximum(last, first)] - total[first], 0)


def _largest_gaps(
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    covered_lo: np.ndarray,
    covered_hi: np.ndarray,
    fetch: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per step, the widest of the pieces its span leaves between the covered intervals
    (sorted, disjoint), the first of equals: [start, end] in int64, with the host time in it
    (its width, less the time counted as the loop's fetch there: ``fetch``, see `_input_in`;
    the widest is by that time). All steps at once: the pieces of step i are its start, then
    the ends of the covered intervals it meets, each up to the next such interval's start or
    its own end, clipped to the span (a loop per step was 2.5 ms at 138 steps, decision
    300)."""
    lo, hi = np.asarray(span_lo, np.int64), np.asarray(span_hi, np.int64)
    if not len(covered_lo):
        host = hi - lo
        if fetch is not None and len(fetch[0]):
            host = np.maximum(host - _input_in(lo, hi, fetch), 0)
        return lo.copy(), hi.copy(), host
    first = np.searchsorted(covered_hi, lo, "right")  # the intervals each step meets
    met = np.maximum(np.searchsorted(covered_lo, hi, "left") - first, 0)
    count = met + 1
    begin = np.cumsum(count) - count  # each step's first piece
    step = np.repeat(np.arange(len(lo)), count)
    k = np.arange(len(step)) - begin[step]  # the piece's number in its step
    at = first[step] + k
    last = len(covered_lo) - 1
    starts = np.where(k == 0, lo[step], covered_hi[np.minimum(np.maximum(at - 1, 0), last)])
    ends = np.where(k == met[step], hi[step], covered_lo[np.minimum(at, last)])
    starts = np.minimum(np.maximum(starts, lo[step]), hi[step])
    ends = np.minimum(np.maximum(ends, lo[step]), hi[step])
    widths = ends - starts
    if fetch is not None and len(fetch[0]):
        widths = np.maximum(widths - _input_in(starts, ends, fetch), 0)
    widest = np.flatnonzero(widths == np.maximum.reduceat(widths, begin)[step])
    first_of_step = np.ones(len(widest), dtype=bool)
    first_of_step[1:] = step[widest[1:]] != step[widest[:-1]]
    chosen = widest[first_of_step]
    return starts[chosen], ends[chosen], widths[chosen]


def locate_untraced(
    profile: Profile,
    step_lines: tuple[int, ...],
    traced: np.ndarray,
    span_lo: np.ndarray,
    span_hi: np.ndarray,
    covered_lo: np.ndarray,
    covered_hi: np.ndarray,
    python: PythonTime,
    fetch: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    name_stages: bool = False,
) -> Untraced:
    """The largest untraced gap of each step (``covered_*``: the union of the steps' traced
    intervals, sorted and disjoint; ``traced``: counted events, for naming the gaps), by its
    host time: less what the limits count as the loop's fetch from its Python iterator
    (``fetch``: `Fetched`'s gaps and their fetch time), which is input. ``name_stages``: a
    gap after a fetch wrapped in TensorFlow's event by stepscope is placed after its loader."""
    if not step_lines or not len(span_lo):
        return Untraced("", (), python)
    line = step_lines[0]
    thread = profile.lines[line].label
    on_line = traced[np.isin(profile.line[traced], list(step_lines))]
    g_lo, g_hi, host = _largest_gaps(span_lo, span_hi, covered_lo, covered_hi, fetch)
    after, before = _names_around(profile, on_line, g_lo, g_hi, span_lo, span_hi, name_stages)
    time: Counter[tuple[str, str]] = Counter()
    steps: Counter[tuple[str, str]] = Counter()
    for key, width in zip(zip(after, before, strict=True), host.tolist(), strict=True):
        if width > 0:
            time[key] += width
            steps[key] += 1
    places = tuple(GapPlace(a, b, ns, steps[(a, b)]) for (a, b), ns in time.most_common())
    index = {(p.after, p.before): k for k, p in enumerate(places)}
    place_of_step = np.array(
        [
            index[key] if width > 0 else -1
            for key, width in zip(zip(after, before, strict=True), host.tolist(), strict=True)
        ],
        np.int32,
    )
    return Untraced(
        thread,
        places,
        python,
        lines=tuple(step_lines),
        place_of_step=place_of_step,
        host_ns_of_step=np.asarray(host, np.int64),
    )


def where_untraced(untraced: Untraced, n_steps: int, step_ns: int, with_python: bool = True) -> str:
    """'on thread T, mostly after A and before B (x ms per step); Python: f 40%, ...'."""
    n_steps, step_ns = untraced.per(n_steps, step_ns)
    parts = []
    if untraced.places:
        place = untraced.places[0]
        on_host = f"on host {untraced.host}, " if untraced.host else ""
        parts.append(
            f"{on_host}{_on_thread(untraced.thread)}, mostly after '{place.after}' and before "
            f"'{place.before}' ({place.ns / 1e6 / max(n_steps, 1):.2f} ms"
            f"{' per step' if n_steps > 1 else ''} in {of_steps(place.steps, n_steps)})"
        )
    python = untraced.python
    if with_python and len(python) and step_ns:
        named = python.describe_all(python.leading(3), step_ns)
        parts.append(f"Python sampled in the steps: {named}")
    return "; ".join(parts)


def _on_thread(label: str) -> str:
    """ "on thread T"; a Kineto thread named "thread 3100453" read "on thread thread
    3100453"."""
    if not label:
        return "on the steps' thread"
    return f"on {label}" if label.lower().startswith("thread ") else f"on thread {label}"
