"""Runs the checks of `checks.CHECKS` on one host or on a whole run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from stepscope.stats.diagnostics.base import Finding, HostData, sort_findings
from stepscope.stats.diagnostics.checks import CHECKS
from stepscope.stats.diagnostics.multi import discount_waiting
from stepscope.stats.stragglers_types import Rank


def diagnose_host(data: HostData, options: dict[str, str] | None = None) -> list[Finding]:
    """All per-host findings, most severe first."""
    found = []
    for check in CHECKS:
        if check.on_host is not None:
            finding = check.on_host(data, options or {})
            if finding is not None:
                found.append(finding)
    return sort_findings(found)


def diagnose_across(ranks: Sequence[Rank], options: dict[str, str] | None = None) -> list[Finding]:
    """The findings across hosts (stragglers), from each host's steps and collective calls."""
    found = []
    for check in CHECKS:
        if check.on_run is not None:
            across = check.on_run(ranks, options or {})
            if across is not None:
                found.append(across)
    return found


def combine_hosts(
    per_host: Sequence[Finding],
    ranks: Sequence[Rank],
    options: dict[str, str] | None = None,
) -> list[Finding]:
    """Every host's findings and the ones across hosts, most severe first; time a host spent
    waiting in collectives for a late rank is taken out of its collective findings."""
    found = discount_waiting(per_host, ranks) if len(ranks) > 1 else list(per_host)
    if len(ranks) > 1:
        across = diagnose_across(ranks, options)
        if any(f.id == "job_cores_wait" for f in across):  # said once, of the whole job
            found = [f for f in found if f.id != "cores_wait"]
        found = merge_repeats(found, len(ranks)) + across
    return sort_findings(found)


def merge_repeats(found: Sequence[Finding], n_hosts: int) -> list[Finding]:
    """The same finding on several hosts (every rank of a job runs the same loop) said once:
    findings of one check and severity on several hosts become the worst host's, naming the
    hosts (metrics ``hosts``, ``worst_host``) and summing their time at stake. A host whose
    finding is graver than the others' or measures other things (a straggler's) keeps its
    own, its summary naming its host."""
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for f in found:
        # a finding that measures other things (the straggler's collectives: no waiting) is
        # another finding
        key = (f.id, f.severity, not f.host, tuple(sorted(f.metrics)))
        groups.setdefault(key, []).append(f)
    out = []
    for same in groups.values():
        if len(same) == 1:
            # one host's alone: its summary names it, or the job's advice says "every 10
            # steps" of a rank the reader must find (decision 647)
            f = same[0]
            out.append(
                replace(f, summary=f"On {f.host} (1 of {n_hosts} hosts): {f.summary}")
                if f.host and n_hosts > 1
                else f
            )
            continue
        worst = sort_findings(same)[0]
        hosts = sorted({f.host for f in same})
        out.append(
            replace(
                worst,
                host="",
                summary=f"On {len(hosts)} of {n_hosts} hosts (worst: {worst.host}): "
                + worst.summary,
                time_ns=sum(f.time_ns for f in same),
                metrics={**worst.metrics, "hosts": ", ".join(hosts), "worst_host": worst.host},
            )
        )
    return out


def diagnose_run(hosts: list[HostData], options: dict[str, str] | None = None) -> list[Finding]:
    """Findings of every host plus the ones across hosts (stragglers)."""
    from stepscope.stats.collective_calls import collective_calls
    from stepscope.stats.gpu.device_caps import device_caps

    found = [f for data in hosts for f in diagnose_host(data, options)]
    ranks = [
        Rank(h.host, h.steps, collective_calls(h.profile, h.steps), device_caps(h.profile).vendor)
        for h in hosts
    ]
    return combine_hosts(found, ranks, options)
