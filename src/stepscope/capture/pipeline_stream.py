"""The steps of a Hugging Face pipeline fed a generator or a dataset (decision 650).

``pipe(gen())`` or ``pipe(KeyDataset(ds, "text"), batch_size=8)`` returns an iterator at once
and does its work as the caller iterates: transformers' ``PipelineIterator`` hands out one
item per ``next()``, and the ``next()`` that needs a new model batch fetches the batch's inputs
(their pre-processing, in a DataLoader), runs the model (``Pipeline.forward``: its forward
pass or ``generate()``) and post-processes the first item; the batch's other items are
post-processed by the ``next()`` calls after it. The request a user serves is that batch (one
item at batch size 1), so each is one step: from the start of the ``next()`` that ran the
model to the end of the ``next()`` that handed out the batch's last item (the caller's own
use of the items between them is in it, as a training step holds the loop's body). A batch
is known to have ended only when a later ``next()`` runs the model again, the iterator ends,
raises, or the session stops, so its event is written then, into the buffer of the thread
that began it, as the annotation `HF_STREAM_EVENT` with stats ``pipeline`` (the pipeline's
class), ``items`` and, for XProf, ``_r`` and ``step_num``.

Only the outermost ``next()`` on a thread counts: the iterators inside (the model's, the
pre-processing's) and those a pipeline called on a list runs inside its own call are part
of something already recorded. If no model call is seen in a ``next()`` that begins a batch
(a pipeline whose ``forward`` is its own and does not call the base's), each item is a step.
"""

from __future__ import annotations

import weakref
from time import perf_counter_ns

from stepscope.capture import annotations as _annotations
from stepscope.capture import fetch_probe
from stepscope.vocab.serving import HF_STREAM_EVENT

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class _Batch:
    """A model batch whose items are being handed out."""

    __slots__ = ("buf", "depth", "end", "items", "ref", "start", "stats")

    def __init__(self, ref: Any, buf: Any, start: int, end: int, stats: dict[str, Any]) -> None:
        self.ref, self.buf, self.depth = ref, buf, buf.depth
        self.start, self.end, self.items, self.stats = start, end, 1, stats

    def write(self) -> None:
        self.stats["items"] = self.items
        self.buf.events.append((HF_STREAM_EVENT, self.start, self.end, self.depth, self.stats))


# per stream (the iterator's id): its batch not yet known to be over
_pending: dict[int, _Batch] = {}
# per stream not yet iterated: when the pipeline's call that returned it began. That call's
# own work (its look at the first input, its DataLoader made) and the loop's ``iter()`` are
# the first batch's: the script timing its first item from the call counts them too
_called: dict[int, tuple[Any, int]] = {}


def called(stream: Any, start: int | None) -> None:
    """A pipeline's call that began at ``start`` returned ``stream``."""
    if start is not None:
        _called[id(stream)] = (_ref(stream), start)


def _flush(key: int) -> None:
    batch = _pending.pop(key, None)
    if batch is not None:
        batch.write()


def flush_all() -> None:
    """Write every batch still open: a stream left mid-batch (the loop broke off, or the
    session stops) holds the items handed out so far."""
    for key in list(_pending):
        _flush(key)
    _called.clear()


def _pipeline_name(stream: Any) -> str:
    # transformers' final iterator applies the pipeline's bound ``postprocess``
    owner = getattr(getattr(stream, "infer", None), "__self__", None)
    return type(owner if owner is not None else stream).__name__


def _ref(stream: Any) -> Any:
    try:
        return weakref.ref(stream)
    except TypeError:  # a class with __slots__ and no __weakref__: the id alone
        return None


def wrap_forward(original: Any, local: Any) -> Callable[..., Any]:
    """``Pipeline.forward`` counting its calls on the calling thread (``local.forwards``)."""

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        local.forwards = getattr(local, "forwards", 0) + 1
        return original(self, *args, **kwargs)

    return forward


def wrap_next(original: Any, local: Any, number: Callable[[], int]) -> Callable[..., Any]:
    """``PipelineIterator.__next__`` grouping a stream's items into its model batches."""

    def next_item(self: Any) -> Any:
        inside: int = getattr(local, "open", 0)  # a request or a stream's next() is open
        if inside or not _annotations._active:
            return original(self)
        key = id(self)
        ran: int = getattr(local, "forwards", 0)
        local.open = 1
        start = perf_counter_ns()
        try:
            item = original(self)
        except BaseException:  # StopIteration at the end, or an error: the batch so far
            local.open = 0
            _flush(key)
            raise
        end = perf_counter_ns()
        local.open = 0
        after: int = getattr(local, "forwards", 0)
        began = after != ran
        batch = _pending.get(key)
        if batch is not None and batch.ref is not None and batch.ref() is not self:
            _flush(key)  # a stream gone whose id is reused
            batch = None
        if batch is not None and not began:
            batch.end, batch.items = end, batch.items + 1
            return item
        _flush(key)
        buf = _annotations.admit()
        if buf is None:  # the event budget is spent
            return item
        call = _called.pop(key, None)
        if call is not None and (call[0] is None or call[0]() is self):
            start = min(start, call[1])
        # a step root for XProf, numbered as the session's requests are (decision 651)
        stats = {"pipeline": _pipeline_name(self), "_r": 1, "step_num": number()}
        batch = _Batch(_ref(self), buf, start, end, stats)
        if began:
            _pending[key] = batch
        else:  # no model call seen: the item alone
            batch.write()
        return item

    code = getattr(original, "__code__", None)
    if code is not None:
        fetch_probe.WRAPPER_NAMES[next_item.__code__] = fetch_probe.function_name(code)
    return next_item
