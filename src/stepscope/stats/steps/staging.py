"""Input staged inside a step: everything the step does before its first model op.

XProf counts only input waits (``IteratorGetNext``, infeed, TensorFlow's host-to-device
memcpy ops) as input; a loop that fetches raw records and builds its batch inside the step
(Python featurization, numpy, ``torch.tensor(rows)``, ``jax.device_put``) shows that time as
host compute or "All Others", and XProf calls it 0% input.

stepscope decides by position, not by which op ends the preparation: on the step's thread,
the time from the step's start (which includes a fetch that feeds it, `feeds`) to the start of
its first model op (a compiled executable, a jitted call, a module's forward, a matmul or
convolution op) is input preparation, whether the batch is made by ``torch.tensor``,
``torch.from_numpy``, ``jax.device_put`` or plain Python; only the optimizer's own work there
(``Optimizer.zero_grad``) is left out. The limits of the rule: work before the first model
op that is not about the batch (logging, a metric computed from the last step) counts as
input too, and preparation after it (a second batch, augmentation inside the model call)
does not; a step without a traced model op has no staged input (no guess from untraced
time). A model's call whose first op comes long after it began (a `torch.jit.script`
module's first calls optimizing its graph, untraced, before it runs an op) is the model's
too: the stack sampler, when it ran, shows the thread inside ``Module.__call__`` there, and a
window ends at its first such sample (decision 652). The step database counts the staged
windows in the "bound by" limits (input), not in XProf's categories.
"""

from __future__ import annotations

import numpy as np

from stepscope.distinct import distinct
from stepscope.model import Profile
from stepscope.stats.host.python_samples import sample_points, sampled_thread_line
from stepscope.stats.intervals import merge, subtract_sets
from stepscope.vocab import tensorflow
from stepscope.vocab.pytorch import MODULE_CALL_FRAMES

# The step's model starting: a compiled executable, a jitted call, a module's forward, an op
# of a layer.
_COMPUTE_PARTS = ("Executable::Execute",)
_COMPUTE_PREFIXES: tuple[str, ...] = ("PjitFunction", "nn.Module:", "## forward ##")
# torch.compile's compiled forward
_COMPUTE_PREFIXES += ("Torch-Compiled Region",)
_COMPUTE_PREFIXES += (
    "aten::linear",
    "aten::conv",
    "aten::_convolution",
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::matmul",
    "aten::embedding",
    "aten::lstm",
    "aten::gru",
    "aten::scaled_dot_product_attention",
    # the loss and the backward pass are the model's too: a step inferred from a repeated
    # loss op starts at the loss, and what follows it up to the backward's first matmul is
    # no batch being built
    "aten::cross_entropy_loss",
    "aten::nll_loss",
    "aten::mse_loss",
    "aten::l1_loss",
    "aten::binary_cross_entropy",
    "aten::log_softmax",
    "aten::_log_softmax",
    "autograd::engine::evaluate_function",
)
_COMPUTE_FUNCTIONS = frozenset({"forward"})
# Model-side work that may run before the first model op and is not input.
# torch.compile's own work before its compiled forward runs (the first step's compile, each
# step's guard check) is the model's too.
_NOT_INPUT_PREFIXES = ("Optimizer.", "$optimizer.py", "dynamo", "TorchDynamo")


def _function(name: str) -> str:
    """The function of a Python tracer event name (``$api.py:2035 device_put``)."""
    return name.rsplit(" ", 1)[-1] if name.startswith("$") else ""


