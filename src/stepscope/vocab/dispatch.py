"""Events that dispatch work from the host: one framework op, one kernel launch.

A step made of many of them, each short, with Python between them, spends its time issuing
work rather than doing it (dispatch-bound or launch-bound). `stepscope.stats.steps.dispatch`
reads these tables.
"""

from __future__ import annotations

# JAX: every call of a jitted function, and every un-jitted ``jnp`` op (dispatched as a
# jitted primitive), is a ``PjitFunction(<name>)`` event on the calling thread.
JAX_PREFIXES = ("PjitFunction(",)
# JAX wraps each public transformation's function (what ``jax.grad``, ``jax.vjp``,
# ``jax.jit`` return) in this frame (``jax/_src/traceback_util.py``): in a stack sample, the
# frame before it is the user's code calling JAX, e.g. an un-jitted ``update`` calling
# ``jax.grad(loss)``.
JAX_API_FRAME = "reraise_with_filtered_traceback ("
# PjRt running a compiled program on the calling thread, inside a ``PjitFunction`` call
# (jaxlib's CPU client: ``CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice``).
JAX_EXECUTE_PREFIXES = ("CommonPjRtLoadedExecutable::Execute",)
# PyTorch eager ops (Kineto ``cpu_op`` events and the PyTorch bridge's): ``aten::add_``.
TORCH_PREFIXES = ("aten::",)
# TensorFlow eager op execution on the calling thread.
TF_NAMES = frozenset({"EagerExecute", "EagerLocalExecute", "EagerKernelExecute"})
# Host calls that queue device work: kernel launches and asynchronous copies (CUDA runtime
# and driver, HIP).
LAUNCH_NAMES = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cudaGraphLaunch",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "hipLaunchKernel",
        "hipExtLaunchKernel",
        "hipModuleLaunchKernel",
        "hipMemcpyAsync",
        "hipMemsetAsync",
    }
)
PREFIXES = JAX_PREFIXES + TORCH_PREFIXES


def is_dispatch_name(name: str) -> bool:
    """Whether an event of this name dispatches one op or one launch."""
    return name.startswith(PREFIXES) or name in TF_NAMES or name in LAUNCH_NAMES


def computes_inline(name: str, has_device: bool) -> bool:
    """Whether a dispatch event of this name runs its computation on the calling thread (an
    eager op on the CPU), so that a long one is compute, not dispatch."""
    return name in TF_NAMES or (not has_device and name.startswith(TORCH_PREFIXES))


# What to do about it, per framework (the finding's fix and the headline's evidence).
FIXES = {
    "jax": "put the per-op code under jax.jit (an optimizer update over a list of arrays: "
    "jit the whole update, or use optax), so XLA runs it as one fused program",
    "pytorch": "fuse the small ops: torch.compile the step (mode='reduce-overhead' adds CUDA "
    "graphs on GPUs), use foreach/fused optimizers (torch.optim.AdamW(..., fused=True)), and "
    "replace Python loops over tensors with batched ops",
    "tensorflow": "wrap the step in tf.function (jit_compile=True fuses it with XLA) instead "
    "of running ops eagerly",
    "unknown": "compile the step (jax.jit / torch.compile / tf.function) or batch the small "
    "ops into fewer, larger ones",
}


# A JAX step of one call is jitted already: dispatch-bound, it has too little work per call
# (a small model's step, 20-80 µs calls 0.1-0.5 ms apart, read "put the per-op code under
# jax.jit" before; decision 491).
JITTED_FIX = (
    "each step is one jitted call already: give each call more work (a larger batch, or "
    "several steps in one call with jax.lax.scan or jax.lax.fori_loop) so that dispatching "
    "it is a smaller share of the step"
)


# JAX inference (a run that never differentiates, decision 561): no optimizer update to jit.
JAX_INFERENCE_FIX = (
    "put the per-op code under jax.jit (jit the whole function that runs the model on a "
    "batch, pre- and post-processing included), so XLA runs it as one fused program"
)


# PyTorch inference (a run that never trains: no backward, no optimizer): no optimizer to fuse;
# a served model's lever is the batch (more requests per forward pass).
INFERENCE_FIX = (
    "fuse the small ops: torch.compile the model (mode='reduce-overhead' adds CUDA graphs on "
    "GPUs), serve more requests per forward pass (a larger batch), and replace Python loops "
    "over tensors with batched ops"
)


# A PyTorch step that runs torch.compile'd graphs already (decision 536: a compiled model's
# AdamW step, 61 ops a step, read "torch.compile the step"): its small ops come either from
# the code outside the graphs, most often the optimizer, or from graphs that run their ops
# one at a time (the 'eager' and 'aot_eager' backends: `CompiledFunction` holding
# ``aten::t``, ``aten::mul``... in a fixture).
COMPILED_OUTSIDE_FIX = (
    "the steps run torch.compile'd graphs already; these ops run outside them{inside}: {what}"
)
COMPILED_OPTIMIZER_FIX = (
    "use a fused or foreach optimizer (torch.optim.AdamW(..., fused=True) or foreach=True), "
    "or compile the optimizer step too (torch.compile a function that calls opt.step())"
)
COMPILED_REST_FIX = (
    "compile the code they come from too (the whole step, not the model alone), "
    "and replace Python loops over tensors with batched ops"
)
COMPILED_SERVING_FIX = (  # a run that never trains: its lever is the batch (INFERENCE_FIX)
    "compile the code they come from too (the whole step, not the model alone), serve more "
    "requests per forward pass (a larger batch), and replace Python loops over tensors with "
    "batched ops"
)
COMPILED_UNFUSED_FIX = (
    "{share:.0f}% of these ops run inside the steps' torch.compile'd graphs, one at a time: "
    "the graphs are not fused (the 'eager' and 'aot_eager' backends run them op by op; "
    "torch.compile's default, inductor, fuses them), so compile with inductor, and compile "
    "the code around the graphs too"
)
MOST = 50.0  # % of the ops: the place holding this many is the fix's subject


def fix_for(
    framework: str,
    ops_per_step: float,
    trains: bool = True,
    compiled_pct: float = -1.0,
    optimizer: tuple[str, float] = ("", 0.0),
) -> str:
    """The fix of dispatch-bound steps of ``framework`` issuing ``ops_per_step`` ops a step
    in their dispatch runs; ``trains``: False for a PyTorch or JAX run that never trains;
    ``compiled_pct``: the share (%) of the ops run inside torch.compile'd graphs, -1 when
    the steps ran none; ``optimizer``: the optimizer's step annotation holding most of the
    ops and their share (%), ("", 0) when none."""
    if framework == "jax" and 0 < ops_per_step < 2:
        return JITTED_FIX
    if framework == "jax" and not trains:
        return JAX_INFERENCE_FIX
    if framework == "pytorch" and compiled_pct >= MOST:
        return COMPILED_UNFUSED_FIX.format(share=compiled_pct)
    if framework == "pytorch" and compiled_pct >= 0:
        name, share = optimizer
        inside = f" ({share:.0f}% of them in '{name}')" if name else ""
        rest = COMPILED_REST_FIX if trains else COMPILED_SERVING_FIX
        what = COMPILED_OPTIMIZER_FIX if name and share >= MOST else rest
        return COMPILED_OUTSIDE_FIX.format(inside=inside, what=what)
    if framework == "pytorch" and not trains:
        return INFERENCE_FIX
    return FIXES.get(framework, FIXES["unknown"])
