"""PyTorch DataLoader worker processes, captured into the rank's profile (issue #26,
decisions 87 and 351).

With ``num_workers > 0`` a DataLoader makes its batches in worker processes, which no tracer
of the training process sees: the step only shows its wait in ``next()``. When a DataLoader
starts its workers while a session that saves records -- an instrumented loader
(`stepscope.data.instrument`, `stepscope.steps`) or a plain one iterated in the user's loop
(``DataLoader.__iter__`` is wrapped while such a session records, `install`) -- each worker
records, per batch it makes, three spans in tf.data's
conventions -- ``Iterator::<loader>::Worker`` (the batch), ``...::Worker::GetItem`` (the
dataset's ``__getitem__`` calls) and ``...::Worker::Collate`` (``collate_fn``) -- with stats
``worker``, ``batch`` (the loader's batch number in this pass: workers take batches in turn,
so a worker's n-th is batch ``worker + n * num_workers``) and ``parent_id`` (the loader's
stage id, which links them to the step's ``next()`` as tf.data links a producer thread);
the batch span also has ``cpu_ns``, the worker thread's CPU time making it, and (Linux)
``cpu_wait_ns``, its time runnable but waiting for a CPU (``/proc/thread-self/schedstat``).

How: the loader's ``worker_init_fn`` is wrapped, only for the workers started by that
``iter()`` (fork and spawn alike: the wrapper is a picklable object), and the wrapper patches
the worker process's dataset fetcher (guarded: a torch whose fetcher differs is not timed)
and, when the session samples Python stacks, starts the worker's own stack sampler
(`stepscope.capture.worker_sampler`). Each worker appends one line per batch to a file of a
spool directory made for the pass, its samples to another; `collect_all` reads them when
the session stops, as one line ("thread") per worker in the host plane, its id the worker's
pid, with a ``Python samples`` line under it. The clocks agree: ``time.perf_counter_ns`` is
the system's monotonic clock, one for every process. A persistent worker's batch numbers
start again with each pass (its fetcher is made anew for each).

Workers started before the session records (``persistent_workers=True`` from an earlier
pass) are not captured; a worker that outlives the session stops writing within
`CHECK_EVERY` batches (its sampler within a second) of its spool's removal.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stepscope.capture.host_tracer import ThreadBuffer
from stepscope.vocab.pytorch import (
    DATALOADER_BATCH_CPU_STAT,
    DATALOADER_BATCH_CPU_WAIT_STAT,
    DATALOADER_SETTING_PREFIX,
    DATALOADER_SETTINGS,
    DATALOADER_WORKER_LINE,
)
from stepscope.vocab.tensorflow import ITERATOR_PREFIX

# lines one worker writes at most (up to ~90 bytes each: ~9 MB, read whole at `stop()`); a
# profile holds a few hundred steps, so the bound is met only by a session left running
MAX_BATCHES = 100_000
CHECK_EVERY = 64  # batches between a worker's checks that its spool file is still read
WORKER = "Worker"
GET_ITEM = "GetItem"
COLLATE = "Collate"


@dataclass
class Spool:
    """The directory one instrumented pass's workers write to."""

    path: str
    loader: str  # the stage name (``Iterator::<loader>``)
    loader_id: int  # its stage id: the workers' spans' parent_id
    workers: int
    # the loader's settings at this iter() (`settings_of`): stats of each batch span
    settings: dict[str, int] = field(default_factory=dict)


@dataclass
class _Registry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    spools: list[Spool] = field(default_factory=list)


_registry = _Registry()
_armed = False  # a session that saves is recording (`arm`)


def arm(on: bool) -> None:
    """Whether loaders starting workers now capture them: on while a capture that saves
    records (not the flight recorder, whose session never stops to read the spools)."""
    global _armed
    _armed = on


def armed() -> bool:
    return _armed


def is_worker_loader(source: object) -> bool:
    """A PyTorch DataLoader with worker processes (no torch import for anything else)."""
    kind = type(source)
    if not any(k.__name__ == "DataLoader" for k in kind.__mro__):
        return False
    workers = getattr(source, "num_workers", 0)
    return isinstance(workers, int) and workers > 0 and hasattr(source, "worker_init_fn")


_sampler_hz = 0  # the recording session's python_sampler_hz: the workers' sampling rate


def set_sampler_hz(hz: int) -> None:
    global _sampler_hz
    _sampler_hz = max(int(hz), 0)


@contextlib.contextmanager
def capturing(source: Any, loader: str, loader_id: int) -> Any:
    """Around ``iter(source)`` of a DataLoader with workers while a session records: the
    workers it starts record their batches. The loader's own ``worker_init_fn`` is back when
    the block ends (the started workers keep the wrapper)."""
    path = tempfile.mkdtemp(prefix="stepscope-loader-")
    spool = Spool(path, loader, loader_id, int(source.num_workers), settings_of(source))
    user_fn = source.worker_init_fn
    try:
        source.worker_init_fn = WorkerHook(user_fn, path, _sampler_hz)
    except (AttributeError, ValueError, TypeError):  # a loader that refuses: not captured
        shutil.rmtree(path, ignore_errors=True)
        yield
        return
    with _registry.lock:
        _registry.spools.append(spool)
    try:
        yield
    finally:
        with contextlib.suppress(AttributeError, ValueError, TypeError):
            source.worker_init_fn = user_fn


