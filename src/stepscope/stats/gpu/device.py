"""Devices of a profile: what they are, and how busy their kernels kept them (the
definitions HolisticTraceAnalysis uses for Kineto traces).

GPU utilization = the merged busy time of a device's kernels (compute and collectives, not
copies) over the window from the first step's start to the last step's end (the whole
profile when there are no steps).
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct_inverse
from stepscope.fields import out
from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.events import EventType, classify_events, device_work_lines
from stepscope.stats.host.python_samples import sample_lines
from stepscope.stats.intervals import union_ns
from stepscope.stats.kernel_rules import PRECISIONS, kernel_precision
from stepscope.vocab.dispatch import JAX_API_FRAME
from stepscope.vocab.pytorch import DATALOADER_WORKER_LINE, is_dataloader_next, is_training_name
from stepscope.vocab.tensorflow import is_iterator
from stepscope.vocab.xla import AUTODIFF_FRAMES, AUTODIFF_OP_SCOPES

# Samples of JAX's Python (its API frame) the sampler must have taken, none in its autodiff,
# for a JAX run to be told it never trains: an un-jitted jax.grad loop's 30 steps had 23 of
# 26 there (/tmp/infer13, decision 561); fewer say nothing either way.
MIN_JAX_SAMPLES = 5

_KERNELS = (EventType.DEVICE_COMPUTE_16, EventType.DEVICE_COMPUTE_32, EventType.DEVICE_COLLECTIVES)
# The plane stats a device lists, with their units (declared with the field below).
_DEVICE_STATS = {
    "device_name": "",
    "device_vendor": "",
    "compute_cap_major": "",
    "compute_cap_minor": "",
    "core_count": "",
    "memory_size": "bytes",
    "clock_rate": "kHz",
    "memory_bandwidth": "bytes/s",
}


@record
class DeviceInfo:
    """One device plane with events: its kind, kernel count and plane stats."""

    plane: str = out("device plane, e.g. `/device:GPU:0`")
    kind: str = out("`GPU`, `TPU`, ...")
    kernel_count: int = out("kernels it ran", key="kernels")
    properties: dict[str, object] = out(
        "plane stats such as `device_name`, `compute_cap_*`, `core_count`, `memory_size`, "
        "each as its own key",
        inline=True,
        item_units={k: unit for k, unit in _DEVICE_STATS.items() if unit},
    )


def devices(profile: Profile) -> list[DeviceInfo]:
    """Device planes that have work events."""
    if not profile.n_events:
        return []
    work = device_work_lines(profile)[profile.line]
    counts = np.bincount(profile.plane[work], minlength=len(profile.planes))
    found = []
    for plane in profile.planes:
        if not plane.is_device or not counts[plane.index]:
            continue
        kind = plane.name.split(":")[1] if plane.name.count(":") >= 2 else "device"
        props: dict[str, object] = {k: plane.stats[k] for k in _DEVICE_STATS if k in plane.stats}
        found.append(DeviceInfo(plane.name, kind, int(counts[plane.index]), props))
    return found


def utilization(profile: Profile, window: tuple[int, int] | None) -> dict[str, float]:
    """Per device plane: percent of ``window`` (default: the profile) its kernels were busy."""
    types = classify_events(profile)
    kernels = device_work_lines(profile)[profile.line] & np.isin(types, [int(t) for t in _KERNELS])
    lo_w, hi_w = window if window else profile.time_span_ns()
    span = max(hi_w - lo_w, 1)
    busy: dict[str, float] = {}
    for plane in profile.planes:
        if not plane.is_device:
            continue
        ev = np.flatnonzero(kernels & (profile.plane == plane.index))
        if not ev.size:
            continue
        lo = np.clip(profile.start_ns[ev], lo_w, hi_w)
        hi = np.clip(profile.end_ns[ev], lo_w, hi_w)
        busy[plane.name] = 100.0 * union_ns(lo, hi) / span
    return busy


def framework_of(profile: Profile) -> str:
    """Best guess of the framework that wrote the profile."""
    env = next((p for p in profile.planes if p.name == "Task Environment"), None)
    if env is not None and isinstance(env.stats.get("framework"), str):
        return str(env.stats["framework"])
    strings = profile.strings
    if strings.id_of("FunctionRun") >= 0 or strings.id_of("EagerExecute") >= 0:
        return "tensorflow"
    if any(s.startswith(("PjitFunction", "PjRt")) for s in strings.strings[:100000]):
        return "jax"
    if any(s.startswith("aten::") for s in strings.strings[:100000]):
        return "pytorch"
    return "unknown"


def never_trains(profile: Profile) -> bool:
    """Whether the profile is of PyTorch ops that never train: aten ops traced and no
    backward pass or optimizer step among them (`pytorch.is_training_name`); or of JAX
    programs that never differentiate (`jax_never_trains`). Unknown for TensorFlow (False):
    a tf.function step runs its backward inside one graph, under names that need not say
    so."""
    strings = profile.strings.strings[:100000]
    if not any(s.startswith("aten::") for s in strings):
        return framework_of(profile) == "jax" and jax_never_trains(profile)
    return not any(is_training_name(s) for s in profile.strings.strings)


def jax_never_trains(profile: Profile) -> bool:
    """Whether a JAX profile shows that it never computes a gradient (decision 561): its
    compiled programs (the HLO modules of its ``/host:metadata`` plane) hold no op of JAX's
    autodiff (`xla.AUTODIFF_OP_SCOPES`: a jitted step's backward is a ``transpose(...)``
    scope), and the stack sampler saw JAX's Python at least `MIN_JAX_SAMPLES` times and
    never in its autodiff (`xla.AUTODIFF_FRAMES`: an un-jitted ``jax.grad`` compiles each
    primitive on its own, so only its Python shows it). Without programs or with too few
    samples (or programs whose ops name no operation) it is unknown (False): the training
    advice stays."""
    # imported here: a PyTorch or TensorFlow overview never reads HLO, and the reader (with
    # the logging its protobuf modules bring) is 10-20 ms of a first overview's imports
    from stepscope.model.hlo import hlo_modules

    named = 0  # instructions that say which JAX operation made them
    for module in hlo_modules(profile).values():
        for computation in module.proto.hlo_module.computations:
            for inst in computation.instructions:
                if any(scope in inst.metadata.op_name for scope in AUTODIFF_OP_SCOPES):
                    return False
                named += bool(inst.metadata.op_name)
    if not named:
        return False
    lines = np.flatnonzero(sample_lines(profile))
    events = np.flatnonzero(np.isin(profile.line, lines)) if lines.size else lines
    if not events.size:
        return False
    stacks, inverse = distinct_inverse(profile.stat_at("stack", events).string_ids())
    counts = np.bincount(inverse, weights=profile.stat_at("samples", events).as_int(1))
    seen = 0.0
    for stack_id, count in zip(stacks.tolist(), counts.tolist(), strict=True):
        stack = profile.strings[stack_id] if stack_id >= 0 else ""
        if any(frame in stack for frame in AUTODIFF_FRAMES):
            return False
        if JAX_API_FRAME in stack:
            seen += count
    return seen >= MIN_JAX_SAMPLES


def fed_by_dataloader(profile: Profile) -> bool:
    """Whether a PyTorch DataLoader feeds the profile's loop: an ``enumerate(DataLoader)``
    fetch or a DataLoader worker traced. A run that never trains (`never_trains`) and has
    none serves requests (a serving loop, vLLM, an HF pipeline): its input advice is about
    preparing them; evaluation over a DataLoader keeps the loader's advice."""
    if profile.strings.ids_matching(is_dataloader_next).size:
        return True
    if profile.strings.ids_matching(is_iterator).size:  # a tf.data pipeline (a JAX loop's)
        return True
    return any(ln.name.startswith(DATALOADER_WORKER_LINE) for ln in profile.lines)


