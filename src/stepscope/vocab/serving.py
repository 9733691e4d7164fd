"""The calls inference frameworks make once per batch they serve: their own steps.

A serving or generation loop has no ``ProfilerStep#N`` and no ``_r`` marker, and a trace of a
few engine steps (one, often: vLLM's profiler traces one ``execute_model``) holds nothing that
repeats at the top level. The framework's own entry point is the step:

- vLLM: the worker's / model runner's ``execute_model``, once per engine step (the batch the
  scheduler formed, prefills and decodes together: its forward pass and sampling); vLLM's
  profiler annotation of that call, ``execute_context_<n>(<tokens>)_generation_<n>(<tokens>)``.
- Hugging Face transformers: ``GenerationMixin.generate``, once per request batch (its
  prefill and one forward pass per generated token); a ``pipeline(...)`` object's call, once
  per request batch too, around its tokenizing, its model's call (``generate()`` or a
  forward pass) and its decoding: a ``generate()`` inside it is part of it.

They are Python calls: Kineto records them as ``python_function`` events named
``<path>(<line>): <function>`` (``with_stack=True``), stepscope's Python tracer as
``$<file>:<line> <qualname>``; stepscope's own capture marks each ``generate()`` and
``pipeline(...)`` call with an annotation (`HF_GENERATE_EVENT`, `HF_PIPELINE_EVENT`), whatever
else it records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# stepscope's capture marks each ``generate()`` call with this annotation
# (`capture.generate_hook`, decision 560): the module that defines the method, and the name.
HF_GENERATE_MODULE = "transformers.generation.utils"
HF_GENERATE_EVENT = "GenerationMixin.generate"
# and each call of a ``pipeline(...)`` object, around its tokenizing, its model's call and
# its decoding (decision 616): the request is the whole call, generate() a part of it
HF_PIPELINE_MODULE = "transformers.pipelines.base"
HF_PIPELINE_EVENT = "Pipeline.__call__"
# and each batch a pipeline fed a generator or a dataset hands out as the caller iterates
# (decision 650): the module of the iterator transformers returns then, and of the pipeline
HF_STREAM_MODULE = "transformers.pipelines.pt_utils"
HF_STREAM_EVENT = "Pipeline batch"
# the package whose modules, imported while a session records, are hooked as they load
HF_PACKAGE = "transformers"

_KINETO_CALL = re.compile(r"^(?P<path>.+)\(\d+\): (?P<function>[\w.<>]+)$")
_TRACER_CALL = re.compile(r"^\$(?P<path>.+):\d+ (?P<function>[\w.<>]+)$")


@dataclass(frozen=True)
class ServingCall:
    """One framework's per-batch call: how to know it and what one of it is."""

    framework: str  # for people: "vLLM"
    function: str  # the function's name (the last part of a qualname)
    paths: tuple[str, ...]  # a Kineto path holds one of these (the package's directory)
    qualnames: tuple[str, ...]  # or stepscope's tracer names one of these qualnames
    annotation: str  # or a profiler annotation starts with this ("" for none)
    unit: str  # what one call is, for people ("engine step"; "s" makes it plural)
    holds: str  # what one call holds
    units: str = ""  # the plural, where "s" does not make it


SERVING_CALLS = (
    ServingCall(
        "vLLM",
        "execute_model",
        ("vllm/",),
        ("GPUModelRunner.execute_model", "Worker.execute_model", "ModelRunner.execute_model"),
        "execute_context_",
        "engine step",
        "execute_model: the batch the scheduler formed, prefills and decodes together, its "
        "forward pass and sampling",
    ),
    ServingCall(
        "Hugging Face",
        "generate",
        ("transformers/generation/",),
        ("GenerationMixin.generate",),
        HF_GENERATE_EVENT,
        "generate() call",
        "one request batch: its prefill and one forward pass per generated token",
    ),
    ServingCall(
        "Hugging Face",
        "__call__",
        ("transformers/pipelines/",),
        (HF_PIPELINE_EVENT,),
        HF_PIPELINE_EVENT,
        "pipeline() call",
        "one request batch: its pre-processing (tokenizing), the model's forward passes or "
        "generate(), and its post-processing (decoding)",
    ),
    # a pipeline fed a generator or a dataset returns an iterator at once; the items it hands
    # out are its work: one model batch each step, its items' pre- and post-processing in it
    ServingCall(
        "Hugging Face",
        "__next__",
        ("transformers/pipelines/pt_utils",),
        ("PipelineIterator.__next__", "PipelinePackIterator.__next__"),
        HF_STREAM_EVENT,
        "streamed pipeline() batch",
        "one model batch of a pipeline fed a generator or a dataset: its inputs' "
        "pre-processing, the model's forward passes or generate(), and the post-processing "
        "of each item handed out",
        "streamed pipeline() batches",
    ),
)


# the serving calls' own annotations: a Kineto import makes the host's copy a step root for
# XProf (`_r`, decision 617), as it does a ProfilerStep#N
SERVING_ANNOTATIONS = tuple(c.annotation for c in SERVING_CALLS if c.annotation)


def is_serving_annotation(name: str) -> bool:
    return name.startswith(SERVING_ANNOTATIONS)


def python_call(name: str) -> tuple[str, str] | None:
    """(path, function) of a Python call event's name, Kineto's or stepscope's tracer's (the
    tracer's function is a qualname); None for other names."""
    found = _KINETO_CALL.match(name) or _TRACER_CALL.match(name)
    return (found["path"], found["function"]) if found else None


def serving_call(name: str) -> ServingCall | None:
    """The serving call an event of this name is, or None."""
    if not name.endswith(tuple(c.function for c in SERVING_CALLS)) and not name.startswith(
        tuple(c.annotation for c in SERVING_CALLS if c.annotation)
    ):
        return None
    call = python_call(name)
    for kind in SERVING_CALLS:
        if kind.annotation and name.startswith(kind.annotation):
            return kind
        if call is None:
            continue
        path, function = call
        # the tracer's qualname of a subclass's own method ends in the function's name
        # (``TextGenerationPipeline.__call__``), Kineto's is the name alone
        if function in kind.qualnames or (
            function.rsplit(".", 1)[-1] == kind.function and any(p in path for p in kind.paths)
        ):
            return kind
    return None


# What to do about input in a run that never trains (`stats.device.never_trains`): its batches
# are requests, and the host work before the model (tokenizing, decoding, resizing,
# normalizing) overlaps the model's work when it runs ahead of it. Not a DataLoader over a
# training set, nor tf.data in a PyTorch run.
INFERENCE_INPUT_FIX = (
    "prepare the next requests' inputs while the model serves the current ones: the "
    "pre-processing (tokenizing, decoding, resizing, normalizing) in worker processes or a "
    "background thread that fills a queue, or on the device"
)
# The frameworks whose runs can be told they never train (`stats.device.never_trains`):
# PyTorch by its ops, JAX by its programs and samples (decision 561).
SERVING_FRAMEWORKS = ("pytorch", "jax")