def settings_of(loader: Any) -> dict[str, int]:
    """The DataLoader's own settings that the advice quotes (``num_workers``,
    ``prefetch_factor``...), as stats ``dataloader_<name>``: ints, booleans as 0/1; a setting
    the loader lacks or holds as None is left out, and so is anything else (a loader
    subclass's property that is not a number). ``batch_size`` None with a batch sampler: the
    sampler's own, when it has one. Reading them never fails the user's ``iter()``."""
    out: dict[str, int] = {}
    for name in DATALOADER_SETTINGS:
        try:
            value = getattr(loader, name, None)
            if value is None and name == "batch_size":
                value = getattr(getattr(loader, "batch_sampler", None), "batch_size", None)
        except Exception:  # a property that raises: that setting is not known
            continue
        if isinstance(value, bool) or (isinstance(value, int) and value >= 0):
            out[DATALOADER_SETTING_PREFIX + name] = int(value)
    return out


class WorkerHook:
    """The ``worker_init_fn`` of a captured pass: the user's own, then the fetcher patched
    so that each batch's spans go to this worker's spool file."""

    def __init__(self, user_fn: Callable[[int], Any] | None, path: str, hz: int = 0) -> None:
        self.user_fn = user_fn
        self.path = path
        self.hz = hz

    def __call__(self, worker_id: int) -> None:
        if self.user_fn is not None:
            self.user_fn(worker_id)
        try:
            _patch_fetchers(_WorkerLog(self.path, worker_id))
        except Exception:  # capture never breaks the user's loader
            return
        if self.hz > 0 and os.path.isdir(self.path):
            try:
                import sys

                from stepscope.capture.worker_sampler import WorkerSampler, worker_loop_code

                name = f"samples{worker_id}.{os.getpid()}.jsonl"
                root = worker_loop_code(sys._getframe(1))
                path = os.path.join(self.path, name)
                WorkerSampler(path, self.hz, threading.get_ident(), root).start()
            except Exception:  # nor does its sampler: the batches are still timed
                return


