"""Host-side diagnostics: gaps between steps, ops placed on the host, launch-thread contention."""

from __future__ import annotations

import re

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.stats.arrays import run_starts, unique_many
from stepscope.stats.diagnostics.base import (
    EventEvidence,
    Finding,
    HostData,
    severity,
    top_by_name,
)
from stepscope.stats.diagnostics.other_pass_words import (
    GAP_PASS_FETCHES,
    IN_GAPS_FIX,
    listed_steps,
)
from stepscope.stats.enclosing import innermost_enclosing
from stepscope.stats.events import host_lines, is_step_marker_name
from stepscope.stats.gpu.kernels import launch_events
from stepscope.stats.input.ahead import input_ahead
from stepscope.stats.input.loader_workers import captured_settings, dataloader_fix
from stepscope.stats.intervals import merge, overlap_with
from stepscope.stats.steps.periodic_parts import after_last_fetch, fetches_inside

GAP_MIN_NS = 100_000  # a gap shorter than 100 µs is noise
GAP_MIN_STEP_SHARE = 0.05  # ... or than 5% of the median step
GAP_SHARE = (0.05, 0.15)  # gaps over 5% / 15% of the steps' wall time: medium / high
HOST_OP_MIN_AVG_NS = 50_000  # host ops averaging under 50 µs are bookkeeping, not compute
HOST_OP_SHARE = (0.10, 0.30)
SLOW_LAUNCH_NS = 50_000  # a kernel launch call over 50 µs waited for its thread
SLOW_LAUNCH_FACTOR = 5  # ... and over 5x the median launch call
LAUNCH_CONTENTION_SHARE = (0.03, 0.15)
CONTENDING_THREADS = 1.5  # other threads busy, on average, during the slow launches
PASS_ALONE = 0.9  # gaps another loader's pass holds this share of: its advice alone
AFTER_PASS = 0.1  # the time after the passes' last fetches, of the gaps': said from this share
_TF_OP = re.compile(r"^[^:]+:[A-Za-z_][A-Za-z0-9_]*$")


def _host_mask(data: HostData) -> np.ndarray:
    p = data.profile
    return host_lines(p).take(p.line) if p.n_events else np.zeros(0, bool)


def step_gaps(data: HostData, options: dict[str, str]) -> Finding | None:
    """Time between consecutive steps: the loop does something outside its steps."""
    steps = data.steps
    if steps.n_steps < 2:
        return None
    order = np.argsort(steps.start_ns, kind="stable")
    start, end = steps.start_ns[order], (steps.start_ns + steps.dur_ns)[order]
    nums = steps.step_num[order]
    gap = start[1:] - end[:-1]
    consecutive = (
        np.diff(nums) == 1 if len(distinct(nums)) == len(nums) else np.ones(len(gap), bool)
    )
    threshold = max(GAP_MIN_NS, GAP_MIN_STEP_SHARE * float(np.median(steps.dur_ns)))
    big = np.flatnonzero((gap > threshold) & consecutive)
    wall = int(end.max() - start.min())
    total = int(gap[big].sum())
    level = severity(total / wall if wall else 0.0, *GAP_SHARE)
    if level is None:
        return None
    # What runs in the gaps: outermost host events overlapping them, by overlap time.
    p = data.profile
    g_lo, g_hi = end[:-1][big], start[1:][big]
    host = _host_mask(data) & ~np.isin(p.name, p.strings.ids_matching(is_step_marker_name))
    cand = np.flatnonzero(host)
    over = overlap_with(p.start_ns[cand], p.end_ns[cand], g_lo, g_hi)
    cand, over = cand[over > 0], over[over > 0]
    mask = np.zeros(p.n_events, bool)
    mask[cand] = True
    outer = innermost_enclosing(p, cand, mask) < 0
    events = top_by_name(p, cand[outer], over[outer])
    worst = big[np.argsort(-gap[big], kind="stable")][:5]
    doing = ", ".join(f"'{e.name}'" for e in events[:3]) or "nothing recorded on the host"
    fix = (
        "Work between steps delays the next one: move logging, metric .item()/.numpy() "
        "calls, checkpointing and evaluation out of the loop or run them every N steps, "
        "fetch the next batch before the step ends (prefetch / DataLoader workers), and "
        "make sure the step marker (ProfilerStep, tf.profiler Trace, stepscope.step) "
        "covers the whole iteration so this time is attributed."
    )
    # gaps holding another loader's pass: an evaluation between marked steps (decision 783)
    fetches = fetches_inside(p, g_lo, g_hi)
    passes = fetches >= GAP_PASS_FETCHES
    pass_ns = int(gap[big][passes].sum())
    in_pass = ""
    if passes.any() and 2 * pass_ns >= total:
        after = [int(k) for k in nums[:-1][big][passes]]
        n = int(np.median(fetches[passes]))
        in_pass = (
            f"; {len(after)} of them ({pass_ns / 1e6:.2f} ms) hold another DataLoader's pass, "
            f"{n} fetches each: an evaluation or validation loop"
        )
        # what follows the pass there (decision 1013): a checkpoint saved after it
        then_ns = int(after_last_fetch(p, g_lo[passes], g_hi[passes]).sum())
        if then_ns >= AFTER_PASS * pass_ns:
            in_pass += (
                f", and {then_ns / 1e6:.2f} ms of it after the pass's last fetch (a "
                "checkpoint's save, logging)"
            )
        # the rest of the gaps' advice only where the pass leaves much of their time
        first = IN_GAPS_FIX.format(after=listed_steps(after), n=n)
        fix = first if pass_ns >= PASS_ALONE * total else first + " " + fix
    elif any(re.search(r"DataLoader|Iterator|GetNext|__next__", e.name) for e in events[:3]):
        settings = captured_settings(p)
        fix = (
            "The next batch is loaded between steps: "
            + dataloader_fix(settings, data.steps.has_device)
            + ". "
            if settings  # the loader's own settings: no advice to set what it has
            else "The next batch is loaded between steps"
            + (" while the GPU waits" if data.steps.has_device else "")
            + ": load it in the background ("
            + input_ahead(data.steps.limits.framework, data.steps.has_device)
            + ") so loading overlaps the step. "
        ) + fix
    return Finding(
        id="step_gaps",
        title="Gaps between steps",
        severity=level,
        host=data.host,
        summary=(
            f"{len(big)} gaps between consecutive steps add up to {total / 1e6:.2f} ms "
            f"({100 * total / wall:.1f}% of the wall time of the steps); in them the host runs "
            f"{doing}{in_pass}."
        ),
        fix=fix,
        time_ns=total,
        steps=tuple(int(nums[k]) for k in worst),
        events=events,
        metrics={"gap_count": len(big), "gap_ms": total / 1e6, "gap_pct": 100 * total / wall},
    )


