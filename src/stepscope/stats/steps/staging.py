"""Input staged inside a step: building the batch and copying it to the device before the
step's compute starts.

XProf counts only input waits (``IteratorGetNext``, infeed, TensorFlow's host-to-device
memcpy ops) as input; a loop that builds its batch with numpy and calls ``jax.device_put`` (or
``tensor.to(device)``, ``pin_memory``) inside the step shows that time as host compute or "All
Others", and XProf calls it 0% input. Where the trace shows it, stepscope counts it: on the
step's thread, from the step's start to the end of the last host-to-device transfer that
starts before the step's first compute call (a jitted executable, a module's forward, a
compute op) is input staged inside the step. Without a traced transfer before a traced
compute call nothing is counted (no guess from untraced time).
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile

# A host-to-device transfer, as JAX, PyTorch and the Python tracer (``$file:line function``,
# ``$<unknown> method`` for C methods) name it.
_TRANSFER_NAMES = frozenset(
    {"DevicePutWithSharding", "aten::to", "aten::_to_copy", "aten::pin_memory"}
)
_TRANSFER_FUNCTIONS = frozenset({"device_put", "to", "pin_memory", "cuda", "_to_copy"})
# The step's compute starting: a compiled executable, a module's forward, a compute op.
_COMPUTE_PARTS = ("Executable::Execute",)
_COMPUTE_PREFIXES: tuple[str, ...] = ("PjitFunction", "nn.Module:", "## forward ##")
_COMPUTE_PREFIXES += ("aten::linear", "aten::conv", "aten::addmm", "aten::mm", "aten::matmul")
_COMPUTE_FUNCTIONS = frozenset({"forward"})


def _function(name: str) -> str:
    """The function of a Python tracer event name (``$api.py:2035 device_put``)."""
    return name.rsplit(" ", 1)[-1] if name.startswith("$") else ""


def _kinds(profile: Profile, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per string id (of the names in ``ids``): is it a transfer, is it a compute call."""
    strings = profile.strings.strings
    transfer = np.zeros(len(strings), dtype=bool)
    compute = np.zeros(len(strings), dtype=bool)
    for i in distinct(ids).tolist():
        name = strings[i]
        function = _function(name)
        transfer[i] = name in _TRANSFER_NAMES or function in _TRANSFER_FUNCTIONS
        compute[i] = (
            any(part in name for part in _COMPUTE_PARTS)
            or name.startswith(_COMPUTE_PREFIXES)
            or function in _COMPUTE_FUNCTIONS
        )
    return transfer, compute


def staged_input_ns(
    profile: Profile, lines: tuple[int, ...], span_lo: np.ndarray, span_hi: np.ndarray
) -> np.ndarray:
    """Per step (spans sorted by start, not overlapping): the time from the step's start to
    the end of its last host-to-device transfer before its first compute call (0 if none)."""
    out = np.zeros(len(span_lo), dtype=np.int64)
    if not len(span_lo) or not lines:
        return out
    on_lines = np.isin(profile.line, np.asarray(lines, dtype=np.int64))
    candidates = np.flatnonzero(on_lines)
    if not candidates.size:
        return out
    names = profile.name[candidates]
    transfer_id, compute_id = _kinds(profile, names)
    is_transfer = transfer_id[names]
    is_compute = compute_id[names] & ~is_transfer
    start = profile.start_ns[candidates]
    step = np.searchsorted(span_lo, start, "right") - 1
    inside = (step >= 0) & (start < span_hi[np.maximum(step, 0)])
    big = np.iinfo(np.int64).max
    first_compute = np.full(len(span_lo), big, dtype=np.int64)
    c = inside & is_compute
    np.minimum.at(first_compute, step[c], start[c])
    t = np.flatnonzero(inside & is_transfer)
    t = t[start[t] < first_compute[step[t]]]
    last_end = np.full(len(span_lo), -1, dtype=np.int64)
    np.maximum.at(last_end, step[t], profile.end_at(candidates[t]))
    has = (last_end >= 0) & (first_compute < big)
    out[has] = np.minimum(last_end[has], span_hi[has]) - span_lo[has]
    return np.maximum(out, 0)
