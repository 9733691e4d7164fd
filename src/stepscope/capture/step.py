"""`steps(loader)` and `step(step_num)`: mark training steps so every step-based tool finds them.

The loop form that cannot leave the data wait outside the step:

    for step, batch in stepscope.steps(loader):
        train(batch)

``steps`` opens each step before fetching its batch (the fetch is recorded as input, the
loader instrumented by `stepscope.data.instrument` unless it already is), keeps it open while
the loop body runs and closes it when the next iteration begins (or the loop ends, or breaks).

Encoded exactly as ``tf.profiler.experimental.Trace('train', step_num=s, _r=1)``: a host event
named ``train`` whose stats are ``step_num`` (int64) then ``_r`` (int64 1, "root of a step
group"). XProf groups every event nested in it on the same thread into that step; without
``_r`` (Keras 3's ``Profiled batch``) XProf finds no steps. Put the data fetch inside the step
so input time counts towards it:

    for s in range(n):
        with stepscope.step(s):
            batch = next(batches)
            train(batch)
"""

from __future__ import annotations

import operator
from threading import get_ident as _get_ident

from stepscope.capture import annotations as _ann
from stepscope.capture.annotations import trace
from stepscope.errors import StepscopeError

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterable, Iterator
    from typing import Any, TypeVar

    T = TypeVar("T")
    _Filter = filter[tuple[int, Any]]
else:
    _Filter = filter

# XProf counts a step only when an event of non-zero duration nests in its marker on the
# marker's thread (checked with xprof 2.24: an empty marker, or one holding only a 0 ns event,
# is no step). The writer gives each step marker this 1 ns child at its start, so XProf sees
# every step, traced work inside or not; the untraced time stays "All Others" there and in
# stepscope, and op tables leave the anchor out.
# (`vocab.profiler.STEP_ANCHOR`, repeated: `import stepscope` does not load the vocabulary)
STEP_ANCHOR = "stepscope step"
# Set by the session while the Python sampler runs: the threads it samples (ident -> thread)
# and how to add the calling thread. A step looks its thread up there itself rather than
# calling a hook every step: measured between the ops of a PyTorch step (caches cold), each
# Python call a step marker makes costs 0.3-1 µs, points of a 0.4 ms step.
_sampled: dict[int, Any] | None = None
_sample_this_thread: Callable[[], object] = int  # a harmless stand-in while none runs
# Set by the flight recorder: called as a step opens.
_on_step: Callable[[], None] | None = None
# Set by the flight recorder: told of an exception leaving a step (and the step's number).
_on_step_error: Callable[[BaseException, int], None] | None = None
# Set by the flight recorder: called on the loop's thread as a pass of `steps` ends (its
# loader exhausted, a `break`, an exception out of the body): no step of it is open now.
# Without it the recorder took the last step, or the fetch that found the loader empty, as
# open for ever and saved a "hang" `hang_s` after the loop (decision 825). Once per pass.
_on_steps_end: Callable[[], None] | None = None


def set_hooks(
    on_step: Callable[[], None] | None,
    on_error: Callable[[BaseException, int], None] | None,
    on_end: Callable[[], None] | None = None,
) -> None:
    """Install (or, with None, remove) the flight recorder's hooks."""
    global _on_step, _on_step_error, _on_steps_end
    _on_step, _on_step_error, _on_steps_end = on_step, on_error, on_end


def hooks() -> tuple[Callable[[], None] | None, Callable[[BaseException, int], None] | None]:
    return _on_step, _on_step_error


_Span = _ann._Span
_new_span = object.__new__


class _WatchedStep(_ann._Span):
    """A step marker that also tells the recorder about an exception leaving the step."""

    __slots__ = ("step_num",)
    step_num: int

    def __exit__(self, *exc: Any) -> None:
        _ann._Span.__exit__(self, *exc)
        hook = _on_step_error
        if hook is not None and len(exc) > 1 and isinstance(exc[1], Exception):
            hook(exc[1], self.step_num)


def step(step_num: int, name: str = "train") -> Any:
    """A context manager (or decorator) marking step ``step_num``."""
    try:
        number = operator.index(step_num)
    except TypeError:
        raise StepscopeError(
            f"stepscope.step: step_num must be an int, got {type(step_num).__name__}"
        ) from None
    sampled = _sampled
    if sampled is not None and _get_ident() not in sampled:
        _sample_this_thread()
    if _on_step is not None:
        _on_step()
        if _on_step_error is not None and _ann._active:
            span = _WatchedStep(name, {"step_num": number, "_r": 1})
            span.step_num = number
            return span
    if _ann._active:
        # what `trace(name, step_num=number, _r=1)` makes, without its two Python calls
        # (`trace`, `_Span.__init__`): this runs every step of every recorded loop
        marker = _new_span(_Span)
        marker.name = name
        marker.stats = {"step_num": number, "_r": 1}
        marker.buf = None
        return marker
    return trace(name, step_num=number, _r=1)


