"""The terminal report's text (`stepscope report`, and the MCP server's report tool): summary,
step-time breakdown with bars, top ops, the input pipeline when it matters, the advice."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepscope.cli.hosts import partial_lines
from stepscope.cli.output import clip, human_ns, table, wrap
from stepscope.words import counted

if TYPE_CHECKING:  # imported when a report is made, not for `stepscope --help`
    from stepscope.stats.input.loader_workers import LoaderWorkers
    from stepscope.stats.job_steps import JobSteps
    from stepscope.stats.warmup import SteadyState
    from stepscope.tools.input_pipeline_analyzer import InputPipelineAnalysis
    from stepscope.tools.overview_page import OverviewPage

_CLASS = {
    "high": "HIGHLY input-bound",
    "moderate": "MODERATELY input-bound",
    "potential": "POTENTIALLY input-bound",
    "no": "NOT input-bound",
    "unknown": "unknown (no steps)",
}


_PRECISION_LABELS = {"16bit": "16-bit", "32bit": "32-bit", "64bit": "64-bit"}


def bar(percent: float, width: int) -> str:
    """A bar of ``width`` cells for 0-100%, in eighths of a cell."""
    eighths = round(max(0.0, min(percent, 100.0)) / 100.0 * width * 8)
    full, part = divmod(eighths, 8)
    return "█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else "")


def _limits(overview: OverviewPage, width: int, bar_w: int) -> list[str]:
    """The "bound by" limits of the headline, largest first."""
    limits = overview.bound_by.limits
    if not limits:
        return []
    out = ["", "What bounds the steps (average per step)"]
    for limit in limits:
        line = f"  {limit.label:<19} {limit.ms_per_step:9.2f} ms {limit.percent:6.1f}%"
        out.append(clip(f"{line}  {bar(limit.percent, bar_w)}", width))
    staged = overview.input_staged_ms
    if staged >= 0.005:
        out += wrap(
            f"  (input includes {staged:.2f} ms per step of batch preparation inside the "
            "step, before its first model op: XProf counts it as host compute above)",
            width,
            rest="  ",
        )
    return out


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _steady(steady: SteadyState, width: int, bar_w: int) -> list[str]:
    """The steps after the warm-up: their time and what bounds them."""
    stats = steady.step_time
    out = [""]
    out += wrap(
        f"Once warm ({steady.steps} steps after the warm-up): median {steady.median_ms:.2f} "
        f"ms, avg {stats.avg_ms:.2f}, stddev {stats.stddev_ms:.2f}, min {stats.min_ms:.2f}, "
        f"max {stats.max_ms:.2f}; what bounds them (average per step)",
        width,
        rest="  ",
    )
    for limit in steady.bound_by.limits:
        line = f"  {limit.label:<19} {limit.ms_per_step:9.2f} ms {limit.percent:6.1f}%"
        out.append(clip(f"{line}  {bar(limit.percent, bar_w)}", width))
    return out


def _job(job: JobSteps, width: int) -> list[str]:
    """The job's figures beside its step time, one row per rank, and the stragglers."""
    mean = job.rank_mean_step_time
    lines = wrap(
        f"Ranks' mean step time: avg {mean.avg_ms:.2f} ms; spread (slowest - fastest rank) "
        f"{job.spread_ms:.2f} ms per step. {job.xprof_note}.",
        width,
        first="  ",
        rest="  ",
    )
    lines.append("")
    shown = _rows_shown(job)
    left = len(job.rows) - len(shown)
    more = f"; {len(shown)} shown: the stragglers, then the slowest steps" if left else ""
    # input, compute and collectives are each rank's "What bounds the steps" (decision 388)
    lines.append(f"Ranks ({job.ranks}), average per step, by what bounds them{more}")
    rows = [
        [
            r.host,
            r.role or "-",
            f"{r.step_ms:.2f}",
            f"{r.input_ms:.2f}",
            f"{r.compute_ms:.2f}",
            f"{r.host_ms:.2f}",
            f"{r.collectives_ms:.2f}",
            f"{r.waiting_ms:.2f}",
            str(r.late_arrivals),
        ]
        for r in shown
    ]
    heads = ["rank", "role", "step ms", "input", "compute", "host", "collect.", "waiting", "last"]
    lines += _fitted(rows, heads, width - 2)
    if left:
        lines.append(
            f"  ... {counted(left, 'more rank')}: `stepscope tool RUN pod_viewer` lists every one"
        )
    for text in job.stragglers:
        lines += wrap(text, width, first="  Straggler: ", rest="    ")
    if job.ranks > 1 and not job.stragglers and job.straggler_rule:
        lines += wrap(f"  No straggler ({job.straggler_rule}).", width, rest="    ")
    for text in job.held_alike:
        lines += wrap(f"{text}.", width, first="  ", rest="    ")
    if job.clock:
        lines += wrap(f"({job.clock})", width, first="  ", rest="  ")
    return lines


