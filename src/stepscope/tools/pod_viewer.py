"""Pod viewer: each worker's step-time breakdown, step by step, and the slowest worker.

A worker is a host of the run (one trace file: a TensorFlow host or a PyTorch rank). Steps
are paired across workers by `stepscope.stats.steps.pairing` (by step number when the workers
share most numbers, else by position as XProf), as in the ALL_HOSTS overview; ``pairing``
says how and which worker steps were left out. Times are milliseconds; ``breakdown_ms`` are
XProf's categories (as XProf's pod viewer), ``bound_ms`` what bounds the steps, as the
overview's Ranks table gives each rank (`job_steps.BOUND_LIMITS`): a loop waiting on its
Python batch iterator is input there, `other` in XProf's categories. ``heatmap`` (host x
step: step time, time late, time waiting for late ranks) and ``stragglers`` (which rank is
late at which steps, and why) come from `stepscope.stats.stragglers`, which never blames
ranks for waiting in their collectives.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats import CATEGORY_NAMES
from stepscope.stats.events import CATEGORY_LABELS
from stepscope.stats.job_steps import BOUND_LIMITS
from stepscope.stats.steps.pairing import HostSteps, pair_host_steps
from stepscope.stats.stragglers import PodLateness, find_stragglers
from stepscope.stats.stragglers_work import late_at_work
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import Key, ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolSpec

# Per-host intermediates (ToolContext.intermediate): each name declared once, typed.
DEVICE_COUNT: Key[int] = Key("pod_viewer.device_count", kept=True)


def _ms(ns: float) -> float:
    return float(ns) / 1e6  # rounded to 6 decimals by the fields' metadata


# one worker's step: its name, duration, XProf's categories and `BOUND_LIMITS`' times, in ns
Cell = tuple[str, int, dict[str, int], dict[str, int]]


@record
class Category:
    key: str = out("category key, as in the overview's breakdown")
    label: str = out("its name on the page")


@record
class Worker:
    host: str = out("the worker (host or rank)")
    steps: int = out("pod steps it has")
    avg_step_ms: float = out("its average step time over those steps", unit="ms", digits=6)
    slowest_in_steps: int = out("pod steps in which it was the slowest worker")
    breakdown_ms: dict[str, float] = out(
        "its average time per category over those steps (XProf's categories: a wait no op "
        "covers, such as the loop's on a Python batch iterator, is `other`)",
        unit="ms",
        digits=6,
    )
    bound_ms: dict[str, float] = out(
        "its average time per step by what bounds it, as the overview's Ranks table: `input` "
        "(a loop's wait on its Python batch iterator included), `compute`, `host` (Python / "
        "host work and dispatch), `collectives`",
        unit="ms",
        digits=6,
    )
    wait_ms: float = out(
        "its average time per step waiting in collectives for the last rank", unit="ms", digits=6
    )
    late_arrivals: int = out(
        "collective calls it arrived last at (by 20 us or more; 0 without matched collectives)"
    )
    role: str = out(
        "`straggler`, `next straggler` (the last of the others, hidden behind a straggler), "
        "`waiting` (waited for a straggler) or empty"
    )
    clock_offset_ms: float | None = out(
        "its clock's offset against the median worker's, estimated from the collectives' "
        "exits; `null` when not estimated",
        unit="ms",
        digits=6,
    )


@record
class WorkerStep:
    host: str = out("the worker")
    step_name: str = out("its own step's name, e.g. `train 6`")
    duration_ms: float = out("its own step time", unit="ms", digits=6)
    breakdown_ms: dict[str, float] = out(
        "time per category (XProf's); they add up to `duration_ms`", unit="ms", digits=6
    )
    bound_ms: dict[str, float] = out(
        "time by what bounds it, as `workers[].bound_ms` for this step", unit="ms", digits=6
    )
    bottleneck: str = out("the category with the most time (ties: the first shown)")
    is_slowest: bool = out(
        "whether it is the slowest worker of this pod step (none is when the workers are even)"
    )


@record
class PodStep:
    step_num: int = out("pod step number")
    slowest_worker: str = out(
        "host of the longest own step time (its step time less its waiting in collectives for "
        "late workers: the worker the others waited for); `''` when the workers are even (all "
        "took the same time, or "
        "one worker)"
    )
    spread_ms: float = out("slowest minus fastest worker's step time", unit="ms", digits=6)
    workers: tuple[WorkerStep | None, ...] = out(
        "one per worker, in `workers` order; `null` where a worker lacks the step"
    )


@record
class Heatmap:
    hosts: tuple[str, ...] = out("rows: the workers")
    steps: list[int] = out("columns: pod step numbers")
    step_ms: list[list[float | None]] = out(
        "step time per worker x step; `null` where a worker lacks the step", unit="ms", digits=6
    )
    late_ms: list[list[float | None]] = out(
        "by collective arrival: how long it alone held the other workers (it arrived last by "
        "that much), negative: how long it waited for the last one; by own time (no "
        "collectives matched): own time (step time minus waiting) minus the median worker's. "
        "A straggler's lateness is at the step holding its work: one that arrived last at "
        "step 6's collectives after work at the end of step 5 is late at step 5 (its step 6 "
        "cell has its step 5 arrival's); a rank that stalled a collective after every rank had "
        "arrived is late there by the time it held them; `wait_ms` stays where the others "
        "waited",
        unit="ms",
        digits=6,
    )
    wait_ms: list[list[float | None]] = out(
        "time waiting in collectives for a late worker", unit="ms", digits=6
    )
    late: list[list[bool]] = out("late in that step (by 10% of the median's own time and 20 us)")


@record
class StragglerRow:
    host: str = out("the late worker")
    steps: list[int] = out("pod steps where it is late")
    step_ranges: str = out('the same as ranges, e.g. `"10-20"`')
    late_ms: float = out("its lateness summed over those steps", unit="ms", digits=6)
    late_ms_per_step: float = out("`late_ms` per late step", unit="ms", digits=6)
    reason: str = out(
        "category key in which it exceeds the other workers the most: by collective arrival, "
        "in what it did since its previous collective before the calls it was last at; a "
        "loop's fetch from a plain Python iterator is `input` here, not `other`"
    )
    reason_label: str = out("that category's name")
    reason_excess_ms: float = out(
        "that category beyond the other workers' (their median), summed", unit="ms", digits=6
    )
    reason_ms_per_step: float = out(
        "its own time in that category per late step", unit="ms", digits=6
    )
    others_reason_ms_per_step: float = out(
        "the other workers' (median) time in that category per late step", unit="ms", digits=6
    )
    last_arrivals: int = out("collective calls it arrived last at in those steps")
    method: str = out("`collective arrival` or `own time` (no collectives to match)")
    behind: str = out(
        "empty for a straggler; for the next one in line, the stragglers it hides behind (it "
        "is the last of the other ranks: once they are fixed, it holds the job)"
    )
    waited_ms: float = out("the other workers' waiting for it in those steps", unit="ms", digits=6)
    waiters: int = out("workers that waited for it")
    explanation: str = out("one sentence")


@record
class CsvRow:
    """One (pod step, worker) line of the CSV; a column per category (CATEGORY_NAMES)."""

    step_num: int = out("pod step number")
    host: str = out("the worker")
    step_name: str = out("its own step's name")
    duration_ms: float = out("its own step time", unit="ms", digits=6)
    is_slowest: bool = out("slowest worker of the pod step")
    bottleneck: str = out("category with the most time")
    input_ms: float = out("input time", unit="ms", digits=6)
    output_ms: float = out("output time", unit="ms", digits=6)
    kernel_launch_ms: float = out("kernel launch time", unit="ms", digits=6)
    host_compute_ms: float = out("host compute time", unit="ms", digits=6)
    collective_wait_ms: float = out(
        "time in collectives on the host (gloo, MPI, XLA, TensorFlow)", unit="ms", digits=6
    )
    device_to_device_ms: float = out("device-to-device time", unit="ms", digits=6)
    device_collectives_ms: float = out("device collectives time", unit="ms", digits=6)
    device_compute_ms: float = out("device compute time", unit="ms", digits=6)
    compilation_ms: float = out("compilation time", unit="ms", digits=6)
    other_ms: float = out("other time", unit="ms", digits=6)
    bound_input_ms: float = out(
        "input by what bounds the step (`bound_ms`: a wait on a Python batch iterator included)",
        unit="ms",
        digits=6,
    )
    bound_compute_ms: float = out("compute by what bounds the step", unit="ms", digits=6)
    bound_host_ms: float = out(
        "Python / host work and dispatch by what bounds the step", unit="ms", digits=6
    )
    bound_collectives_ms: float = out("collectives by what bounds the step", unit="ms", digits=6)


@record
class PodViewer:
    step_source: str = out(
        "where steps came from (`marker`, `profiler_step`, ...; `a+b` when hosts differ)"
    )
    pairing: str = out(
        "how worker steps were paired (by step number / by position) and, per worker, the "
        "steps left out"
    )
    left_out_steps: int = out("worker steps in no pod step")
    categories: tuple[Category, ...] = out("the step-time categories (the overview's)")
    workers: tuple[Worker, ...] = out("one per worker")
    steps: tuple[PodStep, ...] = out("one per pod step")
    heatmap: Heatmap | None = out("workers x steps matrices; `null` for one worker")
    stragglers: tuple[StragglerRow, ...] = out("the late workers, most late time first")
    held_alike: tuple[str, ...] = out(
        "what held every worker alike rather than one, in words (the overview's job notes): "
        "every worker's steps' thread waiting for a core; a collective that lasted long after "
        "every worker had arrived, no worker's readings telling which held it"
    )
    straggler_rule: str = out(
        "how stragglers were found: `collective arrival` (the same collective matched across "
        "workers, the last to arrive) or `own time` (no collectives to match); empty for one "
        "worker"
    )
    clock: str = out(
        "collective arrival: how many calls were matched, the clock offsets estimated from "
        "their exits (none where every worker ran on one machine in one boot: they share its "
        "clock) and how closely the corrected exits agree"
    )

    CSV_ROWS = "csv_rows"

    @property
    def csv_rows(self) -> tuple[CsvRow, ...]:
        return tuple(
            CsvRow(
                step.step_num,
                w.host,
                w.step_name,
                w.duration_ms,
                w.is_slowest,
                w.bottleneck,
                *(w.breakdown_ms[c] for c in CATEGORY_NAMES),
                *(w.bound_ms[k] for k in BOUND_LIMITS),
            )
            for step in self.steps
            for w in step.workers
            if w is not None
        )


def _bottleneck(breakdown_ns: dict[str, int]) -> str:
    """The category with the most time (ties: the first in display order)."""
    return max(CATEGORY_NAMES, key=lambda c: (breakdown_ns[c], -CATEGORY_NAMES.index(c)))


def _matrix(values: np.ndarray) -> list[list[float | None]]:
    return [[None if np.isnan(v) else _ms(v) for v in row] for row in values.tolist()]


def _lateness(pod: PodLateness | None) -> tuple[Heatmap | None, tuple[StragglerRow, ...]]:
    if pod is None:
        return None, ()
    missing = np.isnan(pod.dur_ns)
    late_ns, late = late_at_work(pod)
    heatmap = Heatmap(
        pod.hosts,
        pod.step_num.tolist(),
        _matrix(pod.dur_ns),
        _matrix(np.where(missing, np.nan, late_ns)),
        _matrix(np.where(missing, np.nan, pod.wait_ns)),
        late.tolist(),
    )
    stragglers = tuple(
        StragglerRow(
            s.host,
            list(s.steps),
            s.step_ranges,
            _ms(s.late_ns),
            _ms(s.late_ns / len(s.steps)),
            s.reason,
            CATEGORY_LABELS[s.reason],
            _ms(s.reason_excess_ns),
            _ms(s.reason_ns / len(s.steps)),
            _ms(s.reason_peers_ns / len(s.steps)),
            s.last_arrivals,
            s.method,
            s.behind,
            _ms(s.waited_ns),
            s.waiters,
            s.explanation,
        )
        for s in pod.stragglers
    )
    return heatmap, stragglers


def _pod_steps(
    hosts: list[str],
    numbers: list[int],
    cells: list[list[Cell | None]],
    wait_ns: np.ndarray | None = None,
) -> tuple[list[PodStep], list[Worker]]:
    """Pod steps from ``cells[j][i]`` (worker i's step of pod step j), and each worker's
    summary over them (its lateness left empty). ``wait_ns[i, j]``: worker i's waiting in
    collectives for late workers in pod step j."""
    steps = []
    slow_counts = [0] * len(hosts)
    totals = np.zeros(len(hosts))
    counts = np.zeros(len(hosts))
    by_cat = np.zeros((len(hosts), len(CATEGORY_NAMES)))
    by_bound = np.zeros((len(hosts), len(BOUND_LIMITS)))
    for j, (number, row) in enumerate(zip(numbers, cells, strict=True)):
        durations = [c[1] if c else -1 for c in row]
        present = [d for d in durations if d >= 0]
        # The slowest worker is the one the others waited for. In a synchronous job every
        # worker's step lasts about as long as the slowest one's, and a waiting worker's
        # step may end a little after the late one's, so the longest step alone names the
        # waiting workers about as often as the late one; their own time (the step less
        # their waiting for late workers) does not.
        own = [
            d - (0 if wait_ns is None else int(wait_ns[i, j])) if d >= 0 else -1
            for i, d in enumerate(durations)
        ]
        own_present = [o for o, d in zip(own, durations, strict=True) if d >= 0]
        # Workers that all took the same time (or one worker alone) have no slowest: flagging
        # the first of equals would send the reader after a straggler that is not there.
        even = len(present) < 2 or max(own_present) == min(own_present)
        slowest = -1 if even else int(np.argmax(own))
        if not even:
            slow_counts[slowest] += 1
        workers: list[WorkerStep | None] = []
        for i, cell in enumerate(row):
            if cell is None:
                workers.append(None)
                continue
            name, dur, breakdown, bound = cell
            totals[i] += dur
            counts[i] += 1
            by_cat[i] += [breakdown[c] for c in CATEGORY_NAMES]
            by_bound[i] += [bound[k] for k in BOUND_LIMITS]
            ms = {c: _ms(breakdown[c]) for c in CATEGORY_NAMES}
            workers.append(
                WorkerStep(
                    hosts[i],
                    name,
                    _ms(dur),
                    ms,
                    {k: _ms(bound[k]) for k in BOUND_LIMITS},
                    _bottleneck(breakdown),
                    i == slowest,
                )
            )
        steps.append(
            PodStep(
                number,
                "" if even else hosts[slowest],
                _ms(max(present) - min(present)),
                tuple(workers),
            )
        )
    summaries = [
        Worker(
            host,
            int(counts[i]),
            _ms(totals[i] / counts[i]) if counts[i] else 0.0,
            n,
            {c: _ms(by_cat[i, k] / max(counts[i], 1)) for k, c in enumerate(CATEGORY_NAMES)},
            {c: _ms(by_bound[i, k] / max(counts[i], 1)) for k, c in enumerate(BOUND_LIMITS)},
            0.0,
            0,
            "",
            None,
        )
        for i, (host, n) in enumerate(zip(hosts, slow_counts, strict=True))
    ]
    return steps, summaries


def _with_lateness(workers: list[Worker], pod: PodLateness | None) -> list[Worker]:
    """Each worker's waiting, late arrivals, role and clock offset."""
    if pod is None:
        return workers
    out = []
    for i, w in enumerate(workers):
        wait = pod.wait_ns[i][~np.isnan(pod.dur_ns[i])]
        offset = None if pod.offsets_ns is None else pod.offsets_ns[i]
        out.append(
            replace(
                w,
                wait_ms=_ms(float(np.nan_to_num(wait).mean())) if len(wait) else 0.0,
                late_arrivals=int(pod.last_count[i]) if pod.last_count is not None else 0,
                role=pod.role(i),
                clock_offset_ms=None if offset is None or np.isnan(offset) else _ms(offset),
            )
        )
    return out


def build(ctx: ToolContext) -> PodViewer:
    hosts = ctx.hosts
    dbs = [analysis.step_db(ctx, h) for h in hosts]
    pairing = pair_host_steps(
        [
            HostSteps(h, db.step_num, db.start_ns, db.dur_ns)
            for h, db in zip(hosts, dbs, strict=True)
        ]
    )
    numbers, rows = pairing.step_num.tolist(), [r.tolist() for r in pairing.rows]
    categories = [db.category_ns() for db in dbs]
    limits = [db.limit_ns() for db in dbs]
    cells = []
    for j in range(len(numbers)):
        row: list[Cell | None] = []
        for db, cats, lim, worker_rows in zip(dbs, categories, limits, rows, strict=True):
            k = worker_rows[j]
            if k < 0:
                row.append(None)
                continue
            breakdown = {c: int(cats[c][k]) for c in CATEGORY_NAMES}
            bound = {key: sum(int(lim[c][k]) for c in names) for key, names in BOUND_LIMITS.items()}
            row.append((db.names[k], int(db.dur_ns[k]), breakdown, bound))
        cells.append(row)
    sources = sorted({db.source for db in dbs})
    ranks = analysis.ranks(ctx)  # one host (a worker's share of ALL_HOSTS): its calls only
    lateness = find_stragglers(ranks) if len(hosts) > 1 else None
    wait_ns = None
    # The straggler analysis pairs the same step databases the same way; its waits are read
    # only when its pod steps are these (a defence, not an expected case).
    if lateness is not None and lateness.step_num.tolist() == list(numbers):
        wait_ns = np.nan_to_num(lateness.wait_ns, nan=0.0)
    steps, workers = _pod_steps(hosts, [int(n) for n in numbers], cells, wait_ns)
    heatmap, stragglers = _lateness(lateness)
    return PodViewer(
        "+".join(sources),
        pairing.description,
        sum(pairing.left_out),
        tuple(Category(c, CATEGORY_LABELS[c]) for c in CATEGORY_NAMES),
        tuple(_with_lateness(workers, lateness)),
        tuple(steps),
        heatmap,
        stragglers,
        lateness.notes if lateness is not None else (),
        lateness.method if lateness is not None else "",
        lateness.clock_note if lateness is not None else "",
    )


def _device_count(profile: Profile) -> int:
    return sum(1 for p in profile.planes if p.is_device and p.line_count)


def available(ctx: ToolContext) -> bool:
    """Runs with several workers: several hosts, or a host with several devices (cheap: the
    steps are found when the page is opened)."""
    if len(ctx.hosts) > 1:
        return True
    return any(ctx.intermediate(h, DEVICE_COUNT, _device_count) > 1 for h in ctx.hosts)


TOOL = ToolSpec(
    name="pod_viewer",
    title="Pod viewer",
    description="Step-time breakdown of every worker, step by step, with the slowest worker.",
    build=build,
    formats=("json", "csv"),
    options=(analysis.STEP_SOURCE,),
    available=available,
    needs="several workers: several hosts in the run, or a host with several devices",
    order=85,
)
