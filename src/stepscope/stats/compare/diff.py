"""The diff of two runs: step time and its categories with confidence intervals, matched
ops, kernels and input stages with their per-step deltas, memory peak, TensorCore share, and
a plain-language verdict naming what drove the change.

Per-step figures divide a run's totals by its step count, so runs that profiled different
numbers of steps compare fairly. When a run's first steps are warm-up (a compile:
`stepscope.stats.warmup`), its step figures are those of the steps after them ("once warm",
decision 386) and the warm-up's time is a metric of its own; ``once_warm=False`` compares every
step. Only metrics with per-step samples (step time, categories)
are tested for significance (`significance`); memory peak and TensorCore share are single
figures of a run, compared as they are.
"""

from __future__ import annotations

import numpy as np

from stepscope.records import record
from stepscope.stats.compare import bounding
from stepscope.stats.compare.run_summary import NamedRows, RunSummary, stage_name
from stepscope.stats.compare.significance import (
    ALPHA,
    Interval,
    bootstrap_change,
    bootstrap_changes,
    holm_significant,
)
from stepscope.stats.events import CATEGORY_LABELS, CATEGORY_NAMES

NOISE_FLOOR = 0.01  # of the baseline's median step time: smaller changes are never flagged
# the candidate's extra wait for a CPU core, this share of the mean step time's change at
# least: the verdict calls the change the machine's load (decision 951); from ALL_LOAD on,
# all of it
LOAD_SHARE = 0.5
ALL_LOAD = 0.9
CORE_WAIT = "core_wait"
CORE_WAIT_LABEL = "Waiting for a CPU core"
MAX_ROW_CHANGES = 100
STEP_STATISTICS = ("median", "mean", "p90", "stddev")
_STEP_LABELS = {
    "median": "Step time (median)",
    "mean": "Step time (mean)",
    "p90": "Step time (p90)",
    "stddev": "Step time spread (stddev)",
}


@record
class MetricChange:
    """One named metric in both runs (``unit``: ns, bytes or percent)."""

    name: str  # e.g. step_time.median, category.input, memory.peak (used by --fail-on)
    label: str
    unit: str
    base: float | None
    cand: float | None
    ci_low: float | None = None  # 95% interval of cand - base (tested metrics)
    ci_high: float | None = None
    rel_ci_low: float | None = None  # 95% interval of cand / base - 1
    rel_ci_high: float | None = None
    p_value: float | None = None
    tested: bool = False  # has per-step samples in both runs
    significant: bool = False  # tested, Holm-significant and above the noise floor

    @property
    def delta(self) -> float | None:
        if self.base is None or self.cand is None:
            return None
        return self.cand - self.base

    @property
    def relative(self) -> float | None:
        """delta / base (a fraction), None when the baseline is 0 or missing."""
        d = self.delta
        return None if d is None or not self.base else d / self.base

    def relative_ci(self) -> tuple[float, float] | None:
        if self.rel_ci_low is None or self.rel_ci_high is None:
            return None
        return self.rel_ci_low, self.rel_ci_high


@record
class RowChange:
    """An op, kernel or input stage matched by key; times per step in ns."""

    key: str
    name: str  # the candidate's name, else the baseline's
    type: str
    # "changed" | "same" (in both, the same time per step and count) | "new" (only in the
    # candidate) | "gone" (only in the baseline)
    status: str
    base_ns: float  # per step
    cand_ns: float
    base_count: int
    cand_count: int
    base_avg_ns: float  # per occurrence
    cand_avg_ns: float

    @property
    def delta_ns(self) -> float:
        return self.cand_ns - self.base_ns


@record
class RunDiff:
    baseline: RunSummary
    candidate: RunSummary
    metrics: tuple[MetricChange, ...]
    host_ops: tuple[RowChange, ...]
    device_ops: tuple[RowChange, ...]
    kernels: tuple[RowChange, ...]
    input_stages: tuple[RowChange, ...]
    verdict: str
    driver: str | None  # the category that drove the step-time change
    driver_detail: str | None  # its stage / op, e.g. "Map stage -68.1 ms/step"
    # the step figures are each run's steps after its warm-up (a warm-up was split in one run
    # at least, and all steps were not asked for)
    once_warm: bool = False
    # the candidate's extra wait for a CPU core as a share of the mean step time's change,
    # when the verdict calls the change the machine's load (`LOAD_SHARE`); None otherwise
    core_wait_share: float | None = None

    def metric(self, name: str) -> MetricChange | None:
        return next((m for m in self.metrics if m.name == name), None)

    @property
    def flagged(self) -> tuple[MetricChange, ...]:
        return tuple(m for m in self.metrics if m.significant)


