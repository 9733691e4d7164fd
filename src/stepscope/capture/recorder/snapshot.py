"""A snapshot of the ring, taken on the triggering thread (copies of lists only), and its
save as a normal run, done later on the recorder's saver thread.

A save writes ``<logdir>/plugins/profile/<run>/<host>.xplane.pb`` as a capture does, plus
``<host>.recorder.json`` beside it (the trigger, the reason, the steps saved and what the
trigger found: the traceback of an exception, every thread's stack at a hang) and
``<host>.recorder_steps.json`` (the step summaries, kept far longer than events). The
profile's warnings say the trigger and reason too, so the diagnostics show them.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import logging
import threading
import time
from dataclasses import field
from pathlib import Path
from typing import Any

from stepscope.capture.host_tracer import HostTracer, ThreadBuffer
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.python_sampler import PythonSampler, SampledThread, current_frames
from stepscope.capture.recorder.after import FULL_OPTIONS, AfterCapture
from stepscope.capture.recorder.ring import StepHistory
from stepscope.records import record

log = logging.getLogger("stepscope.recorder")

MARKER_SUFFIX = ".recorder.json"
HISTORY_SUFFIX = ".recorder_steps.json"


@record(frozen=False)
class Snapshot:
    """What one save writes; every list is the snapshot's own copy."""

    trigger: str
    reason: str
    hostname: str
    perf_ns: int  # when it was taken
    wall_ns: int
    buffers: list[ThreadBuffer]
    sampled: list[SampledThread]
    sample_interval_ns: int
    history: StepHistory
    details: dict[str, Any] = field(default_factory=dict)
    run_name: str | None = None  # set for a save that other ranks share
    start_perf_ns: int = 0  # the saved profile's start, once written
    after: AfterCapture | None = None  # set for the capture of the steps after a trigger
    # A slow step's save ends with its last step (decision 515): what started after this
    # (perf_counter_ns) is left out when the run is written; None: everything taken.
    end_ns: int | None = None
    # The latest end of what the ring or the snapshot dropped (perf_counter_ns, -1: none):
    # its first step is whole when it started at or after it (`write`).
    dropped_end_ns: int = -1


def take(
    trigger: str,
    reason: str,
    hostname: str,
    host: HostTracer,
    sampler: PythonSampler | None,
    history: StepHistory,
    details: dict[str, Any] | None = None,
    cutoff_ns: int | None = None,
    end_ns: int | None = None,
    dropped_end_ns: int = -1,
) -> Snapshot:
    """Copy the ring now, less what ended before ``cutoff_ns`` (the ring is trimmed only
    now and then); called on any thread: the copies are single C calls under the GIL.
    What started after ``end_ns`` is left out later, by `write` on the saver thread (it
    takes a look at each event after that end). ``dropped_end_ns``: the latest end of what
    the ring dropped before (`Ring.dropped_end_ns`)."""
    perf_ns, wall_ns = time.perf_counter_ns(), time.time_ns()
    cutoff = -1 if cutoff_ns is None else cutoff_ns
    dropped = dropped_end_ns
    buffers = []
    for buf in host.buffers():
        copy = ThreadBuffer(buf.native_id, buf.ident, buf.name)
        events = buf.events
        first = bisect.bisect_right(events, cutoff, key=_end)
        if first:  # in the order they ended: the last one left out ended last
            dropped = max(dropped, _end(events[first - 1]))
        copy.events = events[first:]
        buffers.append(copy)
    sampled = []
    interval_ns = 0
    if sampler is not None:
        interval_ns = int(sampler.interval_s * 1e9)
        for thread in list(sampler.threads.values()):
            copy_t = SampledThread(thread.ident, thread.native_id, thread.name)
            runs = thread.runs
            first = bisect.bisect_right(runs, cutoff, key=_end_of_run)
            if first:
                dropped = max(dropped, _end_of_run(runs[first - 1]))
            copy_t.runs = [list(run) for run in runs[first:]]
            sampled.append(copy_t)
    return Snapshot(
        trigger,
        reason,
        hostname,
        perf_ns,
        wall_ns,
        buffers,
        sampled,
        interval_ns,
        history,
        dict(details or {}),
        end_ns=end_ns,
        dropped_end_ns=dropped,
    )


