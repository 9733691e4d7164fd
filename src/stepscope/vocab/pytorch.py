"""PyTorch's names as its profiler (Kineto) records them."""

from __future__ import annotations

import re

# torch.profiler's step annotation, ``ProfilerStep#<N>`` (a user_annotation; an Operator in
# the 2021 trace schema), one per ``prof.step()``.
PROFILER_STEP = "ProfilerStep#"
# A Kineto import's Task Environment stat (ns, on ``profile_stop_time``'s clock): the end of
# the profiler's own ``Trace`` span (``PyTorch Profiler (0)``), where its recording stopped.
# An annotation open then may end long after it (a100_triton_tiny's ProfilerStep#1 ends 13.3 s
# later): nothing was recorded past it (decision 1075).
RECORDING_STOP_STAT = "kineto_trace_stop_time"
# Any step's annotation: renumbered runs compare step to step by this pattern.
PROFILER_STEP_ANY = re.compile(re.escape(PROFILER_STEP) + r"\d+")
# torch.optim's annotation of each ``opt.step()``: ``Optimizer.step#AdamW.step``.
OPTIMIZER_STEP_PREFIX = "Optimizer.step#"
# What a torch.compile'd module leaves in the profile each time it runs its compiled graphs
# (seen with torch 2.13 on the CPU: the region, then AOTAutograd's function and Inductor's
# call inside it; the backward as ``CompiledFunctionBackward``).
COMPILED_REGION_PREFIXES = ("Torch-Compiled Region", "CompiledFunction", "## Call CompiledFxGraph")
# The DataLoader's ``__next__`` as the profiler records it:
# ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`` (or _MultiProcessing...).
DATALOADER_NEXT = "enumerate(DataLoader)"
# stepscope's capture around a DataLoader's ``iter()`` that starts its worker processes (the
# loader hook, decision 562): the time an epoch waits before its first batch can be fetched,
# with stat ``loader`` (``DataLoader(<dataset class>)``). An input wait, as the fetch is.
DATALOADER_ITER = "iter(DataLoader)"
# The line of a DataLoader worker process captured into the training process's host plane
# (stepscope.capture.loader_workers): ``DataLoader worker <k> (pid <pid>)``.
DATALOADER_WORKER_LINE = "DataLoader worker "
# torch's worker loop and dataset fetcher (torch/utils/data/_utils/): on every stack sample of
# a worker, they say nothing about where its batches' time goes.
DATALOADER_WORKER_FILES = frozenset({"worker.py", "fetch.py"})
# A captured worker batch's stat: its worker thread's CPU time (ns), beside its wall span.
DATALOADER_BATCH_CPU_STAT = "cpu_ns"
# ... and its time runnable but waiting for a CPU (ns; Linux schedstat).
DATALOADER_BATCH_CPU_WAIT_STAT = "cpu_wait_ns"
# The loader's own settings at its ``iter()``, on each captured worker batch: stat
# ``dataloader_<attribute>`` (stepscope's own names, none of XProf's), an int (booleans 0/1),
# absent where the loader has no such attribute (an older torch: ``in_order`` came in 2.6) or
# it is None (``batch_size`` with a batch_sampler).
DATALOADER_SETTING_PREFIX = "dataloader_"
DATALOADER_SETTINGS = (
    "num_workers",
    "prefetch_factor",
    "persistent_workers",
    "pin_memory",
    "in_order",
    "batch_size",
)
# Frames of the DataLoader's Python code on a sampled stack (``func (file)``, any line), and
# what the loop does there, for sentences that name what the stack sampler saw (the
# warm-up's): its ``iter()`` makes the iterator, which starts the worker processes when
# num_workers > 0; its ``__next__`` waits for the next batch.
DATALOADER_ITER_FRAME = "_get_iterator (dataloader.py)"
DATALOADER_NEXT_FRAME = "__next__ (dataloader.py)"
# torch.nn.Module.__call__'s own frames, as the stack sampler writes a frame
# (``func (file:line)``): a thread sampled inside one is running a model's call
MODULE_CALL_FRAMES = ("_call_impl (module.py:", "_wrapped_call_impl (module.py:")


def is_dataloader_iter(name: str) -> bool:
    return name == DATALOADER_ITER


def is_profiler_step(name: str) -> bool:
    return name.startswith(PROFILER_STEP)


def profiler_step_number(name: str) -> int | None:
    """N of a ``ProfilerStep#N`` annotation; None for other names and for numbers beyond int64
    (a step_num stat cannot hold them)."""
    if name.startswith(PROFILER_STEP):
        tail = name[len(PROFILER_STEP) :]
        if tail.isdigit() and len(tail) <= 18:
            return int(tail)
    return None


def is_dataloader_next(name: str) -> bool:
    return name.startswith(DATALOADER_NEXT)


# A PyTorch run that trains shows it in the ops its profiler records: the autograd engine
# running each backward node (``autograd::engine::evaluate_function: AddmmBackward0``), the
# nodes themselves, the ``*_backward`` ops and torch.optim's annotations. A run traced without
# any of them beside its aten ops (a forward under ``torch.inference_mode()`` / ``no_grad``,
# vLLM, ``generate()``) never trains, and advice about optimizers or gradients is no advice
# for it.
TRAINING_PREFIXES = (
    "autograd::engine::evaluate_function",
    "Optimizer.step#",
    "Optimizer.zero_grad#",
)
_TRAINING_NAME = re.compile(r"^aten::\w+_backward\w*$|^\w+Backward\d+$")


def is_training_name(name: str) -> bool:
    """Whether an event of this name is PyTorch's backward pass or optimizer step."""
    return name.startswith(TRAINING_PREFIXES) or _TRAINING_NAME.match(name) is not None
