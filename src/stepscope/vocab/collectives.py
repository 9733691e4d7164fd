"""Collective communication: the names each framework gives its collective work.

One table per framework, in one place: the step breakdown (collective wait), the straggler
analysis (which calls to match across ranks) and the docs (docs/jobs.md) all read these.
Plain data and two small predicates; nothing from stepscope is imported here.

Host side (a thread of the training process runs or waits for the collective):

- PyTorch: the process-group ops ``c10d::allreduce_``, ``c10d::broadcast_``... and the
  functional collectives (``_c10d_functional::all_reduce``, ``..::wait_tensor``), the
  ``record_param_comms`` op that records a collective's arguments, and the backends' own
  spans: ``gloo:all_reduce``, ``nccl:all_reduce`` (the CPU-side enqueue), ``mpi:``, ``ucc:``.
- MPI and Horovod: ``MPI_Allreduce``... and Horovod's ``HorovodAllreduce`` ops.
- TensorFlow: the collective op types (``CollectiveReduceV2``, ``NcclAllReduce``...), matched
  on the op type after the last ``:`` of TensorFlow's ``name:type`` events.
- XLA (JAX, TensorFlow XLA, PyTorch/XLA): HLO collective instructions (``all-reduce.3``,
  ``all-gather-start``, ``collective-permute-done``...) and JAX's primitive names (``psum``...).

Device side: NCCL / RCCL kernels (``ncclKernel_AllReduce_...``, ``ncclDevKernel_Generic``,
``rccl...``), and XLA collective instructions on lines of XLA ops (TPU).

Setup calls that move no data for the step (``CollectiveAssignGroupV2``,
``CollectiveInitializeCommunicator``, ``c10d::`` process-group creation) are not collectives.
"""

from __future__ import annotations

import re

# PyTorch host-side spans, by prefix: the c10d dispatcher ops, the functional collectives and
# the backends' own spans (the gloo worker thread's, NCCL's CPU-side enqueue).
PYTORCH_PREFIXES = (
    "c10d::",
    "_c10d_functional::",
    "c10d_functional::",
    "gloo:",
    "nccl:",
    "mpi:",
    "ucc:",
    "xccl:",
)
PYTORCH_NAMES = frozenset({"record_param_comms", "ProcessGroupGloo::allreduce"})
# PyTorch ops under the c10d prefixes that are no communication of the step.
PYTORCH_NOT_COLLECTIVE = frozenset({"c10d::_register_process_group", "c10d::monitored_barrier_"})

# The PyTorch spans that dispatch a collective (the c10d op, its argument record, NCCL's CPU-side
# enqueue, a functional collective and its wait) rather than run it: when a rank also shows
# the run itself (gloo's worker thread, an NCCL kernel), that is its call; these only when it
# shows nothing else.
PYTORCH_DISPATCH_PREFIXES = ("c10d::", "_c10d_functional::", "c10d_functional::", "nccl:")
PYTORCH_DISPATCH_NAMES = frozenset({"record_param_comms"})

# MPI (mpi4py, Open MPI's PERUSE/Score-P names) and Horovod's ops.
MPI_PREFIXES = ("MPI_", "PMPI_")
HOROVOD_PREFIXES = ("Horovod",)
HOROVOD_NAMES = frozenset(
    {"NCCL_ALLREDUCE", "MPI_ALLREDUCE", "ALLREDUCE", "ALLGATHER", "BROADCAST"}
)

# TensorFlow collective op types (the part after the last ":" of a host event's name).
TENSORFLOW_OP_TYPES = frozenset(
    {
        "CollectiveReduce",
        "CollectiveReduceV2",
        "CollectiveReduceV3",
        "CollectiveGather",
        "CollectiveGatherV2",
        "CollectiveBcastSend",
        "CollectiveBcastRecv",
        "CollectiveBcastSendV2",
        "CollectiveBcastRecvV2",
        "CollectiveAllToAllV2",
        "CollectiveAllToAllV3",
        "CollectiveReduceScatterV2",
        "CollectivePermute",
        "NcclAllReduce",
        "NcclReduce",
        "NcclBroadcast",
        "_NcclReduceSend",
        "_NcclReduceRecv",
        "_NcclBroadcastSend",
        "_NcclBroadcastRecv",
        "XlaAllReduce",
        "XlaReduceScatter",
        "AllToAll",
        "CrossReplicaSum",
        "HorovodAllreduce",
        "HorovodAllgather",
        "HorovodBroadcast",
    }
)

# XLA HLO collective instructions: opcode, an optional async half, an optional ".N" suffix
# (XLA numbers instructions "all-reduce.12"), as HLO text may print them with "%".
XLA_OPCODES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "collective-broadcast",
    "all-to-all",
    "ragged-all-to-all",
)
_XLA = re.compile(
    r"^%?(" + "|".join(re.escape(o) for o in XLA_OPCODES) + r")(-start|-done)?(\.\d+)*$"
)
# JAX's collective primitives, as they name framework ops and name scopes.
JAX_PRIMITIVES = frozenset(
    {"psum", "pmean", "pmax", "pmin", "all_gather", "all_to_all", "ppermute", "psum_scatter"}
)

