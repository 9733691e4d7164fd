"""Input-pipeline instrumentation for any framework, in tf.data's event conventions.

    loader = stepscope.data.instrument(DataLoader(...), name="Loader")
    batches = stepscope.data.instrument(batch(stepscope.data.instrument(gen, name="Map")),
                                        name="Batch")

    @stepscope.data.stage("Decode")       # a user function as a pipeline stage
    def decode(record): ...

Each ``next()`` of an instrumented iterable is an event named like tf.data's iterators:
``Iterator::<name>`` for the outermost, ``Iterator::<parent path>::<name>`` for a stage
reached while another one's ``next()`` is running on the same thread (so nesting follows
the real call structure, e.g. ``Iterator::Batch::Map``). Stats ``id`` (this iterator's id)
and ``parent_id`` (the enclosing one's) let the input-pipeline analyzer and the tf.data
bottleneck analysis rebuild the tree. The outermost call is wrapped, as in TensorFlow, in
``IteratorGetNextOp::DoCompute`` (stats ``id``, ``iter_num``): the event XProf and stepscope
count as the step waiting for input.

When no session records, ``next()`` costs one extra Python call and a flag check.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from stepscope.capture import annotations as _ann
from stepscope.capture import loader_workers
from stepscope.errors import StepscopeError
from stepscope.vocab.profiler import END_OF_SEQUENCE_STAT
from stepscope.vocab.tensorflow import GET_NEXT_KERNELS

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

GET_NEXT_EVENT = GET_NEXT_KERNELS[0]

# Ids unique within the process and (by the pid in the high bits) across a job's processes.
_ids = itertools.count(1)
_local = threading.local()  # .stack: [(path, id)] of the stages running on this thread
_paths: dict[tuple[str, str], str] = {}


def _new_id() -> int:
    return ((os.getpid() & 0x7FFFFFFF) << 32) | (next(_ids) & 0xFFFFFFFF)


def _stack() -> list[tuple[str, int]]:
    try:
        return _local.stack
    except AttributeError:
        _local.stack = []
        return _local.stack


def _child_path(parent: str, name: str) -> str:
    key = (parent, name)
    path = _paths.get(key)
    if path is None:
        path = _paths[key] = f"{parent}::{name}"
    return path


def _run_stage(
    name: str, node_id: int, iter_num: int, func: Callable[..., T], *args: Any, **kwargs: Any
) -> T:
    """Call ``func`` as one step of the stage ``name``; records the events around it."""
    stack = _stack()
    if stack:
        parent_path, parent_id = stack[-1]
        path = _child_path(parent_path, name)
        stack.append((path, node_id))
        try:
            with _ann._Span(path, {"id": node_id, "parent_id": parent_id}):
                return func(*args, **kwargs)
        finally:
            stack.pop()
    path = _child_path("Iterator", name)
    stack.append((path, node_id))
    # The outermost stage runs once per step: its two events are written here directly
    # rather than through two span objects (a third of the input instrumentation's cost,
    # which the flight recorder pays on every step).
    buf = _ann.admit()
    inner = _ann.admit() if buf is not None else None
    depth = 0
    if buf is not None:
        depth = buf.depth
        buf.depth = depth + (2 if inner is not None else 1)
    start = _ann.perf_counter_ns()
    start_inner = _ann.perf_counter_ns()  # the stage nests strictly inside the get-next event
    ended = False
    try:
        return func(*args, **kwargs)
    except StopIteration:
        ended = True  # the pass is over: this wait fed no batch (decision 636)
        raise
    finally:
        end_inner = _ann.perf_counter_ns()
        stack.pop()
        if buf is not None:
            buf.depth = depth
            stage: dict[str, int] = {"id": node_id}
            get_next = {"id": node_id, "iter_num": iter_num}
            if ended:
                stage[END_OF_SEQUENCE_STAT] = get_next[END_OF_SEQUENCE_STAT] = 1
            if inner is not None:
                buf.events.append((path, start_inner, end_inner, depth + 1, stage))
            buf.events.append((GET_NEXT_EVENT, start, _ann.perf_counter_ns(), depth, get_next))


class InstrumentedIterator(Iterator[T]):
    """One pass over an instrumented iterable. Given ``begin`` (and no ``source``), the pass
    begins at the first ``next()``, inside its get-next event (`InstrumentedIterable.deferred`)."""

    def __init__(
        self,
        source: Iterator[T] | None,
        name: str,
        node_id: int,
        begin: Callable[[], Iterator[T]] | None = None,
    ) -> None:
        self._source = source
        self._begin = begin
        self.name = name
        self.id = node_id
        self._calls = 0

    def __iter__(self) -> InstrumentedIterator[T]:
        return self

    def __next__(self) -> T:
        if self._begin is not None:
            return self._first()
        if not _ann._active:
            return next(self._source)  # type: ignore[arg-type]
        self._calls += 1
        return _run_stage(self.name, self.id, self._calls - 1, next, self._source)

    def _first(self) -> T:
        if not _ann._active:
            return self._begin_then_next()
        self._calls += 1
        return _run_stage(self.name, self.id, self._calls - 1, self._begin_then_next)

    def _begin_then_next(self) -> T:
        begin, self._begin = self._begin, None
        assert begin is not None
        self._source = begin()
        return next(self._source)

    def __getattr__(self, attr: str) -> Any:
        source = self.__dict__.get("_source")
        if source is None:
            raise AttributeError(attr)
        return getattr(source, attr)


class InstrumentedIterable(Generic[T]):
    """Wraps a list, a generator, a PyTorch DataLoader...; attributes pass through."""

    def __init__(self, source: Iterable[T], name: str) -> None:
        self._source = source
        self.name = name
        self.id = _new_id()
        self._default: InstrumentedIterator[T] | None = None

    def __iter__(self) -> InstrumentedIterator[T]:
        return InstrumentedIterator(self._begin(), self.name, self.id)

    def deferred(self) -> InstrumentedIterator[T]:
        """A pass that begins (the source's ``iter()``: a DataLoader starting its workers)
        at its first ``next()``, inside that call's get-next event: what a ``for`` over the
        source does at its first step, the wait a script timing from before its ``for``
        counts as fetching the first batch (decision 635). ``iter()`` itself begins the pass
        at once, as the user asked (a DataLoader's workers start making batches then)."""
        return InstrumentedIterator(None, self.name, self.id, begin=self._begin)

    def _begin(self) -> Iterator[T]:
        source = self._source
        if _ann._active and loader_workers.armed() and loader_workers.is_worker_loader(source):
            # the worker processes this pass starts record their batches
            with loader_workers.capturing(source, self.name, self.id):
                return iter(source)
        return iter(source)

    def __next__(self) -> T:
        """So a wrapped generator can also be driven with ``next()`` directly."""
        if self._default is None:
            self._default = iter(self)
        return next(self._default)

    def __len__(self) -> int:
        return len(self._source)  # type: ignore[arg-type]

    def __getattr__(self, attr: str) -> Any:
        source = self.__dict__.get("_source")  # absent while unpickling: no recursion
        if source is None:
            raise AttributeError(attr)
        return getattr(source, attr)

    def __repr__(self) -> str:
        return f"instrument({self._source!r}, name={self.name!r})"


def _default_name(source: object) -> str:
    kind = type(source).__name__
    return {"list": "List", "tuple": "Tuple", "generator": "Generator"}.get(kind, kind)


def check_iterable(obj: object, who: str) -> None:
    """Raises a one-line error when ``iter(obj)`` would fail. Checked when the loop is
    wrapped: the pass itself begins at the first step (`deferred`), where the failure was a
    TypeError from inside stepscope. Asked of the type, as ``iter()`` does, so nothing of the
    object runs (a DataLoader's ``__iter__`` starts its workers)."""
    kind = type(obj)
    if getattr(kind, "__iter__", None) is None and not hasattr(kind, "__getitem__"):
        raise StepscopeError(
            f"{who}: the batches must be iterable (the loader, dataset or list the loop takes "
            f"them from), got {kind.__name__}"
        )


def instrument(iterable: Iterable[T], name: str | None = None) -> InstrumentedIterable[T]:
    """Record each ``next()`` on ``iterable`` as an input-pipeline stage named ``name``."""
    check_iterable(iterable, "stepscope.data.instrument")
    label = name or _default_name(iterable)
    if "::" in label:
        raise ValueError(f"stepscope.data.instrument: name {label!r} must not contain '::'")
    return InstrumentedIterable(iterable, label)


def stage(name: str) -> Callable[[F], F]:
    """Decorator: each call of the function is a pipeline stage ``name`` (e.g. "Map")."""
    if "::" in name:
        raise ValueError(f"stepscope.data.stage: name {name!r} must not contain '::'")

    def decorate(func: F) -> F:
        node_id = _new_id()
        calls = itertools.count()

        @functools.wraps(func)
        def staged(*args: Any, **kwargs: Any) -> Any:
            if not _ann._active:
                return func(*args, **kwargs)
            return _run_stage(name, node_id, next(calls), func, *args, **kwargs)

        return staged  # type: ignore[return-value]

    return decorate