def _noise_floor_ns(base: RunSummary) -> float:
    """A change of step time smaller than this is never flagged, whatever its p-value."""
    return NOISE_FLOOR * float(np.median(base.step_dur_ns)) if base.n_steps else 0.0


def _tested_metrics(base: RunSummary, cand: RunSummary) -> list[MetricChange]:
    names = [f"step_time.{s}" for s in STEP_STATISTICS]
    labels = [_STEP_LABELS[s] for s in STEP_STATISTICS]
    columns_a, columns_b = [base.step_dur_ns], [cand.step_dur_ns]
    stats: list[list[str]] = [list(STEP_STATISTICS)]
    for c in CATEGORY_NAMES:
        a, b = base.category_ns[c], cand.category_ns[c]
        if a.any() or b.any():
            names.append(f"category.{c}")
            labels.append(CATEGORY_LABELS[c])
            columns_a.append(a)
            columns_b.append(b)
            stats.append(["mean"])
    intervals = [iv for group in bootstrap_changes(columns_a, columns_b, stats) for iv in group]
    holm = iter(holm_significant([iv.p_value for iv in intervals if iv.testable]))
    floor = _noise_floor_ns(base)
    out = []
    for name, label, iv in zip(names, labels, intervals, strict=True):
        t = iv.testable
        significant = bool(t and next(holm) and abs(iv.delta) >= floor)
        out.append(_change(name, label, iv, significant, base.n_steps > 0, cand.n_steps > 0))
    for name, label, iv, significant in bounding.tested(base, cand, floor):
        out.append(_change(name, label, iv, significant, base.n_steps > 0, cand.n_steps > 0))
    return out


def _change(
    name: str, label: str, iv: Interval, significant: bool, base_read: bool, cand_read: bool
) -> MetricChange:
    """A tested metric's row from its bootstrap interval (times in ns); a side without
    samples shows no value, an untestable change no interval."""
    t = iv.testable
    has_rel = t and not np.isnan(iv.rel_low)
    return MetricChange(
        name,
        label,
        "ns",
        iv.base if base_read else None,
        iv.cand if cand_read else None,
        iv.ci_low if t else None,
        iv.ci_high if t else None,
        iv.rel_low if has_rel else None,
        iv.rel_high if has_rel else None,
        iv.p_value if t else None,
        t,
        significant,
    )


def _mean(x: np.ndarray | None) -> float | None:
    return float(x.mean()) if x is not None and len(x) else None


def _core_wait_metric(base: RunSummary, cand: RunSummary) -> MetricChange:
    """The steps' thread's mean time per step runnable but off its core (the stack sampler's
    readings). Tested on its own, outside the step-time family's Holm correction (adding it
    there would move the other figures' significance): significant at p < ALPHA above the
    noise floor (decision 950). Neither run read: not shown."""
    a, b = base.core_wait_ns, cand.core_wait_ns
    name, label = CORE_WAIT, CORE_WAIT_LABEL
    if a is None or b is None or not len(a) or not len(b):
        return MetricChange(name, label, "ns", _mean(a), _mean(b))
    iv = bootstrap_change(a, b, "mean")
    floor = _noise_floor_ns(base)
    significant = bool(iv.testable and iv.p_value < ALPHA and abs(iv.delta) >= floor)
    return _change(name, label, iv, significant, True, True)


def _load_share(metrics: list[MetricChange]) -> float | None:
    """The candidate's extra wait for a CPU core as a share of the mean step time's change,
    when the step time changed significantly, the wait changed significantly the same way, and
    by `LOAD_SHARE` of the change at least: the machine's load, not the program (decision
    951). None otherwise."""
    by_name = {m.name: m for m in metrics}
    mean, wait = by_name["step_time.mean"], by_name.get(CORE_WAIT)
    if wait is None or not mean.significant or not wait.significant:
        return None
    step, waited = mean.delta or 0.0, wait.delta or 0.0
    if not step or waited * step <= 0 or abs(waited) < LOAD_SHARE * abs(step):
        return None
    return waited / step


def share_of_change(share: float) -> str:
    """``63% of the change``; ``as much as the whole change or more`` from 100% (the wait
    grew more than the step time: the program's own time shrank as well)."""
    return "as much as the whole change or more" if share >= 1.0 else f"{share:.0%} of the change"