def _end(event: Any) -> int:
    return int(event[2])


def _end_of_run(run: Any) -> int:
    return int(run[1])


def thread_stacks() -> dict[str, str]:
    """Every thread's Python stack now, innermost last (as a traceback prints it)."""
    import traceback

    names = {t.ident: t.name for t in threading.enumerate()}
    stacks = {}
    for ident, frame in current_frames().items():
        label = f"{names.get(ident, 'thread')} ({ident})"
        stacks[label] = "".join(traceback.format_stack(frame))
    return stacks


def write(snapshot: Snapshot, logdir: str) -> Path:
    """Build and write the run; returns its directory."""
    from stepscope.capture.save import CaptureResult, build_profile, imported_framework
    from stepscope.capture.save import save as save_space
    from stepscope.logdir import run_name_for

    after = snapshot.after
    options = ProfilerOptions(device_tracer_level=0)
    bridges = None
    if after is not None:  # the steps after a trigger: the framework profilers' planes too
        snapshot.details = {**snapshot.details, **after.details()}
        options, bridges = FULL_OPTIONS, after.bridges
    stop_perf = _cut_at_end(snapshot)
    start_perf = _first_start(snapshot)
    if after is not None:
        start_perf = min(start_perf, after.start_perf_ns)
    snapshot.start_perf_ns = start_perf
    start_wall = snapshot.wall_ns - (snapshot.perf_ns - start_perf)
    _close_runs(snapshot, stop_perf)
    starts, kept = _kept_steps(snapshot)
    # Where the ring begins in the program (decision 530): the steps the recorder saw before
    # the first one saved. A save at step 652 of a running loop holds no warm-up, and its
    # analysis must not take a slow first step for one.
    history = snapshot.history
    before = history.rows_before(starts[0] if kept else snapshot.perf_ns)
    warning = f"stepscope flight recorder: saved by trigger '{snapshot.trigger}': {snapshot.reason}"
    if kept:
        warning += f" (steps {kept[0]} to {kept[-1]} kept)"
    result = CaptureResult(
        hostname=snapshot.hostname,
        options=options,
        logdir=logdir,
        run_name=snapshot.run_name or run_name_for(start_wall),
        start_wall_ns=start_wall,
        start_perf_ns=start_perf,
        stop_wall_ns=snapshot.wall_ns - (snapshot.perf_ns - stop_perf),
        stop_perf_ns=stop_perf,
        host_buffers=snapshot.buffers,
        sampled_threads=snapshot.sampled,
        warnings=[warning, *snapshot.details.get("warnings", [])],
        bridges=bridges,
        # the ring holds ended events only, so its last step is whole: often the slow step
        # the save is for, which XProf's edge rule would drop
        last_step_whole=True,
        # ... and its first step too, when nothing that ended after it began was left out:
        # the save cut the ring at that step's start (not the after run: the framework
        # profilers begin with it, and their first step may be partial)
        first_step_whole=bool(kept) and after is None and starts[0] >= snapshot.dropped_end_ns,
        steps_before=before,
        # the ring holds no framework op: the pages' advice is then in the imported one's words
        framework=imported_framework() if after is None else "",
    )
    run_dir = save_space(build_profile(result), result)
    marker = {
        "trigger": snapshot.trigger,
        "reason": snapshot.reason,
        "host": snapshot.hostname,
        "saved_wall_ns": snapshot.wall_ns,
        "steps": [kept[0], kept[-1]] if kept else None,
        "steps_before": before,
        **{k: v for k, v in snapshot.details.items() if k != "warnings"},
    }
    # every step summary the recorder still holds (start relative to the profile's start),
    # in a file of its own so that listing runs reads only the small marker
    summaries = {
        "fields": ["step_num", "start_ns", "dur_ns", "thread_id"],
        "steps": [[s.step_num, s.start_ns - start_perf, s.dur_ns, s.thread_id] for s in history],
    }
    from stepscope.logdir import host_file_name

    stem = host_file_name(snapshot.hostname)[: -len(".xplane.pb")]
    _write_json(run_dir / f"{stem}{HISTORY_SUFFIX}", summaries)
    _write_json(run_dir / f"{stem}{MARKER_SUFFIX}", marker)
    return run_dir


