"""The Python stack sampler of one DataLoader worker process (decision 351).

Started by the worker's ``worker_init_fn`` hook (`stepscope.capture.loader_workers`) when the
session samples (``python_sampler_hz`` > 0): a daemon thread samples the worker's main thread
at the session's rate and appends what it saw to a file of the session's spool, so that what
the worker's ``__getitem__``, transforms and ``collate_fn`` spend their time in comes back to
the training process at ``stop()`` (`read_samples`). The file is written as the worker goes,
a line per run of identical stacks: a worker killed or ending with its pass, or still
sampling at ``stop()``, loses its last run (at most `RUN_SAMPLES` samples).

File format (JSON lines): ``["h", interval_ns]`` first; ``["f", id, "func (file:line)"]``
names a frame before its first use; ``[first_ns, last_ns, samples, [frame ids, outermost
first]]`` is a run of identical stacks (a stack seen longer than `RUN_SAMPLES` samples is
written as several runs); ``["full", t_ns, bytes]`` ends a file that reached `MAX_BYTES`.

The thread stops when the spool is removed (the session stopped: a persistent worker outlives
it), when the file is full or cannot be written, and with the process. Only the standard
library is imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time

from stepscope.capture.python_sampler import current_frames

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from types import CodeType, FrameType
    from typing import Any

MAX_BYTES = 4 << 20  # one worker's samples file at most (about 60k runs)
RUN_SAMPLES = 5  # samples a run holds at most before it is written (0.2 s at 25 Hz)
CHECK_EVERY = 25  # samples between checks that the spool is still there (1 s at 25 Hz)
MAX_DEPTH = 128  # frames kept per stack (the innermost)
SWITCH_INTERVAL_S = 0.0005  # the worker's GIL switch interval while it samples
WORKER_LOOP = "_worker_loop"  # torch's worker loop: a worker's stacks start there
_HOOK_FILE = os.path.join(os.path.dirname(__file__), "loader_workers.py")


class WorkerSampler:
    """Samples thread ``ident`` of this process into ``path`` from a daemon thread."""

    def __init__(self, path: str, hz: int, ident: int, root: CodeType | None = None) -> None:
        self.path = path
        # the worker's loop: the frames outside it are the parent's, copied by fork
        self.root = root
        self.spool = os.path.dirname(path)
        self.interval_ns = max(int(1e9 / hz), 1_000_000)
        self.ident = ident
        self.frames: dict[tuple[CodeType, int], int] = {}
        self.run: list[Any] | None = None  # [first_ns, last_ns, samples, key]
        self.file: Any = None
        self.written = 0
        self.full = False
        self.stopped = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._loop, name="stepscope-worker-sampler", daemon=True).start()

    def _loop(self) -> None:
        try:
            # A sample waits for the GIL up to the switch interval (5 ms): a dataset releasing
            # it every few ms (a file read per item) got the samples at its reads -- 40 of 68
            # at a per-item log write taking 5% of the time. 0.5 ms keeps that wait short;
            # with the sampler asleep between samples nothing else in a worker contends.
            sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
            self.file = open(self.path, "a", buffering=1)  # noqa: SIM115 (line by line)
            self._write(["h", self.interval_ns])
            self._sample_until_done()
        except Exception:  # capture never breaks the user's worker: it stops sampling
            pass
        finally:
            if self.file is not None:
                with contextlib.suppress(Exception):
                    self.file.close()

    def _sample_until_done(self) -> None:
        clock = time.perf_counter_ns
        due = clock()
        taken = 0
        while not self.stopped.is_set():
            due += self.interval_ns
            now = clock()
            if due < now:
                due = now
            time.sleep((due - now) / 1e9)
            now = clock()
            frame = current_frames().get(self.ident)
            if frame is None:  # the worker's main thread ended
                break
            stack: list[tuple[CodeType, int]] = []
            while frame is not None and len(stack) < MAX_DEPTH:
                code = frame.f_code
                if code.co_filename != _HOOK_FILE:  # stepscope's fetch wrapper
                    stack.append((code, frame.f_lineno))
                frame = None if code is self.root else frame.f_back
            del frame
            if not self._add(now, tuple(stack)):
                return
            taken += 1
            if taken % CHECK_EVERY == 0 and not os.path.isdir(self.spool):
                return  # the session stopped and removed the spool: nobody reads this
        if self.run is not None:
            self._emit(self.run)

    def _add(self, now: int, key: tuple[tuple[CodeType, int], ...]) -> bool:
        """Count a sample; False once the file is full."""
        run = self.run
        if (
            run is not None
            and run[3] == key
            and now - run[1] <= self.interval_ns * 3 // 2
            and run[2] < RUN_SAMPLES
        ):
            run[1] = now
            run[2] += 1
            return True
        self.run = [now, now, 1, key]
        return run is None or self._emit(run)

    def _emit(self, run: list[Any]) -> bool:
        """Write a finished run (its frames' names first); False once the file is full."""
        ids = []
        for code, line in reversed(run[3]):  # outermost first
            k = self.frames.get((code, line))
            if k is None:
                k = self.frames[(code, line)] = len(self.frames)
                text = f"{code.co_name} ({os.path.basename(code.co_filename)}:{line})"
                if not self._write(["f", k, text]):
                    return False
            ids.append(k)
        return self._write([run[0], run[1], run[2], ids])

    def _write(self, row: list[Any]) -> bool:
        if self.full:
            return False
        text = json.dumps(row) + "\n"
        if self.written + len(text) > MAX_BYTES:
            self.full = True  # said once, in the file: the reader reports the drop
            self.file.write(json.dumps(["full", time.perf_counter_ns(), self.written]) + "\n")
            return False
        self.file.write(text)
        self.written += len(text)
        return True


def worker_loop_code(frame: FrameType | None) -> CodeType | None:
    """The code of torch's worker loop among ``frame`` and its callers (None if absent)."""
    while frame is not None:
        if frame.f_code.co_name == WORKER_LOOP:
            return frame.f_code
        frame = frame.f_back
    return None


class SampledWorker:
    """A worker's runs as the capture's XSpace writer takes a sampled thread's: [start_ns,
    end_ns, stack, samples], the stack already text (outermost first, ';'-joined)."""

    __slots__ = ("ident", "name", "native_id", "runs")

    def __init__(self, pid: int, name: str) -> None:
        self.ident = -pid
        self.native_id = pid
        self.name = name
        self.runs: list[list[Any]] = []


def read_samples(path: str, lo_ns: int, hi_ns: int, into: Any) -> None:
    """Add the runs of the samples file ``path`` (``samples<k>.<pid>.jsonl``) that fall in
    the recording [lo_ns, hi_ns] to ``into.sampled`` (a `SampledWorker`); a full file is said
    in ``into.warnings``. Lines cut by the worker's end are skipped; never raises."""
    try:
        head, pid_text, _ = os.path.basename(path).split(".")
        worker, pid = int(head.removeprefix("samples")), int(pid_text)
        with open(path) as f:
            text = f.read(MAX_BYTES + 4096)
    except (OSError, ValueError):
        return
    from stepscope.vocab.pytorch import DATALOADER_WORKER_LINE

    thread = SampledWorker(pid, f"{DATALOADER_WORKER_LINE}{worker} (pid {pid})")
    names: dict[int, str] = {}
    interval = 0
    for line in text.splitlines():
        try:
            row = json.loads(line)
            kind = row[0]
            if kind == "h":
                interval = int(row[1])
            elif kind == "f":
                names[int(row[1])] = str(row[2])
            elif kind == "full":
                from stepscope.limits import human_bytes

                into.warnings.append(
                    f"stepscope: {thread.name}: its Python samples file reached its bound "
                    f"({human_bytes(int(row[2]))}); later samples were dropped"
                )
            else:
                first, last, count = int(row[0]), int(row[1]), int(row[2])
                stack = ";".join(names[int(k)] for k in row[3])
                if last < lo_ns or first > hi_ns or count < 1 or last < first:
                    continue
                thread.runs.append([max(first, lo_ns), last, stack, count])
        except (ValueError, TypeError, IndexError, KeyError):
            continue  # a line cut by the worker's end
    # each run ends one interval after its last sample, cut at the next run and at the stop
    runs = thread.runs
    runs.sort(key=lambda r: r[0])
    for k, run in enumerate(runs):
        limit = runs[k + 1][0] if k + 1 < len(runs) else hi_ns
        run[1] = max(min(run[1] + interval, limit, hi_ns), run[0])
    if runs:
        into.sampled.append(thread)