def waiting_threads(summary: RunSummary) -> str:
    """Whose wait for a core the `core_wait` row is: one host's steps' thread, or a job's
    ranks' (their mean, decision 991)."""
    return "the ranks' steps' threads" if len(summary.hosts) > 1 else "the steps' thread"


def _load_verdict(text: str, share: float, metrics: list[MetricChange], cand: RunSummary) -> str:
    """The verdict of a change the steps' thread's wait for a core explains: said first,
    the category that drove the change after it (its time includes the wait)."""
    wait = next(m for m in metrics if m.name == CORE_WAIT)
    head, _, driven = text.partition(", driven by ")
    mostly = "" if share >= ALL_LOAD else "mostly "
    mean = "; the ranks' mean" if len(cand.hosts) > 1 else ""
    said = (
        f"{head}, {mostly}the machine's load, not the program: {waiting_threads(cand)} waited "
        f"for a CPU core {signed_ms(wait.delta or 0.0)}/step in the candidate "
        f"({share_of_change(share)}{mean}; runnable but off its core, the stack sampler's "
        "readings)"
    )
    if driven:
        said += f"; the categories include that wait: driven by {driven}"
    return said


def _warmup_metric(base: RunSummary, cand: RunSummary) -> MetricChange:
    """The warm-up steps' total time: one figure per run, never tested (one compile is one
    sample). A run without a warm-up has 0 beside one with; neither: not shown."""
    either = bool(base.warmup_steps or cand.warmup_steps)
    return MetricChange(
        "warmup.time",
        "Warm-up (first steps, total)",
        "ns",
        float(base.warmup_ns) if either else None,
        float(cand.warmup_ns) if either else None,
    )


def _single_metrics(base: RunSummary, cand: RunSummary) -> list[MetricChange]:
    def value(x: float | None) -> float | None:
        return None if x is None else float(x)

    return [
        _warmup_metric(base, cand),
        MetricChange(
            "memory.peak",
            "Memory peak",
            "bytes",
            value(base.memory_peak_bytes),
            value(cand.memory_peak_bytes),
        ),
        MetricChange(
            "tensor_core.share",
            "TensorCore share of kernel time",
            "percent",
            value(base.tensor_core_percent),
            value(cand.tensor_core_percent),
        ),
    ]


def match_rows(base: RunSummary, cand: RunSummary, table: str) -> tuple[RowChange, ...]:
    """The rows of one table (host_ops, device_ops, kernels, input_stages) in both runs,
    biggest per-step change first. A key missing on a side whose table was cut
    (summary baselines keep the top rows) is "new"/"gone" only if that side is complete."""
    a: NamedRows = getattr(base, table)
    b: NamedRows = getattr(cand, table)
    if table == "host_ops":  # ops, not the stack sampler's estimates (decision 1045)
        a, b = bounding.ops(a), bounding.ops(b)
    use_self = table != "kernels"
    a_at = {k: i for i, k in enumerate(a.keys)}
    b_at = {k: i for i, k in enumerate(b.keys)}
    rows = []
    for key in dict.fromkeys((*b.keys, *a.keys)):
        i, j = a_at.get(key), b_at.get(key)
        if (i is None and not a.complete) or (j is None and not b.complete):
            continue  # below the other side's cut: unknown there, not absent
        a_ns = int((a.self_ns if use_self else a.total_ns)[i]) if i is not None else 0
        b_ns = int((b.self_ns if use_self else b.total_ns)[j]) if j is not None else 0
        a_n = int(a.count[i]) if i is not None else 0
        b_n = int(b.count[j]) if j is not None else 0
        status = (
            "new"
            if i is None
            else "gone"
            if j is None
            # a run diffed against itself (or a row untouched) is no change (decision 581)
            else "same"
            if a_n == b_n and base.per_step_ns(a_ns) == cand.per_step_ns(b_ns)
            else "changed"
        )
        rows.append(
            RowChange(
                key,
                b.names[j] if j is not None else a.names[i],  # type: ignore[index]
                b.types[j] if j is not None else a.types[i],  # type: ignore[index]
                status,
                base.per_step_ns(a_ns),
                cand.per_step_ns(b_ns),
                a_n,
                b_n,
                a_ns / a_n if a_n else 0.0,
                b_ns / b_n if b_n else 0.0,
            )
        )
    rows.sort(key=lambda r: (-abs(r.delta_ns), r.key))
    return tuple(rows[:MAX_ROW_CHANGES])


def ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms" if abs(ns) >= 1e5 else f"{ns / 1e3:.1f} µs"