class _WorkerLog:
    """One worker's spool file, opened on its first batch; silent once it cannot write."""

    def __init__(self, path: str, worker_id: int) -> None:
        self.path = os.path.join(path, f"worker{worker_id}.{os.getpid()}.jsonl")
        self.worker_id = worker_id
        self.file: Any = None
        self.lines = 0
        self.seq = 0  # batches made in this pass
        self.fetcher: Any = None  # this pass's fetcher (a persistent worker makes one a pass)
        self.broken = False
        self.sched: int | None = None  # /proc/thread-self/schedstat of the fetching thread

    def cpu_wait_ns(self) -> int:
        """The calling thread's time runnable but not running (Linux schedstat's second
        field), -1 where it cannot be read. Read with one pread of a file kept open: the
        fetching thread's own, opened by it on its first batch."""
        if self.sched is None:
            try:
                self.sched = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            except OSError:
                self.sched = -1
        if self.sched < 0:
            return -1
        try:
            return int(os.pread(self.sched, 128, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return -1

    def new_pass(self, fetcher: Any) -> None:
        """A persistent worker's next pass (`iter()` again): its batch numbers start over."""
        if fetcher is not self.fetcher:
            if self.fetcher is not None:
                self.seq = 0
            self.fetcher = fetcher

    def write(
        self, start: int, collate: int, collated: int, end: int, cpu_ns: int = -1, wait_ns: int = -1
    ) -> None:
        if self.broken:
            return
        if self.lines >= MAX_BATCHES:
            if self.lines == MAX_BATCHES:  # said once: `collect_all` reports the drop
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    self.file.write(json.dumps(["full", end]) + "\n")
                self.lines += 1
            return
        if self.lines % CHECK_EVERY == CHECK_EVERY - 1 and not os.path.exists(self.path):
            # the session stopped and removed the spool (a persistent worker lives on):
            # nobody reads this file any more
            self.broken = True
            self.file.close()
            return
        try:
            if self.file is None:
                self.file = open(self.path, "a", buffering=1)  # noqa: SIM115 (kept open)
            row = [self.seq, start, collate, collated, end, cpu_ns, wait_ns]
            self.file.write(json.dumps(row) + "\n")
            self.lines += 1
            self.seq += 1
        except (OSError, ValueError):
            self.broken = True


def _patch_fetchers(log: _WorkerLog) -> None:
    """In the worker process only: time each ``fetch`` (one batch) and its ``collate_fn``."""
    from torch.utils.data._utils import fetch as fetch_module

    now = time.perf_counter_ns
    cpu_now = time.thread_time_ns  # the worker thread's CPU time: waiting or computing
    for name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(fetch_module, name, None)
        original = getattr(cls, "fetch", None)
        if cls is None or original is None or getattr(original, "_stepscope", False):
            continue
        if not _fetcher_shape_known(cls, original):  # another torch: leave it untimed
            continue

        def fetch(self: Any, index: Any, _original: Any = original) -> Any:
            marks: list[int] = []
            collate_fn = self.collate_fn

            def timed_collate(data: Any) -> Any:
                marks.append(now())
                try:
                    return collate_fn(data)
                finally:
                    marks.append(now())

            log.new_pass(self)
            cpu = cpu_now()
            waited = log.cpu_wait_ns()
            start = now()
            self.collate_fn = timed_collate
            try:
                batch = _original(self, index)
            finally:  # a batch that raised (the end of an IterableDataset) is not logged
                self.collate_fn = collate_fn
            end = now()
            cpu = cpu_now() - cpu
            waited = log.cpu_wait_ns() - waited if waited >= 0 else -1
            lo, hi = (marks[0], marks[1]) if len(marks) >= 2 else (end, end)
            log.write(start, lo, hi, end, cpu, waited)
            return batch

        fetch._stepscope = True  # type: ignore[attr-defined]
        cls.fetch = fetch


def _fetcher_shape_known(cls: type, fetch: Any) -> bool:
    """The fetcher as torch 1.x-2.x makes it: ``fetch(self, possibly_batched_index)`` calling
    ``self.collate_fn`` (an attribute set in ``__init__``). Anything else is not patched."""
    import inspect

    try:
        params = list(inspect.signature(fetch).parameters)
        init = list(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return False
    return len(params) == 2 and "collate_fn" in init


@dataclass
class Collected:
    """What the workers of a session's captured passes wrote."""

    buffers: list[ThreadBuffer] = field(default_factory=list)  # one per worker process
    sampled: list[Any] = field(default_factory=list)  # worker_sampler.SampledWorker
    warnings: list[str] = field(default_factory=list)  # what was dropped, and why


def collect(start_perf_ns: int, stop_perf_ns: int) -> list[ThreadBuffer]:
    """The spans of `collect_all` (the spools are removed)."""
    return collect_all(start_perf_ns, stop_perf_ns).buffers


def collect_all(start_perf_ns: int, stop_perf_ns: int) -> Collected:
    """The spans and stack samples the workers of this process's captured passes wrote, one
    buffer per worker process; the spool directories are removed. Batches and samples outside
    the recording are left out. Never raises on what a worker left (cut lines, a file it
    could not finish): those are skipped, and bounds reached are said in ``warnings``."""
    from stepscope.capture.worker_sampler import read_samples

    with _registry.lock:
        spools, _registry.spools = _registry.spools, []
    out = Collected()
    for spool in spools:
        try:
            names = sorted(os.listdir(spool.path))
        except OSError:
            names = []
        for file_name in names:
            path = os.path.join(spool.path, file_name)
            if file_name.startswith("samples"):
                read_samples(path, start_perf_ns, stop_perf_ns, out)
                continue
            buf = _read(spool, path, start_perf_ns, stop_perf_ns, out.warnings)
            if buf is not None:
                out.buffers.append(buf)
        shutil.rmtree(spool.path, ignore_errors=True)
    return out


def _read(
    spool: Spool, path: str, lo_ns: int, hi_ns: int, warnings: list[str]
) -> ThreadBuffer | None:
    try:
        head, pid_text, _ = os.path.basename(path).split(".")
        worker, pid = int(head.removeprefix("worker")), int(pid_text)
        with open(path) as f:
            text = f.read()
    except (OSError, ValueError):
        return None
    stage = f"{ITERATOR_PREFIX}{spool.loader}::{WORKER}"
    buf = ThreadBuffer(pid, -pid, f"{DATALOADER_WORKER_LINE}{worker} (pid {pid})")
    for line in text.splitlines():
        try:
            row = json.loads(line)
            if row[0] == "full":
                warnings.append(
                    f"stepscope: {buf.name}: {MAX_BATCHES} batches written; its later "
                    "batches were not recorded"
                )
                continue
            seq, start, collate, collated, end = (int(x) for x in row[:5])
            cpu_ns = int(row[5]) if len(row) > 5 else -1
            wait_ns = int(row[6]) if len(row) > 6 else -1
        except (ValueError, TypeError, IndexError, KeyError):
            continue  # a line cut by the worker's exit
        if end < lo_ns or start > hi_ns or not start <= collate <= collated <= end:
            continue
        stats = {
            "parent_id": spool.loader_id,
            "worker": worker,
            "batch": worker + seq * spool.workers,
        }
        # the batch's CPU time in the worker: what more workers would need cores for
        outer = {**stats, **spool.settings}
        if cpu_ns >= 0:
            outer[DATALOADER_BATCH_CPU_STAT] = cpu_ns
        if wait_ns >= 0:
            outer[DATALOADER_BATCH_CPU_WAIT_STAT] = wait_ns
        buf.events.append((stage, start, end, 0, outer))
        buf.events.append((f"{stage}::{GET_ITEM}", start, collate, 1, stats))
        buf.events.append((f"{stage}::{COLLATE}", collate, collated, 1, stats))
    return buf if buf.events else None
