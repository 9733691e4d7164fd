"""The host events of a step that is compiled already (torch.compile, jax.jit, tf.function),
and what helps such a step when their host time bounds it (decision 1083).

A compiled step's host time is the call into its compiled code: for torch.compile, Dynamo's
guard checks (``TorchDynamo Cache Lookup``), then the ``Torch-Compiled Region`` holding the
compiled graph's Python wrapper (AOTAutograd's ``CompiledFunction``, Inductor's ``## Call
CompiledFxGraph ... ##``) and its launches; for JAX, a jitted function's ``PjitFunction(<name>)``
call; for TensorFlow, a tf.function's call (its ``__inference_<name>_<n>`` concrete function).
"Compile the step" is no advice for it.
"""

from __future__ import annotations

from stepscope.vocab.dispatch import JAX_PREFIXES
from stepscope.vocab.pytorch import COMPILED_REGION_PREFIXES
from stepscope.vocab.tensorflow import FUNCTION_PREFIX

# Dynamo's guard evaluation before each call of a compiled frame (torch 2.x's profiler).
TORCH_GUARDS = "TorchDynamo Cache Lookup"
TORCH_PREFIXES = (TORCH_GUARDS, *COMPILED_REGION_PREFIXES)


def compiled_framework(name: str) -> str:
    """The framework whose compiled code a host event of this name calls ("pytorch", "jax",
    "tensorflow"), or ""."""
    if name.startswith(TORCH_PREFIXES):
        return "pytorch"
    if name.startswith(JAX_PREFIXES):
        return "jax"
    if FUNCTION_PREFIX in name:
        return "tensorflow"
    return ""


# What the host limit's words say the time is, when compiled calls hold most of it ({name}:
# the compiled event holding the most of it).
WHAT = {
    "pytorch": "inside torch.compile'd code (most in '{name}': Dynamo's guard checks, the "
    "compiled graphs' Python wrappers and the host side of their kernel launches",
    "jax": "inside jitted calls (most in '{name}': JAX dispatching the compiled program, its "
    "arguments' checks and the executable's launch",
    "tensorflow": "inside tf.function calls (most in '{name}': argument binding and the call "
    "of the concrete function's graph",
}

# What helps (the advice's fix): the step is compiled, so the lever is the cost per call.
FIX = {
    "pytorch": "the step runs torch.compile'd code already, so compiling it again will not "
    "help: the time is the compiled code's host side (guards, the graph's Python wrapper, one "
    'launch per kernel). Use torch.compile(mode="reduce-overhead"), which replays the graph\'s '
    "kernels as CUDA graphs (one launch per graph, no Python wrapper per kernel), and when the "
    "kernels are tiny (the device computes {compute:.1f}% of the step), give each call more "
    "work (a larger batch) so that the fixed cost per call is a smaller share",
    "jax": "the step runs jitted code already: the time is JAX dispatching its jitted calls. "
    "Put more of the step in one jitted function (the whole update, or several steps in one "
    "call with jax.lax.scan or jax.lax.fori_loop) so each step dispatches fewer calls, and "
    "give each call more work (a larger batch; the device computes {compute:.1f}% of the step)",
    "tensorflow": "the step runs a tf.function already: the time is its call's host side. "
    "Compile it with XLA (tf.function(jit_compile=True)), run several steps per call "
    "(Keras's steps_per_execution, or a loop inside the tf.function), and give each call more "
    "work (a larger batch; the device computes {compute:.1f}% of the step)",
}