def steps(
    iterable: Iterable[T], start: int = 0, name: str = "train", loader_name: str | None = None
) -> Iterator[tuple[int, T]]:
    """Yield ``(step_num, batch)`` from ``iterable``, each inside its step marker, the fetch
    of the batch included. ``loader_name`` names the input stage (default: the type's)."""
    from stepscope.capture.data import (
        InstrumentedIterable,
        InstrumentedIterator,
        check_iterable,
        instrument,
    )

    try:
        number = operator.index(start)
    except TypeError:
        raise StepscopeError(
            f"stepscope.steps: start must be an int, got {type(start).__name__}"
        ) from None
    if isinstance(iterable, InstrumentedIterator):
        return _Steps.over(iterable, number, name)  # a pass begun by the caller
    check_iterable(iterable, "stepscope.steps")
    source = (
        iterable
        if isinstance(iterable, InstrumentedIterable)
        else instrument(iterable, loader_name)
    )
    # the pass begins in step 0's fetch, where a `for` over the loader begins it and a script
    # timing from the line before its `for` counts it (decision 635)
    return _Steps.over(source.deferred(), number, name)


class _Steps(_Filter):
    """What `steps` returns: ``next()`` gives the next ``(step_num, batch)`` and each ``for``
    over it (each ``iter()``) gets a `_Pass` of its own, whose end closes the step in progress.

    A ``filter`` with no function: its ``next()`` is C, asking `_steps` directly (no Python
    frame between the loop and the generator, per step or in the sampler's stacks), and every
    item, a 2-tuple, is true, so none is left out."""

    __slots__ = ("_gen", "_open")
    _gen: Generator[tuple[int, Any], None, None]
    # the generator's step in progress, for closing it from outside: (the thread's buffer,
    # start, depth, step_num, name, the pass it was begun under), None while no recorded
    # step is open; then the number of the latest pass (each `for` begins one)
    _open: list[Any]

    @classmethod
    def over(cls, batches: Iterator[Any], number: int, name: str) -> Any:
        open_step: list[Any] = [None, 0]
        gen = _steps(batches, number, name, open_step)
        self = cls(None, gen)
        self._gen, self._open = gen, open_step
        return self

    def __iter__(self) -> Any:
        # A `for` held the generator itself before: left by `break` (or an exception) with
        # the generator also held in a variable, nothing ended the step in progress until the
        # generator was collected, after `stop()`, and the user's last step was lost.
        passing = _Pass(None, self._gen)
        passing._open = self._open
        self._open[1] += 1
        passing._number = self._open[1]
        return passing

    def close(self) -> None:
        """End the step in progress (recorded) and the loop's pass, as a generator's."""
        self._gen.close()


class _Pass(_Filter):
    """One ``for`` over `steps`: held by the loop alone, it is dropped (CPython counts
    references) the moment the loop ends: at its ``break``, as an exception leaves it, or
    after the last batch. Then the step in progress ends, recorded, where the loop ended, as
    a script timing its iterations ends its last; the generator stays open, so a later
    ``for`` over the same steps goes on with the next batch, its step begun at its fetch.

    Only the latest pass ends a step, one begun under it: an older one, held elsewhere (a
    variable, a reference cycle the collector breaks at any moment), dropped in a later
    loop's step, ended that step where it was dropped (decision 723)."""

    __slots__ = ("_number", "_open")
    _open: list[Any]
    _number: int  # its place among the passes (`_Steps._open`)

    def __del__(self) -> None:
        step = self._open[0]
        if step is None or step[5] != self._number:
            return
        end = _ann.perf_counter_ns()
        buf, start, depth, number, name, _ = step
        local = _ann._local
        mine = None if local is None else getattr(local, "buffer", None)
        if mine is None or mine is not buf:
            # not recording any more (a step cut by `stop()` stays unsaved, decision 622),
            # or dropped on another thread (a cycle collected): the generator closes it
            return
        self._open[0] = None
        mine.depth = depth
        mine.events.append((name, start, end, depth, {"step_num": number, "_r": 1}))
        hook = _on_steps_end
        if hook is not None:
            hook()


def _report_full() -> None:
    """The budget's first event over: as `annotations.admit` reports it."""
    tracer = _ann._tracer
    if tracer is not None:
        tracer.budget.report_full()


