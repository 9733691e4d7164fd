"""Time, FLOPs and bytes per HLO instruction: the data of hlo_stats, op_profile and
roofline_model.

Each device event tied to an HLO instruction (`stepscope.stats.xla.xla_ops`) adds its duration to
the instruction. FLOPs and bytes are per execution (from the HLO) times the executions, which
are counted as the launches of the instruction's least-launched kernel (an instruction runs
each of its kernels at least once per execution; some, like memsets, twice).
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.events import NOT_COUNTED, classify_events, device_work_lines
from stepscope.stats.intervals import union_ns
from stepscope.stats.xla.xla_op import XlaOp
from stepscope.stats.xla.xla_ops import xla_events

HLO_SOURCE = "XLA's HLO (shapes of each instruction)"


@record
class HloOpRow:
    op: XlaOp
    occurrences: int  # device events (kernels, copies) of the instruction
    executions: int
    total_ns: int
    flops: float  # all executions
    bytes_accessed: float  # all executions
    library_flops: float = 0.0  # all executions: stepscope's cuBLAS/cuDNN estimate
    library_bytes: float = 0.0

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.total_ns * 1e9 if self.total_ns else 0.0

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_accessed / self.total_ns * 1e9 if self.total_ns else 0.0

    @property
    def intensity(self) -> float:
        """FLOPs per byte accessed (0 when no bytes are known)."""
        return self.flops / self.bytes_accessed if self.bytes_accessed else 0.0


@record
class HloMetrics:
    rows: tuple[HloOpRow, ...]  # by total time, largest first
    idle_ns: int  # device time with no event, between the first and last event of each device
    device_events_ns: int  # summed duration of all device work events (XLA or not)
    source: str = HLO_SOURCE  # where FLOPs and bytes come from

    @property
    def total_ns(self) -> int:
        return sum(r.total_ns for r in self.rows)


def device_work_mask(profile: Profile) -> np.ndarray:
    """Events that are device work (kernels, copies) on device lines."""
    return device_work_lines(profile)[profile.line] & (classify_events(profile) != NOT_COUNTED)


def idle_and_busy_ns(profile: Profile, events: np.ndarray) -> tuple[int, int]:
    """(idle, busy) ns of device ``events``: idle is each plane's span less the union of its
    events; busy the sum of their durations."""
    idle = 0
    for plane in distinct(profile.plane[events]).tolist():
        own = events[profile.plane[events] == plane]
        lo, hi = profile.start_ns[own], profile.end_ns[own]
        idle += int(hi.max() - lo.min()) - union_ns(lo, hi)
    return idle, int(profile.dur_ns[events].sum())


def hlo_metrics(profile: Profile, window: tuple[int, int] | None = None) -> HloMetrics:
    """Rows of every HLO instruction with device events starting in ``window`` (default: all)."""
    xla = xla_events(profile)
    work = device_work_mask(profile)
    if window is not None:
        work &= (profile.start_ns >= window[0]) & (profile.start_ns < window[1])
    events = np.flatnonzero(work)
    idle, device_ns = idle_and_busy_ns(profile, events)
    if not xla:
        return HloMetrics((), idle, device_ns)
    index = xla.op_index[events]
    mine = events[index >= 0]
    index = index[index >= 0]
    n = len(xla.ops)
    total = np.bincount(index, weights=profile.dur_ns[mine], minlength=n).astype(np.int64)
    count = np.bincount(index, minlength=n)
    # executions: the fewest launches of one kernel name of the instruction
    pair = index.astype(np.int64) * (len(profile.strings) + 1) + profile.name[mine]
    pairs, per_pair = np.unique(pair, return_counts=True)
    execs = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(execs, pairs // (len(profile.strings) + 1), per_pair)
    rows = [
        HloOpRow(
            op=op,
            occurrences=int(count[i]),
            executions=int(execs[i]),
            total_ns=int(total[i]),
            flops=op.flops * int(execs[i]),
            bytes_accessed=float(op.bytes_accessed) * int(execs[i]),
            library_flops=op.library_flops * int(execs[i]),
            library_bytes=float(op.library_bytes) * int(execs[i]),
        )
        for i, op in enumerate(xla.ops)
        if count[i]
    ]
    rows.sort(key=lambda r: (-r.total_ns, r.op.program_id, r.op.name))
    return HloMetrics(tuple(rows), idle, device_ns)


def bound_by(row: HloOpRow, ridge_point: float) -> str:
    """ "Compute" or "Memory" by the op's intensity against the ridge point; "Unknown" when
    the op has no FLOPs or bytes (custom calls XLA cannot see into)."""
    if not row.flops or not row.bytes_accessed or ridge_point <= 0:
        return "Unknown"
    return "Compute" if row.intensity >= ridge_point else "Memory"