def _op_events(data: HostData) -> np.ndarray:
    """Host events that are framework ops: Kineto cpu_op, or TensorFlow ``name:Type``."""
    p = data.profile
    host = _host_mask(data) & ~p.stat_present("correlation_id")
    ops = np.zeros(p.n_events, bool)
    cpu_op = p.strings.id_of("cpu_op")
    if cpu_op >= 0:
        ops |= p.stat("category").string_ids() == cpu_op
    ops |= np.isin(p.name, p.strings.ids_matching(lambda s: bool(_TF_OP.match(s))))
    return np.flatnonzero(host & ops)


def _launches_inside(data: HostData, events: np.ndarray) -> np.ndarray:
    """Per event: number of kernel/copy launches on its thread within its span."""
    p = data.profile
    launch_mask = p.stat_present("correlation_id") & _host_mask(data)
    out = np.zeros(len(events), dtype=np.int64)
    for line in distinct(p.line[events]).tolist():
        sl = p.events_of_line(p.lines[line])
        starts = np.sort(p.start_ns[sl][launch_mask[sl]])
        mine = p.line[events] == line
        ev = events[mine]
        out[mine] = np.searchsorted(starts, p.end_ns[ev], "right") - np.searchsorted(
            starts, p.start_ns[ev], "left"
        )
    return out


def ops_on_host(data: HostData, options: dict[str, str]) -> Finding | None:
    """Framework ops that run on the CPU (launch nothing) while a GPU is there."""
    if len(data.device_events) == 0 or data.total_step_ns == 0:
        return None
    p = data.profile
    ops = _op_events(data)
    if len(ops) == 0:
        return None
    ops = ops[_launches_inside(data, ops) == 0]
    names, group = distinct_inverse(p.name[ops])
    avg = np.bincount(group, weights=p.dur_ns[ops], minlength=len(names)) / np.bincount(
        group, minlength=len(names)
    )
    ops = ops[avg[group] >= HOST_OP_MIN_AVG_NS]
    if len(ops) == 0:
        return None
    mask = np.zeros(p.n_events, bool)
    mask[ops] = True
    ops = ops[innermost_enclosing(p, ops, mask) < 0]  # outermost only: no double counting
    lo, hi = data.step_windows
    w_lo, w_hi = merge(lo, hi)
    in_steps = overlap_with(p.start_ns[ops], p.end_ns[ops], w_lo, w_hi)
    total = int(in_steps.sum())
    share = total / data.total_step_ns
    level = severity(share, *HOST_OP_SHARE)
    if level is None:
        return None
    events = top_by_name(p, ops[in_steps > 0], in_steps[in_steps > 0])
    placement = {
        "pytorch": "move the tensors these ops read to the GPU (.to('cuda')) and avoid NumPy / "
        ".cpu() work inside the step",
        "tensorflow": "check placement with tf.debugging.set_log_device_placement(True); ops "
        "without a GPU kernel for their dtype (e.g. int32/string) or pinned by "
        "tf.device('/CPU:0') stay on the host — change the dtype, the device scope or the op",
        "jax": "keep arrays on the device (jax.device_put) and the work inside jit",
    }.get(data.framework, "run these ops on the GPU")
    return Finding(
        id="ops_on_host",
        title="Ops running on the host",
        severity=level,
        host=data.host,
        summary=(
            f"Framework ops that launch no GPU work take {total / 1e6:.2f} ms of the steps "
            f"({100 * share:.1f}% of step time), led by '{events[0].name}'."
        ),
        fix=f"These ops run on the CPU while the GPU waits: {placement}.",
        time_ns=total,
        events=events,
        metrics={"host_op_ms": total / 1e6, "host_op_pct": 100 * share},
    )


