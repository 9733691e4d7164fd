"""TensorFlow's names (its runtime, tf.data and Keras) as they appear in XSpace files.

XProf reads steps, input waits and op kinds from these names; stepscope writes the same names
for its own step markers and instrumented pipelines (`stepscope.step`, `stepscope.data`),
so both tools read a stepscope profile the way they read TensorFlow's.
"""

from __future__ import annotations

# --- Step markers ---------------------------------------------------------------------------
# (A host event with stat `_r` > 0 is a step root, ``tf.profiler.experimental.Trace(...,
# _r=1)``, numbered by its stat `step_num`: stat names are the XSpace schema's, written where
# they are read or written, like `correlation_id`.)
# XProf's explicit host step markers: names that start so and hold no "/".
EXPLICIT_STEP_PREFIXES = ("train", "test", "TraceContext")
# Keras 3's TensorBoard callback: one trace per profiled batch, with `step_num` but no `_r`.
KERAS_BATCH = "Profiled batch"
# XProf's implicit roots: they group a step's events but are not steps.
IMPLICIT_ROOTS = frozenset({"FunctionRun", "SessionRun", "RunGraph", "ExecutorState::Process"})
# The executor event that runs a step's graph (parent of its IteratorGetNext).
EXECUTOR_PROCESS = "ExecutorState::Process"
# Runtime wrappers that hold ops but do no compute of their own.
EAGER_WRAPPERS = ("EagerExecute", "EagerLocalExecute", "EagerKernelExecute", "FunctionRun")

# The runtime's span of one eager op or tf.function call on the calling (Python) thread,
# named after the op's type or the function: ``EagerLocalExecute: MatMul``,
# ``EagerLocalExecute: __inference_train_422``.
EAGER_OP_PREFIX = "EagerLocalExecute: "
# The eager op that makes a tensor of a Python value (``tf.constant``, a tf.function's
# arguments, Keras's counters, a ``tf.py_function``'s result).
EAGER_CONST = "_EagerConst"
# A tf.function's concrete function (its graph runs on the executor's threads; the calling
# thread waits in `KernelAndDeviceFunc::Run`).
FUNCTION_PREFIX = "__inference_"
# The stat of the span of a tf.function call from Python, named after the Python function
# (``train``, with ``tf_function_call`` "notTraced-nonXla"): it holds the call's own Python
# (argument binding, the trace cache) before its ``EagerLocalExecute: __inference_...``.
FUNCTION_CALL_STAT = "tf_function_call"
# TF's span of tracing a Python function into a graph (a ``tf.function``'s first call with
# new argument types, or Keras building its dataset and step functions): compilation, done
# once per signature, never a loop's step (decision 583).
GRAPH_BUILDING = "tf.function-graph_building"
# Op types that are a model's layers or loss (eager, or a graph op ``scope/name:Type``):
# what `stats.steps.staging` takes as the step's model starting. Variable reads, casts,
# shapes and constants are not: a step reads its variables before its first layer.
MODEL_OP_TYPES = frozenset(
    {
        "MatMul",
        "BatchMatMul",
        "BatchMatMulV2",
        "BatchMatMulV3",
        "Einsum",
        "Conv1D",
        "Conv2D",
        "Conv3D",
        "DepthwiseConv2dNative",
        "Conv2DBackpropInput",
        "Conv2DBackpropFilter",
        "_FusedMatMul",
        "_FusedConv2D",
        "_MklMatMul",
        "_MklFusedMatMul",
        "_MklNativeFusedMatMul",
        "_MklNativeMatMul",
        "_MklConv2D",
        "_MklNativeConv2D",
        "_MklNativeFusedConv2D",
        "_MklFusedConv2D",
        "CudnnRNN",
        "CudnnRNNV2",
        "CudnnRNNV3",
        "SoftmaxCrossEntropyWithLogits",
        "SparseSoftmaxCrossEntropyWithLogits",
        "XlaLaunch",
        "_XlaRun",
    }
)


def is_explicit_step_marker(name: str) -> bool:
    """XProf's explicit host step markers: train*/test*/TraceContext* without a '/'."""
    return name.startswith(EXPLICIT_STEP_PREFIXES) and "/" not in name


