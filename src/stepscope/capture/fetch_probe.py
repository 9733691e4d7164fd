"""When the loop is inside its iterator: the first few times it asks for a next item, timed.

The stack sampler tells the loop fetching its batch from a Python iterator by the frame it
entered for the next item (`fetch_sites`, decision 343), but not whether that frame holds the
model's work (``for loss in train_gen():`` whose generator trains): that needs samples taken
inside the model's ops, and the sampler, a Python thread, gets the GIL mostly in long calls
that release it (a sleep, numpy's LAPACK), hardly in a framework op of tens of microseconds.
A small model's ops were seen by 0-1 samples in 60 steps on a quiet machine (decision 382).

So the thread that calls `stepscope.start` gets a profile function (``sys.setprofile``) for
a few iterations: each time a frame is entered or resumed because a watched frame stands
where it asks an iterator for its next item (a ``for`` statement's iteration, ``next(it)``),
and each time that frame returns or yields, the clock is read. The watched frames are the
one that called `start` and the frames of the program's own code it calls, to `MAX_DEPTH`
calls deep: a loop in ``train()`` called after `start` is timed too (decision 447); the
frames of libraries (the standard library, site-packages, stepscope) are not watched, so
their inner loops neither count nor end the probe. The intervals are saved on a ``Python
fetches`` line (docs/formats/python_samples.md), each with its loop; the analysis keeps those
of the loop the samples found. Framework ops inside them are model work done inside the
iterator, whatever the sampler saw.

Bounded: each loop keeps at most `MAX_FETCHES` timed intervals. The function removes itself
once the loop of start's caller has them, or once a loop below it has them and fetched as
many again in the same call with no shallower loop fetching (a helper gathering a few batches
first, or a helper's inner loop inside the step, is not the training loop); after
`MAX_EVENTS` profile events (a few milliseconds of the program's time in all) or
`MAX_STEPS` step markers (a loop over ``range`` or a list, whose iterator enters no frame,
is never timed; at the second marker when no fetch has begun, decision 1008), once a watched
frame has made a call from the same place `MAX_LAPS` times with no fetch begun in any watched
frame meanwhile, outside the loops of the fetches its code began (an unmarked loop with
nothing to time, decisions 1004 and 1007), at `stop`, or on any error of its own. Left by
the laps or the markers before any loop had its `MAX_FETCHES` timed, it waits, costing
nothing, for a loop over a PyTorch DataLoader to begin on its thread in a watched frame's
place (the DataLoader's ``iter()``, `loop_begins`): it is installed again there, its laps and
markers counted afresh, at most `MAX_ARMS` times (a warm-up over ``range`` before the
loader's loop, decision 1006). It is not installed when a profile function is already set
(a profiler, a debugger: theirs is never replaced), nor when the Python tracer runs.
Only the standard library is imported (capture runs inside training scripts).
"""

from __future__ import annotations

import functools
import os
import sys
import time

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from types import CodeType, FrameType
    from typing import Any

    from stepscope.capture.fetch_sites import FetchSites

MAX_FETCHES = 4  # intervals timed per loop; the probe leaves at these in its shallowest loop
# Calls below the frame that called `start` whose frames are watched for a loop: start's
# caller itself (0), ``train()`` it calls (1), ``train_epoch()`` that calls (2), one more.
MAX_DEPTH = 3
# Profile events seen at most (each a Python call: 0.1-0.3 us more), so 50-150 ms of the
# program's time at worst. 100,000 ended the probe inside an un-jitted JAX loop's first step
# (its compile: 187,000 events) after one fetch, and one timed fetch is no verdict (decision
# 433); a loop that fetches each step leaves after `MAX_FETCHES` anyway.
MAX_EVENTS = 500_000
# Step markers (`stepscope.step` calls) seen at most: by then a loop that fetches through a
# Python frame each step has its `MAX_FETCHES` timed (the probe has left, or, below start's
# caller, would after as many again: the timed ones are kept either way); a loop whose
# iterator enters no frame (``range``, a list, any C iterator) is never timed, and the
# probe, a Python call on every event, cost it +100-130 us of a 0.42 ms PyTorch step until
# `MAX_EVENTS`: ~850 steps (decision 1000). Each step it stays costs as much: 16 steps were
# +4 points of a 200-step capture's CPU, 8 steps +3.
MAX_STEPS = MAX_FETCHES
# Calls a watched frame makes from one place (its ``f_lasti``: a loop's body, each time round)
# with no fetch begun in a watched frame meanwhile: the probe leaves at the last (decision
# 1004). An unmarked ``for i in range(n): step()`` (nothing counts its steps, `MAX_STEPS`)
# never fetches through a frame, and paid +25-28% of each 0.42 ms PyTorch step for ~850 steps;
# it now pays `MAX_LAPS` - 1 steps. A loop that fetches each step begins a fetch before its
# body's second lap, and a warm-up of fewer laps before the loop that fetches keeps the probe
# (a longer one before a DataLoader's loop has it installed again there: `loop_begins`).
MAX_LAPS = 8
# Times a probe left by its laps or markers is installed again where a DataLoader's loop begins
# (`loop_begins`, decision 1006): each time costs at most the `MAX_LAPS` laps or `MAX_STEPS`
# markers it stays when that loop has nothing to time either.
MAX_ARMS = 4
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_GATHERING = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__))
_INSTALLED = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