def _steps(
    batches: Iterator[T], number: int, name: str, open_step: list[Any]
) -> Generator[tuple[int, T], None, None]:
    # The marker is written here directly, not through a span object: this loop runs every
    # step of a job the flight recorder watches, so each call saved is paid back per step.
    # Encoded as `step` encodes it; an exception in the loop body is not seen here (the
    # generator is closed, not thrown into), so there is nothing for the recorder's hook.
    perf_counter_ns = _ann.perf_counter_ns
    # The input stage of an instrumented loader (`stepscope.data`) is recorded here, inline,
    # as its outermost `_run_stage` records it: that was five Python calls a step (the
    # iterator's `__next__`, `_run_stage`, `_stack`, `_child_path`, two `admit`s) at 0.3-1 us
    # each beside real work. Only for the plain class and its outermost stage, once its pass
    # has begun; anything else (a subclass, a stage inside another's fetch, a step not
    # recorded) goes through `next()` as before.
    from stepscope.capture import data as _data  # loaded by `steps`

    inline = type(batches) is _data.InstrumentedIterator
    stage_local = _data._local
    stage_path: str | None = None
    # The previous step's recorded end: the next step's start, as a script timing each
    # iteration from the previous one's end counts it. Timed apart, a pause between the two
    # (a garbage collection, the thread preempted: 8.3 ms seen) fell in no step (decision 637).
    # Step 0 begins as the loop does, its thread's first sample and the recorder's hook in it.
    ended: int | None = perf_counter_ns()
    while True:
        sampled = _sampled
        if sampled is not None and _get_ident() not in sampled:
            _sample_this_thread()
        on_step = _on_step
        if on_step is not None:
            on_step()
        buf = _ann.admit() if _ann._active else None
        depth = 0
        if buf is not None:
            depth = buf.depth
            buf.depth = depth + 1
        start = perf_counter_ns() if ended is None else ended
        ended = None
        try:
            stack = None
            if buf is not None and inline and batches._begin is None:  # type: ignore[attr-defined]
                stack = getattr(stage_local, "stack", None)
            if not stack and stack is not None:
                it: Any = batches
                it._calls += 1
                iter_num = it._calls - 1
                node = it.id
                if stage_path is None:
                    stage_path = _data._child_path("Iterator", it.name)
                stack.append((stage_path, node))
                # `_run_stage`'s two `admit`s: the same budget taken, the thread's buffer
                stage_buf = inner = None
                limit = _ann._max_events
                taken = _ann._take()
                if taken < limit:
                    stage_buf = buf
                    taken = _ann._take()
                    if taken < limit:
                        inner = buf
                if taken == limit:
                    _report_full()
                stage_depth = 0
                if stage_buf is not None:
                    stage_depth = stage_buf.depth
                    stage_buf.depth = stage_depth + (2 if inner is not None else 1)
                stage_start = perf_counter_ns()
                inner_start = perf_counter_ns()
                exhausted = False
                try:
                    batch = next(it._source)
                except StopIteration:
                    exhausted = True
                    raise
                finally:
                    inner_end = perf_counter_ns()
                    stack.pop()
                    if stage_buf is not None:
                        stage_buf.depth = stage_depth
                        stage: dict[str, int] = {"id": node}
                        get_next = {"id": node, "iter_num": iter_num}
                        if exhausted:
                            stage[_data.END_OF_SEQUENCE_STAT] = 1
                            get_next[_data.END_OF_SEQUENCE_STAT] = 1
                        if inner is not None:
                            stage_buf.events.append(
                                (stage_path, inner_start, inner_end, stage_depth + 1, stage)
                            )
                        stage_buf.events.append(
                            (
                                _data.GET_NEXT_EVENT,
                                stage_start,
                                perf_counter_ns(),
                                stage_depth,
                                get_next,
                            )
                        )
            else:
                batch = next(batches)
        except StopIteration:
            # The loader is exhausted: this step never ran, it is not recorded.
            if buf is not None:
                buf.depth = depth
            hook = _on_steps_end
            if hook is not None:
                hook()
            return
        except BaseException:
            if buf is not None:
                buf.depth = depth
                buf.events.append(
                    (name, start, perf_counter_ns(), depth, {"step_num": number, "_r": 1})
                )
            hook = _on_steps_end  # the loader's error ends the pass
            if hook is not None:
                hook()
            raise
        if buf is not None:
            open_step[0] = (buf, start, depth, number, name, open_step[1])
        try:
            yield number, batch
        except GeneratorExit:
            # closed (`_Steps.close()`, or collected) with its step open, on the loop's thread
            # (a step's buffer is its thread's): the pass ends here (a step pays one jump for it).
            hook = _on_steps_end
            if hook is not None and buf is not None and open_step[0] is not None:
                local = _ann._local
                if local is not None and getattr(local, "buffer", None) is buf:
                    hook()
            raise
        finally:
            # None: ended by its loop's end (`_Pass`), the next step begins at its own fetch
            if buf is not None and open_step[0] is not None:
                open_step[0] = None
                ended = perf_counter_ns()
                buf.depth = depth
                buf.events.append((name, start, ended, depth, {"step_num": number, "_r": 1}))
        number += 1
