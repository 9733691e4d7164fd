"""Device-side diagnostics: kernel-launch-bound steps, copies, TensorCore use and precision."""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct, distinct_inverse
from stepscope.limits import human_bytes
from stepscope.stats.diagnostics.base import (
    EventEvidence,
    Finding,
    HostData,
    severity,
)
from stepscope.stats.events import EventType
from stepscope.stats.gpu.device import never_trains
from stepscope.stats.gpu.kernels import launch_events, op_of_kernels
from stepscope.stats.intervals import merge
from stepscope.words import counted

DEFAULT_LAUNCH_NS = 5_000  # launch latency when the trace has no launch calls
LAUNCH_MIN_KERNELS = 20  # a step with fewer kernels is not "launch bound"
SHORT_KERNEL_SHARE = 0.5  # at least half its kernels shorter than a launch
LAUNCH_BOUND_BUSY = 0.6  # ... and the GPU busy less than 60% of the step
LAUNCH_IDLE_SHARE = (0.10, 0.30)  # idle GPU time in such steps / all step time
COPY_SHARE = (0.10, 0.25)
TINY_COPY_BYTES = 64 * 1024
TINY_COPIES_PER_STEP = 200  # this many copies per step, mostly tiny: medium
MANY_COPIES_PER_STEP = 100  # this many: low
ISSUE_CAP_NS = 50_000  # host time counted per copy API call
TC_MISSED_SHARE = (0.10, 0.30)  # TensorCore-eligible kernel time not on TensorCores
TC_MIN_STEP_SHARE = 0.02  # ... and at least 2% of the step time
HALF_SHARE_MIN = 0.10  # XProf's: under 10% 16-bit compute -> mixed precision
COMPUTE = (EventType.DEVICE_COMPUTE_16, EventType.DEVICE_COMPUTE_32)
_COPIES = (EventType.HOST_TO_DEVICE, EventType.DEVICE_TO_HOST, EventType.DEVICE_TO_DEVICE)