def _kinds(profile: Profile, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per string id (of the names in ``ids``): is it a model op, is it model-side work that
    is not input."""
    strings = profile.strings.strings
    compute = np.zeros(len(strings), dtype=bool)
    not_input = np.zeros(len(strings), dtype=bool)
    for i in distinct(ids).tolist():
        name = strings[i]
        compute[i] = (
            any(part in name for part in _COMPUTE_PARTS)
            or name.startswith(_COMPUTE_PREFIXES)
            or _function(name) in _COMPUTE_FUNCTIONS
        )
        not_input[i] = name.startswith(_NOT_INPUT_PREFIXES)
    return compute, not_input


def model_op_names(profile: Profile, ids: np.ndarray) -> np.ndarray:
    """Per string id: whether it names a model op (a compiled executable, a jitted call, a
    module's forward, a layer's op, the loss, the backward pass), for the names in ``ids``."""
    return _kinds(profile, ids)[0]


def model_ops(profile: Profile, events: np.ndarray) -> np.ndarray:
    """Per event of ``events``: whether it is the model's work, for telling a generator that
    IS the training loop from one that feeds it (`steps.fetch`): `model_op_names`, and
    TensorFlow's (an eager layer op or a tf.function call on the calling thread,
    `tensorflow.is_model_op`, and the call's own span, named after the Python function with
    the stat `tensorflow.FUNCTION_CALL_STAT`). Not the staged windows' rule: there TensorFlow
    steps keep no model op (decision 415: a `for x in dataset` loop's iterator Python before
    its tf.function call read as batch preparation, and an optimized pipeline's step as 14.5%
    input where it waited 2.6% for its batch)."""
    names = profile.name[events]
    tf_names = np.zeros(len(profile.strings.strings), dtype=bool)
    for i in distinct(names).tolist():
        tf_names[i] = tensorflow.is_model_op(profile.strings.strings[i])
    found = model_op_names(profile, names)[names] | tf_names[names]
    if profile.strings.id_of(tensorflow.FUNCTION_CALL_STAT) >= 0:  # else no such column
        found |= profile.stat_at(tensorflow.FUNCTION_CALL_STAT, events).present
    return found


def staged_windows(
    profile: Profile, lines: tuple[int, ...], span_lo: np.ndarray, span_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step, lo, hi): the input-preparation intervals of each step (spans sorted by start,
    not overlapping): from the step's start to its first model op on the step's thread, less
    the optimizer's work there. Steps without a model op have none."""
    none = np.zeros(0, dtype=np.int64)
    if not len(span_lo) or not lines:
        return none, none, none
    on_lines = np.isin(profile.line, np.asarray(lines, dtype=np.int64))
    candidates = np.flatnonzero(on_lines)
    if not candidates.size:
        return none, none, none
    names = profile.name[candidates]
    compute_id, not_input_id = _kinds(profile, names)
    start = profile.start_ns[candidates]
    step = np.searchsorted(span_lo, start, "right") - 1
    inside = (step >= 0) & (start < span_hi[np.maximum(step, 0)])
    big = np.iinfo(np.int64).max
    first_compute = np.full(len(span_lo), big, dtype=np.int64)
    c = inside & compute_id.take(names)
    np.minimum.at(first_compute, step[c], start[c])
    has = np.flatnonzero(first_compute < big)
    if not has.size:
        return none, none, none
    w_lo, w_hi = span_lo[has], np.minimum(first_compute[has], span_hi[has])
    keep = w_hi > w_lo
    has, w_lo, w_hi = has[keep], w_lo[keep], w_hi[keep]
    # a model's call sampled before its first op: the window ends where it is first seen
    w_hi = np.minimum(w_hi, _model_call_seen(profile, lines, w_lo, w_hi))
    keep = w_hi > w_lo
    has, w_lo, w_hi = has[keep], w_lo[keep], w_hi[keep]
    # the optimizer's work inside the windows is the model's, not input
    x = inside & not_input_id[names]
    x[x] = start[x] < first_compute[step[x]]
    if x.any():
        o_lo, o_hi = merge(start[x], profile.end_at(candidates[x]))
        w_lo, w_hi = subtract_sets(w_lo, w_hi, o_lo, o_hi)
        k = np.searchsorted(span_lo, w_lo, "right") - 1
        return k.astype(np.int64), w_lo, w_hi
    return has.astype(np.int64), w_lo.astype(np.int64), w_hi.astype(np.int64)


def _model_call_seen(
    profile: Profile, lines: tuple[int, ...], w_lo: np.ndarray, w_hi: np.ndarray
) -> np.ndarray:
    """Per window [w_lo, w_hi) (sorted, disjoint): the time of its first Python sample of a
    step thread ``lines`` inside a torch module's call (`MODULE_CALL_FRAMES`), else w_hi.
    What the thread did between the window's start and that sample is not known (a sampler
    starved of the GIL by a graph optimizer in C++ sees nothing): it stays input."""
    thread_of = sampled_thread_line(profile)
    sampling = [i for i, t in enumerate(thread_of.tolist()) if t >= 0 and t in lines]
    if not sampling or not len(w_lo):
        return w_hi
    ev, at, _each, _first = sample_points(profile, sampling)
    stack = profile.stat_at("stack", ev).string_ids()
    strings = profile.strings.strings
    in_call = np.zeros(len(strings) + 1, dtype=bool)  # the last: no stack
    for i in distinct(stack[stack >= 0]).tolist():
        in_call[i] = any(frame in strings[i] for frame in MODULE_CALL_FRAMES)
    at = at[in_call[np.where(stack >= 0, stack, len(strings))]]
    k = np.searchsorted(w_lo, at, "right") - 1
    ok = k >= 0
    ok[ok] = at[ok] < w_hi[k[ok]]
    seen = w_hi.copy()
    np.minimum.at(seen, k[ok], at[ok])
    return seen
