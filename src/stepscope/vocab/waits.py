"""Host calls that wait for a computation running elsewhere, and where computations run.

A step thread blocked in ``block_until_ready``, ``.item()`` or ``cudaStreamSynchronize`` is
waiting for work on another thread or on a device; `stepscope.stats.steps.waits` gives that
time to the computation it waits for, not to untraced host work.
"""

from __future__ import annotations

# Events that block the calling thread until device or thread-pool work finishes.
WAIT_NAMES = frozenset(
    {
        # CUDA runtime / driver, HIP
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaStreamWaitEvent",
        "cuStreamSynchronize",
        "cuCtxSynchronize",
        "cuEventSynchronize",
        "hipStreamSynchronize",
        "hipDeviceSynchronize",
        "hipEventSynchronize",
        # PyTorch: a tensor's value read on the host
        "aten::item",
        "aten::_local_scalar_dense",
        # PJRT (JAX, TensorFlow with XLA): waiting for a buffer
        "CommonPjRtBuffer::Await",
        "PjRtStreamExecutorBuffer::Await",
        "PjRtCApiBuffer::Await",
    }
)
# Python functions (as the Python tracer names them, ``$file.py:123 block_until_ready``)
# that wait for a result.
WAIT_FUNCTIONS = frozenset(
    {"block_until_ready", "item", "synchronize", "numpy", "tolist", "device_get", "_value"}
)
# Threads whose events are a framework's computation (XLA's CPU client and its Eigen pool,
# TensorFlow's executor and intra-op pools): a step thread waiting while they work waits for
# that computation.
COMPUTE_THREAD_PREFIXES = (
    "tf_XLAPjRtCpuClient",
    "tf_XLAEigen",
    "XLAEigen",
    "tf_Compute",
    "tf_numa_",
    "tf_inter_op",
    "tf_intra_op",
)
# Events that are a compiled program running, whichever thread runs them.
COMPUTE_EVENT_PREFIXES = ("ThunkExecutor::Execute",)


def function_of(name: str) -> str:
    """The function of a Python tracer event name (``$api.py:2479 block_until_ready``)."""
    return name.rsplit(" ", 1)[-1] if name.startswith("$") else ""


def is_wait_name(name: str) -> bool:
    return name in WAIT_NAMES or function_of(name) in WAIT_FUNCTIONS


def is_compute_thread(thread_name: str) -> bool:
    return thread_name.startswith(COMPUTE_THREAD_PREFIXES)
