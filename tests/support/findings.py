"""One host's diagnostic findings for a profile built in code, as the diagnostics tool
computes them (its step database and kernel database from the profile)."""

from __future__ import annotations

from stepscope.model import Profile
from stepscope.stats.diagnostics.base import Finding, HostData
from stepscope.stats.diagnostics.runner import diagnose_host
from stepscope.stats.gpu.kernels import build_kernel_db
from stepscope.stats.steps.breakdown import build_step_db


def host_findings(profile: Profile, host: str = "h") -> dict[str, Finding]:
    """Finding id -> finding, for ``profile`` as host ``host``."""
    data = HostData(host, profile, build_step_db(profile), build_kernel_db(profile))
    return {f.id: f for f in diagnose_host(data)}