# Device kernels of the collective libraries (NVIDIA NCCL, AMD RCCL, Intel oneCCL).
DEVICE_KERNEL_PREFIXES = ("nccl", "rccl", "oneccl")
# Collectives that run as a library's own kernels over NVLink / symmetric memory, not NCCL
# (decision 1057): PyTorch's symmetric memory (`symm_mem::multimem_all_reduce_` launches
# `multimem_all_reduce_kernel`; `one_shot_all_reduce_kernel`, `two_shot_all_reduce_kernel`),
# vLLM's and SGLang's custom all-reduce (`vllm::cross_device_reduce_1stage`), TensorRT-LLM's
# (`oneShotAllReduceKernel`, `allreduce_fusion_kernel_*`). Matched as the kernel function's
# own name (after `::`, a space or the start), so Inductor's `triton_poi_fused_all_reduce_0`
# (a copy into the collective's buffer) is not one.
_CUSTOM_COLLECTIVE_KERNEL = re.compile(
    r"(?:^|[\s:])(?:multimem_(?:one_shot_)?all_(?:reduce|gather)"
    r"|(?:one|two)_shot_all_reduce|cross_device_reduce_\d+stage"
    r"|(?:one|two)ShotAllReduce|allreduce_fusion_kernel)"
)

# Setup work that moves no tensors for the step.
NOT_COLLECTIVE_SUFFIXES = ("CollectiveAssignGroupV2", "CollectiveInitializeCommunicator")


# Frames a thread sits in while ANOTHER thread runs the collective, with no collective span of
# its own thread to show the wait: TensorFlow's eager and graph execute calls (the function
# runs its collective ops on TensorFlow's collective_ops threads) and Python functions (a
# `backward` while gloo's thread all-reduces), named as stepscope's and TensorFlow's Python
# tracers (``$file.py:LINE name``), Kineto's (``file.py(LINE): name``) and the sampler
# (``name (file.py:LINE)``) name them. Ops (``aten::mm``, a TensorFlow kernel) are never
# here: an op computes, whatever another thread runs meanwhile.
TENSORFLOW_WAITING_FRAMES = frozenset(
    {
        "TFE_Py_ExecuteCancelable",
        "TFE_Py_Execute",
        "KernelAndDeviceFunc::Run",
        "SessionRun",
        "DirectSession::Run",
    }
)
_PYTHON_FRAME = re.compile(r"\.py[:(]\d+")


def is_waiting_frame(name: str) -> bool:
    """Whether a host event of this name is a frame that waits for work of other threads
    (see `TENSORFLOW_WAITING_FRAMES`): it may hold another thread's collective."""
    return name in TENSORFLOW_WAITING_FRAMES or _PYTHON_FRAME.search(name) is not None


def xla_collective(name: str) -> str | None:
    """The HLO opcode (``all-reduce``...) of an XLA collective instruction's name, else None."""
    match = _XLA.match(name)
    return match.group(1) if match else None


def is_host_collective(name: str) -> bool:
    """Whether a host-side event of this name is collective communication (or the wait for
    it): the tables above, for every framework."""
    if name in PYTORCH_NOT_COLLECTIVE or name.endswith(NOT_COLLECTIVE_SUFFIXES):
        return False
    if name.startswith(PYTORCH_PREFIXES) or name in PYTORCH_NAMES:
        return True
    if name.startswith(MPI_PREFIXES + HOROVOD_PREFIXES) or name in HOROVOD_NAMES:
        return True
    if name in JAX_PRIMITIVES or xla_collective(name) is not None:
        return True
    op_type = name.rsplit(":", 1)[-1]
    return op_type in TENSORFLOW_OP_TYPES


def is_dispatch(name: str) -> bool:
    """Whether a host collective span only dispatches the collective (see above)."""
    return name.startswith(PYTORCH_DISPATCH_PREFIXES) or name in PYTORCH_DISPATCH_NAMES


def is_device_collective(name: str) -> bool:
    """Whether a device event of this name is collective communication: NCCL/RCCL kernels,
    the custom all-reduce kernels above, and XLA collective instructions (the ops line of a
    TPU)."""
    return (
        name[:8].lower().startswith(DEVICE_KERNEL_PREFIXES)
        or xla_collective(name) is not None
        or _CUSTOM_COLLECTIVE_KERNEL.search(name) is not None
    )


# Arguments a collective's event may carry (Kineto's and TensorFlow's names): its sequence
# number in its process group, and the group, which identify one call on every rank.
# not "Sequence number": autograd's, on every op; TensorFlow's collective ops carry
# "instance_key" (one per call, the same on every worker)
SEQUENCE_STATS = ("Seq", "seq", "instance_key")
GROUP_STATS = ("Process Group Name", "pg_name", "Process Group Description")

# The collective's kind, for matching calls across ranks and for people: a name's words
# mapped to one vocabulary ("allreduce" and "all_reduce" and "AllReduce" are one kind).
_KINDS = (
    ("reduce_scatter", ("reducescatter", "reduce_scatter", "reduce-scatter", "psum_scatter")),
    ("all_gather", ("allgather", "all_gather", "all-gather", "gather")),
    ("all_to_all", ("alltoall", "all_to_all", "all-to-all")),
    (
        "all_reduce",
        ("allreduce", "all_reduce", "all-reduce", "collectivereduce", "crossreplicasum", "psum"),
    ),
    ("broadcast", ("broadcast", "bcast")),
    ("barrier", ("barrier",)),
    ("send_recv", ("send", "recv", "permute", "sendrecv")),
    ("reduce", ("reduce",)),
)


def collective_kind(name: str) -> str:
    """``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all``, ``broadcast``,
    ``barrier``, ``send_recv``, ``reduce`` or ``other`` for a collective's name."""
    low = name.lower()
    for kind, words in _KINDS:
        if any(w in low for w in words):
            return kind
    return "other"
