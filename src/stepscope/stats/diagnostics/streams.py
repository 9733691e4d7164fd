"""Stream and synchronization diagnostics: copies serialized with compute on one stream, and
the host blocking on the device inside steps."""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.stats.diagnostics.base import (
    EventEvidence,
    Finding,
    HostData,
    severity,
    top_by_name,
)
from stepscope.stats.diagnostics.device import COMPUTE
from stepscope.stats.enclosing import innermost_enclosing
from stepscope.stats.events import EventType
from stepscope.stats.gpu.kernels import op_candidates
from stepscope.stats.intervals import merge, overlap_with

SERIAL_COPY_SHARE = (0.03, 0.15)  # copies blocking the compute stream: medium / high
SYNC_SHARE = (0.05, 0.20)  # host blocked, then the device idle after: medium / high
_PROFILER_FRAME = "torch/profiler/"


def stream_contention(data: HostData, options: dict[str, str]) -> Finding | None:
    """Host<->device copies on a compute stream, not overlapped: compute waits behind them."""
    p = data.profile
    compute = data.device_of_type(*COMPUTE)
    copies = data.device_of_type(EventType.HOST_TO_DEVICE, EventType.DEVICE_TO_HOST)
    if len(compute) == 0 or len(copies) == 0 or data.total_step_ns == 0:
        return None
    compute_lines = distinct(p.line[compute])
    on_compute_stream = copies[np.isin(p.line[copies], compute_lines)]
    if len(on_compute_stream) == 0:
        return None
    serial = np.zeros(len(on_compute_stream), dtype=np.int64)
    stream_lines = distinct(p.line[on_compute_stream]).tolist()
    for line in stream_lines:
        others = compute[p.line[compute] != line]
        mine = p.line[on_compute_stream] == line
        ev = on_compute_stream[mine]
        c_lo, c_hi = merge(p.start_ns[others], p.end_ns[others])
        serial[mine] = p.dur_ns[ev] - overlap_with(p.start_ns[ev], p.end_ns[ev], c_lo, c_hi)
    in_steps = (
        data.step_of_device_events(on_compute_stream) >= 0
        if data.steps.n_steps
        else np.ones(len(serial), bool)
    )
    total = int(serial[in_steps].sum())
    level = severity(total / data.total_step_ns, *SERIAL_COPY_SHARE)
    if level is None:
        return None
    streams = ", ".join(p.lines[line].label for line in stream_lines)
    return Finding(
        id="stream_contention",
        title="Copies share the compute stream",
        severity=level,
        host=data.host,
        summary=(
            f"Host<->device copies run on the compute stream ({streams}) and overlap no compute: "
            f"{total / 1e6:.2f} ms ({100 * total / data.total_step_ns:.1f}% of step time) in "
            "which kernels wait."
        ),
        fix=(
            "Issue input copies on a side stream from pinned memory so they overlap compute "
            "(tensor.pin_memory().to('cuda', non_blocking=True) inside torch.cuda.stream(side) "
            "plus "
            "record_stream, or a CUDA prefetcher; tf.data prefetch_to_device), and move result "
            "reads (device-to-host) out of the step."
        ),
        time_ns=total,
        events=top_by_name(p, on_compute_stream[in_steps], serial[in_steps]),
        metrics={"serialized_copy_ms": total / 1e6},
    )


def _profiler_frames(p: Profile) -> np.ndarray:
    """Per event: a frame of the PyTorch profiler's own Python (``torch/profiler/...``, in a
    trace recorded with stacks): its ``stop_trace`` synchronizes the device."""
    ids = p.strings.ids_matching(lambda s: s.startswith(_PROFILER_FRAME))
    return np.isin(p.name, ids) if len(ids) else np.zeros(p.n_events, bool)