def precision_ns(profile: Profile) -> dict[str, int]:
    """Device compute time of the whole profile by precision (`kernel_rules.PRECISIONS`).

    A kernel's precision comes from its name; a name that shows none counts as 32-bit unless
    the event's ``tensor_shapes`` are half precision (XProf's rule for TensorFlow ops).
    """
    types = classify_events(profile)
    compute = np.flatnonzero(
        (types == EventType.DEVICE_COMPUTE_16) | (types == EventType.DEVICE_COMPUTE_32)
    )
    out = dict.fromkeys(PRECISIONS, 0)
    if not compute.size:
        return out
    names, inverse = distinct_inverse(profile.name[compute])
    per_name = np.bincount(inverse, weights=profile.dur_ns[compute]).astype(np.int64)
    strings = profile.strings
    named = [kernel_precision(strings[sid]) for sid in names.tolist()]
    for precision, ns in zip(named, per_name.tolist(), strict=True):
        out[precision] += ns
    # A name that shows no precision on an event whose shapes are half (TensorFlow GPU ops).
    shows_none = np.array([p == "32bit" for p in named])[inverse]
    half = types[compute] == EventType.DEVICE_COMPUTE_16
    moved = int(profile.dur_ns[compute[shows_none & half]].sum())
    out["32bit"] -= moved
    out["16bit"] += moved
    return out
