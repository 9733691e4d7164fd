"""GPU and multi-GPU diagnostics: findings with evidence and a concrete fix.

Each check is a function of one host's data (`HostData`) or of all hosts (skew) that returns
a `Finding` or None. This module holds the types the checks share; the checks live in
`host` (between-step gaps, ops on the host, launch thread contention), `device` (launch-bound
steps, copies, TensorCores/precision), `streams` (copies on the compute stream, host-device
synchronization) and `multi` (collectives, skew across GPUs), are listed once in `checks`,
and are run by `runner`. Thresholds are named constants next to each check; all evidence is
computed with vectorized NumPy.
"""

from __future__ import annotations

from dataclasses import field
from functools import cached_property

import numpy as np

from stepscope.distinct import distinct_inverse, member
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.events import NOT_COUNTED, EventType, classify_events, device_work_lines
from stepscope.stats.gpu.device import framework_of
from stepscope.stats.gpu.kernels import KernelDb, launch_events
from stepscope.stats.host.thread_cpu import ThreadCpu
from stepscope.stats.runup_python import steps_thread_cpu
from stepscope.stats.steps.breakdown import StepDb
from stepscope.stats.steps.device_spans import launch_times, window_of
from stepscope.stats.steps.periodic import Periodic, periodic_extra
from stepscope.stats.steps.run_ahead import RunAhead, run_ahead
from stepscope.stats.warmup import warmup_count

SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}
ALL_STEPS = -1  # a finding about the whole profile rather than listed steps


@record
class EventEvidence:
    """A group of events behind a finding: what, how often, how long."""

    name: str
    count: int
    total_ns: int
    detail: str = ""


@record
class Finding:
    """One diagnostic finding: what was seen, how severe, and what to do."""

    id: str  # stable identifier, e.g. "kernel_launch_bound"
    title: str
    severity: str  # "high" | "medium" | "low"
    host: str  # the host, or "" for findings across hosts
    summary: str  # what was seen, with numbers
    fix: str  # what to change
    time_ns: int  # time at stake in the profile
    steps: tuple[int, ...] = ()  # step numbers concerned (largest effect first)
    events: tuple[EventEvidence, ...] = ()
    metrics: dict[str, float | int | str] = field(default_factory=dict)


def severity(share: float, medium: float, high: float) -> str | None:
    """'high' / 'medium' for a share (0..1) over the thresholds, None below both."""
    if share >= high:
        return "high"
    if share >= medium:
        return "medium"
    return None


def top_by_name(
    profile: Profile, events: np.ndarray, weights: np.ndarray, limit: int = 5
) -> tuple[EventEvidence, ...]:
    """Events grouped by name, largest total weight first."""
    if len(events) == 0:
        return ()
    names, group = distinct_inverse(profile.name[events])
    total = np.bincount(group, weights=weights, minlength=len(names))
    count = np.bincount(group, minlength=len(names))
    order = np.argsort(-total, kind="stable")[:limit]
    return tuple(
        EventEvidence(profile.strings[int(names[g])], int(count[g]), int(total[g]))
        for g in order.tolist()
    )


@record(frozen=False)
class HostData:
    """Everything the per-host checks read, computed once."""

    host: str
    profile: Profile
    steps: StepDb
    kernels: KernelDb

    @cached_property
    def periodic(self) -> Periodic | None:
        """The steps doing extra work every N steps after the warm-up (decision 580), read by
        the slow_steps and periodic_steps checks alike."""
        steps = self.steps
        warm = warmup_count(steps.dur_ns, mid_run=steps.mid_run)
        return periodic_extra(steps.step_num, steps.dur_ns, steps.limit_ns(), warm)

    @cached_property
    def run_ahead(self) -> RunAhead | None:
        """The loop running ahead of its computation (decision 640), read by the
        periodic_steps check: its waits are no extra work."""
        steps = self.steps
        warm = warmup_count(steps.dur_ns, mid_run=steps.mid_run)
        return run_ahead(self.profile, steps.start_ns, steps.dur_ns, warm, steps.has_device)

    @cached_property
    def steps_cpu(self) -> ThreadCpu:
        """The steps' thread's CPU readings (the stack sampler's), empty without them."""
        return steps_thread_cpu(self.profile, self.steps)

    @cached_property
    def types(self) -> np.ndarray:
        return classify_events(self.profile)

    @cached_property
    def on_device(self) -> np.ndarray:
        p = self.profile
        return device_work_lines(p)[p.line] if p.n_events else np.zeros(0, bool)

    @cached_property
    def framework(self) -> str:
        return framework_of(self.profile)

    @cached_property
    def device_events(self) -> np.ndarray:
        return np.flatnonzero(self.on_device & (self.types != NOT_COUNTED))

    def device_of_type(self, *types: EventType) -> np.ndarray:
        ev = self.device_events
        return ev[member(self.types[ev], np.array([int(t) for t in types], dtype=np.int64))]

    @cached_property
    def launch_time(self) -> np.ndarray:
        """Per event of `device_events`: start of its host launch (its own start if none)."""
        ev = self.device_events
        launch = launch_events(self.profile, ev)
        return np.where(
            launch >= 0,
            self.profile.start_ns.take(np.maximum(launch, 0)),
            self.profile.start_ns.take(ev),
        )

    @cached_property
    def step_windows(self) -> tuple[np.ndarray, np.ndarray]:
        start = self.steps.start_ns
        return start, start + self.steps.dur_ns

    @cached_property
    def device_step(self) -> np.ndarray:
        """Per event of `device_events`: the row of the step it belongs to, -1 if none, as
        the step breakdown placed it: its launch in the step's marker (`StepDb.launch_lo`),
        the device's backlog in no step (`launch_times`). Not by the step's span, which
        starts at its device work where that runs behind."""
        ev = self.device_events
        steps = self.steps
        lo, hi = steps.launch_lo, steps.launch_hi
        if len(lo) != steps.n_steps:  # a database stored without them: the spans
            lo, hi = self.step_windows
        return window_of(launch_times(self.profile, ev, ev, cached=True), lo, hi)

    def step_of_device_events(self, events: np.ndarray) -> np.ndarray:
        """Index (into the step db) of the step each device event belongs to, -1 if none."""
        return self.device_step[np.searchsorted(self.device_events, events)]

    def step_of_times(self, when: np.ndarray) -> np.ndarray:
        lo, hi = self.step_windows
        if len(lo) == 0:
            return np.full(len(when), -1, dtype=np.int64)
        k = np.searchsorted(lo, when, "right") - 1
        inside = (k >= 0) & (when < hi[np.maximum(k, 0)])
        return np.where(inside, k, -1)

    @property
    def total_step_ns(self) -> int:
        return int(self.steps.dur_ns.sum())

    def step_numbers(self, indices: np.ndarray | list[int]) -> tuple[int, ...]:
        return tuple(int(self.steps.step_num[i]) for i in indices)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(
        findings, key=lambda f: (SEVERITY_ORDER.get(f.severity, 9), -f.time_ns, f.id, f.host)
    )