def _windows(data: HostData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, step number) of the steps; the whole device activity when there are none."""
    if data.steps.n_steps:
        lo, hi = data.step_windows
        return lo, hi, data.steps.step_num
    p = data.profile
    ev = data.device_events
    first = min(int(data.launch_time.min()), int(p.start_ns[ev].min()))
    return np.array([first]), np.array([int(p.end_ns[ev].max())]), np.array([-1])


def _step_index(data: HostData, events: np.ndarray) -> np.ndarray:
    """Per device event, its step's row (`HostData.step_of_device_events`), or 0 for the
    one window of a profile without steps (`_windows`)."""
    if data.steps.n_steps:
        return data.step_of_device_events(events)
    return np.zeros(len(events), np.int64)


def _per_window_union(
    starts: np.ndarray, ends: np.ndarray, step: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """Per window, the union length of the intervals assigned to it (clipped to it)."""
    out = np.zeros(len(lo), dtype=np.int64)
    for k in distinct(step[step >= 0]).tolist():
        m = step == k
        s = np.clip(starts[m], lo[k], hi[k])
        e = np.clip(ends[m], lo[k], hi[k])
        u_lo, u_hi = merge(s, e)
        out[k] = int((u_hi - u_lo).sum())
    return out


def _launch_latency(data: HostData, kernels: np.ndarray) -> int:
    launch = launch_events(data.profile, kernels)
    launch = launch[launch >= 0]
    return int(np.median(data.profile.dur_ns[launch])) if len(launch) else DEFAULT_LAUNCH_NS


LAUNCH_FIXES = {
    "pytorch": (
        "Capture the step in a CUDA graph (torch.compile(model, mode='reduce-overhead') or "
        "torch.cuda.graphs), fuse elementwise ops with torch.compile, use fused optimizers "
        "(foreach=True / fused=True), and raise the batch size so each kernel does more work."
    ),
    "tensorflow": (
        "Compile the step with XLA (tf.function(jit_compile=True)) to fuse small ops, set "
        "TF_GPU_THREAD_MODE=gpu_private so launches get dedicated threads, and raise the "
        "batch size."
    ),
    "jax": (
        "Put more of the step under one jax.jit (and lax.scan loops) so XLA fuses it, and "
        "raise the batch size."
    ),
    "unknown": "Fuse small kernels (XLA, torch.compile, CUDA graphs) and raise the batch size.",
}
# PyTorch that never trains (`stats.device.never_trains`): no optimizer to fuse, and the batch
# is the requests served per forward pass.
INFERENCE_LAUNCH_FIX = (
    "Capture the forward pass in a CUDA graph (torch.compile(model, mode='reduce-overhead') or "
    "torch.cuda.graphs), fuse elementwise ops with torch.compile, and serve more requests per "
    "forward pass (a larger batch) so each kernel does more work."
)


def kernel_launch_bound(data: HostData, options: dict[str, str]) -> Finding | None:
    """Steps made of many kernels shorter than their launch: the GPU waits for the CPU."""
    kernels = data.device_of_type(*COMPUTE)
    if len(kernels) == 0:
        return None
    p = data.profile
    lo, hi, nums = _windows(data)
    latency = max(1, _launch_latency(data, kernels))
    step = _step_index(data, kernels)
    short = p.dur_ns[kernels] < latency
    n = np.bincount(step[step >= 0], minlength=len(lo))
    n_short = np.bincount(step[(step >= 0) & short], minlength=len(lo))
    dev = data.device_events
    busy = _per_window_union(p.start_ns[dev], p.end_ns[dev], _step_index(data, dev), lo, hi)
    dur = hi - lo
    busy_frac = np.where(dur > 0, busy / np.maximum(dur, 1), 1.0)
    bound = (
        (n >= LAUNCH_MIN_KERNELS)
        & (n_short >= SHORT_KERNEL_SHARE * n)
        & (busy_frac < LAUNCH_BOUND_BUSY)
    )
    idle = int((dur - busy)[bound].sum())
    level = severity(idle / max(1, int(dur.sum())), *LAUNCH_IDLE_SHARE)
    if level is None or not bound.any():
        return None
    short_k = kernels[short & (step >= 0) & bound[np.maximum(step, 0)]]
    ops = op_of_kernels(p, short_k)
    names, group = distinct_inverse(ops)
    counts = np.bincount(group, minlength=len(names))
    times = np.bincount(group, weights=p.dur_ns[short_k], minlength=len(names))
    top = np.argsort(-counts, kind="stable")[:5]
    events = tuple(
        EventEvidence(
            p.strings[int(names[g])] or "(no op)",
            int(counts[g]),
            int(times[g]),
            "kernels shorter than a launch",
        )
        for g in top.tolist()
    )
    worst = np.flatnonzero(bound)[np.argsort(busy_frac[bound], kind="stable")][:5]
    fix = LAUNCH_FIXES.get(data.framework, LAUNCH_FIXES["unknown"])
    if data.framework == "pytorch" and never_trains(p):
        fix = INFERENCE_LAUNCH_FIX
    return Finding(
        id="kernel_launch_bound",
        title="Kernel-launch-bound steps" if data.steps.n_steps else "Kernel-launch-bound GPU work",
        severity=level,
        host=data.host,
        summary=(
            (
                f"{int(bound.sum())} of {len(lo)} steps launch"
                if data.steps.n_steps > 1
                # a one-step trace (vLLM's one engine step): the step, not "1 of 1 steps"
                else "The profile's one step launches"
                if data.steps.n_steps
                # no step found: the whole device activity is the one window (as the
                # overview's "Steps 0" says, it is not a step)
                else "The profile (no steps found) launches"
            )
            + f" mostly kernels shorter than a launch "
            f"call ({latency / 1e3:.1f} µs): the GPU is idle {idle / 1e6:.2f} ms in "
            f"{'them' if data.steps.n_steps > 1 else 'it'} "
            f"(busy {100 * float(busy_frac[bound].mean()):.0f}% on average). "
            f"'{events[0].name}' launches the most short kernels ({events[0].count})."
        ),
        fix=fix,
        time_ns=idle,
        steps=tuple(int(nums[k]) for k in worst),
        events=events,
        metrics={
            "launch_latency_us": latency / 1e3,
            "launch_bound_steps": int(bound.sum()),
            "short_kernels": int(n_short[bound].sum()),
            "kernels": int(n[bound].sum()),
            "device_busy_pct": 100 * float(busy_frac[bound].mean()),
        },
    )


def _copy_bytes(data: HostData, copies: np.ndarray) -> np.ndarray:
    p = data.profile
    out = p.stat("bytes").as_int(0)[copies]
    details = p.stat("memcpy_details").string_ids()[copies]
    parsed = {}
    for sid in distinct(details[details >= 0]).tolist():
        text = p.strings[sid]
        value = 0
        for token in text.split():
            if token.startswith("num_bytes:"):
                value = int(float(token[10:] or 0))
        parsed[sid] = value
    from_details = np.array([parsed.get(s, 0) for s in details.tolist()], dtype=np.int64)
    return np.where(out > 0, out, from_details)


def excessive_copies(data: HostData, options: dict[str, str]) -> Finding | None:
    copies = data.device_of_type(*_COPIES)
    if len(copies) == 0:
        return None
    p = data.profile
    lo, hi, nums = _windows(data)
    step = _step_index(data, copies)
    per_step = _per_window_union(p.start_ns[copies], p.end_ns[copies], step, lo, hi)
    total_steps = int((hi - lo).sum())
    in_steps = step >= 0
    # Each copy also costs the host an API call (cudaMemcpyAsync...) on the launch thread.
    issuing = launch_events(p, copies[in_steps])
    # A call longer than ISSUE_CAP_NS waits for the device (host_device_sync reports that).
    issue_ns = int(np.minimum(p.dur_ns[issuing[issuing >= 0]], ISSUE_CAP_NS).sum())
    device_ns = int(per_step.sum())
    copy_ns = device_ns + issue_ns
    share = copy_ns / max(1, total_steps)
    nbytes = _copy_bytes(data, copies)
    per_step_count = in_steps.sum() / len(lo)
    tiny = in_steps & (nbytes > 0) & (nbytes < TINY_COPY_BYTES)
    level = severity(share, *COPY_SHARE)
    if (
        level is None
        and per_step_count >= TINY_COPIES_PER_STEP
        and tiny.sum() >= 0.5 * in_steps.sum()
    ):
        level = "medium"
    elif level is None and per_step_count >= MANY_COPIES_PER_STEP:
        level = "low"
    if level is None:
        return None
    details = p.stat("memcpy_details").string_ids()[copies]
    pageable_ids = p.strings.ids_matching(
        lambda s: "kind_src:pageable" in s or "kind_dst:pageable" in s
    )
    pageable = np.isin(details, pageable_ids)
    events = []
    for t in _COPIES:
        m = in_steps & (data.types[copies] == int(t))
        if m.any():
            name = {
                EventType.HOST_TO_DEVICE: "host to device",
                EventType.DEVICE_TO_HOST: "device to host",
            }.get(t, "device to device")
            size = human_bytes(int(nbytes[m].sum()))  # binary units, as the pages write sizes
            detail = f"{size}, {int((m & pageable).sum())} from/to pageable memory"
            events.append(EventEvidence(name, int(m.sum()), int(p.dur_ns[copies[m]].sum()), detail))
    events.sort(key=lambda e: -e.total_ns)
    ops = op_of_kernels(p, copies[in_steps])
    names, group = distinct_inverse(ops)
    times = np.bincount(group, weights=p.dur_ns[copies[in_steps]], minlength=len(names))
    counts = np.bincount(group, minlength=len(names))
    for g in np.argsort(-times, kind="stable")[:3].tolist():
        events.append(
            EventEvidence(
                f"issued by {p.strings[int(names[g])] or '(no op)'}", int(counts[g]), int(times[g])
            )
        )
    worst = np.argsort(-per_step, kind="stable")[:5]
    fixes = []
    if (in_steps & pageable).any():
        fixes.append(
            "copy from pinned memory (DataLoader(pin_memory=True), tensor.pin_memory()) with "
            "non_blocking=True"
        )
    if (in_steps & (data.types[copies] == int(EventType.DEVICE_TO_HOST))).any():
        fixes.append(
            "drop device-to-host reads in the step (.item(), .cpu(), .numpy(), printing tensors); "
            "keep metrics on the GPU and read them every N steps"
        )
    if tiny.any():
        fixes.append(
            "batch many small copies into one (torch.cat / one host buffer) and build constants "
            "on the device instead of copying them"
        )
    fixes.append(
        "keep tensors on the device between steps and prefetch the next batch to the GPU while "
        "the current step runs"
        + (
            " (tf.data prefetch_to_device / distribute_datasets_from_function)"
            if data.framework == "tensorflow"
            else ""
        )
    )
    return Finding(
        id="excessive_copies",
        title="Excessive memory copies",
        severity=level,
        host=data.host,
        # every count and time here is the steps' whole; the count per step beside them (the
        # tiny copies' count read as per step, larger than the per-step count before it)
        summary=(
            f"{int(in_steps.sum())} memory copies in "
            + (
                f"the one step ({int(tiny.sum())} under "
                if len(lo) == 1
                else f"{counted(len(lo))} ({per_step_count:.0f} per step; {int(tiny.sum())} "
                "of them under "
            )
            + f"{TINY_COPY_BYTES // 1024} KiB) take {device_ns / 1e6:.2f} ms on the device and "
            f"{issue_ns / 1e6:.2f} ms of host API calls ({100 * share:.1f}% of step time)."
        ),
        fix=_sentence("; ".join(fixes)),
        time_ns=copy_ns,
        steps=tuple(int(nums[k]) for k in worst if per_step[k] > 0),
        events=tuple(events),
        metrics={
            "copy_ms": device_ns / 1e6,
            "issue_ms": issue_ns / 1e6,
            "copy_pct": 100 * share,
            "copies_per_step": float(per_step_count),
            "copy_mb": float(nbytes[in_steps].sum() / 1e6),
        },
    )


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _compute_capability(data: HostData) -> int:
    caps = [p.stats.get("compute_cap_major") for p in data.profile.planes if p.is_device]
    values = [int(c) for c in caps if isinstance(c, int)]
    return max(values) if values else 0


def low_tensor_core_use(data: HostData, options: dict[str, str]) -> Finding | None:
    db = data.kernels
    if db.kernel_count == 0 or db.total_ns == 0:
        return None
    missed_rows = [r for r in db.rows if r.op_tensor_core_eligible and not r.uses_tensor_core]
    missed = sum(r.total_ns for r in missed_rows)
    half = int(data.steps.type_time(EventType.DEVICE_COMPUTE_16).sum()) if data.steps.n_steps else 0
    full = int(data.steps.type_time(EventType.DEVICE_COMPUTE_32).sum()) if data.steps.n_steps else 0
    half_share = half / (half + full) if half + full else None
    if data.total_step_ns and missed < TC_MIN_STEP_SHARE * data.total_step_ns:
        return None  # too little time at stake to be worth a change
    level = severity(missed / db.total_ns, *TC_MISSED_SHARE)
    if (
        level is None
        and half_share is not None
        and half_share < HALF_SHARE_MIN
        and missed > 0
        and full > 0.2 * data.total_step_ns
    ):
        level = "medium"
    if level is None:
        return None
    events = tuple(
        EventEvidence(r.kernel_name, r.occurrences, r.total_ns, f"op {r.op_name}")
        for r in sorted(missed_rows, key=lambda r: -r.total_ns)[:5]
    )
    cap = _compute_capability(data)
    precision = {
        "pytorch": (
            "run the forward pass under torch.autocast('cuda', dtype=torch.bfloat16)"
            if cap >= 8
            else "run the forward pass under torch.autocast('cuda', dtype=torch.float16) "
            "with torch.cuda.amp.GradScaler"
        ),
        "tensorflow": "tf.keras.mixed_precision.set_global_policy('mixed_bfloat16' where "
        "bf16 is supported, else 'mixed_float16')",
        "jax": "compute in jnp.bfloat16 (params in float32, activations and matmuls in bfloat16)",
    }.get(data.framework, "use mixed precision (bf16/fp16)")
    tf32 = (
        " On this GPU (compute capability >= 8) FP32 matmuls can also use TF32 TensorCores: "
        "torch.set_float32_matmul_precision('high') / "
        "tf.config.experimental.enable_tensor_float_32_execution(True)."
        if cap >= 8
        else ""
    )
    share_text = (
        ""
        if half_share is None
        else f" 16-bit kernels are {100 * half_share:.0f}% of device compute."
    )
    return Finding(
        id="low_tensor_core_use",
        title="Low TensorCore use: FP32 where 16-bit would do",
        severity=level,
        host=data.host,
        summary=(
            f"Matmul/convolution kernels that could use TensorCores but do not take "
            f"{missed / 1e6:.2f} ms ({100 * missed / db.total_ns:.1f}% of kernel time).{share_text}"
        ),
        fix=(
            f"To use TensorCores, {precision}; keep matrix dimensions (batch, hidden, "
            f"channels) multiples of 8.{tf32}"
        ),
        time_ns=int(missed),
        events=events,
        metrics={
            "missed_tensor_core_ms": missed / 1e6,
            "missed_tensor_core_pct": 100 * missed / db.total_ns,
            "half_precision_pct": -1.0 if half_share is None else 100 * half_share,
        },
    )
