"""`stepscope diff` for people: a terminal table and a Markdown summary (pull requests)."""

from __future__ import annotations

from stepscope.cli.output import human_bytes, table, wrap
from stepscope.stats.compare import MetricChange, RowChange, RuleResult, RunDiff
from stepscope.stats.compare.diff_output import core_wait_note
from stepscope.stats.compare.run_summary import RunSummary, stage_name
from stepscope.words import counted

TOP_ROWS = 8
_TABLES = (
    ("input_stages", "Input pipeline stages (self time per step)"),
    ("host_ops", "Host ops (self time per step)"),
    ("device_ops", "Device ops (self time per step)"),
    ("kernels", "Kernels (time per step)"),
)


def _value(m: MetricChange, v: float | None) -> str:
    if v is None:
        return "–"
    if m.unit == "ns":
        return f"{v / 1e6:.2f} ms"
    if m.unit == "bytes":
        return human_bytes(v)
    return f"{v:.1f}%"


def _change(m: MetricChange) -> str:
    if m.delta is None:
        return "–"
    if m.unit == "percent":
        return f"{m.delta:+.1f} pp"
    rel = m.relative
    return f"{rel * 100:+.1f}%" if rel is not None else _delta(m)


def _delta(m: MetricChange) -> str:
    d = m.delta or 0.0
    if m.unit == "ns":
        return f"{d / 1e6:+.2f} ms"
    if m.unit == "bytes":
        return ("+" if d >= 0 else "-") + human_bytes(abs(d))
    return f"{d:+.1f} pp"


def _interval(m: MetricChange) -> str:
    rel = m.relative_ci()
    if rel is not None:
        return f"[{rel[0] * 100:+.1f}%, {rel[1] * 100:+.1f}%]"
    if m.ci_low is not None and m.ci_high is not None and m.unit == "ns":
        return f"[{m.ci_low / 1e6:+.2f}, {m.ci_high / 1e6:+.2f}] ms"
    return "n/a" if not m.tested else "–"


def _mark(m: MetricChange) -> str:
    return "*" if m.significant else ""


def warmup_text(s: RunSummary) -> str:
    """``step 0 (8973.40 ms)``: the run's warm-up steps and their times."""
    k = s.warmup_steps
    nums = s.step_num[:k].tolist()
    which = f"step {nums[0]}" if k == 1 else f"steps {nums[0]}-{nums[-1]}"
    times = ", ".join(f"{ns / 1e6:.2f} ms" for ns in s.step_dur_ns[:k].tolist())
    return f"{which} ({times})"


def _side(s: RunSummary) -> str:
    hosts = s.host if s.host != "ALL_HOSTS" else f"all hosts: {', '.join(s.hosts)}"
    warm = f"; warm-up {warmup_text(s)}" if s.warmup_steps else ""
    return f"{s.run} ({hosts}; {counted(s.n_steps)}, {s.step_source}{warm})"


def compared(diff: RunDiff) -> str:
    """Which steps the step figures compare, in words; "" when neither run has a warm-up."""
    base, cand = diff.baseline, diff.candidate
    if diff.once_warm:
        return (
            "Compared once warm: each run's steps after its warm-up (baseline "
            f"{base.n_steps - base.warmup_steps} of {base.n_steps}, candidate "
            f"{cand.n_steps - cand.warmup_steps} of {cand.n_steps}); the warm-up is its own "
            "row, never tested. --all-steps compares every step."
        )
    if base.warmup_steps or cand.warmup_steps:
        return "Compared over all steps, the warm-up included (--all-steps)."
    return ""


def _alone(diff: RunDiff, sep: str) -> str:
    """The footnote's words on the core-wait row after ``sep``, when it is tested."""
    note = core_wait_note(diff)
    return f"{sep} {note}" if note else ""


def _shown_metrics(diff: RunDiff) -> list[MetricChange]:
    return [m for m in diff.metrics if m.base is not None or m.cand is not None]


def _row_name(table_name: str, r: RowChange, width: int) -> str:
    name = stage_name(r.name) + f"  ({r.name})" if table_name == "input_stages" else r.name
    return name if len(name) <= width else name[: width - 1] + "…"


def _row_cells(table_name: str, r: RowChange, width: int) -> list[str]:
    return [
        _row_name(table_name, r, width),
        f"{r.base_ns / 1e6:.3f}",
        f"{r.cand_ns / 1e6:.3f}",
        f"{r.delta_ns / 1e6:+.3f}",
        f"{r.base_count} → {r.cand_count}",
        r.status,
    ]


MIN_NAME = 24  # a row's name keeps at least this many columns, whatever the terminal


