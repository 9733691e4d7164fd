"""The steps of an unmarked DataLoader loop, found by the flight recorder (decision 815).

The recorder's slow-step and hang triggers read step markers, and a plain PyTorch loop
``for x, y in DataLoader(...):`` writes none: its 445 ms checkpoint step among 4.5 ms ones
was never saved (decision 731). The analysis finds such a loop's steps at its batches'
fetches (each step begins where its batch is fetched, decisions 606-607), so the recorder
does the same: while no step is marked, it wraps torch's ``_BaseDataLoaderIter.__next__``
(when ``torch.utils.data.dataloader`` is loaded, now or later: torch is never imported here)
and each fetch of the step loader opens a step, closing the one before it: step ``k`` runs
from the start of batch ``k``'s fetch to the start of batch ``k + 1``'s, as
`stepscope.steps(loader)` marks it. The marker is that of `stepscope.steps` (``train`` with
``step_num`` and ``_r``), and the fetch is recorded as `stepscope.data` records an
instrumented one (``IteratorGetNextOp::DoCompute`` around ``Iterator::DataLoader``), so a
save reads as the same loop marked would.

Which fetches are steps:
- only on the main thread and the thread that started the recorder (a background thread
  filling a queue from the loader is no training loop);
- the step loader is the iterator whose fetch opened the last step. Another iterator's
  fetches while its pass goes on (neither exhausted nor collected) are inside the step: an
  evaluation run every N steps, a second loader. A fetch made inside another fetch (a loader
  whose dataset reads another loader) is the outer fetch's work;
- once a fetch with gradients on (``torch.is_grad_enabled()``) opened a step on the thread,
  a fetch with them off from another iterator is an evaluation between training passes, no
  step; a fetch with them on takes over from a step loader fetched with them off (a
  sanity-check validation before the training);
- the pass's end (``StopIteration``) ends its last step there; an iterator collected with
  a step open (a ``break``) ends it where it was dropped.

Marked steps win: the first marked step (`stepscope.step`, `stepscope.steps`, a framework
callback) stands the hook down for good. The hook never breaks the loop: an exception in
its own part is counted (`FetchSteps.errors`) and the fetch goes on. Not covered: a plain
generator or ``iter()`` loop (nothing cheap to hook: the warning of decision 731 stays), and
gradient accumulation (each batch is a step here, while the analysis counts an optimizer
step's batches as one).
"""

from __future__ import annotations

import os
import sys
import threading
import weakref

from stepscope.capture import annotations as _ann
from stepscope.capture import import_watch
from stepscope.capture.data import GET_NEXT_EVENT, _new_id, _stack
from stepscope.capture.step import hooks as step_hooks
from stepscope.capture.step import set_hooks as set_step_hooks
from stepscope.vocab.profiler import END_OF_SEQUENCE_STAT

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

DATALOADER_MODULE = "torch.utils.data.dataloader"
ITERATOR_CLASS = "_BaseDataLoaderIter"
STEP_NAME = "train"  # as `stepscope.steps` names its steps
STAGE_NAME = "Iterator::DataLoader"  # as `stepscope.data.instrument(DataLoader)` names it
# A save's marker (``steps_from``) when the hook made its steps: the report says so
LOADER_FETCHES = "dataloader_fetches"

_get_ident = threading.get_ident
_hooks: list[FetchSteps] = []  # installed hooks, forgotten in a forked child


class _Thread:
    """One step thread's state."""

    __slots__ = (
        "buf",
        "busy",
        "depth",
        "ended",
        "grad",
        "grad_seen",
        "ident",
        "instrumented",
        "iter_num",
        "node",
        "number",
        "ref",
        "start",
    )

    def __init__(self, ident: int) -> None:
        self.ident = ident
        self.ref: weakref.ref[Any] | None = None  # the step loader's iterator
        self.ended = False  # its pass ended (StopIteration)
        self.grad = False  # its fetch that opened the step had gradients on
        self.grad_seen = False  # a fetch with gradients on opened a step on this thread
        self.busy = False  # inside a fetch (a nested fetch is the outer one's work)
        self.start = -1  # the open step's start (perf_counter ns), -1: none open
        self.buf: Any = None  # the thread's buffer the open step is written to
        self.depth = 0
        self.number = 0  # the next step's number
        self.node = 0  # the loader's pipeline id, per step iterator
        self.iter_num = 0
        self.instrumented = False  # fetched inside `stepscope.data`'s stage: recorded there


