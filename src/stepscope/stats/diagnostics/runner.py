"""Runs the checks of `checks.CHECKS` on one host or on a whole run."""

from __future__ import annotations

from collections.abc import Sequence

from stepscope.stats.diagnostics.base import Finding, HostData, sort_findings
from stepscope.stats.diagnostics.checks import CHECKS
from stepscope.stats.steps.breakdown import StepDb


def diagnose_host(data: HostData, options: dict[str, str] | None = None) -> list[Finding]:
    """All per-host findings, most severe first."""
    found = []
    for check in CHECKS:
        if check.on_host is not None:
            finding = check.on_host(data, options or {})
            if finding is not None:
                found.append(finding)
    return sort_findings(found)


def diagnose_across(
    steps: Sequence[tuple[str, StepDb]], options: dict[str, str] | None = None
) -> list[Finding]:
    """The findings across hosts (stragglers), from each host's (name, step database)."""
    found = []
    for check in CHECKS:
        if check.on_run is not None:
            across = check.on_run(steps, options or {})
            if across is not None:
                found.append(across)
    return found


def diagnose_run(hosts: list[HostData], options: dict[str, str] | None = None) -> list[Finding]:
    """Findings of every host plus the ones across hosts (stragglers)."""
    found = [f for data in hosts for f in diagnose_host(data, options)]
    found += diagnose_across([(h.host, h.steps) for h in hosts], options)
    return sort_findings(found)
