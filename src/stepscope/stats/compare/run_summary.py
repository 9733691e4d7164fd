"""A run's comparable figures: the per-step samples and the aggregates a diff needs, small
enough to save as a JSON baseline (``stepscope summary RUN -o base.json``) so CI need not
keep whole profiles.

Built from the shared intermediates (step summary, op tables, kernel db, memory snapshots,
input ops); it computes nothing those do not already say, it only keys rows by
`match_key` so two runs can be matched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import field, replace
from typing import Any

import numpy as np

from stepscope.errors import StepscopeError
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.bound import bound_by
from stepscope.stats.compare.names import match_key
from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.gpu.kernels import KernelDb
from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.input.input_pipeline import input_ops, iterator_kind
from stepscope.stats.memory import build_memory_profiles
from stepscope.stats.op_metrics import OpTable
from stepscope.stats.steps.limits import LIMIT_NAMES
from stepscope.stats.summary import StepSummary
from stepscope.stats.warmup import steps_from, warmup_count

FORMAT = "stepscope-summary"
VERSION = 1
MAX_ROWS = 300  # rows kept per table in a summary, by total time


@record
class NamedRows:
    """Rows keyed by match key, sorted by total time (int64 ns); ``rest_ns`` is the total of
    the rows left out beyond MAX_ROWS (0 when complete)."""

    keys: tuple[str, ...]
    names: tuple[str, ...]  # a representative original name (the row with most time)
    types: tuple[str, ...]
    count: np.ndarray
    total_ns: np.ndarray
    self_ns: np.ndarray
    rest_ns: int = 0

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def complete(self) -> bool:
        return self.rest_ns == 0

    @classmethod
    def empty(cls) -> NamedRows:
        z = np.zeros(0, np.int64)
        return cls((), (), (), z, z, z)

    @classmethod
    def aggregate(
        cls,
        names: tuple[str, ...],
        types: tuple[str, ...],
        count: np.ndarray,
        total_ns: np.ndarray,
        self_ns: np.ndarray,
        max_rows: int = MAX_ROWS,
    ) -> NamedRows:
        """Rows whose names share a match key summed into one."""
        index: dict[str, int] = {}
        rows = np.array([index.setdefault(match_key(n), len(index)) for n in names], np.int64)
        n = len(index)
        agg = [np.zeros(n, np.int64) for _ in range(3)]
        for out, values in zip(agg, (count, total_ns, self_ns), strict=True):
            np.add.at(out, rows, np.asarray(values, np.int64))
        best = np.full(n, -1, np.int64)  # the largest original row of each key names it
        for k in np.argsort(-np.asarray(total_ns), kind="stable").tolist():
            if best[rows[k]] < 0:
                best[rows[k]] = k
        order = np.lexsort((np.arange(n), -agg[1]))
        keep, rest = order[:max_rows], order[max_rows:]
        keys = tuple(index)
        return cls(
            tuple(keys[i] for i in keep.tolist()),
            tuple(names[best[i]] for i in keep.tolist()),
            tuple(types[best[i]] for i in keep.tolist()),
            agg[0][keep],
            agg[1][keep],
            agg[2][keep],
            int(agg[1][rest].sum()),
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NamedRows:
        rows = data["rows"]
        col = list(zip(*rows, strict=True)) if rows else [()] * 6
        return cls(
            tuple(str(v) for v in col[0]),
            tuple(str(v) for v in col[1]),
            tuple(str(v) for v in col[2]),
            np.array(col[3], np.int64),
            np.array(col[4], np.int64),
            np.array(col[5], np.int64),
            int(data.get("rest_ns", 0)),
        )


@record
class RowTables:
    """A run's four row tables, here those of its steps after the warm-up: the events that
    start with its first steady step or later."""

    host_ops: NamedRows
    device_ops: NamedRows
    kernels: NamedRows
    input_stages: NamedRows


@record
class RunSummary:
    """What `stepscope diff` compares, for one run (one host, or several matched)."""

    run: str  # the run's name or path, for people
    host: str  # a host name or ALL_HOSTS
    framework: str
    step_source: str
    step_description: str
    step_num: np.ndarray  # int64, per step
    step_names: tuple[str, ...]
    step_start_ns: np.ndarray  # int64, on the profile's clock (for trace viewer links)
    step_dur_ns: np.ndarray  # int64
    category_ns: dict[str, np.ndarray]  # CATEGORY_NAMES -> int64 per step
    host_ops: NamedRows
    device_ops: NamedRows
    kernels: NamedRows
    input_stages: NamedRows  # type = input category (preprocessing, enqueue, ...)
    memory_peak_bytes: int | None  # the busiest allocator's peak; None without memory events
    tensor_core_percent: float | None  # share of kernel time on TensorCores; None: no kernels
    hosts: tuple[str, ...] = field(default=())
    # Steps the profile holds, with those dropped as incomplete: op totals cover the whole
    # profile, so they are spread over these (ctl: 6 markers, 4 complete steps).
    profile_steps: int = 0
    # what bounds the steps: the overview's headline (`stepscope.stats.bound`); "" in summary
    # files written before it
    bound_by: str = ""
    # leading steps that are warm-up (`stepscope.stats.warmup`, as the overview's
    # `steady_state`): a diff compares the steps after them (decision 386)
    warmup_steps: int = 0
    # what bounds the steps after the warm-up ("" without a warm-up)
    bound_by_once_warm: str = ""
    # the row tables of the steps after the warm-up (None: no warm-up, or an older summary
    # file, whose rows stay the whole profile's)
    rows_once_warm: RowTables | None = None
    # the steps' thread's time runnable but off its core, per step (int64 ns, the stack
    # sampler's readings, `core_wait_ns`; several hosts: the ranks' mean stretched to the
    # job's step, `steps_core_wait_ns`); None: no readings covering the steps (of a rank,
    # for several hosts), or a summary file written before it (decisions 950, 991)
    core_wait_ns: np.ndarray | None = None
    # what bounds the steps, per "bound by" limit (`LIMIT_NAMES`, the report's headline and
    # its "What bounds the steps" table): int64 ns per step; empty in a summary file written
    # before it (the diff's verdict then reads XProf's categories; decision 1044)
    limit_ns: dict[str, np.ndarray] = field(default_factory=dict)
    # the part of the input limit spent getting the batch from the loop's Python iterator or
    # a queue's ``get`` (`Fetched.ns`), int64 ns per step, and where ("get (queue.py)");
    # None / "" when the steps fetch nothing so seen, or an older summary file
    fetch_ns: np.ndarray | None = None
    fetch_from: str = ""

    @property
    def n_steps(self) -> int:
        return len(self.step_dur_ns)

    @property
    def warmup_ns(self) -> int:
        """The warm-up steps' total time (0 without a warm-up)."""
        return int(self.step_dur_ns[: self.warmup_steps].sum())

    def once_warm(self) -> RunSummary:
        """The steps after the warm-up: per-step samples cut, the steady headline; this
        summary itself when no warm-up was split. The rows are those counted from the first
        step after the warm-up, spread over the steps from it; without them (an older summary
        file) the profile's, spread over all its steps."""
        k = self.warmup_steps
        if not k:
            return self
        rows: dict[str, object] = {}
        if self.rows_once_warm is not None:
            r = self.rows_once_warm
            rows = {
                "host_ops": r.host_ops,
                "device_ops": r.device_ops,
                "kernels": r.kernels,
                "input_stages": r.input_stages,
                "profile_steps": max(self.profile_steps, self.n_steps) - k,
            }
        return replace(
            self,
            **rows,  # type: ignore[arg-type]
            step_num=self.step_num[k:],
            step_names=self.step_names[k:],
            step_start_ns=self.step_start_ns[k:],
            step_dur_ns=self.step_dur_ns[k:],
            category_ns={c: v[k:] for c, v in self.category_ns.items()},
            core_wait_ns=None if self.core_wait_ns is None else self.core_wait_ns[k:],
            limit_ns={c: v[k:] for c, v in self.limit_ns.items()},
            fetch_ns=None if self.fetch_ns is None else self.fetch_ns[k:],
            bound_by=self.bound_by_once_warm,
            warmup_steps=0,
            bound_by_once_warm="",
            rows_once_warm=None,
        )

    def per_step_ns(self, total_ns: int) -> float:
        """A whole-profile total spread over its steps (the total when it has no steps)."""
        steps = max(self.profile_steps, self.n_steps)
        return total_ns / steps if steps else float(total_ns)

    @classmethod
    def from_json(cls, data: Any, source: str = "summary") -> RunSummary:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise StepscopeError(
                f"{source}: not a stepscope summary (write one with `stepscope summary RUN -o "
                "FILE.json`)"
            )
        if data.get("version") != VERSION:
            raise StepscopeError(
                f"{source}: summary version {data.get('version')!r} is not {VERSION}; write it "
                "again with this stepscope (`stepscope summary RUN -o FILE.json`)"
            )
        try:
            steps = data["steps"]
            n = len(steps["dur_ns"])
            categories = {
                c: np.array(steps["category_ns"].get(c, [0] * n), np.int64) for c in CATEGORY_NAMES
            }
            dur_ns = np.array(steps["dur_ns"], np.int64)
            # a summary written before decision 386: the same rule on its step times
            # (older than the recorder's mid-run fact too: such a summary says nothing of it)
            warmup = int(steps.get("warmup_steps", warmup_count(dur_ns, mid_run=False)))
            if not 0 <= warmup < max(n, 1):
                raise ValueError(f"warmup_steps {warmup} of {n} steps")
            wait = steps.get("core_wait_ns")  # absent in files written before decision 950
            core_wait = None if wait is None else _per_step(wait, n, "core_wait_ns")
            limits = {
                str(c): _per_step(v, n, f"limit_ns.{c}")
                for c, v in (steps.get("limit_ns") or {}).items()
            }
            fetch = _per_step(steps["fetch_ns"], n, "fetch_ns") if "fetch_ns" in steps else None
            return cls(
                str(data["run"]),
                str(data["host"]),
                str(data.get("framework", "")),
                str(steps["source"]),
                str(steps["description"]),
                np.array(steps["step_num"], np.int64),
                tuple(str(s) for s in steps["name"]),
                np.array(steps["start_ns"], np.int64),
                dur_ns,
                categories,
                NamedRows.from_json(data["host_ops"]),
                NamedRows.from_json(data["device_ops"]),
                NamedRows.from_json(data["kernels"]),
                NamedRows.from_json(data["input_stages"]),
                _optional_int(data.get("memory_peak_bytes")),
                _optional_float(data.get("tensor_core_percent")),
                tuple(str(h) for h in data.get("hosts", ())),
                int(steps.get("profile_steps", n)),
                str(data.get("bound_by", "")),
                warmup,
                str(data.get("bound_by_once_warm", "")),
                _row_tables(data.get("once_warm")),
                core_wait,
                {c: limits.get(c, np.zeros(n, np.int64)) for c in LIMIT_NAMES} if limits else {},
                fetch,
                str(steps.get("fetch_from", "")) if fetch is not None else "",
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StepscopeError(
                f"{source}: damaged stepscope summary ({type(exc).__name__}: {exc}); write it "
                "again with `stepscope summary RUN -o FILE.json`"
            ) from None


def _per_step(values: Any, n: int, what: str) -> np.ndarray:
    """A per-step column of a summary file (``what``: its name), of ``n`` int64 values."""
    out = np.array(values, np.int64)
    if out.shape != (n,):
        raise ValueError(f"{what} has {out.size} values for {n} steps")
    return out


def _row_tables(data: Any) -> RowTables | None:
    if data is None:
        return None
    return RowTables(
        *(
            NamedRows.from_json(data[t])
            for t in ("host_ops", "device_ops", "kernels", "input_stages")
        )
    )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def looks_like_summary(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a summary (not, say, a Kineto trace)."""
    return re.search(rb'^\s*\{\s*"format"\s*:\s*"' + FORMAT.encode() + rb'"', head) is not None


def op_rows(table: OpTable) -> NamedRows:
    return NamedRows.aggregate(
        table.names, table.types, table.occurrences, table.total_ns, table.self_ns
    )


def kernel_rows(db: KernelDb | None) -> NamedRows:
    if db is None or not db.rows:
        return NamedRows.empty()
    rows = db.rows
    return NamedRows.aggregate(
        tuple(r.kernel_name for r in rows),
        tuple(r.op_name for r in rows),
        np.array([r.occurrences for r in rows], np.int64),
        np.array([r.total_ns for r in rows], np.int64),
        np.array([r.total_ns for r in rows], np.int64),
    )


def stage_name(name: str) -> str:
    """``Iterator::Root::Batch::Map`` -> ``Map``; other input ops keep their name."""
    return iterator_kind(name) if "::" in name else name


def input_stage_rows(host: OpTable) -> NamedRows:
    found = input_ops(host)
    return NamedRows.aggregate(
        found.names, found.categories, found.count, found.total_ns, found.self_ns
    )


def tensor_core_percent(db: KernelDb | None) -> float | None:
    if db is None or not db.total_ns:
        return None
    on_tc = sum(r.total_ns for r in db.rows if r.uses_tensor_core)
    return round(100.0 * on_tc / db.total_ns, 3)


def core_wait_ns(cpu: ThreadCpu, start_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray | None:
    """Per step [start, start + dur): the steps' thread's time runnable but waiting for a CPU
    core, as the stack sampler read it (`ThreadCpu.within`); None when the readings cover half
    of the steps' time or less (no sampler, or it stopped: the overview's `cores_wait` rule,
    `ThreadCpu.shares`). A step the readings miss in part counts the wait read in it only."""
    start = np.asarray(start_ns, np.int64)
    end = start + np.asarray(dur_ns, np.int64)
    if not cpu.read or not len(start) or cpu.shares(start, end) is None:
        return None
    _, _, runnable = cpu.within(start, end)
    return np.round(runnable).astype(np.int64)


def steps_core_wait_ns(steps: StepSummary, cpu_of: Callable[[str], ThreadCpu]) -> np.ndarray | None:
    """Per step of ``steps``, the wait for a CPU core of the thread that runs them
    (``cpu_of(host)``: a host's steps' thread's readings). One host: `core_wait_ns`. Several
    (ALL_HOSTS): each rank's wait over its own start and length of each job step, counted
    as the job's step counts its categories, the ranks' mean stretched to the job's step
    (`StepSummary.job_part_ns`), so the wait keeps its share of the step and the verdict
    compares it with the job's step time in the same units (decision 991); None unless every
    rank has readings covering its steps. Several hosts of which one has steps: None (the
    summary does not say whose steps they are)."""
    if len(steps.rank_hosts) > 1:
        waits = []
        for row, host in enumerate(steps.rank_hosts):
            start, dur = steps.rank_start_ns[row], steps.rank_dur_ns[row]
            wait = core_wait_ns(cpu_of(host), start, dur)
            if wait is None:
                return None
            waits.append(wait)
        return steps.job_part_ns(np.stack(waits))
    if len(steps.hosts) != 1:
        return None
    return core_wait_ns(cpu_of(steps.hosts[0]), steps.start_ns, steps.dur_ns)


def build_run_summary(
    run: str,
    host: str,
    steps: StepSummary,
    host_ops: OpTable,
    device_ops: OpTable,
    kernels: KernelDb | None,
    memory_peak_bytes: int | None,
    framework: str = "",
    once_warm: tuple[OpTable, OpTable, KernelDb | None] | None = None,
    steps_cpu: Callable[[str], ThreadCpu] | None = None,
) -> RunSummary:
    """``once_warm``: the host ops, device ops and kernels counted from the first step after
    the warm-up (`warmup_from`), when it has one. ``steps_cpu``: a host's steps' thread's
    CPU readings, by host name (`steps_core_wait_ns`)."""
    warmup = warmup_count(np.asarray(steps.dur_ns), mid_run=steps.mid_run)
    rows = None
    if warmup and once_warm is not None:
        hosts, devices, kerns = once_warm
        rows = RowTables(
            op_rows(hosts), op_rows(devices), kernel_rows(kerns), input_stage_rows(hosts)
        )
    return RunSummary(
        run,
        host,
        framework,
        steps.source,
        steps.description,
        np.asarray(steps.step_num, np.int64),
        tuple(steps.names),
        np.asarray(steps.start_ns, np.int64),
        np.asarray(steps.dur_ns, np.int64),
        {c: np.asarray(steps.category_ns[c], np.int64) for c in CATEGORY_NAMES},
        op_rows(host_ops),
        op_rows(device_ops),
        kernel_rows(kernels),
        input_stage_rows(host_ops),
        memory_peak_bytes,
        tensor_core_percent(kernels),
        steps.hosts,
        steps.n_steps + steps.dropped,
        bound_by(steps).headline,
        warmup,
        bound_by(steps_from(steps, warmup)).headline if warmup else "",
        rows,
        None if steps_cpu is None else steps_core_wait_ns(steps, steps_cpu),
        *_bounding(steps),
    )


def _bounding(steps: StepSummary) -> tuple[dict[str, np.ndarray], np.ndarray | None, str]:
    """What bounds ``steps``, per limit and step, and the input limit's fetch of the batch
    from the loop's iterator or queue (per step, and its function), as the report's headline
    counts them (decision 1044)."""
    n = steps.n_steps
    limits = {c: np.asarray(v, np.int64) for c, v in steps.limit_ns.items() if len(v) == n}
    if set(limits) != set(LIMIT_NAMES):
        return {}, None, ""
    found = steps.fetched
    if not found.function or not found.counted or len(found.ns) != n or not found.ns.any():
        return limits, None, ""
    return limits, np.asarray(found.ns, np.int64), found.function[0]


def warmup_from(steps: StepSummary) -> int | None:
    """The step number of the first step after the warm-up (None: no warm-up)."""
    warmup = warmup_count(np.asarray(steps.dur_ns), mid_run=steps.mid_run)
    return int(steps.step_num[warmup]) if warmup else None


def memory_peak_bytes(profile: Profile) -> int | None:
    """The largest allocator peak (stack reserved + heap allocated) of a profile, as the
    memory profile computes it; None when the profile has no allocator events."""
    allocators = build_memory_profiles(profile)
    if not allocators:
        return None
    return max(int(a.snapshots.in_use_bytes[a.snapshots.peak_index]) for a in allocators)