def _fitted(rows: list[list[str]], heads: list[str], width: int) -> list[str]:
    """The table indented by two, or, when a line is wider than ``width`` (long host names),
    its first six columns, then the rank with the rest: nothing clipped."""
    text = table(rows, heads).splitlines()
    if max(map(len, text), default=0) <= width:
        return ["  " + line for line in text]
    first = table([r[:6] for r in rows], heads[:6]).splitlines()
    rest = table([[r[0], *r[6:]] for r in rows], [heads[0], *heads[6:]]).splitlines()
    return ["  " + clip(line, width) for line in [*first, "", *rest]]


MAX_RANK_ROWS = 16  # a 256-rank job's report stays a page


def _rows_shown(job: JobSteps) -> list[Any]:
    """Every rank up to `MAX_RANK_ROWS`; beyond, the ranks with a role other than waiting
    (the stragglers) first, then the slowest steps."""
    if len(job.rows) <= MAX_RANK_ROWS:
        return list(job.rows)
    first = [r for r in job.rows if r.role not in ("", "waiting")]
    rest = sorted((r for r in job.rows if r not in first), key=lambda r: -r.step_ms)
    return (first + rest)[:MAX_RANK_ROWS]


def input_verdict(overview: OverviewPage) -> str:
    """XProf's input-bound sentence, unchanged, as its own line (what bounds the steps is the
    headline above it)."""
    bound = overview.input_bound
    if not overview.steps:
        return f"XProf's input verdict: {_CLASS[bound.classification]}"
    return f"XProf's input verdict: {bound.statement}"


def _eager_mark(percent: float | None) -> str:
    """After an op's type: whether it ran eagerly (a TensorFlow eager op), wholly or in part
    (an eager op and a tf.function's op of one name share a row)."""
    if not percent:
        return ""
    return " (eager)" if percent >= 99.95 else f" ({percent:.0f}% eager)"


