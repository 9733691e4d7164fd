"""Each Hugging Face ``generate()`` and ``pipeline(...)`` call, timed while a session records
(decisions 560, 616).

A loop of ``model.generate(...)`` under `stepscope.start` / `stop` is a serving loop whose
step is the call (decision 540), but nothing in its profile said where a call began or
ended: the PyTorch bridge records torch's ops (no Python frames: ``with_stack`` is off) and
the stack sampler, at 25 Hz, sees a 40 ms call once or not at all. The steps were then
inferred from the ops' repeats and ``generate``'s own set-up before its first forward pass
(special tokens, the cache, position ids: 8.5 ms of a 54 ms call on a tiny GPT-2) read as the
batch being built, "input". So while a session records, `install` wraps
``GenerationMixin.generate`` and each loaded subclass's own ``generate`` (a model that
overrides it, calling ``super().generate`` or not): each call is an annotation
`vocab.serving.HF_GENERATE_EVENT` with the model's class as stat ``model``, outside the
decorators transformers puts on the method (so it spans what the user's call spans); a call
nested in another (an override calling the base) is part of the outer one. A
``pipeline(...)`` object's call is the request its user times: its tokenizing, its model's
``generate()`` (or forward pass) and its decoding; ``Pipeline.__call__`` and each loaded
subclass's own are wrapped alike (`HF_PIPELINE_EVENT`, stat ``pipeline``), and a call that
returns an iterator (a generator or dataset of inputs: the work runs as it is iterated) is not
recorded: each model batch that iterator hands out is a step then (`pipeline_stream`, which
wraps transformers' ``PipelineIterator.__next__`` and counts ``Pipeline.forward``'s calls,
decision 650), the call's own work in the first. The outermost request on a thread carries
TensorFlow's step-root stats, ``_r`` and ``step_num`` (from 0, the session's count), so XProf
groups the same steps from it (decision 651). `uninstall` puts
the methods back at `stop` (unless something wrapped them since: then ours stays, recording
nothing while no session records). transformers is never imported here: a program that
imports it after recording starts (``stepscope.start()`` at the script's top), or whose
model's module loads later (``AutoModel``, ``pipeline(...)`` load it on first use), has each
of transformers' modules hooked as it loads (`import_watch`, decision 615).
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from stepscope.capture import annotations as _annotations
from stepscope.capture import import_watch
from stepscope.capture import pipeline_stream as _stream
from stepscope.vocab.serving import (
    HF_GENERATE_EVENT,
    HF_GENERATE_MODULE,
    HF_PACKAGE,
    HF_PIPELINE_EVENT,
    HF_PIPELINE_MODULE,
    HF_STREAM_MODULE,
)

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any


@dataclass(frozen=True)
class _Target:
    """A base class of transformers whose method, on it and each subclass, is a request."""

    module: str  # the module that defines the base
    base: str  # the base class's name
    method: str  # the method wrapped
    event: str  # the annotation each call is
    stat: str  # the stat naming the instance's class


_TARGETS = (
    _Target(HF_GENERATE_MODULE, "GenerationMixin", "generate", HF_GENERATE_EVENT, "model"),
    _Target(HF_PIPELINE_MODULE, "Pipeline", "__call__", HF_PIPELINE_EVENT, "pipeline"),
    # a streamed pipeline's items (`pipeline_stream`): the iterator it returns, and its model
    # call, whose runs tell where each model batch begins
    _Target(HF_STREAM_MODULE, "PipelineIterator", "__next__", "", "pipeline"),
    _Target(HF_PIPELINE_MODULE, "Pipeline", "forward", "", ""),
)
# a module defining a class with one of these is walked as it loads: a model's (generate) or
# a pipeline's (__call__); the stream's iterators are pt_utils' own, every model has a forward
_REWALK = frozenset(("generate", "__call__"))

# transformers' modules imported while recording are hooked as they load (one at a time)
_watcher: import_watch.Watcher | None = None
# per thread: how many of our requests are open (``open``), model calls made (``forwards``)
_local = threading.local()
# the step numbers of a session's requests, from 0 (XProf's step_num)
_numbers: Iterator[int] = itertools.count()


def _classes(target: _Target) -> list[type]:
    """The target's base and every subclass loaded now, each once."""
    module = sys.modules.get(target.module)
    base = getattr(module, target.base, None) if module is not None else None
    if not isinstance(base, type):
        return []
    seen: dict[type, None] = {}
    pending = [base]
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen[cls] = None
        try:
            pending.extend(cls.__subclasses__())
        except TypeError:  # a metaclass whose __subclasses__ needs an instance
            continue
    return list(seen)


