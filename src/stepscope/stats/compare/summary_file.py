"""The ``stepscope summary`` baseline file as declared fields (`stepscope.fields`), written
by `stepscope.tools.output`; `RunSummary.from_json` reads it back. docs/tools/diff.md's
table of the file is generated from these classes."""

from __future__ import annotations

from typing import Any

from stepscope.fields import out
from stepscope.records import record
from stepscope.stats.compare.run_summary import FORMAT, VERSION, NamedRows, RunSummary

ROW_COLUMNS = ["key", "name", "type", "count", "total_ns", "self_ns"]


@record
class SummarySteps:
    source: str = out("how steps were found (the overview's `step_source`)")
    description: str = out("the same, in words")
    step_num: list[int] = out("step numbers")
    name: list[str] = out("step names")
    start_ns: list[int] = out("starts on the profile's clock", unit="ns")
    dur_ns: list[int] = out("step times", unit="ns")
    profile_steps: int = out(
        "steps the profile holds, those dropped as incomplete included (op totals are spread "
        "over them)"
    )
    category_ns: dict[str, list[int]] = out("per overview category: its time in each step", "ns")
    warmup_steps: int = out(
        "how many of the first steps are warm-up (the overview's `steady_state`); `stepscope "
        "diff` compares the steps after them. Absent in older files: the same rule is applied "
        "to `dur_ns`"
    )
    core_wait_ns: list[int] | None = out(
        "the steps' thread's time runnable but waiting for a CPU core in each step (the stack "
        "sampler's readings; for `ALL_HOSTS` the ranks' mean stretched to the job's step, as "
        "its categories); absent without readings covering the steps (of every rank, for "
        "`ALL_HOSTS`) and in older files",
        unit="ns",
        omit_none=True,
    )
    limit_ns: dict[str, list[int]] | None = out(
        'per "bound by" limit (the overview\'s `bound_by.limits`): its time in each step; '
        "`stepscope diff` says what drove a change by these (absent in older files: by "
        "`category_ns`)",
        unit="ns",
        omit_none=True,
    )
    fetch_ns: list[int] | None = out(
        "the part of the input limit spent getting the batch from the loop's Python iterator "
        "or a queue's `get`, in each step; absent when the steps fetch none so seen",
        unit="ns",
        omit_none=True,
    )
    fetch_from: str | None = out(
        'the function of that fetch, e.g. `"get (queue.py)"`', omit_none=True
    )


@record
class RowTable:
    columns: list[str] = out("`key, name, type, count, total_ns, self_ns` (times in ns)")
    rows: list[list[Any]] = out("one list per row, the top rows by total time")
    rest_ns: int = out("total time of the rows beyond the cut (0: complete)", unit="ns")


@record
class OnceWarmRows:
    host_ops: RowTable = out("host ops by match key")
    device_ops: RowTable = out("device ops by match key")
    kernels: RowTable = out("kernels by match key")
    input_stages: RowTable = out("input pipeline stages by match key")


@record
class SummaryFile:
    format: str = out('`"stepscope-summary"`; the first key identifies the file')
    version: int = out("version of this layout (1)")
    run: str = out("the run's name or path")
    host: str = out("the host summarized, or `ALL_HOSTS`")
    hosts: list[str] = out("the hosts it covers")
    framework: str = out("framework(s) that wrote the profile")
    steps: SummarySteps = out("the per-step samples")
    host_ops: RowTable = out("host ops by match key")
    device_ops: RowTable = out("device ops by match key")
    kernels: RowTable = out("kernels by match key")
    input_stages: RowTable = out("input pipeline stages by match key")
    memory_peak_bytes: int | None = out(
        "the busiest allocator's peak; `null` without memory events", unit="bytes"
    )
    tensor_core_percent: float | None = out(
        "share of kernel time on TensorCores; `null` without kernels", unit="%"
    )
    bound_by: str = out('what bounds the steps: the overview\'s "Bound by" headline')
    bound_by_once_warm: str = out(
        "what bounds the steps after the warm-up: the overview's `steady_state.bound_by` "
        'headline ("" without a warm-up)'
    )
    once_warm: OnceWarmRows | None = out(
        "the four row tables of the events from the first step after the warm-up on (absent "
        "without a warm-up)",
        omit_none=True,
    )


def _table(rows: NamedRows) -> RowTable:
    columns = (
        rows.keys,
        rows.names,
        rows.types,
        rows.count.tolist(),
        rows.total_ns.tolist(),
        rows.self_ns.tolist(),
    )
    return RowTable(list(ROW_COLUMNS), [list(r) for r in zip(*columns, strict=True)], rows.rest_ns)


def summary_file(s: RunSummary) -> SummaryFile:
    """What ``stepscope summary`` writes for ``s``."""
    steps = SummarySteps(
        s.step_source,
        s.step_description,
        s.step_num.tolist(),
        list(s.step_names),
        s.step_start_ns.tolist(),
        s.step_dur_ns.tolist(),
        s.profile_steps,
        {c: v.tolist() for c, v in s.category_ns.items()},
        s.warmup_steps,
        None if s.core_wait_ns is None else s.core_wait_ns.tolist(),
        {c: v.tolist() for c, v in s.limit_ns.items()} if s.limit_ns else None,
        None if s.fetch_ns is None else s.fetch_ns.tolist(),
        s.fetch_from if s.fetch_ns is not None else None,
    )
    return SummaryFile(
        FORMAT,
        VERSION,
        s.run,
        s.host,
        list(s.hosts),
        s.framework,
        steps,
        _table(s.host_ops),
        _table(s.device_ops),
        _table(s.kernels),
        _table(s.input_stages),
        s.memory_peak_bytes,
        s.tensor_core_percent,
        s.bound_by,
        s.bound_by_once_warm,
        None
        if s.rows_once_warm is None
        else OnceWarmRows(
            _table(s.rows_once_warm.host_ops),
            _table(s.rows_once_warm.device_ops),
            _table(s.rows_once_warm.kernels),
            _table(s.rows_once_warm.input_stages),
        ),
    )
