"""When the loop is inside its iterator: the first few times it asks for a next item, timed.

The stack sampler tells the loop fetching its batch from a Python iterator by the frame it
entered for the next item (`fetch_sites`, decision 343), but not whether that frame holds the
model's work (``for loss in train_gen():`` whose generator trains): that needs samples taken
inside the model's ops, and the sampler, a Python thread, gets the GIL mostly in long calls
that release it (a sleep, numpy's LAPACK), hardly in a framework op of tens of microseconds.
A small model's ops were seen by 0-1 samples in 60 steps on a quiet machine (decision 382).

So the thread that calls `stepscope.start` gets a profile function (``sys.setprofile``) for
a few iterations: each time a frame is entered or resumed because the frame that called
`start` stands where it asks an iterator for its next item (a ``for`` statement's iteration,
``next(it)``), and each time that frame returns or yields, the clock is read. The intervals
are saved on a ``Python fetches`` line (docs/formats/python_samples.md); framework ops inside
them are model work done inside the iterator, whatever the sampler saw.

Bounded: the function removes itself after `MAX_FETCHES` such intervals or `MAX_EVENTS`
profile events (a few milliseconds of the program's time in all), at `stop`, or on any error
of its own; it is not installed when a profile function is already set (a profiler, a
debugger: theirs is never replaced), nor when the Python tracer runs. A loop in another
function than the one that called `start` is not timed (the sampler's rule stays alone).
Only the standard library is imported (capture runs inside training scripts).
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

    from stepscope.capture.fetch_sites import FetchSites

MAX_FETCHES = 4  # intervals timed, then the probe removes itself (the rule needs 2)
# Profile events seen at most (each a Python call: 0.1-0.3 us more), so 50-150 ms of the
# program's time at worst. 100,000 ended the probe inside an un-jitted JAX loop's first step
# (its compile: 187,000 events) after one fetch, and one timed fetch is no verdict (decision
# 433); a loop that fetches each step leaves after `MAX_FETCHES` anyway.
MAX_EVENTS = 500_000
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def function_name(code: Any) -> str:
    """``func (file)``: a function as the sampler's stacks name it, less the line."""
    return f"{code.co_name} ({os.path.basename(code.co_filename)})"


def caller_frame(frame: FrameType | None) -> FrameType | None:
    """The first frame outside stepscope from ``frame`` outwards (the user's call of
    `start`)."""
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        _PACKAGE_DIR + os.sep
    ):
        frame = frame.f_back
    return frame


class FetchProbe:
    """Times the next-item fetches of one frame (the one that called `start`) on its
    thread: ``fetches`` holds (callee "func (file)", loop "func (file)", start, end) in
    ``time.perf_counter_ns``."""

    def __init__(self, loop: FrameType, sites: FetchSites) -> None:
        self._loop: FrameType | None = loop
        self._sites = sites
        self._open: dict[FrameType, int] = {}
        self._events = 0
        self.fetches: list[tuple[str, str, int, int]] = []
        self.native_id = 0
        self.done = False  # set by `stop` from any thread; the probe then leaves at once

    def install(self) -> bool:
        """On the calling thread; False (nothing done) when a profile function is set."""
        import threading

        if sys.getprofile() is not None:
            return False
        self.native_id = threading.get_native_id()
        sys.setprofile(self._probe)
        return True

    def stop(self) -> None:
        """No more timing; removed now when called on its thread, else at its next event."""
        self.done = True
        if sys.getprofile() == self._probe:
            sys.setprofile(None)
        self._release()

    def _release(self) -> None:
        self._loop = None
        self._open.clear()

    def _leave(self) -> None:
        self.done = True
        if sys.getprofile() == self._probe:
            sys.setprofile(None)
        self._release()

    def _probe(self, frame: FrameType, event: str, arg: Any) -> None:
        # Never raises: an exception here would reach the user's code and switch off
        # profiling; any error of its own ends the probe instead.
        try:
            self._events += 1
            if self.done or self._events > MAX_EVENTS:
                self._leave()
            elif event == "call":
                loop = frame.f_back
                if (
                    loop is self._loop
                    and loop is not None
                    and self._sites.at(loop.f_code, loop.f_lasti)
                ):
                    self._open[frame] = time.perf_counter_ns()
            elif event == "return" and self._open:
                began = self._open.pop(frame, None)
                if began is not None:
                    loop = self._loop
                    name = function_name(loop.f_code) if loop is not None else ""
                    self.fetches.append(
                        (function_name(frame.f_code), name, began, time.perf_counter_ns())
                    )
                    if len(self.fetches) >= MAX_FETCHES:
                        self._leave()
        except Exception:
            self._leave()