def signed_ms(ns: float) -> str:
    return ("+" if ns >= 0 else "-") + ms(abs(ns))


def pct(fraction: float) -> str:
    return f"{fraction * 100:+.1f}%"


_HOST_SIDE = ("host_compute", "kernel_launch", "compilation", "other")


def _detail(category: str, sign: float, tables: dict[str, tuple[RowChange, ...]]) -> str | None:
    """The stage or op behind a category's change: the row with the largest change in the
    same direction."""
    if category == "input":
        return _row_detail(tables["input_stages"], "stage", sign)
    if category in _HOST_SIDE:
        return _row_detail(tables["host_ops"], "op", sign)
    return _row_detail(tables["device_ops"] or tables["kernels"], "op", sign)


def _limit_detail(
    metric: MetricChange,
    sign: float,
    tables: dict[str, tuple[RowChange, ...]],
    pair: tuple[RunSummary, RunSummary],
) -> str | None:
    """The row behind a limit's change: an input limit's fetch from the loop's queue or
    iterator when it moved the same way by half the change at least, else the input stage;
    another limit's op (a wait's: none)."""
    limit = metric.name.removeprefix(bounding.PREFIX)
    if limit == "input":
        fetch = bounding.fetch_detail(pair[0], pair[1], metric.delta or 0.0)
        if fetch is not None:
            return f"{fetch[0]}, {signed_ms(fetch[1])}/step"
    device = bool(tables["device_ops"] or tables["kernels"])
    source = bounding.source_of(limit, device)
    if not source:
        return None
    if source == "device_ops":  # else the host's ops: a CPU backend computes there
        found = _row_detail(tables["device_ops"] or tables["kernels"], "op", sign)
        return found or _row_detail(tables["host_ops"], "op", sign)
    return _row_detail(tables[source], "stage" if source == "input_stages" else "op", sign)


def _row_detail(source: tuple[RowChange, ...], what: str, sign: float) -> str | None:
    """The row of ``source`` with the largest change in the direction ``sign``."""
    same = [r for r in source if r.delta_ns * sign > 0]
    if not same:
        return None
    row = same[0]
    name = stage_name(row.name) if what == "stage" else row.name
    gone = {"gone": ", gone", "new": ", new"}.get(row.status, "")
    return f"{name} {what} {signed_ms(row.delta_ns)}/step{gone}"


def _relative(mean: MetricChange, ci: str = "", per: str = "") -> str:
    """``+10.0%{ci} (10.00 ms → 11.00 ms{per})``; only ``0.0 µs → 5.00 ms{per}`` from a
    baseline of 0 ns, which has no relative change (not "+0.0%")."""
    moved = f"{ms(mean.base or 0.0)} → {ms(mean.cand or 0.0)}{per}"
    if mean.relative is None:
        return moved
    return f"{pct(mean.relative)}{ci} ({moved})"


def _said(metric: MetricChange) -> str:
    """A category or limit inside the verdict's sentence."""
    if metric.name.startswith(bounding.PREFIX):
        return bounding.words(metric.name)
    return metric.label.lower()