# --- Input pipeline (tf.data) ---------------------------------------------------------------
# Every stage of a tf.data pipeline is an event named ``Iterator::<path>``; the root stage,
# ``Iterator::<name>``, has no "::" after the prefix. As an op, its name part is "Iterator".
ITERATOR_PREFIX = "Iterator::"
ITERATOR_OP = "Iterator"
# The op that waits for the pipeline's next element (IteratorGetNext, ...Sync, ...AsOptional).
GET_NEXT = "IteratorGetNext"
# The kernels of those ops that the executor runs (one per step, under ExecutorState::Process).
GET_NEXT_KERNELS = ("IteratorGetNextOp::DoCompute", "IteratorGetNextAsOptionalOp::DoCompute")
# tf.data's own threads (its iterators' and multi-device iterators' threads, its private
# thread pool: ``tf_data_iterator_get_next/<id>``...): the pipeline's work, never a step's.
TF_DATA_LINE_PREFIX = "tf_data"
# Ops that send a step's input to the device.
INFEED_OPS = ("InfeedEnqueue", "InfeedEnqueueTuple")
# Ops that run Python (holding the GIL): tf.py_function's, tf.numpy_function's and
# `from_generator`'s generator; as a graph op ``scope/name:EagerPyFunc`` or bare.
PY_FUNCTION_OPS = frozenset({"EagerPyFunc", "PyFunc", "PyFuncStateless"})
# The runtime's calls in which the calling (Python) thread waits once their work is handed
# off: a tf.function's graph running on the executor's threads (``FunctionRun`` and the
# ``KernelAndDeviceFunc::Run`` around it), and taking the GIL back before returning to
# Python (the ends of ``TFE_Py_*``). An op run inline (``KernelAndDeviceOp::Run``) and the
# eager runtime's own steps (``EagerExecute``...) are work, not waits.
BLOCKING_CALLS = frozenset(
    {
        "TFE_Py_ExecuteCancelable",
        "TFE_Py_FastPathExecute_C",
        "TFE_Py_Execute",
        "KernelAndDeviceFunc::Run",
        "FunctionRun",
    }
)

# The runtime freeing a tensor whose last Python reference was dropped: it runs on
# whichever thread drops it, when it does (the loop's, or tf.data's after a generator's
# batch), so how many fall in one iteration of a loop varies with the load.
TENSOR_RELEASE = "TFE_DeleteTensorHandle"

# The calls a Python thread makes into TensorFlow's runtime: entered from Python, so each
# starts only with the GIL held.
PYTHON_ENTRY_PREFIX = "TFE_Py_"


def is_iterator(name: str) -> bool:
    return name.startswith(ITERATOR_PREFIX)


def is_root_iterator(name: str) -> bool:
    """The root stage of a pipeline: ``Iterator::<name>``, one "::"."""
    return name.startswith(ITERATOR_PREFIX) and name.count("::") == 1


def is_py_function(name: str) -> bool:
    """An op that runs Python (`PY_FUNCTION_OPS`), bare or as ``scope/name:Type``."""
    return name.rpartition(":")[2] in PY_FUNCTION_OPS


def is_blocking_call(name: str) -> bool:
    """One of the runtime's calls in which the calling thread waits (`BLOCKING_CALLS`)."""
    return name in BLOCKING_CALLS


def is_python_entry(name: str) -> bool:
    """A call into TensorFlow's runtime entered from Python (`PYTHON_ENTRY_PREFIX`)."""
    return name.startswith(PYTHON_ENTRY_PREFIX)


def is_graph_building(name: str) -> bool:
    return name == GRAPH_BUILDING


def is_feed_op_type(op_type: str) -> bool:
    """An eager op that feeds a tf.function rather than computes beside it (decision 1022):
    a Python value made a tensor (`EAGER_CONST`), or one of the input iterator's ops (its
    fetch, ``IteratorGetNext``; making or deleting it; the ``Optional*`` ops that unwrap
    ``get_next_as_optional``'s element)."""
    return op_type == EAGER_CONST or "Iterator" in op_type or op_type.startswith("Optional")


def is_get_next(name: str) -> bool:
    """An IteratorGetNext* op (any case: some runtimes write it lower-cased)."""
    return name.lower().startswith(GET_NEXT.lower())


# --- Memory ---------------------------------------------------------------------------------
# TensorFlow's BFC allocators: one per GPU, ``GPU_<ordinal>_bfc``; the host's is "cpu".
CPU_ALLOCATOR = "cpu"


def gpu_allocator(device_id: object) -> str:
    return f"GPU_{device_id}_bfc"


def is_model_op(name: str) -> bool:
    """Whether a host event is a TensorFlow model op: an eager layer op or a tf.function
    call on the calling thread (``EagerLocalExecute: MatMul``, ``EagerLocalExecute:
    __inference_train_422``), or a graph op of such a type (``dense/MatMul:MatMul``)."""
    if name.startswith(EAGER_OP_PREFIX):
        op = name[len(EAGER_OP_PREFIX) :]
        return op.startswith(FUNCTION_PREFIX) or op in MODEL_OP_TYPES
    scope, sep, op = name.rpartition(":")
    return bool(sep and scope) and " " not in name and op in MODEL_OP_TYPES