def _kept_steps(snapshot: Snapshot) -> tuple[list[int], list[int]]:
    """Starts and numbers of the steps whose markers the snapshot holds, in the order they
    started (from the events themselves: the watchdog may not have read the latest steps
    yet)."""
    found = sorted(
        (int(event[1]), int(event[4]["step_num"]))
        for buf in snapshot.buffers
        for event in buf.events
        if event[4] and "_r" in event[4] and isinstance(event[4].get("step_num"), int)
    )
    return [start for start, _number in found], [number for _start, number in found]


def _cut_at_end(snapshot: Snapshot) -> int:
    """Leave out what started after ``snapshot.end_ns`` (an event that straddles it stays,
    whole: an annotation around many steps, the loader's fetch in flight); returns when the
    saved profile stops: the end of the last event kept, never before ``end_ns``. Events
    are in the order they ended, so those that ended by then are a prefix; only the rest is
    looked at one by one (the steps between the slow step and its detection)."""
    end_ns = snapshot.end_ns
    if end_ns is None:
        return snapshot.perf_ns
    stop = end_ns
    for buf in snapshot.buffers:
        events = buf.events
        done = bisect.bisect_right(events, end_ns, key=_end)
        buf.events = events[:done] + [e for e in events[done:] if e[1] < end_ns]
        if buf.events:
            stop = max(stop, int(buf.events[-1][2]))
    for thread in snapshot.sampled:
        # runs are in time order: those that started by the end are a prefix
        thread.runs = thread.runs[: bisect.bisect_left(thread.runs, end_ns, key=_start_of_run)]
        if thread.runs:
            stop = max(stop, int(thread.runs[-1][1]) + snapshot.sample_interval_ns)
    return min(stop, snapshot.perf_ns)


def _start_of_run(run: Any) -> int:
    return int(run[0])


def _first_start(snapshot: Snapshot) -> int:
    # events are in the order they ended: a parent follows its children, so take the min
    starts = [min(e[1] for e in buf.events) for buf in snapshot.buffers if buf.events]
    starts += [t.runs[0][0] for t in snapshot.sampled if t.runs]
    return min(starts) if starts else snapshot.perf_ns


def _close_runs(snapshot: Snapshot, stop_perf_ns: int) -> None:
    """A sampled run lasts one interval after its last sample (cut at the next run), as at
    the end of a capture."""
    for thread in snapshot.sampled:
        runs = thread.runs
        for k, run in enumerate(runs):
            limit = runs[k + 1][0] if k + 1 < len(runs) else stop_perf_ns
            run[1] = min(run[1] + snapshot.sample_interval_ns, limit)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    from stepscope import tmpfiles

    tmpfiles.write_bytes(path, json.dumps(data).encode("utf-8"))


def enforce_disk_cap(logdir: str, hostname: str, max_bytes: int, keep: Path) -> list[Path]:
    """Remove this host's oldest recorder saves until they fit in ``max_bytes``; never the
    one just written (``keep``) and never a run the recorder did not write."""
    from stepscope.logdir import host_file_name, profile_root

    host_file = host_file_name(hostname)
    stem = host_file[: -len(".xplane.pb")]
    saves = []
    root = profile_root(logdir)
    for marker in root.glob(f"*/{stem}{MARKER_SUFFIX}"):
        files = [marker, marker.parent / f"{stem}{HISTORY_SUFFIX}", marker.parent / host_file]
        try:
            size = sum(f.stat().st_size for f in files if f.exists())
            saves.append((marker.stat().st_mtime, marker.parent, files, size))
        except OSError:
            continue
    saves.sort(key=lambda item: item[0])
    total = sum(item[3] for item in saves)
    removed = []
    for _mtime, run_dir, files, size in saves:
        if total <= max_bytes:
            break
        if run_dir == keep:
            continue
        for f in files:
            f.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # removed only when no other host's file is left
            run_dir.rmdir()
        total -= size
        removed.append(run_dir)
        log.info("stepscope recorder: removed %s (max_disk_bytes=%d)", run_dir, max_bytes)
    return removed