def _verdict(
    metrics: list[MetricChange],
    tables: dict[str, tuple[RowChange, ...]],
    floor_ns: float | None = None,
    pair: tuple[RunSummary, RunSummary] | None = None,
) -> tuple[str, str | None, str | None]:
    """The mean step time leads: what bounds the steps (the report's limits) adds up to it,
    so the driving limit's share of the change is exact (the median is in the table and the
    rules); runs without limits (older summary files) by XProf's categories, which add up
    to it too. ``pair``: (baseline, candidate), whose fetch an input limit's change names."""
    by_name = {m.name: m for m in metrics}
    mean = by_name["step_time.mean"]
    if mean.base is None or mean.cand is None:
        missing = "baseline" if mean.base is None else "candidate"
        return f"no steps in the {missing}: step times cannot be compared", None, None
    if not mean.tested:
        if mean.delta == 0:
            return f"no change in step time ({ms(mean.base)} in both runs)", None, None
        return (
            f"step time {_relative(mean)}, "
            "too few steps to test whether it is real (need 2 in each run)",
            None,
            None,
        )
    rel, rel_ci = mean.relative, mean.relative_ci()
    ci = f" [{pct(rel_ci[0])}, {pct(rel_ci[1])}]" if rel_ci else ""
    limits = [m for m in metrics if m.name.startswith(bounding.PREFIX)]
    # decision 1044: what bounds the steps drives the verdict, as it leads the report
    parts = limits or [m for m in metrics if m.name.startswith("category.")]
    categories = [m for m in parts if m.delta]
    if mean.delta == 0 and mean.ci_low == 0 and mean.ci_high == 0:
        return f"no change in step time (the same per-step times: {ms(mean.base)} mean)", None, None
    if not mean.significant:
        change = f"{pct(rel)}{ci}" if rel is not None else f"{ms(mean.base)} → {ms(mean.cand)}"
        text = f"no significant change in step time ({change}{_why_not(mean, metrics, floor_ns)})"
        text += _median_moved(by_name.get("step_time.median"))
        moved = sorted((m for m in categories if m.significant), key=lambda m: -abs(m.delta or 0))
        if moved:
            m = moved[0]
            text += f"; {_said(m)} changed {signed_ms(m.delta or 0)}/step"
        return text, None, None
    sign = float(np.sign(mean.delta or 0.0))
    text = f"step time {_relative(mean, ci, ' mean per step')}"
    same = [m for m in categories if (m.delta or 0) * sign > 0]
    same.sort(key=lambda m: (not m.significant, -abs(m.delta or 0)))
    if not same:
        return text, None, None
    driver = same[0]
    category = driver.name.split(".", 1)[1]
    if driver.name.startswith(bounding.PREFIX) and pair is not None:
        detail = _limit_detail(driver, sign, tables, pair)
    else:
        detail = _detail(category, sign, tables)
    text += f", driven by {_said(driver)}: {signed_ms(driver.delta or 0)}/step"
    if detail:
        text += f" ({detail})"
    return text, category, detail


def _median_moved(median: MetricChange | None) -> str:
    """The median's change when it is significant and the mean's is not: a few long steps in
    either run (a checkpoint every 10 steps) widen the mean's interval, and "no significant
    change" alone hid a median step 87% slower (decision 667)."""
    if median is None or not median.significant or median.relative is None:
        return ""
    rel_ci = median.relative_ci()
    ci = f" [{pct(rel_ci[0])}, {pct(rel_ci[1])}]" if rel_ci else ""
    return (
        f"; the median step changed {_relative(median, ci)}, significant: a few long steps "
        "widen the mean's interval"
    )


def _why_not(mean: MetricChange, metrics: list[MetricChange], floor_ns: float | None) -> str:
    """Why a change whose interval leaves out zero is still not significant: "+37.5%
    [+3.6%, +77.7%]" beside "no significant change" read as a contradiction."""
    excludes_zero = (mean.ci_low or 0.0) > 0 or (mean.ci_high or 0.0) < 0
    if not excludes_zero or mean.p_value is None:
        return ""
    if floor_ns is None:  # the floor the change was held against is not known
        return ""
    if abs(mean.delta or 0.0) < floor_ns:
        return f"; under the noise floor, {ms(floor_ns)}: 1% of the baseline's median step"
    family = sum(1 for m in metrics if m.tested and m.p_value is not None)
    return (
        f"; p={mean.p_value:.3f} before Holm's correction for the {family} figures tested "
        "together, not significant after it"
    )


def diff_runs(base: RunSummary, cand: RunSummary, once_warm: bool = True) -> RunDiff:
    """The diff of two runs; with ``once_warm`` (the default) the step figures are each
    run's steps after its warm-up, when one of them has a warm-up."""
    warm = once_warm and bool(base.warmup_steps or cand.warmup_steps)
    a, b = (base.once_warm(), cand.once_warm()) if warm else (base, cand)
    metrics = _tested_metrics(a, b)
    if a.core_wait_ns is not None or b.core_wait_ns is not None:
        metrics.append(_core_wait_metric(a, b))
    metrics += _single_metrics(base, cand)
    tables = {t: match_rows(a, b, t) for t in ("host_ops", "device_ops", "kernels", "input_stages")}
    verdict, driver, detail = _verdict(metrics, tables, _noise_floor_ns(a), (a, b))
    if driver is not None and not bounding.read(a, b):
        verdict += bounding.unread(a, b)
    share = _load_share(metrics)
    if share is not None:
        verdict = _load_verdict(verdict, share, metrics, b)
    if warm:
        verdict = f"once warm, {verdict}"
    return RunDiff(
        base,
        cand,
        tuple(metrics),
        tables["host_ops"],
        tables["device_ops"],
        tables["kernels"],
        tables["input_stages"],
        verdict,
        driver,
        detail,
        warm,
        share,
    )