def render_text(diff: RunDiff, results: list[RuleResult], width: int = 100) -> str:
    """The terminal report, fitted to ``width`` columns: sentences wrapped, the rows' names cut
    to the room the numbers leave (an ellipsis marking the cut)."""
    out = [
        *wrap(_side(diff.baseline), width, first="baseline:  ", rest=" " * 11),
        *wrap(_side(diff.candidate), width, first="candidate: ", rest=" " * 11),
        "",
        *wrap(diff.verdict, width, first="Verdict: ", rest="  "),
        *(wrap(compared(diff), width, rest="  ") if compared(diff) else []),
        "",
    ]
    rows = [
        [m.label, _value(m, m.base), _value(m, m.cand), _change(m), _interval(m), _mark(m)]
        for m in _shown_metrics(diff)
    ]
    metrics = table(rows, ["metric", "baseline", "candidate", "change", "95% interval", "sig"])
    if max(len(line) for line in metrics.splitlines()) <= width:
        out.append(metrics)
    else:  # a narrow terminal: each metric on a line of its own, its figures below it
        for label, base, cand, change, interval, mark in rows:
            out.append(label)
            out += wrap(f"{base} → {cand}  {change}  {interval} {mark}".rstrip(), width, "    ")
    out += wrap(
        "* significant (seeded expanded bootstrap, Holm-adjusted p < 0.05, above the noise floor"
        f"{_alone(diff, ';')})",
        width,
        rest="  ",
    )
    header = ["name", "base ms", "cand ms", "delta ms", "count", "status"]
    for name, title in _TABLES:
        changes: tuple[RowChange, ...] = getattr(diff, name)
        if not changes:
            continue
        out += ["", title]
        shown = changes[:TOP_ROWS]
        # the numbers' columns (and the two-space indent and gaps), the name gets the rest
        numbers = [_row_cells(name, r, 1 << 30)[1:] for r in shown]
        others = sum(max(len(c) for c in col) for col in zip(header[1:], *numbers, strict=True))
        room = width - 2 - others - 2 * (len(header) - 1)
        if room >= MIN_NAME:
            cells = [_row_cells(name, r, room) for r in shown]
            out.append("  " + table(cells, header).replace("\n", "\n  "))
            continue
        # a narrow terminal: each row's name on a line of its own, its figures below it
        for r in shown:
            full, *figures = _row_cells(name, r, width - 2)
            out.append(f"  {full}")
            base, cand, delta, count, status = figures
            out += wrap(f"{base} → {cand} ms ({delta}), count {count}, {status}", width, "      ")
    if results:
        out += ["", "Rules"]
        for result in results:
            out += wrap(result.reason, width, first="  ", rest="    ")
    return "\n".join(out)


def _md_escape(text: str) -> str:
    """Plain text in a Markdown table cell (HTML-escaped, pipes escaped)."""
    return text.replace("&", "&amp;").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _md_code(text: str) -> str:
    """A code span in a table cell: entities would show literally there, so only pipes and
    backticks are escaped."""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def render_markdown(diff: RunDiff, results: list[RuleResult]) -> str:
    failed = [r for r in results if r.failed]
    head = ": ❌ regression" if failed else (": ✅ rules pass" if results else "")
    out = [
        f"### stepscope diff{head}",
        "",
        f"**{_md_escape(diff.verdict)}**",
        "",
        f"- baseline: {_md_code(_side(diff.baseline))}",
        f"- candidate: {_md_code(_side(diff.candidate))}",
        *([f"- {_md_escape(compared(diff))}"] if compared(diff) else []),
        "",
        "| metric | baseline | candidate | change | 95% interval | significant |",
        "|---|---:|---:|---:|---:|:---:|",
    ]
    for m in _shown_metrics(diff):
        sig = "**yes**" if m.significant else ("no" if m.tested else "n/a")
        out.append(
            f"| {m.label} | {_value(m, m.base)} | {_value(m, m.cand)} | {_change(m)} "
            f"| {_interval(m)} | {sig} |"
        )
    for name, title in _TABLES:
        changes: tuple[RowChange, ...] = getattr(diff, name)
        if not changes:
            continue
        out += ["", f"<details><summary>{title}</summary>", ""]
        out.append("| name | baseline ms | candidate ms | delta ms | count | status |")
        out.append("|---|---:|---:|---:|---:|---|")
        for r in changes[:TOP_ROWS]:
            c = _row_cells(name, r, 90)
            out.append(f"| {_md_code(c[0])} | {c[1]} | {c[2]} | {c[3]} | {c[4]} | {c[5]} |")
        out += ["", "</details>"]
    if results:
        out += ["", "| rule | result |", "|---|---|"]
        for result in results:
            out.append(
                f"| {_md_code(result.rule.text)} | {'❌' if result.failed else '✅'} "
                f"{_md_escape(result.reason.split(': ', 1)[-1])} |"
            )
    out += [
        "",
        "<sub>Significance: seeded expanded percentile bootstrap of per-step samples "
        "(2000 resamples), Holm-adjusted p &lt; 0.05, changes under 1% of the baseline "
        f"median step time are never flagged{_md_escape(_alone(diff, '.'))}.</sub>",
    ]
    return "\n".join(out) + "\n"
