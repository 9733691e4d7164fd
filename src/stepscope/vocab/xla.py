"""The lines XProf's device tracers (XLA on GPU and TPU, TensorFlow's GPU tracer) give a
device plane besides its streams, as XSpace files hold them."""

from __future__ import annotations

STEPS_LINE = "Steps"  # one event per step on each device (TPU, XLA GPU)
XLA_MODULES_LINE = "XLA Modules"  # one event per program run
XLA_OPS_LINE = "XLA Ops"  # one event per HLO op run: the device's work when it has no streams
# Lines derived from the streams (or holding annotations), in the order the trace viewer
# shows them above the streams.
DERIVED_LINES = (
    STEPS_LINE,
    XLA_MODULES_LINE,
    XLA_OPS_LINE,
    "XLA TraceMe",
    "Framework Name Scope",
    "Framework Ops",
    "Source code",
    "Launch Stats",
    "_counters_",
)
# Lines of asynchronous work summarised elsewhere (their time is in the streams).
ASYNC_LINES = ("Async XLA Ops", "SparseCore Steps")
# Name prefixes of lines that hold annotations or sync waits, not device work.
ANNOTATION_LINE_PREFIXES = ("GPU annotations", "CUDA sync")

# JAX's autodiff names the ops it makes: an HLO instruction's ``metadata.op_name`` holds
# ``jvp(`` for a forward-mode pass (the forward pass of ``jax.grad`` too) and ``transpose(``
# for the backward pass: "jit(update)/transpose(jvp())/dot_general" in a jitted SGD step.
AUTODIFF_OP_SCOPES = ("transpose(", "jvp(")
# Frames of JAX's autodiff in a stack sample's ``func (file:line)`` frames: the interpreter
# that linearizes and transposes (``jax/_src/interpreters/ad.py``) and the public
# transformations that enter it (``jax/_src/api.py``): an un-jitted ``jax.grad`` leaves no
# mark in its ops' programs (each primitive compiled on its own, "jit(mul)/mul").
AUTODIFF_FRAMES = (
    " (ad.py:",
    "grad_f (api.py:",
    "vjp (api.py:",
    "linearize (api.py:",
    "jacrev",
    "jacfwd",
)

# JAX freeing the buffers whose Python references were dropped, in batches when its queue of
# them fills: on the thread that happens to fill it, no iteration's own work.
PYTHON_GARBAGE = "PythonRefManager::CollectGarbage"
