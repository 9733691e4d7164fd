"""GPU and multi-GPU diagnostics: each finding with its evidence and a concrete fix.

The overview's recommendations read the same findings (`_analysis.findings`).
Times are milliseconds; evidence rows give event names, counts and total time.
"""

from __future__ import annotations

from typing import ClassVar

from stepscope.records import record
from stepscope.stats.diagnostics.base import Finding
from stepscope.stats.diagnostics.checks import CHECKS
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.output import out
from stepscope.tools.registry import ToolSpec

OPTIONS = analysis.DIAGNOSTIC_OPTIONS


@record
class CheckInfo:
    id: str = out("the check's id (the `id` of its findings)")
    description: str = out("what it looks at")


@record
class Evidence:
    name: str = out("event name")
    count: int = out("occurrences")
    total_ms: float = out("their total time", "ms", 6)
    detail: str = out("what else to know about them")


@record
class FindingOut:
    id: str = out("stable identifier, e.g. `kernel_launch_bound`")
    title: str = out("the finding in a few words")
    severity: str = out("`high`, `medium` or `low`")
    host: str = out("the host, `''` for findings across hosts")
    summary: str = out("what was seen, with numbers")
    fix: str = out("what to change")
    time_ms: float = out("time at stake in the profile", "ms", 6)
    steps: tuple[int, ...] = out("step numbers concerned, largest effect first")
    events: tuple[Evidence, ...] = out("evidence: the events behind the finding")
    metrics: dict[str, float | int | str] = out(
        "check-specific numbers; the key names their unit (`_ms`, `_pct`, `_us`, `_gbps`)",
        digits=6,
    )


@record
class CsvRow:
    severity: str = out("`high`, `medium` or `low`")
    id: str = out("the finding's id")
    host: str = out("the host")
    title: str = out("the finding in a few words")
    time_ms: float = out("time at stake", "ms", 6)
    steps: str = out("step numbers, space-separated")
    summary: str = out("what was seen")
    fix: str = out("what to change")


def _finding(f: Finding) -> FindingOut:
    return FindingOut(
        id=f.id,
        title=f.title,
        severity=f.severity,
        host=f.host,
        summary=f.summary,
        fix=f.fix,
        time_ms=round(f.time_ns / 1e6, 6),
        steps=tuple(f.steps),
        events=tuple(
            Evidence(e.name, e.count, round(e.total_ns / 1e6, 6), e.detail) for e in f.events
        ),
        metrics=dict(f.metrics),
    )


@record
class Diagnostics:
    CSV_ROWS: ClassVar[str] = "table"

    hosts: tuple[str, ...] = out("the hosts analysed")
    checks: tuple[CheckInfo, ...] = out("every check run")
    findings: tuple[FindingOut, ...] = out("most severe first, then by time at stake")

    @property
    def table(self) -> tuple[CsvRow, ...]:
        """The CSV: one row per finding."""
        return tuple(
            CsvRow(
                f.severity,
                f.id,
                f.host,
                f.title,
                f.time_ms,
                " ".join(map(str, f.steps)),
                f.summary,
                f.fix,
            )
            for f in self.findings
        )


def build(ctx: ToolContext) -> Diagnostics:
    return Diagnostics(
        hosts=tuple(ctx.hosts),
        checks=tuple(CheckInfo(c.id, c.description) for c in CHECKS),
        findings=tuple(_finding(f) for f in analysis.findings(ctx)),
    )


TOOL = ToolSpec(
    name="diagnostics",
    title="Diagnostics",
    description="GPU and multi-GPU findings with evidence and a concrete fix.",
    build=build,
    formats=("json", "csv"),
    options=OPTIONS,
    order=90,
)
