"""Pod viewer: each worker's step-time breakdown, step by step, and the slowest worker.

A worker is a host of the run (one trace file: a TensorFlow host or a PyTorch rank). Steps
are paired across workers by `stepscope.stats.steps.pairing` (by step number when the workers
share most numbers, else by position as XProf), as in the ALL_HOSTS overview; ``pairing``
says how and which worker steps were left out. Times are milliseconds; categories are the
overview's. ``heatmap`` (host x step: step time, time late, time waiting for late ranks) and
``stragglers`` (which rank is late at which steps, and why) come from
`stepscope.stats.stragglers`, which never blames ranks for waiting in their collectives.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.model import Profile
from stepscope.stats import CATEGORY_NAMES
from stepscope.stats.events import CATEGORY_LABELS
from stepscope.stats.steps.pairing import HostSteps, pair_host_steps
from stepscope.stats.stragglers import PodLateness, find_stragglers
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ToolContext
from stepscope.tools.registry import ToolSpec


def _ms(ns: float) -> float:
    return round(float(ns) / 1e6, 6)


@dataclass(frozen=True)
class WorkerStep:
    host: str
    name: str
    duration_ns: int
    breakdown_ns: dict[str, int]

    @property
    def bottleneck(self) -> str:
        """The category with the most time (ties: the first in display order)."""
        return max(CATEGORY_NAMES, key=lambda c: (self.breakdown_ns[c], -CATEGORY_NAMES.index(c)))


@dataclass(frozen=True)
class PodStep:
    step_num: int
    workers: tuple[WorkerStep | None, ...]  # one per worker; None when it lacks the step

    @property
    def slowest(self) -> int:
        durations = [w.duration_ns if w else -1 for w in self.workers]
        return int(np.argmax(durations))


@dataclass(frozen=True)
class PodViewer:
    workers: tuple[str, ...]
    step_source: str
    steps: tuple[PodStep, ...]
    pairing: str = ""  # how worker steps were paired, and which were left out
    left_out: int = 0
    lateness: PodLateness | None = None  # late ranks, waits (stats/stragglers.py)

    def _lateness_json(self) -> dict[str, Any]:
        pod = self.lateness
        if pod is None:
            return {"heatmap": None, "stragglers": []}

        def matrix(values: np.ndarray) -> list[list[float | None]]:
            return [[None if np.isnan(v) else _ms(v) for v in row] for row in values.tolist()]

        return {
            "heatmap": {
                "hosts": list(pod.hosts),
                "steps": pod.step_num.tolist(),
                "step_ms": matrix(pod.dur_ns),
                "late_ms": matrix(np.where(np.isnan(pod.dur_ns), np.nan, pod.late_ns)),
                "wait_ms": matrix(np.where(np.isnan(pod.dur_ns), np.nan, pod.wait_ns)),
                "late": pod.late.tolist(),
            },
            "stragglers": [
                {
                    "host": s.host,
                    "steps": list(s.steps),
                    "step_ranges": s.step_ranges,
                    "late_ms": _ms(s.late_ns),
                    "late_ms_per_step": _ms(s.late_ns / len(s.steps)),
                    "reason": s.reason,
                    "reason_label": CATEGORY_LABELS[s.reason],
                    "reason_excess_ms": _ms(s.reason_excess_ns),
                    "waited_ms": _ms(s.waited_ns),
                    "waiters": s.waiters,
                    "explanation": s.explanation,
                }
                for s in pod.stragglers
            ],
        }

    def _worker_json(self, w: WorkerStep | None, slowest: bool) -> dict[str, Any] | None:
        if w is None:
            return None
        return {
            "host": w.host,
            "step_name": w.name,
            "duration_ms": _ms(w.duration_ns),
            "breakdown_ms": {c: _ms(w.breakdown_ns[c]) for c in CATEGORY_NAMES},
            "bottleneck": w.bottleneck,
            "is_slowest": slowest,
        }

    def to_json(self) -> dict[str, Any]:
        steps = []
        slow_counts = [0] * len(self.workers)
        totals = np.zeros(len(self.workers))
        counts = np.zeros(len(self.workers))
        for step in self.steps:
            slowest = step.slowest
            slow_counts[slowest] += 1
            durations = [w.duration_ns for w in step.workers if w]
            for i, w in enumerate(step.workers):
                if w:
                    totals[i] += w.duration_ns
                    counts[i] += 1
            steps.append(
                {
                    "step_num": step.step_num,
                    "slowest_worker": self.workers[slowest],
                    "spread_ms": _ms(max(durations) - min(durations)),
                    "workers": [
                        self._worker_json(w, i == slowest) for i, w in enumerate(step.workers)
                    ],
                }
            )
        return {
            "step_source": self.step_source,
            "pairing": self.pairing,
            "left_out_steps": self.left_out,
            "categories": [{"key": c, "label": CATEGORY_LABELS[c]} for c in CATEGORY_NAMES],
            "workers": [
                {
                    "host": host,
                    "steps": int(counts[i]),
                    "avg_step_ms": _ms(totals[i] / counts[i]) if counts[i] else 0.0,
                    "slowest_in_steps": slow_counts[i],
                }
                for i, host in enumerate(self.workers)
            ],
            "steps": steps,
            **self._lateness_json(),
        }

    def to_csv(self) -> str:
        out = io.StringIO()
        fields = ["step_num", "host", "step_name", "duration_ms", "is_slowest", "bottleneck"]
        fields += [f"{c}_ms" for c in CATEGORY_NAMES]
        writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for step in self.to_json()["steps"]:
            for w in step["workers"]:
                if w is None:
                    continue
                row = {
                    k: w[k]
                    for k in ("host", "step_name", "duration_ms", "is_slowest", "bottleneck")
                }
                row.update({f"{c}_ms": w["breakdown_ms"][c] for c in CATEGORY_NAMES})
                writer.writerow({"step_num": step["step_num"], **row})
        return out.getvalue()


def build(ctx: ToolContext) -> PodViewer:
    hosts = ctx.hosts
    dbs = [analysis.step_db(ctx, h) for h in hosts]
    pairing = pair_host_steps(
        [
            HostSteps(h, db.step_num, db.start_ns, db.dur_ns)
            for h, db in zip(hosts, dbs, strict=True)
        ]
    )
    numbers, rows = pairing.step_num.tolist(), [r.tolist() for r in pairing.rows]
    categories = [db.category_ns() for db in dbs]
    steps = []
    for j, number in enumerate(numbers):
        workers: list[WorkerStep | None] = []
        for host, db, cats, worker_rows in zip(hosts, dbs, categories, rows, strict=True):
            k = worker_rows[j]
            if k < 0:
                workers.append(None)
                continue
            breakdown = {c: int(cats[c][k]) for c in CATEGORY_NAMES}
            workers.append(WorkerStep(host, db.names[k], int(db.dur_ns[k]), breakdown))
        steps.append(PodStep(int(number), tuple(workers)))
    sources = sorted({db.source for db in dbs})
    lateness = find_stragglers(list(zip(hosts, dbs, strict=True))) if len(hosts) > 1 else None
    return PodViewer(
        tuple(hosts),
        "+".join(sources),
        tuple(steps),
        pairing.description,
        sum(pairing.left_out),
        lateness,
    )


def _device_count(profile: Profile) -> int:
    return sum(1 for p in profile.planes if p.is_device and p.line_count)


def available(ctx: ToolContext) -> bool:
    """Runs with several workers: several hosts, or a host with several devices (cheap: the
    steps are found when the page is opened)."""
    if len(ctx.hosts) > 1:
        return True
    return any(ctx.intermediate(h, "pod_viewer.device_count", _device_count) > 1 for h in ctx.hosts)


TOOL = ToolSpec(
    name="pod_viewer",
    title="Pod viewer",
    description="Step-time breakdown of every worker, step by step, with the slowest worker.",
    build=build,
    formats=("json", "csv"),
    options=(analysis.STEP_SOURCE,),
    available=available,
    order=85,
)
