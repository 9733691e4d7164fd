"""Steps of one host or of several (ALL_HOSTS), ready for the tools.

Several hosts: steps are matched by step number (by position when the hosts' numbers do not
match, as with inferred steps); a step's duration and each category are the mean over the
hosts that have it, so its categories still add up to its duration, and its start is the
earliest host's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.stats.events import CATEGORY_NAMES
from stepscope.stats.steps.breakdown import StepDb


@dataclass(frozen=True)
class StepStats:
    avg_ms: float
    stddev_ms: float  # sample standard deviation (n - 1), as XProf
    min_ms: float
    max_ms: float

    @classmethod
    def of(cls, values_ns: np.ndarray) -> StepStats:
        if not len(values_ns):
            return cls(0.0, 0.0, 0.0, 0.0)
        ms = values_ns / 1e6
        std = float(np.std(ms, ddof=1)) if len(ms) > 1 else 0.0
        return cls(float(ms.mean()), std, float(ms.min()), float(ms.max()))

    def to_json(self) -> dict[str, float]:
        return {
            "avg": round(self.avg_ms, 6),
            "stddev": round(self.stddev_ms, 6),
            "min": round(self.min_ms, 6),
            "max": round(self.max_ms, 6),
        }


@dataclass(frozen=True)
class StepSummary:
    source: str
    description: str
    hosts: tuple[str, ...]
    has_device: bool
    step_num: np.ndarray
    names: tuple[str, ...]
    start_ns: np.ndarray
    dur_ns: np.ndarray
    category_ns: dict[str, np.ndarray]  # per CATEGORY_NAMES: per-step time
    markers_found: int
    dropped: int  # candidates not kept (ill-formed or incomplete)

    @property
    def n_steps(self) -> int:
        return len(self.dur_ns)

    def total_ns(self) -> int:
        return int(self.dur_ns.sum())

    def percent(self, category: str) -> float:
        """Share of the total step time spent in ``category`` (0 without steps)."""
        total = self.total_ns()
        return 100.0 * float(self.category_ns[category].sum()) / total if total else 0.0

    def avg_ms(self, category: str) -> float:
        values = self.category_ns[category]
        return float(values.mean()) / 1e6 if len(values) else 0.0

    def step_stats(self) -> StepStats:
        return StepStats.of(self.dur_ns)


def summarize_steps(dbs: dict[str, StepDb]) -> StepSummary:
    """One host's steps, or the steps of several hosts matched by step number."""
    hosts = tuple(dbs)
    found = [db for db in dbs.values() if db.n_steps]
    sources = sorted({db.source for db in dbs.values()})
    source = sources[0] if len(sources) == 1 else "+".join(sources)
    description = "; ".join(dict.fromkeys(db.description for db in dbs.values()))
    has_device = any(db.has_device for db in dbs.values())
    markers = sum(db.markers_found for db in dbs.values())
    dropped = sum(db.dropped_ill_formed + db.dropped_incomplete for db in dbs.values())
    if len(found) <= 1:
        db = found[0] if found else next(iter(dbs.values()))
        return StepSummary(
            source,
            description,
            hosts,
            has_device,
            db.step_num,
            db.names,
            db.start_ns,
            db.dur_ns,
            db.category_ns(),
            markers,
            dropped,
        )
    common = sorted(set.intersection(*(set(db.step_num.tolist()) for db in found)))
    if common:
        picks = [
            np.searchsorted(db.step_num, common)
            if np.all(np.diff(db.step_num) >= 0)
            else np.array([db.step_num.tolist().index(s) for s in common])
            for db in found
        ]
    else:
        count = min(db.n_steps for db in found)
        picks = [np.arange(count) for _ in found]
    dur = (
        np.mean([db.dur_ns[k] for db, k in zip(found, picks, strict=True)], axis=0)
        .round()
        .astype(np.int64)
    )
    start = np.min([db.start_ns[k] for db, k in zip(found, picks, strict=True)], axis=0)
    categories = {
        c: np.mean([db.category_ns()[c][k] for db, k in zip(found, picks, strict=True)], axis=0)
        .round()
        .astype(np.int64)
        for c in CATEGORY_NAMES
    }
    # rounding of the means must not break "categories add up to the step"
    categories["other"] += dur - sum(categories.values())
    first = found[0]
    return StepSummary(
        source,
        description,
        hosts,
        has_device,
        first.step_num[picks[0]],
        tuple(first.names[i] for i in picks[0].tolist()),
        start,
        dur,
        categories,
        markers,
        dropped,
    )