def _repeat_launches(data: HostData) -> np.ndarray:
    """Launch calls of kernels launched before: a kernel's first launch also loads its
    module (and may compile it), which is slow for reasons other than contention."""
    p = data.profile
    dev = data.device_events
    launch = launch_events(p, dev)
    have = launch >= 0
    dev, launch = dev[have], launch[have]
    launch_names = p.strings.ids_matching(lambda s: "launch" in s.lower() and "::" not in s)
    keep = np.isin(p.name[launch], launch_names)
    dev, launch = dev[keep], launch[keep]
    order = np.lexsort((p.start_ns[launch], p.name[dev]))
    first = run_starts(p.name[dev][order])
    return unique_many(launch[order][~first])


def launch_thread_contention(data: HostData, options: dict[str, str]) -> Finding | None:
    """Kernel launch calls that take far longer than usual: their thread waits for a core."""
    p = data.profile
    if len(data.device_events) == 0 or data.total_step_ns == 0:
        return None
    launches = _repeat_launches(data)
    if len(launches) < 20:
        return None
    dur = p.dur_ns[launches]
    median = float(np.median(dur))
    slow = launches[dur > max(SLOW_LAUNCH_NS, SLOW_LAUNCH_FACTOR * median)]
    excess = p.dur_ns[slow] - int(median)
    in_steps = data.step_of_times(p.start_ns[slow]) >= 0
    total = int(excess[in_steps].sum())
    level = severity(total / data.total_step_ns, *LAUNCH_CONTENTION_SHARE)
    if level is None:
        return None
    # How many other threads were busy when the slow launches ran.
    mid = (p.start_ns[slow] + p.end_ns[slow]) // 2
    busy = np.zeros(len(slow), dtype=np.int64)
    host = _host_mask(data)
    for line in distinct(p.line[host]).tolist():
        sl = p.events_of_line(p.lines[line])
        lo, hi = merge(p.start_ns[sl], p.end_ns[sl])
        k = np.searchsorted(lo, mid, "right") - 1
        inside = (k >= 0) & (mid < hi[np.maximum(k, 0)]) & (p.line[slow] != line)
        busy += inside
    if len(busy) == 0 or float(busy.mean()) < CONTENDING_THREADS:
        return None  # slow, but not because other threads hold the cores
    threads = [p.lines[line].label for line in distinct(p.line[slow]).tolist()]
    fix = (
        "Launch calls stall because the launching thread competes for CPU cores: cap the "
        "other threads (OMP_NUM_THREADS, torch.set_num_threads, fewer DataLoader workers, "
        "tf.config.threading.set_inter_op_parallelism_threads), pin each training process "
        "to its own cores (numactl/taskset), and cut the number of launches (CUDA graphs, "
        "torch.compile, XLA)."
    )
    if data.framework == "tensorflow":
        fix = "Set TF_GPU_THREAD_MODE=gpu_private (dedicated GPU launch threads). " + fix
    return Finding(
        id="launch_thread_contention",
        title="Kernel launches wait for a CPU core",
        severity=level,
        host=data.host,
        summary=(
            f"{len(slow)} of {len(launches)} launch calls take over "
            f"{max(SLOW_LAUNCH_NS, SLOW_LAUNCH_FACTOR * median) / 1e3:.0f} µs (median "
            f"{median / 1e3:.1f} µs), {total / 1e6:.2f} ms lost in steps; on average "
            f"{float(busy.mean()) if len(busy) else 0:.1f} other threads were busy meanwhile."
        ),
        fix=fix,
        time_ns=total,
        events=(
            EventEvidence(
                "slow launches on " + ", ".join(threads[:3]), len(slow), int(excess.sum())
            ),
        ),
        metrics={
            "median_launch_us": median / 1e3,
            "slow_launches": len(slow),
            "busy_threads_avg": float(busy.mean()) if len(busy) else 0.0,
        },
    )