# cached per file name: the save asks it of every traced and sampled frame (decision 1033)
@functools.lru_cache(maxsize=4096)
def is_program_code(filename: str) -> bool:
    """Whether code from ``filename`` is the program's own: not the standard library (nor a
    frozen module), an installed package or stepscope. A script run from a string
    (``<string>``, a notebook cell) is the program's."""
    if filename.startswith("<frozen"):
        return False
    if filename.startswith("<"):
        return True
    path = os.path.abspath(filename)
    return not (
        path.startswith((_STDLIB_DIR + os.sep, _PACKAGE_DIR + os.sep))
        or any(part in path for part in _INSTALLED)
    )


# stepscope's own wrappers of a framework's method, named as the method they wrap: the
# fetch a loop makes through a streamed pipeline's ``__next__`` (`pipeline_stream`) is
# "__next__ (pt_utils.py)", as without the capture's hook
WRAPPER_NAMES: dict[Any, str] = {}


def function_name(code: Any) -> str:
    """``func (file)``: a function as the sampler's stacks name it, less the line."""
    alias = WRAPPER_NAMES.get(code)
    return alias or f"{code.co_name} ({os.path.basename(code.co_filename)})"


# The probe left by its laps or markers, waiting for a DataLoader's loop to begin (decision
# 1006); None when there is none (read by `loader_hook` on each ``iter()`` of a DataLoader).
dormant: FetchProbe | None = None


def loop_begins(frame: FrameType | None) -> None:
    """A loop over a DataLoader begins in ``frame`` (its ``iter()``): the probe waiting for one,
    if any, is installed again when ``frame`` is a watched frame's place (`FetchProbe.rearm`).
    Never raises."""
    probe = dormant
    if probe is not None and frame is not None:
        try:
            probe.rearm(frame)
        except Exception:  # the probe never fails the program
            probe.stop()


def caller_frame(frame: FrameType | None) -> FrameType | None:
    """The first frame outside stepscope from ``frame`` outwards (the user's call of
    `start`)."""
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        _PACKAGE_DIR + os.sep
    ):
        frame = frame.f_back
    return frame