def _top_ops(overview: OverviewPage, top: int, width: int) -> list[str]:
    ops = overview.top_ops[:top]
    if not ops:
        return []
    rows = [
        [
            str(o.rank),
            f"{o.self_time_percent:.1f}%",
            f"{o.cumulative_percent:.1f}%",
            human_ns(o.self_time_ns),
            o.category + _eager_mark(o.eager_percent),
            o.name,
        ]
        for o in ops
    ]
    # The op name takes what the other columns leave; the type column at most 28.
    fixed = sum(max(len(r[i]) for r in rows) for i in range(4)) + 4 * 2 + 2 + 2
    type_w = min(28, max(len(r[4]) for r in rows), max(8, (width - fixed) // 3))
    name_w = max(12, width - fixed - type_w - 2)
    for r in rows:
        r[4], r[5] = clip(r[4], type_w), clip(r[5], name_w)
    lines = table(rows, ["#", "self", "cum.", "time", "type", "op"]).split("\n")
    title = f"Top {counted(len(ops), f'{ops[0].side} op')} by self time"
    return ["", title] + ["  " + x for x in lines]


def _loader_workers(workers: LoaderWorkers, width: int, recommended: str) -> list[str]:
    """A DataLoader's worker processes: one line each, their top functions, the verdict."""
    out = ["", clip(f"DataLoader workers of {workers.loader}", width)]
    out += wrap(
        f"{workers.workers} seen, busy {workers.busy_percent:.0f}% of the steps' span on "
        "average"
        + (
            f" and {workers.busy_waiting_percent:.0f}% while the loop waited for a batch"
            if workers.busy_waiting_percent >= 0
            else ""
        )
        + f", {workers.ms_per_batch:.2f} ms per batch"
        + (f" (CPU {workers.cpu_percent:.0f}% of it" if workers.cpu_percent >= 0 else "")
        + (
            f", waiting for a CPU {workers.cpu_wait_percent:.0f}%"
            if workers.cpu_percent >= 0 and workers.cpu_wait_percent >= 0
            else ""
        )
        + (")" if workers.cpu_percent >= 0 else "")
        + (
            f"; their first batches began {workers.startup_ms:.0f} ms into the steps"
            if workers.startup_ms > workers.ms_per_batch
            else ""
        ),
        width,
        first="  ",
        rest="    ",
    )
    if workers.settings:
        out += wrap(f"settings at iter(): {workers.settings}", width, first="  ", rest="    ")
    for row in workers.rows:
        label = row.worker.removeprefix("DataLoader ")
        out.append(
            clip(
                f"  {label:<22} busy {row.busy_percent:5.1f}%  {row.batches:5d} batches  "
                f"{row.ms_per_batch:8.2f} ms/batch",
                width,
            )
        )
    if workers.functions:
        out.append(clip(f"  in the workers' batches ({workers.samples} stack samples):", width))
        for f in workers.functions:
            out.append(
                clip(f"    {f.percent:5.1f}%  {f.ms_per_batch:8.2f} ms/batch  {f.function}", width)
            )
    if workers.advice and workers.advice not in recommended:
        out += wrap(workers.advice, width, first="  ", rest="    ")
    return out


def _hosts(hosts: tuple[str, ...] | list[str]) -> str:
    """The hosts for the title: every one up to 8, else the count and the first and last."""
    if len(hosts) <= 8:
        return ", ".join(hosts)
    return f"{len(hosts)} hosts: {hosts[0]} ... {hosts[-1]}"


def recorder_lines(saved: dict[str, Any], width: int) -> list[str]:
    """What a run the flight recorder saved is (`stepscope.model.runs.saved_by`): its trigger
    and reason and, for the ring it saved, what the ring does not hold. The ring has no
    framework ops (the bridges are off until a trigger), so a model's own work reads as
    "python / host" time: the reader must know that before reading the advice below."""
    trigger = saved["trigger"] or "a trigger"
    at = ""
    # A hung step is open: the last kept is the one before (decision 532). The steps after a
    # trigger: the trigger's step is in the ring's run, not this one (its last step read as
    # the trigger's, "slow_step at step 671" for a slow step 650; the reason names it).
    if saved.get("step") is not None and saved.get("part") != "after":
        at = f" {'after' if trigger == 'hang' else 'at'} step {saved['step']}"
    out = wrap(f"Saved by the flight recorder ({trigger}{at}): {saved['reason']}", width, rest="  ")
    kept, before = saved.get("steps"), saved.get("steps_before")
    if kept and before:  # the ring begins mid-run: no warm-up is looked for (decision 530)
        out += wrap(
            f"It holds the loop's steps {kept[0]} to {kept[1]}, recorded mid-run (the recorder "
            f"saw {before:,} steps before them): its first steps are no warm-up.",
            width,
            rest="  ",
        )
    if saved.get("steps_from") == "dataloader_fetches":  # decision 815
        out += wrap(
            "The loop marks no step: the recorder took each fetch of its DataLoader as a "
            "step's start, each step running from its batch's fetch to the next one's.",
            width,
            rest="  ",
        )
    if trigger == "hang" and not kept and before == 0:  # hung in the first step
        out += wrap(
            "No step had ended since the recorder started: the step that hangs is its first, "
            "so no step is analyzed below; the trace viewer shows what ran in it, the marker "
            "file every thread's stack.",
            width,
            rest="  ",
        )
    out += _hung_lines(saved.get("hung"), width)
    if saved.get("part") != "after":
        out += wrap(
            "The recorder keeps step markers, host annotations, data-pipeline events and Python "
            "stack samples, not the framework's ops (PyTorch, JAX, TensorFlow) nor the "
            "device's: the model's own work shows as python / host time below. "
            "capture_next_steps=K captures the K steps after a trigger in full.",
            width,
            rest="  ",
        )
    return out


def _hung_lines(hung: dict[str, Any] | None, width: int) -> list[str]:
    """Where the hung step's thread was when the recorder saved (its own frames, innermost
    last, stepscope's left out): the first thing a reader of a hang asks."""
    if not hung or not hung.get("frames"):
        return []
    where = (
        "fetching the next batch for stepscope.steps (the loader is what hangs)"
        if hung.get("in_fetch")
        else "in the step"
    )
    out = wrap(f"Thread {hung['thread']!r} was {where}, here (innermost last):", width, rest="  ")
    for f in hung["frames"]:
        name = f["file"].replace("\\", "/").rsplit("/", 1)[-1]
        code = f": {f['code']}" if f["code"] else ""
        out.append(clip(f"    {name}:{f['line']} in {f['function']}{code}", width))
    return out


def render(
    overview: OverviewPage,
    pipeline: InputPipelineAnalysis,
    top: int,
    width: int = 80,
    partial: dict[str, tuple[str, ...]] | None = None,
    saved: dict[str, Any] | None = None,
) -> str:
    """The report, every line at most ``width`` columns; ``partial``: the hosts read only in
    part (`ToolContext.partial_reads`), said right below the title; ``saved``: the flight
    recorder's marker of the run (`stepscope.model.runs.saved_by`), said below that."""
    from stepscope.stats.events import CATEGORY_LABELS

    bar_w = max(10, min(40, width - 45))
    env = overview.run_environment
    out = wrap(
        f"stepscope report — host {overview.host} ({_hosts(env.hosts)}), "
        f"{env.framework}, {env.device_type}"
        + (f" x{env.device_count}" if env.device_count else ""),
        width,
    )
    if partial:
        out += wrap("PARTIAL DATA: this report covers only what could be read:", width)
        for line in partial_lines(partial, many_hosts=len(env.hosts) > 1):
            out += wrap(line, width, first="  - ", rest="    ")
        out.append("")
    if saved is not None:
        out += recorder_lines(saved, width)
    stats = overview.step_time
    out.append("")
    steady = overview.steady_state
    headline = overview.bound_by.headline
    if steady is not None:  # the headline is all steps', the warm-up's included: say so
        headline = f"All {len(overview.steps)} steps: {_lower_first(headline)}"
    out += wrap(headline, width, rest="  ")
    if steady is not None:
        out.append("")
        out += wrap(steady.statement, width, rest="  ")
        out += wrap(f"Once warm: {_lower_first(steady.bound_by.headline)}", width, rest="  ")
    out.append("")
    out += wrap(
        f"Steps: {len(overview.steps)} ({overview.step_source}: {overview.step_source_detail})",
        width,
        rest="  ",
    )
    if overview.steps:
        job = overview.job
        out += wrap(
            (
                f"Job step time ({job.pacing_host}'s, the slowest rank on average)"
                if job
                else "Step time"
            )
            + f": avg {stats.avg_ms:.2f} ms, stddev {stats.stddev_ms:.2f}, "
            f"min {stats.min_ms:.2f}, max {stats.max_ms:.2f}",
            width,
            rest="  ",
        )
        if job is not None:
            out += _job(job, width)
        out.append("")
        out.append("Step-time breakdown, XProf's categories (average per step)")
        for key, label in CATEGORY_LABELS.items():
            ms, pct = overview.breakdown_ms[key], overview.breakdown_percent[key]
            if ms <= 0 and key not in ("input", "other"):
                continue
            out.append(clip(f"  {label:<19} {ms:9.2f} ms {pct:6.1f}%  {bar(pct, bar_w)}", width))
        out += _limits(overview, width, bar_w)
        if steady is not None:
            out += _steady(steady, width, bar_w)
    out.append("")
    out += wrap(input_verdict(overview), width, rest="  ")
    if overview.gpu_utilization:
        window = "the steps" if overview.steps else "the profile"
        mean = overview.gpu_utilization.get("mean", 0.0)
        out += wrap(f"GPU utilization: {mean:.1f}% (kernel busy time over {window})", width)
    if overview.precision:
        shares = [
            f"{overview.precision[f'{k}_percent']:.1f}% {_PRECISION_LABELS.get(k, k)}"
            for k in ("fp4", "fp8", "int8", "16bit", "32bit", "64bit")
            if overview.precision.get(f"{k}_percent", 0.0) >= 0.05 or k in ("16bit", "32bit")
        ]
        out += wrap("Device compute precision: " + ", ".join(shares), width, rest="  ")
    out += _top_ops(overview, top, width)
    bound = overview.input_bound
    input_limit = next((x.percent for x in overview.bound_by.limits if x.key == "input"), 0.0)
    shows_input = bound.classification in ("high", "moderate", "potential") or input_limit >= 5
    if shows_input and pipeline.input_ops:
        out.append("")
        out.append("Input pipeline (host, self time by category)")
        for category, ms in pipeline.host_breakdown_ms.items():
            if ms > 0:
                out.append(clip(f"  {category.replace('_', ' '):<19} {ms:9.2f} ms", width))
        worst = pipeline.pipelines[0] if pipeline.pipelines else None
        if worst and worst.bottleneck:
            out += wrap(
                f"bottleneck: {worst.bottleneck} ({worst.bottleneck_self_ms:.2f} ms in its "
                "slowest call)",
                width,
                first="  ",
                rest="    ",
            )
    rec = overview.recommendation
    for workers in pipeline.loader_workers:  # the verdict once: here or in the advice below
        out += _loader_workers(workers, width, " ".join(rec.details))
    out.append("")
    out.append("Recommendation")
    for detail in dict.fromkeys(d for d in rec.details if d != rec.statement):
        out += wrap(detail, width, first="  - ", rest="    ")
    if rec.tips:
        out.append("  Next:")
        for tip in dict.fromkeys(rec.tips):
            out += wrap(tip, width, first="  - ", rest="    ")
    return "\n".join(line.rstrip() for line in out)
