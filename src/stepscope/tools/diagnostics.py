"""GPU and multi-GPU diagnostics: each finding with its evidence and a concrete fix.

The overview's recommendations read the same findings (`_analysis.findings`).
Times are milliseconds; evidence rows give event names, counts and total time.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from stepscope.stats.diagnostics.base import Finding
from stepscope.stats.diagnostics.checks import CHECKS
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolSpec

OPTIONS = analysis.DIAGNOSTIC_OPTIONS
CSV_COLUMNS = ("severity", "id", "host", "title", "time_ms", "steps", "summary", "fix")


def finding_json(f: Finding) -> dict[str, Any]:
    return {
        "id": f.id,
        "title": f.title,
        "severity": f.severity,
        "host": f.host,
        "summary": f.summary,
        "fix": f.fix,
        "time_ms": round(f.time_ns / 1e6, 6),
        "steps": list(f.steps),
        "events": [
            {
                "name": e.name,
                "count": e.count,
                "total_ms": round(e.total_ns / 1e6, 6),
                "detail": e.detail,
            }
            for e in f.events
        ],
        "metrics": {k: round(v, 6) if isinstance(v, float) else v for k, v in f.metrics.items()},
    }


@dataclass(frozen=True)
class Diagnostics:
    hosts: tuple[str, ...]
    findings: tuple[Finding, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": list(self.hosts),
            "checks": [{"id": c.id, "description": c.description} for c in CHECKS],
            "findings": [finding_json(f) for f in self.findings],
        }

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for f in self.findings:
            row = finding_json(f)
            row["steps"] = " ".join(map(str, f.steps))
            writer.writerow({k: row[k] for k in CSV_COLUMNS})
        return out.getvalue()


def build(ctx: ToolContext) -> Diagnostics:
    return Diagnostics(tuple(ctx.hosts), tuple(analysis.findings(ctx)))


TOOL = ToolSpec(
    name="diagnostics",
    title="Diagnostics",
    description="GPU and multi-GPU findings with evidence and a concrete fix.",
    build=build,
    formats=("json", "csv"),
    options=OPTIONS,
    order=90,
)