class FetchProbe:
    """Times the next-item fetches of one frame (the one that called `start`) and of the
    program's frames it calls (`MAX_DEPTH`), on its thread: ``fetches`` holds (callee
    "func (file)", loop "func (file)", start, end, the loop's first and last line or None)
    in ``time.perf_counter_ns``."""

    def __init__(
        self, loop: FrameType, sites: FetchSites, markers: tuple[CodeType, ...] = ()
    ) -> None:
        # the code of the step markers (`stepscope.step`): the probe counts their calls
        self._markers = markers
        self._steps = 0
        self._began = 0  # fetches begun since the probe was (last) installed
        self._arms = 0  # times installed again (`rearm`)
        self._timed_all = False  # a loop has its `MAX_FETCHES` timed: no more `rearm`
        self._root = loop.f_code  # start's caller, found again by its code (`rearm`)
        self._stopped = False
        self._watched: dict[FrameType, int] = {loop: 0}  # frame -> calls below start's caller
        self._sites = sites
        self._program: dict[CodeType, bool] = {}  # `is_program_code` per code object
        # fetch -> (began, its loop, the loop's f_lasti)
        self._open: dict[FrameType, tuple[int, FrameType, int]] = {}
        self._per_loop: dict[CodeType, int] = {}  # fetches timed per loop
        self._shallowest = MAX_DEPTH + 1  # the depth of the shallowest loop that fetched
        self._beyond: dict[FrameType, int] = {}  # a loop's fetches after its timed ones
        # watched frame -> {f_lasti: calls from there since the last fetch began}
        self._laps: dict[FrameType, dict[int, int]] = {}
        # code -> the offsets where a frame of it began a fetch; (code, offset) -> whether
        # that offset is in a loop holding one of them (`_in_fetching_loop`, decision 1007)
        self._fetched_at: dict[CodeType, set[int]] = {}
        self._inside: dict[tuple[CodeType, int], bool] = {}
        self._fetch_depth = MAX_DEPTH + 1  # the depth of the shallowest of them
        self._events = 0
        self.fetches: list[tuple[str, str, int, int, tuple[int, int] | None]] = []
        self.native_id = 0
        self.done = False  # set by `stop` from any thread; the probe then leaves at once

    def install(self) -> bool:
        """On the calling thread; False (nothing done) when a profile function is set."""
        import threading

        if sys.getprofile() is not None:
            return False
        self.native_id = threading.get_native_id()
        # the sites of start's caller, read now, in `start`: read at the loop's first call
        # (``dis`` of a script's module, 1-1.5 ms), they fell between the script's clock
        # read after `start` and its first step (a streamed pipeline's first item 1.47 ms
        # short of the script's, decision 684)
        try:
            for frame in self._watched:
                self._sites.at(frame.f_code, -1)
        except Exception:  # the probe never fails the program: read at its first call then
            pass
        sys.setprofile(self._probe)
        return True

    def stop(self) -> None:
        """No more timing; removed now when called on its thread, else at its next event."""
        global dormant
        self._stopped = True
        self.done = True
        if dormant is self:
            dormant = None
        if sys.getprofile() == self._probe:
            sys.setprofile(None)
        self._release()

    def _release(self) -> None:
        self._watched.clear()
        self._open.clear()
        self._beyond.clear()
        self._laps.clear()

    def _leave(self, waits: bool = False) -> None:
        """Removed; ``waits``: left a loop with nothing to time, to be installed again where a
        DataLoader's loop begins (`rearm`)."""
        global dormant
        self.done = True
        if sys.getprofile() == self._probe:
            sys.setprofile(None)
        self._release()
        if waits and not self._stopped and self._arms < MAX_ARMS and not self._timed_all:
            dormant = self

    def rearm(self, frame: FrameType) -> None:
        """Installed again, waiting (`dormant`), on its thread, no profile function set, when
        ``frame`` is start's caller or a program frame it called, `MAX_DEPTH` calls deep at
        most, each one's caller the program's: those frames are watched, the laps and the
        markers counted afresh (decision 1006)."""
        global dormant
        if dormant is not self or self._stopped or sys.getprofile() is not None:
            return
        import threading

        if threading.get_native_id() != self.native_id:
            return
        chain: list[FrameType] = []
        at: FrameType | None = frame
        while at is not None and len(chain) <= MAX_DEPTH:
            chain.append(at)
            if at.f_code is self._root:
                break
            if not self._is_program(at.f_code):
                return
            at = at.f_back
        else:
            return
        dormant = None
        self._arms += 1
        self._watched.update((f, depth) for depth, f in enumerate(reversed(chain)))
        self._steps = self._began = 0
        self.done = False
        sys.setprofile(self._probe)
        if self._stopped:  # `stop` from another thread meanwhile
            self._leave()

    def _is_program(self, code: CodeType) -> bool:
        """The program's own function; not a comprehension or generator expression, which
        gathers items (``[next(it) for _ in range(4)]``) and is no training loop."""
        known = self._program.get(code)
        if known is None:
            known = self._program[code] = code.co_name not in _GATHERING and is_program_code(
                code.co_filename
            )
        return known

    def _probe(self, frame: FrameType, event: str, arg: Any) -> None:
        # Never raises: an exception here would reach the user's code and switch off
        # profiling; any error of its own ends the probe instead.
        try:
            self._events += 1
            if self.done or self._events > MAX_EVENTS:
                self._leave()
            elif event == "call":
                if frame.f_code in self._markers:
                    # a marked loop that fetches has begun a fetch by its second marker
                    # (decision 1008); one that does has its `MAX_FETCHES` timed by then
                    self._steps += 1
                    if self._steps > MAX_STEPS or (self._steps > 1 and not self._began):
                        self._leave(waits=True)
                    return
                caller = frame.f_back
                depth = self._watched.get(caller) if caller is not None else None
                if depth is None or caller is None:
                    return
                # read before the sites: the first read of a code's sites (``dis`` of the
                # whole function or module) took 0.96 ms for a script's module, and the
                # first fetch, timed from after it, began that late (decision 507)
                began = time.perf_counter_ns()
                if self._sites.at(caller.f_code, caller.f_lasti) or self._sites.gets_from_queue(
                    frame.f_code
                ):
                    self._began_fetch(caller, depth)
                    if self._per_loop.get(caller.f_code, 0) < MAX_FETCHES:
                        self._open[frame] = (began, caller, caller.f_lasti)
                    elif depth:
                        self._went_on(caller, depth)
                    return
                if depth < MAX_DEPTH and self._is_program(frame.f_code):
                    self._watched[frame] = depth + 1
                self._lap(caller, depth)
            elif event == "c_call":
                # a builtin called by a watched frame (``clock()`` in the loop's body; a body
                # of C calls only makes no other event there); ``next(it)`` of a generator is
                # followed by its frame's call, a fetch, which clears the laps
                depth = self._watched.get(frame)
                if depth is not None:
                    self._lap(frame, depth)
            elif event == "return":
                if self._open:
                    opened = self._open.pop(frame, None)
                    if opened is not None:
                        self._timed(frame, *opened)
                if self._watched.get(frame):  # start's caller (0) stays watched
                    del self._watched[frame]
                    self._beyond.pop(frame, None)
                    self._laps.pop(frame, None)
        except Exception:
            self._leave()

    def _began_fetch(self, loop: FrameType, depth: int) -> None:
        self._laps.clear()  # each loop counts its laps afresh
        self._began += 1
        sites = self._fetched_at.get(loop.f_code)
        if sites is None:
            sites = self._fetched_at[loop.f_code] = set()
        if loop.f_lasti not in sites:
            sites.add(loop.f_lasti)
            self._inside.clear()
        self._fetch_depth = min(self._fetch_depth, depth)

    def _in_fetching_loop(self, frame: FrameType) -> bool:
        """Whether ``frame`` stands in a loop of its code that holds a place where a frame of
        that code began a fetch: an inner loop of the loop that fetches."""
        code = frame.f_code
        sites = self._fetched_at.get(code)
        if not sites:
            return False
        lasti = frame.f_lasti
        known = self._inside.get((code, lasti))
        if known is None:
            known = self._inside[(code, lasti)] = any(
                first <= lasti <= last and any(first <= site <= last for site in sites)
                for first, last in self._sites.loop_spans(code)
            )
        return known

    def _lap(self, frame: FrameType, depth: int) -> None:
        """A call from a watched frame that begins no fetch: once the same place has called
        `MAX_LAPS` times with no fetch begun since, the frame is in a loop with nothing to time
        (its iterator enters no frame: ``range``, a list) and the probe leaves, to wait for a
        DataLoader's loop (`rearm`). Not counted in a loop that holds a place where its code
        began a fetch (an inner loop of the loop that fetches: ``for x in batches(): for part
        in x.split(8):``; not a loop after a single ``next()``, decision 1007) nor in a frame
        deeper than the shallowest that began one (a helper's loop inside the step): their
        loop has something to time."""
        if depth > self._fetch_depth or self._in_fetching_loop(frame):
            return
        places = self._laps.get(frame)
        if places is None:
            places = self._laps[frame] = {}
        lasti = frame.f_lasti
        laps = places[lasti] = places.get(lasti, 0) + 1
        if laps >= MAX_LAPS:
            self._leave(waits=True)

    def _timed(self, frame: FrameType, began: int, loop: FrameType, lasti: int) -> None:
        now = time.perf_counter_ns()
        lines = self._sites.lines_of_loop(loop.f_code, lasti)
        self.fetches.append(
            (function_name(frame.f_code), function_name(loop.f_code), began, now, lines)
        )
        count = self._per_loop[loop.f_code] = self._per_loop.get(loop.f_code, 0) + 1
        self._timed_all = self._timed_all or count >= MAX_FETCHES
        depth = self._watched.get(loop, MAX_DEPTH)
        self._shallowest = min(self._shallowest, depth)
        if count >= MAX_FETCHES and depth == 0:
            self._leave()

    def _went_on(self, loop: FrameType, depth: int) -> None:
        """A loop below start's caller fetched again after its `MAX_FETCHES` timed ones: once
        it has gone on as long again in the same call, and no shallower loop fetched, it is
        taken for the training loop and the probe leaves. A setup loop that ends sooner (a
        helper gathering a few batches before the loop, decision 447) does not end it."""
        seen = self._beyond[loop] = self._beyond.get(loop, 0) + 1
        if seen >= MAX_FETCHES and depth <= self._shallowest:
            self._leave()