def _idle_after(data: HostData, ends: np.ndarray) -> int:
    """Device idle time that follows the host's return from the syncs ending at ``ends``:
    from the moment the device is free (the return, or the end of the device work running
    then) to its next work, within the step; the union, so syncs returning into one gap
    count it once. This is what a sync costs: while the host blocks the device is busy,
    and it starves only until the host has launched again."""
    p = data.profile
    dev = data.device_events
    b_lo, b_hi = merge(p.start_ns[dev], p.end_ns[dev])
    lo, hi = data.step_windows
    k = np.searchsorted(lo, ends, "right") - 1
    step_end = np.where(k >= 0, hi[np.maximum(k, 0)], ends)
    j = np.searchsorted(b_lo, ends, "right")  # the first device work starting after
    prev_end = b_hi[np.maximum(j - 1, 0)] if len(b_hi) else ends
    free = np.where((j > 0) & (prev_end > ends), prev_end, ends)
    after = np.where(j < len(b_lo), b_lo[np.minimum(j, max(len(b_lo) - 1, 0))], step_end)
    stop = np.minimum(after, step_end)
    gap = stop > free
    g_lo, g_hi = merge(free[gap], stop[gap])
    return int((g_hi - g_lo).sum())


def host_device_sync(data: HostData, options: dict[str, str]) -> Finding | None:
    """The host blocks on the device inside steps (synchronize calls, blocking reads) and
    the device then starves: graded by the device's idle time after the syncs return (what
    removing them would give back), not by the host's blocked time, during which the device
    is busy. The PyTorch profiler's own synchronize (its ``stop_trace``) is not the user's."""
    p = data.profile
    if len(data.device_events) == 0 or data.total_step_ns == 0:
        return None
    sync_ids = p.strings.ids_matching(
        lambda s: (
            s.startswith(("cuda", "cu", "hip"))
            and ("Synchronize" in s or s in ("cudaMemcpy", "hipMemcpy"))
        )
    )
    syncs = np.flatnonzero(np.isin(p.name, sync_ids))
    if len(syncs):
        syncs = syncs[innermost_enclosing(p, syncs, _profiler_frames(p)) < 0]
    if len(syncs) == 0:
        return None
    lo, hi = data.step_windows
    w_lo, w_hi = merge(lo, hi)
    inside = overlap_with(p.start_ns[syncs], p.end_ns[syncs], w_lo, w_hi)
    total = int(inside.sum())
    if severity(total / data.total_step_ns, *SYNC_SHARE) is None:
        return None
    idle = _idle_after(data, p.end_ns[syncs[inside > 0]])
    level = severity(idle / data.total_step_ns, *SYNC_SHARE) or "low"
    blocked = (
        f"Synchronizing calls block the host {total / 1e6:.2f} ms inside steps "
        f"({100 * total / data.total_step_ns:.1f}% of step time)"
    )
    if level == "low":
        summary = (
            f"{blocked}, but the device stays busy after they return (idle {idle / 1e6:.2f} "
            f"ms, {100 * idle / data.total_step_ns:.1f}%): the host is ahead of the device, "
            "and removing them would shorten the steps by little."
        )
    else:
        summary = (
            f"{blocked}; the device then starves until the host launches again: idle "
            f"{idle / 1e6:.2f} ms after they return "
            f"({100 * idle / data.total_step_ns:.1f}% of step time)."
        )
    origin = innermost_enclosing(p, syncs[inside > 0], op_candidates(p))
    known = origin >= 0
    events = list(top_by_name(p, syncs[inside > 0], inside[inside > 0], 3))
    events += [
        EventEvidence(f"inside {e.name}", e.count, e.total_ns)
        for e in top_by_name(p, origin[known], inside[inside > 0][known], 3)
    ]
    return Finding(
        id="host_device_sync",
        title="Host waits for the device inside steps",
        severity=level,
        host=data.host,
        summary=summary,
        fix=(
            "Remove synchronization from the step: no .item(), .cpu(), .numpy(), print(tensor) or "
            "torch.cuda.synchronize() per step (accumulate metrics on the device and read them "
            "every "
            "N steps), use non_blocking copies, and avoid ops whose output size depends on data "
            "(nonzero, masked_select, boolean indexing)."
        ),
        time_ns=total,
        events=tuple(events),
        metrics={"sync_ms": total / 1e6, "idle_after_ms": idle / 1e6},
    )