def _always_on() -> bool:
    return True


class FetchSteps:
    """The hook: ``on_open()`` as a step opens (the recorder's step hook), ``on_close()`` as
    the thread's last step ends with no next one (the pass ended: no step is open)."""

    def __init__(
        self,
        on_open: Callable[[], None],
        on_close: Callable[[], None],
        threads: tuple[int, ...] = (),
    ) -> None:
        self.on_open = on_open
        self.on_close = on_close
        idents = threads or (threading.main_thread().ident or 0, _get_ident())
        self.threads: dict[int, _Thread] = {i: _Thread(i) for i in idents}
        self.errors = 0  # exceptions of its own part, swallowed
        self.steps = 0  # steps it wrote
        self.stood_down = False
        self._patched: list[tuple[type, Any, Any]] = []  # (class, original, ours)
        self._watcher: import_watch.Watcher | None = None
        self._grad: Callable[[], bool] = _always_on
        self.marked: Callable[[], None] | None = (
            None  # the step hook that stands it down (`attach`)
        )

    @property
    def marking(self) -> bool:
        """Whether the steps the recorder holds are this hook's."""
        return bool(self.steps) and not self.stood_down

    # -- life cycle -------------------------------------------------------------------------

    def install(self) -> FetchSteps:
        """Wrap torch's DataLoader iterator now, or when its module is imported."""
        module = sys.modules.get(DATALOADER_MODULE)
        if module is not None:
            self._on_import(module)
        else:
            self._watcher = import_watch.watch(DATALOADER_MODULE, self._on_import)
        _hooks.append(self)
        return self

    def _on_import(self, module: ModuleType) -> None:
        cls = getattr(module, ITERATOR_CLASS, None)
        torch = sys.modules.get("torch")
        grad = getattr(torch, "is_grad_enabled", None)
        if isinstance(cls, type) and not self.stood_down:
            self.patch(cls, grad if callable(grad) else _always_on)

    def patch(self, cls: type, grad_enabled: Callable[[], bool] = _always_on) -> None:
        """Wrap ``cls.__next__`` (tests give a fake iterator class)."""
        original = cls.__dict__.get("__next__")
        if original is None or getattr(original, "_stepscope_steps", False):
            return
        self._grad = grad_enabled
        ours = self._wrap(original)
        cls.__next__ = ours  # type: ignore[attr-defined]
        self._patched.append((cls, original, ours))

    def uninstall(self) -> None:
        """The iterators' own ``__next__`` back (unless something wrapped it since), the
        import watch off; any step open is dropped."""
        self.threads = {}
        if self._watcher is not None:
            import_watch.unwatch(self._watcher)
            self._watcher = None
        for cls, original, ours in self._patched:
            if cls.__dict__.get("__next__") is ours:
                cls.__next__ = original  # type: ignore[attr-defined]
        self._patched = []
        if self in _hooks:
            _hooks.remove(self)

    def stand_down(self) -> None:
        """A marked step was seen: the loop marks its own steps from now on."""
        self.stood_down = True
        self.uninstall()

    def forget(self) -> None:
        """In a forked child (a DataLoader worker): no step is marked there."""
        self.threads = {}

    # -- the wrapper ------------------------------------------------------------------------

    def _wrap(self, original: Any) -> Any:
        hook = self

        def __next__(it: Any) -> Any:
            state = hook.threads.get(_get_ident())
            if state is None or state.busy:  # not a step thread, or a fetch in a fetch
                return original(it)
            start = hook._begin(state, it)
            state.busy = True
            try:
                batch = original(it)
            except StopIteration:
                state.busy = False
                hook._end(state, start, True)
                raise
            except BaseException:
                state.busy = False
                raise
            state.busy = False
            hook._end(state, start, False)
            return batch

        __next__._stepscope_steps = True  # type: ignore[attr-defined]
        __next__.__wrapped__ = original  # type: ignore[attr-defined]
        __next__.__doc__ = original.__doc__
        return __next__

    def _begin(self, state: _Thread, it: Any) -> int:
        """Before a fetch: open a step there when it is one (closing the open one). The
        fetch's start when the step loader fetches, else -1."""
        try:
            ref = state.ref
            current = ref() if ref is not None else None
            if current is not it:
                grad = self._grad()
                if current is not None and not state.ended and not (grad and not state.grad):
                    return -1  # another loader inside the step (an evaluation)
                if not grad and state.grad_seen:
                    return -1  # an evaluation between training passes
                self._take_over(state, it, grad)
            self.on_open()
            start: int = _ann.perf_counter_ns()
            self._close(state, start)
            if _ann._active:
                buf = _ann.admit()
                if buf is not None:
                    state.buf, state.depth, state.start = buf, buf.depth, start
            state.ended = False
            return start
        except Exception:  # never the loop's problem
            self.errors += 1
            return -1

    def _take_over(self, state: _Thread, it: Any, grad: bool) -> None:
        state.ref = weakref.ref(it, self._dropped)
        state.grad = grad
        state.grad_seen = state.grad_seen or grad
        state.node = _new_id()
        state.iter_num = 0
        state.instrumented = bool(_stack())  # inside `stepscope.data`'s own fetch event

    def _end(self, state: _Thread, start: int, stopped: bool) -> None:
        """After the step loader's fetch (from ``start``): its input events; at the pass's
        end, no step is open (the last one ended at this fetch's start)."""
        if start < 0:
            return
        try:
            end = _ann.perf_counter_ns()
            buf = state.buf
            if buf is not None and not state.instrumented and _ann._take() < _ann._max_events:
                depth = state.depth
                stats: dict[str, int] = {"id": state.node}
                get_next = {"id": state.node, "iter_num": state.iter_num}
                if stopped:
                    stats[END_OF_SEQUENCE_STAT] = get_next[END_OF_SEQUENCE_STAT] = 1
                # the stage strictly inside the get-next event, as `stepscope.data` writes it
                inner_end = max(start + 1, end - 1)
                buf.events.append((STAGE_NAME, start + 1, inner_end, depth + 1, stats))
                buf.events.append((GET_NEXT_EVENT, start, end, depth, get_next))
            state.iter_num += 1
            if stopped:
                state.ended = True
                state.start, state.buf = -1, None  # the step begun at this fetch never ran
                self.on_close()
        except Exception:
            self.errors += 1

    def _close(self, state: _Thread, end: int) -> None:
        """Write the open step, ending at ``end``."""
        buf, start = state.buf, state.start
        if buf is None or start < 0:
            return
        state.buf, state.start = None, -1
        buf.events.append((STEP_NAME, start, end, state.depth, {"step_num": state.number, "_r": 1}))
        state.number += 1
        self.steps += 1

    def _dropped(self, ref: weakref.ref[Any]) -> None:
        """The step loader's iterator was collected (a ``break`` out of its loop): its open
        step ends here, when that is its thread (elsewhere the buffer is not ours to
        write)."""
        try:
            state = self.threads.get(_get_ident())
            if state is None or state.ref is not ref:
                return
            state.ref = None
            if state.start >= 0:
                self._close(state, _ann.perf_counter_ns())
                self.on_close()
        except Exception:
            self.errors += 1


def _after_fork_in_child() -> None:
    for hook in list(_hooks):
        hook.forget()


os.register_at_fork(after_in_child=_after_fork_in_child)


def attach(recorder: Any, on_error: Any) -> FetchSteps | None:
    """The hook for ``recorder`` (a `Recorder`: not imported, it imports this), installed,
    with the recorder's step hooks set: the first marked step stands it down and puts the
    recorder's own step hook back."""
    ended = recorder._on_steps_end  # a pass ended: its last step is no open one
    if not recorder.config.loader_steps:
        set_step_hooks(recorder._on_step_open, on_error, ended)
        return None
    hook = FetchSteps(recorder._on_step_open, ended).install()

    def marked() -> None:
        set_step_hooks(recorder._on_step_open, on_error, ended)
        hook.stand_down()
        recorder._on_step_open()

    hook.marked = marked
    set_step_hooks(marked, on_error, ended)
    return hook


def detach(recorder: Any) -> None:
    """The hook off and the recorder's step hooks removed, when they are still its own (the
    recorder's stop, a forked child)."""
    hook = recorder.fetch_steps
    if hook is not None:
        hook.uninstall()
    if step_hooks()[0] in (recorder._on_step_open, hook and hook.marked):
        set_step_hooks(None, None, None)