def _wrap(original: Any, target: _Target) -> Any:
    if target.method == "__next__":
        call = _stream.wrap_next(original, _local, _next_number)
    elif target.method == "forward":
        call = _stream.wrap_forward(original, _local)
    else:
        call = _wrap_call(original, target)
    call.__wrapped__ = original  # type: ignore[attr-defined]
    call.__doc__ = getattr(original, "__doc__", None)
    call.__name__ = target.method
    call.__qualname__ = getattr(original, "__qualname__", target.method)
    call._stepscope = True  # type: ignore[attr-defined]
    return call


def _wrap_call(original: Any, target: _Target) -> Any:
    event, stat = target.event, target.stat

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _annotations._active:
            return original(self, *args, **kwargs)
        # the outermost request on its thread is a step root for XProf (`_r`, numbered
        # in the order the calls end), as TensorFlow's Trace("train", step_num=n, _r=1); a
        # call inside another (generate() in a pipeline's call) is part of it (decision 651)
        outermost = not getattr(_local, "open", 0)
        span = _annotations.trace(event, **{stat: type(self).__name__})
        _local.open = getattr(_local, "open", 0) + 1
        span.__enter__()
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            _local.open -= 1
            span.__exit__(None, None, None)
            raise
        _local.open -= 1
        if isinstance(result, Iterator) and hasattr(span, "cancel"):
            span.cancel()  # lazy: its work runs as the caller iterates, outside this call
            _stream.called(result, getattr(span, "start", None))  # in the first batch
        else:
            stats = getattr(span, "stats", None)  # None: the session stopped meanwhile
            if outermost and stats is not None:
                stats.update(_r=1, step_num=_next_number())
            span.__exit__(None, None, None)
        return result

    return call


def _next_number() -> int:
    return next(_numbers)


def install() -> int:
    """Wrap each loaded class's own method of each target (idempotent), and those of the
    modules of transformers imported from now until `uninstall`; how many are wrapped now."""
    global _watcher, _numbers
    if _watcher is None:
        _watcher = import_watch.watch(HF_PACKAGE, _on_import)
        _numbers = itertools.count()
    return _wrap_loaded()


def _on_import(module: ModuleType) -> None:
    """A module of transformers has just run: the classes it defined are hooked too. Most of
    its modules (tokenizers, configurations, utilities) define no such class and cost a look
    at their names; a model's or a pipeline's module is walked (decision 615)."""
    if module.__name__ in (t.module for t in _TARGETS) or any(
        isinstance(v, type) and not _REWALK.isdisjoint(v.__dict__) for v in vars(module).values()
    ):
        _wrap_loaded()


def _wrap_loaded() -> int:
    wrapped = 0
    for target in _TARGETS:
        for cls in _classes(target):
            current = cls.__dict__.get(target.method)
            if not callable(current) or getattr(current, "_stepscope", False):
                continue
            try:
                setattr(cls, target.method, _wrap(current, target))
            except (AttributeError, TypeError):  # a class that refuses new attributes
                continue
            wrapped += 1
    return wrapped


def uninstall() -> None:
    """The original methods back, where ours is still the one there; no more import hook."""
    global _watcher
    _stream.flush_all()  # a stream left mid-batch at the stop: its batch so far
    if _watcher is not None:
        import_watch.unwatch(_watcher)
        _watcher = None
    for target in _TARGETS:
        for cls in _classes(target):
            current = cls.__dict__.get(target.method)
            if current is not None and getattr(current, "_stepscope", False):
                try:
                    setattr(cls, target.method, current.__wrapped__)
                except (AttributeError, TypeError):
                    continue
