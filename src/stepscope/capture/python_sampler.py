"""Python stack sampler: what the threads running steps are doing between traced events.

A background thread wakes every ``1 / python_sampler_hz`` seconds, reads
``sys._current_frames()`` and keeps, for each sampled thread, runs of consecutive identical
stacks (same functions at the same lines): one run is one event of the ``Python samples``
line of that thread (layout: docs/formats/python_samples.md). Samples are merged into
a run only when no more than 1.5 intervals apart, and a run lasts from its first sample to one
interval after its last (cut at the next run's start): a sample stands for the interval after
it, and a thread not sampled for longer (the sampler waited for a CPU or the GIL) has a gap
rather than time given to a stack nobody saw.

Sampled threads: the one that called `stepscope.start` and every thread that opens a
`stepscope.step` while recording (the threads that run steps). Cost per sample: one
``sys._current_frames()`` and a walk of each sampled stack, while holding the GIL (about
10-30 µs for 50-frame stacks); `benchmarks/bench_capture.py` measures it against step time.

Only the standard library is imported (capture runs inside training scripts).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from array import array

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import CodeType, FrameType
    from typing import Any

    from stepscope.capture.fetch_sites import FetchSites
    from stepscope.capture.host_tracer import EventBudget

    Stack = tuple[tuple[CodeType, int], ...]  # innermost frame first

_INTERNAL_FILE = os.path.basename(__file__)


def current_frames() -> dict[int, FrameType]:
    """``sys._current_frames()`` with the cyclic GC paused. CPython builds that dict holding
    the runtime's thread-list lock and creates frame objects as it goes; a collection they
    start runs finalizers, and one that needs the same lock (``sys._current_frames``, a
    thread state cleared, a thread starting) waits for it forever: the process deadlocked
    (the recorder's hang snapshot, the sampler). With the collector off there, no finalizer
    runs inside the call."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        return sys._current_frames()
    finally:
        if enabled:
            gc.enable()


class SampledThread:
    """Runs of one thread: [start_ns, end_ns, stack, samples, lastis] (perf_counter_ns times;
    while sampling, end_ns is the time of the run's last sample; ``lastis``: each frame's
    current instruction (``f_lasti``) at the run's first sample, innermost first, read when
    saving to tell the frames entered for an iterator's next item, `fetch_sites`)."""

    __slots__ = ("cpu", "ident", "name", "native_id", "runs", "sched")

    def __init__(self, ident: int, native_id: int, name: str) -> None:
        self.ident = ident
        self.native_id = native_id
        self.name = name
        self.runs: list[list[Any]] = []
        # The thread's Linux schedstat at each sample: perf_counter_ns, then its time on a
        # CPU and its time runnable but waiting for one (ns, cumulative), three per sample:
        # with them a step slowed off its core is told from the same work run slower.
        self.cpu = array("q")
        self.sched: int | None = None  # fd of /proc/self/task/<tid>/schedstat, -1: none

    def read_sched(self, now: int) -> None:
        """Append this thread's schedstat at ``now`` (perf ns). One pread of a file kept
        open (about 2-4 us, on the sampler's thread, never the sampled one's)."""
        fd = self.sched
        if fd is None:
            try:
                fd = os.open(f"/proc/self/task/{self.native_id}/schedstat", os.O_RDONLY)
            except OSError:  # not Linux, or no schedstat (CONFIG_SCHED_INFO off)
                fd = -1
            self.sched = fd
        if fd < 0:
            return
        try:
            on_cpu, waiting = os.pread(fd, 128, 0).split()[:2]
            self.cpu.extend((now, int(on_cpu), int(waiting)))
        except (OSError, ValueError):  # the thread ended
            self.close()

    def close(self) -> None:
        if self.sched is not None and self.sched >= 0:
            os.close(self.sched)
        self.sched = -1


class PythonSampler:
    """Samples the registered threads' Python stacks from a daemon thread."""

    def __init__(self, hz: int, budget: EventBudget) -> None:
        self.interval_s = 1.0 / hz
        self.budget = budget
        self.threads: dict[int, SampledThread] = {}
        # Held while sampling; `stop` releases it. The loop waits on it with a timeout: one C
        # call (a threading.Event's wait is a dozen Python lines and a new lock every time,
        # paid 25 times a second of wall time, more CPU the busier the machine).
        self._running = threading.Lock()
        self._running.acquire()
        self._worker: threading.Thread | None = None
        self.samples = 0
        self.busy_ns = 0  # time spent taking samples (holding the GIL): the sampler's cost

    def add_current_thread(self) -> None:
        """Sample the calling thread too (idempotent; called by `stepscope.step`)."""
        ident = threading.get_ident()
        if ident not in self.threads:
            current = threading.current_thread()
            native = threading.get_native_id()
            self.threads[ident] = SampledThread(ident, native, current.name)

    def start(self) -> None:
        self._worker = threading.Thread(target=self._loop, name="stepscope-sampler", daemon=True)
        self._worker.start()

    def stop(self) -> int:
        """Stop sampling; each run then ends one interval after its last sample (cut at the
        next run and at the stop). Returns the stop time (perf ns)."""
        if self._running.locked():
            self._running.release()
        if self._worker is not None:
            self._worker.join()
        end = time.perf_counter_ns()
        step_ns = int(self.interval_s * 1e9)
        for thread in self.threads.values():
            thread.close()
            runs = thread.runs
            for k, run in enumerate(runs):
                limit = runs[k + 1][0] if k + 1 < len(runs) else end
                run[1] = min(run[1] + step_ns, limit)
        return end

    def _loop(self) -> None:
        wait = self._running.acquire
        interval = self.interval_s
        frames_of = current_frames
        clock = time.perf_counter_ns
        take = self.budget.take
        limit = self.budget.max_events
        due = clock()
        step_ns = int(interval * 1e9)
        max_gap = step_ns * 3 // 2
        while True:
            # A schedule, not a fixed sleep: waiting for the GIL after each wake-up (up to
            # the 5 ms switch interval) would otherwise lower the rate.
            due += step_ns
            now = clock()
            if due < now:
                due = now
            if wait(True, (due - now) / 1e9):
                break
            now = clock()
            frames = frames_of()
            self.samples += 1
            for ident, thread in list(self.threads.items()):
                frame = frames.get(ident)
                runs = thread.runs
                last = runs[-1] if runs else None
                if frame is None:  # the thread ended
                    continue
                stack = []
                lastis = []
                while frame is not None:
                    stack.append((frame.f_code, frame.f_lineno))
                    lastis.append(frame.f_lasti)
                    frame = frame.f_back
                key = tuple(stack)
                # merged only with the sample just before (a thread not sampled for longer
                # has a gap rather than time given to a stack nobody saw)
                if last is not None and last[2] == key and now - last[1] <= max_gap:
                    last[1] = now
                    last[3] += 1
                elif take() < limit:
                    # 4 bytes a frame (a list of ints would hold an int object each)
                    runs.append([now, now, key, 1, array("i", lastis)])
                else:  # over the limit: the thread's CPU is read only with a kept sample
                    continue
                thread.read_sched(now)
            del frames
            self.busy_ns += clock() - now


def frame_text(code: CodeType, line: int) -> str:
    """``func (file:line)``: how a frame is named in the profile."""
    return f"{code.co_name} ({os.path.basename(code.co_filename)}:{line})"


def stack_text(
    stack: Stack,
    names: dict[tuple[CodeType, int], str],
    lastis: Sequence[int] | None = None,
    sites: FetchSites | None = None,
) -> tuple[str, str, str]:
    """(innermost frame, the stack outermost first joined by ';', the ``next_frames`` stat:
    the indices in that stack, outermost 0, of the frames whose caller stands where it asks
    an iterator for its next item and of the standard library's queue ``get`` frames under
    a caller, comma-joined, '' for none), the sampler's own frames left
    out. ``lastis``: the frames' current instructions, innermost first as ``stack``."""
    parts: list[str] = []
    fetched: list[str] = []
    caller_fetches = False  # the frame outside this one stands at a fetch site
    for k in range(len(stack) - 1, -1, -1):
        code, line = stack[k]
        if os.path.basename(code.co_filename) == _INTERNAL_FILE:
            continue
        text = names.get((code, line))
        if text is None:
            text = names[(code, line)] = frame_text(code, line)
        if caller_fetches or (parts and sites is not None and sites.gets_from_queue(code)):
            fetched.append(str(len(parts)))
        parts.append(text)
        caller_fetches = (
            lastis is not None and sites is not None and k > 0 and sites.at(code, lastis[k])
        )
    innermost = parts[-1] if parts else "<no Python frame>"
    return innermost, ";".join(parts), ",".join(fetched)


def own_frames(stack: Stack, is_own: Callable[[str], bool]) -> str:
    """The ``own_frames`` stat of ``stack`` (innermost first, as `stack_text` reads it): the
    indices in its text, outermost 0, of the frames whose file ``is_own`` says is the
    program's, comma-joined ('' for none)."""
    own: list[str] = []
    k = 0
    for code, _line in reversed(stack):
        if os.path.basename(code.co_filename) == _INTERNAL_FILE:
            continue  # not in the text either
        if is_own(code.co_filename):
            own.append(str(k))
        k += 1
    return ",".join(own)
