"""`trace(name, **metadata)`: annotate a block or a function, as TensorFlow's `Trace` does.

    with stepscope.trace("load", shard=3):      # a block
        ...
    @stepscope.trace("preprocess")              # a function (checked at each call)
    def preprocess(x): ...

Metadata become stats of the event, encoded as TensorFlow encodes ``Trace(name, **kw)``
(``name#k=v,...#``): ints are int64 stats, floats doubles, everything else a string (a
``ref_value``, as TensorFlow interns annotation strings).

Cost when no session records (the common case, so it must be negligible): one module-global
check, then a shared no-op object. The no-op's ``__enter__``/``__exit__`` are a C builtin
(``"".format``, which accepts any arguments and returns the falsy ``""``), so a ``with`` block
runs no Python-level call besides `trace` itself; ``with trace(..) as x`` binds ``x = ""``
when inactive. The no-op must remember its name for decorator use, so there is one per name
(cached); calls with metadata build a small tuple instead.
"""

from __future__ import annotations

import functools
from time import perf_counter_ns

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from stepscope.capture.host_tracer import HostTracer

    F = TypeVar("F", bound=Callable[..., Any])

# Set together by `activate`/`deactivate` (the session holds its control lock meanwhile).
_active = False
_tracer: HostTracer | None = None
_take: Callable[[], int] = int  # budget counter while active; a harmless stand-in otherwise
_max_events = 0
_local: Any = None

_NOOP_CACHE_LIMIT = 4096  # names are usually a few literals; f-strings must not grow it forever
_noop_by_name: dict[str, _Inactive] = {}


def activate(tracer: HostTracer) -> None:
    """Start recording annotations into ``tracer`` (called by the session)."""
    global _active, _tracer, _take, _max_events, _local
    _tracer = tracer
    _take = tracer.budget.take
    _max_events = tracer.budget.max_events
    _local = tracer.local
    _active = True


def deactivate() -> None:
    """Stop recording; spans still open are not recorded (as TensorFlow drops open TraceMes)."""
    global _active, _tracer, _local
    _active = False
    _tracer = None
    _local = None


def is_active() -> bool:
    return _active


def _decorate(func: F, name: str, metadata: dict[str, Any]) -> F:
    """Wrap ``func`` so each call is a span while a session records (checked per call)."""

    @functools.wraps(func)
    def traced(*args: Any, **kwargs: Any) -> Any:
        if not _active:
            return func(*args, **kwargs)
        with _Span(name, metadata):
            return func(*args, **kwargs)

    return traced  # type: ignore[return-value]


class _Inactive(tuple):
    """(name, metadata) of a `trace` made while nothing records: a no-op context manager."""

    __slots__ = ()
    __enter__ = "".format  # C-level no-ops, see the module docstring
    __exit__ = "".format

    def __call__(self, func: F) -> F:
        return _decorate(func, self[0], self[1])


def admit() -> Any:
    """The calling thread's buffer if the budget takes one more event, else None: for a
    caller that writes its event tuple itself (one call instead of a span object)."""
    n = _take()
    if n < _max_events:
        try:
            return _local.buffer
        except AttributeError:
            return _tracer.new_buffer() if _tracer is not None else None
    if n == _max_events and _tracer is not None:
        _tracer.budget.report_full()
    return None


class _Span:
    """One recorded span: opened by ``__enter__``, appended to the thread's buffer on exit."""

    __slots__ = ("buf", "depth", "name", "start", "stats")

    def __init__(self, name: str, stats: dict[str, Any] | None) -> None:
        self.name = name
        self.stats = stats or None
        self.buf: Any = None

    def __enter__(self) -> _Span:
        n = _take()
        if n < _max_events:
            try:
                buf = _local.buffer
            except AttributeError:
                buf = _tracer.new_buffer() if _tracer is not None else None
            if buf is not None:
                self.buf = buf
                self.depth = buf.depth
                buf.depth += 1
        elif n == _max_events and _tracer is not None:
            _tracer.budget.report_full()
        self.start = perf_counter_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        end = perf_counter_ns()
        buf = self.buf
        if buf is not None:
            buf.depth -= 1
            buf.events.append((self.name, self.start, end, self.depth, self.stats))

    def exit_at(self, end: int) -> None:
        """Close at ``end`` (perf_counter_ns), read by the caller: a step marker whose end is
        the next step's start (`callbacks.steps.StepMarker`)."""
        buf = self.buf
        if buf is not None:
            buf.depth -= 1
            buf.events.append((self.name, self.start, end, self.depth, self.stats))

    def cancel(self) -> None:
        """Close without recording (a step that never ran)."""
        buf = self.buf
        if buf is not None:
            buf.depth -= 1
            self.buf = None

    def __call__(self, func: F) -> F:
        return _decorate(func, self.name, self.stats or {})


def trace(name: str, /, **metadata: Any) -> Any:
    """A span named ``name`` with ``metadata`` as stats: context manager and decorator."""
    if _active:
        return _Span(name, metadata)
    if metadata:
        return _Inactive((name, metadata))
    noop = _noop_by_name.get(name)
    if noop is None:
        noop = _Inactive((name, {}))
        if len(_noop_by_name) < _NOOP_CACHE_LIMIT:
            _noop_by_name[name] = noop
    return noop
