"""`StepMarker`: the step bookkeeping shared by the trainer callbacks (no trainer needed).

Trainers fetch the next batch before they call their "step begins" hook, so a step opened in
that hook would leave the input pipeline out, and an input-bound run would look compute-bound.
A step is therefore backdated to the moment the trainer last finished something else: the
end of the previous step, the start of the epoch, or the end of evaluation, logging or
checkpointing (`resume`). The first step after a session starts is not backdated (the
session was not recording before).

With ``logdir``, steps ``first``..``last`` of the 1-based step count (``profile_steps`` as
Keras's ``profile_batch``: ``N``, ``"a,b"`` or ``(a, b)``) are profiled: a session starts
before step ``first`` begins and is saved after ``last`` (or when training ends first). It
starts where the trainer last finished something before that step -- the previous step's
end, or the epoch's start when the step opens an epoch -- so that the session's own start
(hundreds of milliseconds) falls in no step and the first step is backdated to its fetch
as the others are (decision 1076; the Keras callback's, decision 1067). A trainer that
ends before step ``first`` saves nothing, and says so. Without ``logdir`` every step is
marked and recorded by whatever session is running.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stepscope import log
from stepscope.capture import session
from stepscope.capture.annotations import is_active
from stepscope.capture.keras import parse_profile_batch, unreached
from stepscope.capture.options import ProfilerOptions, resolve_options
from stepscope.capture.step import step
from stepscope.logdir import check_logdir
from stepscope.vocab.profiler import STEP_HOLDS_FETCH_STAT


class StepMarker:
    def __init__(
        self,
        logdir: str | os.PathLike[str] | None = None,
        profile_steps: Any = "10,15",
        options: ProfilerOptions | None = None,
        unit: str = "step",
    ) -> None:
        self.unit = unit  # what the trainer's count counts, for messages: "step" or "batch"
        self.logdir = None if logdir is None else check_logdir(logdir, "StepscopeCallback")
        self.first, self.last = parse_profile_batch(profile_steps) if logdir else (0, 0)
        self.options = resolve_options(options)  # checked now, not at the first profiled step
        self.count = 0  # steps begun so far
        self.run_dir: Path | None = None
        self._span: Any = None
        self._since: int | None = None  # perf_counter_ns the next step is backdated to
        self._started = False
        self._told = False  # said that training ended before the first profiled step

    def resume(self, opens_epoch: bool = False) -> None:
        """The trainer finished other work (epoch start, evaluation, logging): input starts.

        ``opens_epoch``: an epoch's start, after which its first step's batch is fetched; a
        session for a first profiled step opening the epoch starts here (`end`)."""
        if opens_epoch:
            self._start_before_first()
        self._since = time.perf_counter_ns() if is_active() else None

    def _start_before_first(self) -> bool:
        """Start the session now if the next step to begin is the first profiled one."""
        if self.logdir is None or not self.first or self._started:
            return False
        if self.count + 1 != self.first:
            return False
        session.start(self.logdir, self.options)
        self._started = True
        return True

    def begin(self, step_num: int | None = None) -> None:
        """A step begins; ``step_num`` defaults to the 1-based count of steps."""
        self.count += 1
        number = self.count if step_num is None else step_num
        if self.logdir is not None:
            if self.first == 0 or not self.first <= self.count <= self.last:
                return
            if self.count == self.first and not self._started:
                # No hook came before it (a driver of neither `resume` nor `end`): the start
                # is in this step's time, and the step is not backdated (nothing recorded).
                session.start(self.logdir, self.options)
                self._started = True
                self._since = None
        self._close()
        span = step(number)
        span.__enter__()
        start = getattr(span, "start", None)
        if self._since is not None and isinstance(start, int) and self._since < start:
            span.start = self._since  # include the batch fetch that preceded the hook
            # ... and say so: a wait before it (evaluation's) feeds it no more (decision 638)
            if isinstance(span.stats, dict):
                span.stats[STEP_HOLDS_FETCH_STAT] = 1
        self._span = span

    def end(self, epoch_continues: bool = True) -> None:
        """The step ends (its optimizer update done); ``epoch_continues``: another step of its
        epoch follows (if known). The session for the first profiled step starts here, or at
        the next epoch's start when this step ends an epoch (its evaluation stays out)."""
        ended = self._close()
        if self._started and self.count >= self.last:
            self.finish()
            return
        if epoch_continues and self._start_before_first():
            self.resume()  # the step begins after the session's start, not before
        # the next step begins where this one ended, as a script timing its batches from the
        # previous one's end: timed apart, a pause between the two (4.07 ms seen) fell in no
        # step (decision 638)
        elif ended is not None and is_active():
            self._since = ended
        else:
            self.resume()

    def finish(self) -> None:
        """Training ends (or fails): close the open step, save a session this marker began.

        Ended before the first profiled step: a session begun for it is dropped (it holds no
        step), and the user is told why nothing was saved."""
        self._close()
        self._since = None
        if self._started:
            self._started = False
            if self.count < self.first:
                session.stop(save=False)
            else:
                self.run_dir = session.stop()
        if self.logdir is not None and self.first and self.count < self.first and not self._told:
            self._told = True
            log.warn(unreached("StepscopeCallback", self.unit, self.count, self.first, self.last))

    def _close(self) -> int | None:
        """Close the open step; its end (perf_counter_ns) when recorded so, else None."""
        if self._span is None:
            return None
        span, self._span = self._span, None
        exit_at = getattr(span, "exit_at", None)
        if exit_at is None:  # a marker of no recording session
            span.__exit__(None, None, None)
            return None
        ended = time.perf_counter_ns()
        exit_at(ended)
        return ended


def lazy_class(name: str, make: Callable[[], type], module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` that builds class ``name`` with ``make()`` on first use (the
    trainer callbacks subclass a library's base class, imported only then). The class is kept
    in the module's ``_class``; setting that back to None builds it again."""
    namespace = sys.modules[module].__dict__
    namespace.setdefault("_class", None)

    def __getattr__(attr: str) -> Any:
        if attr != name:
            raise AttributeError(f"module {module!r} has no attribute {attr!r}")
        if namespace["_class"] is None:
            namespace["_class"] = make()
        return namespace["_class"]

    return __getattr__
