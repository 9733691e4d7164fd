"""Turn a finished session's buffers into an XSpace and write it where TensorFlow would.

Layout: ``<logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<hostname>.xplane.pb`` (local time of
the start; a suffix ``_2``, ``_3``... if that run already holds this host's file); the ranks of
a job share one run, ``<hostname>.rank<k>.xplane.pb`` each (`stepscope.capture.job`). A file is
never replaced.

Planes: ``/host:CPU`` (one line per thread: id = OS thread id, name = thread name; annotations
and Python-tracer events together) and ``Task Environment`` (``profile_start_time`` and
``profile_stop_time`` as uint64 wall-clock ns, ``profile_options`` the serialized
``tensorflow.ProfileOptions``), as TensorFlow 2.x writes them.

Time base: recorded times are wall-clock aligned (``time.time_ns()`` domain). Like TensorFlow's
post-processing, the file stores them relative to ``profile_start_time`` (so the first line
timestamps are a few microseconds): XProf computes picoseconds in int64, and an absolute
epoch in ns times 1000 would overflow it. The absolute time of any event is
``profile_start_time + line.timestamp_ns + offset_ps / 1000``.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
from dataclasses import field
from pathlib import Path
from typing import Any

from stepscope import tmpfiles
from stepscope.capture.bridges.base import BridgeSet
from stepscope.capture.fetch_probe import is_program_code
from stepscope.capture.host_tracer import ThreadBuffer
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.python_sampler import SampledThread, own_frames, stack_text
from stepscope.capture.python_tracer.events import PyThreadEvents, event_name, is_internal
from stepscope.capture.step import STEP_ANCHOR
from stepscope.errors import StepscopeError
from stepscope.logdir import HOST_FILE_SUFFIX as HOST_SUFFIX
from stepscope.logdir import host_file_name, run_directory
from stepscope.records import record
from stepscope.vocab.profiler import (
    CLOCK_STAT,
    FETCHES_LINE,
    FETCHES_LINE_OFFSET,
    FIRST_STEP_WHOLE_STAT,
    LAST_STEP_WHOLE_STAT,
    LOOP_FIRST_LINE_STAT,
    LOOP_LAST_LINE_STAT,
    ON_CPU_STAT,
    OWN_CODE_STAT,
    OWN_FRAMES_STAT,
    RUNNABLE_STAT,
    START_RETURNED_STAT,
    STARTED_ON_THREAD_STAT,
    STEPS_BEFORE_STAT,
    THREAD_CPU_LINE,
    THREAD_CPU_LINE_OFFSET,
)
from stepscope.vocab.tensorflow import GET_NEXT, ITERATOR_PREFIX
from stepscope.xspace.builder import Ref, StatValue, XSpaceBuilder
from stepscope.xspace.columns_pb import encode_space
from stepscope.xspace.proto.xplane_pb2 import XSpace
from stepscope.xspace.wire import RawColumns

HOST_PLANE = "/host:CPU"
TASK_ENV_PLANE = "Task Environment"
UINT64_MAX = (1 << 64) - 1


class ProfileSaveError(StepscopeError):
    """The profile could not be written; ``space`` still holds it (see ``save_to``)."""

    def __init__(self, message: str, space: XSpace | bytes, path: Path | None) -> None:
        super().__init__(message)
        self.data = space if isinstance(space, bytes) else space.SerializeToString()
        self.path = path

    @property
    def space(self) -> XSpace:
        parsed = XSpace()
        parsed.ParseFromString(self.data)
        return parsed

    def save_to(self, path: str | os.PathLike[str]) -> Path:
        """Try again somewhere else."""
        from stepscope.xspace.io import write_xspace

        return write_xspace(self.space, path)


@record(frozen=False)
class CaptureResult:
    """What a session recorded, in the form `build_xspace` needs."""

    hostname: str
    options: ProfilerOptions
    logdir: str
    run_name: str
    start_wall_ns: int  # time.time_ns() when recording began
    start_perf_ns: int  # perf_counter_ns() at the same instant
    stop_wall_ns: int
    stop_perf_ns: int
    host_buffers: list[ThreadBuffer] = field(default_factory=list)
    python_threads: list[PyThreadEvents] = field(default_factory=list)
    sampled_threads: list[SampledThread] = field(default_factory=list)
    dropped_events: int = 0
    warnings: list[str] = field(default_factory=list)
    bridges: BridgeSet | None = None  # framework profilers to merge (capture.bridges)
    # no capture window cut the last step / the first (a recorder save says; None: a
    # session's: its own markers are whole, decision 671)
    last_step_whole: bool | None = None
    first_step_whole: bool | None = None
    # a recorder save: the steps the recorder saw before the first one saved (None: a capture)
    steps_before: int | None = None
    # host-plane stats of the machine while recording (`capture.loader_hook.CpuUse`)
    host_stats: dict[str, int | float] = field(default_factory=dict)
    # the native id of the thread whose `start()` began recording at once (0: none such)
    started_on_thread: int = 0
    # perf_counter_ns() when that `start()` returned to its caller (0: unknown)
    start_returned_perf_ns: int = 0
    # (native thread id, fetches) of `capture.fetch_probe`: (callee, loop, start, end, the
    # loop's first and last line or None)
    fetch_probe: tuple[int, list[tuple[str, str, int, int, tuple[int, int] | None]]] = (0, [])
    # the program's framework where no framework event says it: a recorder save holds none of
    # its ops (`imported_framework`; "": unknown, or the events say)
    framework: str = ""


def split_encoded_name(name: str) -> tuple[str, dict[str, Any]]:
    """TensorFlow's annotation encoding ``name#k1=v1,k2=v2#`` -> (name, stats)."""
    head, sep, tail = name.partition("#")
    if not sep:
        return name, {}
    stats: dict[str, Any] = {}
    for item in tail.rstrip("#").split(","):
        key, eq, value = item.partition("=")
        if eq and key:
            stats[key] = _parse_number(value)
    return head, stats


def _parse_number(text: str) -> Any:
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


# Names of events that are user annotations (`stepscope.trace`) carry this metadata stat.
ANNOTATION_STAT = "stepscope_annotation"
# Input-pipeline events written by `stepscope.data` (framework ops of their own kind).
_INPUT_PREFIXES = (ITERATOR_PREFIX, GET_NEXT)


def stat_value(value: Any) -> StatValue:
    """A metadata value as TensorFlow stores it: numbers as numbers, anything else a string."""
    if isinstance(value, bool):
        return Ref(str(value))
    if isinstance(value, int):
        return value if -(1 << 63) <= value <= UINT64_MAX else Ref(str(value))
    if isinstance(value, (float, bytes)):
        return value
    if isinstance(value, Ref):
        return value
    return Ref(value if isinstance(value, str) else str(value))


def _convert_stats(stats: dict[str, Any] | None) -> dict[str, StatValue] | None:
    if not stats:
        return None
    return {str(key): stat_value(value) for key, value in stats.items()}


def build_xspace(result: CaptureResult) -> XSpace:
    """The XSpace of one capture (see the module docstring for its layout)."""
    built = _build(result)
    if isinstance(built, XSpace):
        return built
    space = XSpace()
    space.ParseFromString(encode_space(built))
    return space


def build_profile(result: CaptureResult) -> bytes:
    """The serialized XSpace of one capture: what `save` writes. A framework's events merged
    as raw columns are written by the columnar writer, never as protobuf messages."""
    built = _build(result)
    return built.SerializeToString() if isinstance(built, XSpace) else encode_space(built)


def _build(result: CaptureResult) -> XSpace | RawColumns:
    space = _own_space(result)
    if result.bridges is not None:  # framework planes, on this profile's clock
        return result.bridges.merge_into(space, result.start_perf_ns, result.stop_perf_ns)
    return space


def _own_space(result: CaptureResult) -> XSpace:
    """stepscope's own planes of one capture: the XSpace framework planes are merged into."""
    builder = XSpaceBuilder(hostname=result.hostname)
    plane = builder.plane(HOST_PLANE)
    base = result.start_perf_ns  # perf_counter time of profile_start_time
    by_thread: dict[int, list[tuple[int, int, int, str, dict[str, StatValue] | None]]] = {}
    thread_names: dict[int, str] = {}
    annotations: set[str] = set()
    last_marker_end = -1  # of stepscope's own step markers (perf_counter ns)
    for buf in result.host_buffers:
        rows = by_thread.setdefault(buf.native_id, [])
        thread_names[buf.native_id] = buf.name
        for name, start, end, depth, stats in buf.events:
            text = str(name)
            converted = _convert_stats(stats)
            if "#" in text:
                text, encoded = split_encoded_name(text)
                converted = {**(converted or {}), **(_convert_stats(encoded) or {})} or None
            rows.append((start - base, end - start, depth, text, converted))
            if converted and "_r" in converted and end > start:
                rows.append((start - base, 1, depth + 1, STEP_ANCHOR, None))
                last_marker_end = max(last_marker_end, end)
            if not (converted and "_r" in converted) and not text.startswith(_INPUT_PREFIXES):
                annotations.add(text)
    # `stepscope.trace` spans are the user's own ops: a metadata stat (no per-event cost)
    # tells analysis to list them with the framework ops in op stats and top ops.
    for text in annotations:
        plane.event_metadata_id(text, stats={ANNOTATION_STAT: 1})
    names: dict[Any, str] = {}
    own: set[str] = set()  # the program's own functions' event names (`OWN_CODE_STAT`)
    for thread in result.python_threads:
        rows = by_thread.setdefault(thread.native_id, [])
        thread_names.setdefault(thread.native_id, thread.name or f"Thread {thread.native_id}")
        closing = [
            (code, start, result.stop_perf_ns, depth)
            for depth, (code, start) in enumerate(thread.stack)
        ]
        for code, start, end, depth in [*thread.events, *closing]:
            # Frames opened before recording began (delay_ms, open at start) start at it.
            if end >= base and not is_internal(code):
                first = max(start, base)
                text = event_name(code, names)
                rows.append((first - base, end - first, depth, text, None))
                if is_program_code(code.co_filename):
                    own.add(text)
    # a metadata stat, once per function: the analysis names the user's function, not a
    # library's, behind a run of ops (decision 1033)
    for text in own:
        plane.event_metadata_id(text, stats={OWN_CODE_STAT: 1})
    for native_id, rows in by_thread.items():
        if not rows:
            continue
        line = plane.line(native_id, thread_names.get(native_id, str(native_id)))
        # Parents before children: earlier start first, then the longer, then the shallower.
        rows.sort(key=lambda row: (row[0], -row[1], row[2]))
        for start_ns, dur_ns, _depth, text, stats in rows:
            line.event(text, start_ns, max(dur_ns, 0), stats)
    _add_python_samples(plane, result, thread_names)
    _add_thread_cpu(plane, result, thread_names)
    _add_fetch_probe(plane, result, thread_names)
    warnings = list(result.warnings)
    if result.dropped_events:
        plane.stats["dropped_events"] = result.dropped_events
        plane.stats["max_events"] = result.options.max_events
        warnings.append(
            f"stepscope: {result.dropped_events} events were dropped because max_events="
            f"{result.options.max_events} was reached; raise ProfilerOptions.max_events"
        )
    # Of stepscope's own markers (`stepscope.step`, `stepscope.steps`, the callbacks), each
    # recorded only for a step that began while the capture recorded: neither end was cut by
    # the capture window, and XProf's rule of dropping the first and the last marked step as
    # possibly cut off must not apply (decisions 609, 622). Said whatever framework bridges
    # ran: the analysis applies the stats only when every marker it reads is one of these
    # (`stats.steps.markers`), not a framework's (a Keras callback's, a StepTraceAnnotation),
    # and a framework's `_r` on its function calls (TensorFlow's `FunctionRun`) is no marker
    # there (decision 671: judged by the bridges' traces, `stepscope.steps` over a TF loop
    # read 38 of 40 steps, and a capture read 6 of 8 after TF and JAX were imported).
    last_whole, first_whole = result.last_step_whole, result.first_step_whole
    if last_whole is None:
        # a step still open at stop() can close into a buffer the save reads later: whole
        # only when it ended before the stop
        last_whole = last_marker_end <= result.stop_perf_ns
    if last_whole:
        plane.stats[LAST_STEP_WHOLE_STAT] = 1
    if first_whole is None or first_whole:
        plane.stats[FIRST_STEP_WHOLE_STAT] = 1
    if result.steps_before is not None:
        plane.stats[STEPS_BEFORE_STAT] = result.steps_before
    for key, value in result.host_stats.items():
        plane.stats[key] = value
    if result.started_on_thread:
        plane.stats[STARTED_ON_THREAD_STAT] = result.started_on_thread
        if result.start_returned_perf_ns >= base:
            plane.stats[START_RETURNED_STAT] = result.start_returned_perf_ns - base
    if clock := machine_clock():
        plane.stats[CLOCK_STAT] = clock
    builder.warnings.extend(warnings)
    space = builder.build()
    _add_task_environment(space, result)
    return space


# Line ids of "Python samples" lines: this offset plus the sampled thread's line id (its OS
# thread id), so they never collide with thread lines (docs/formats/python_samples.md).
SAMPLES_LINE_OFFSET = 1 << 48
SAMPLES_LINE = "Python samples"


def _add_python_samples(plane: Any, result: CaptureResult, thread_names: dict[int, str]) -> None:
    """One "Python samples" line per sampled thread: runs of identical stacks."""
    from stepscope.capture.fetch_sites import FetchSites

    base = result.start_perf_ns
    names: dict[Any, str] = {}
    sites = FetchSites()
    for thread in result.sampled_threads:
        runs = [r for r in thread.runs if r[1] > base]
        if not runs:
            continue
        label = thread_names.get(thread.native_id) or thread.name or str(thread.native_id)
        line = plane.line(
            SAMPLES_LINE_OFFSET + thread.native_id, SAMPLES_LINE, f"{SAMPLES_LINE}: {label}"
        )
        line.display_id = thread.native_id
        for run in runs:
            start, end, stack, count = run[:4]
            first = max(start, base)
            fetched = ""
            mine: str | None = None
            if isinstance(stack, str):  # a DataLoader worker's, written as text there
                innermost, text = stack.rpartition(";")[2] or "<no Python frame>", stack
            else:
                lastis = run[4] if len(run) > 4 else None
                innermost, text, fetched = stack_text(stack, names, lastis, sites)
                mine = own_frames(stack, is_program_code)
            stats: dict[str, Any] = {"stack": text, "samples": count}
            if fetched:
                stats["next_frames"] = fetched
            if mine is not None:
                stats[OWN_FRAMES_STAT] = mine
            line.event(innermost, first - base, end - first, stats)


def _add_thread_cpu(plane: Any, result: CaptureResult, thread_names: dict[int, str]) -> None:
    """One "Thread CPU" line per sampled thread with schedstat readings: per interval
    between two readings in the recording, the thread's time on a CPU and runnable but
    waiting for one (docs/formats/python_samples.md)."""
    base = result.start_perf_ns
    for thread in result.sampled_threads:
        readings = getattr(thread, "cpu", ())  # a DataLoader worker's (`SampledWorker`): none
        if len(readings) < 6:
            continue
        label = thread_names.get(thread.native_id) or thread.name or str(thread.native_id)
        line = plane.line(
            THREAD_CPU_LINE_OFFSET + thread.native_id,
            THREAD_CPU_LINE,
            f"{THREAD_CPU_LINE}: {label}",
        )
        line.display_id = thread.native_id
        for k in range(3, len(readings), 3):
            lo, hi = readings[k - 3], readings[k]
            if lo < base:  # a reading before recording began (delay_ms) bounds nothing
                continue
            stats = {
                ON_CPU_STAT: readings[k + 1] - readings[k - 2],
                RUNNABLE_STAT: readings[k + 2] - readings[k - 1],
            }
            line.event("cpu", lo - base, hi - lo, stats)


def _add_fetch_probe(plane: Any, result: CaptureResult, thread_names: dict[int, str]) -> None:
    """The "Python fetches" line of the thread `capture.fetch_probe` watched: one event per
    fetch timed, named after the frame entered for the next item, stat ``loop`` the frame
    that asked for it."""
    native_id, fetches = result.fetch_probe
    base = result.start_perf_ns
    fetches = [f for f in fetches if f[3] > base]
    if not native_id or not fetches:
        return
    sampled = {t.native_id: t.name for t in result.sampled_threads}
    label = thread_names.get(native_id) or sampled.get(native_id) or str(native_id)
    line = plane.line(FETCHES_LINE_OFFSET + native_id, FETCHES_LINE, f"{FETCHES_LINE}: {label}")
    line.display_id = native_id
    for callee, loop, start, end, lines in sorted(fetches, key=lambda f: f[2]):
        first = max(start, base)
        stats: dict[str, Any] = {"loop": loop}
        if lines is not None:
            stats[LOOP_FIRST_LINE_STAT], stats[LOOP_LAST_LINE_STAT] = lines
        line.event(callee, first - base, end - first, stats)


def machine_clock() -> str:
    """``"<hostname> boot <boot id>"``: the clock this process's times count on (`CLOCK_STAT`),
    "" where the boot id cannot be read (not Linux)."""
    try:
        # bytes, decoded by the built-in UTF-8 codec: a text file's "ascii" codec would be
        # imported here, on a save thread, while the training thread may be importing
        # (decision 432's import-lock deadlock; the background-save test lists such imports)
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            boot = f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return f"{socket.gethostname()} boot {boot}" if boot else ""


def _add_task_environment(space: XSpace, result: CaptureResult) -> None:
    """TensorFlow's ``Task Environment`` plane: uint64 times and the serialized options."""
    plane = space.planes.add()
    plane.id = len(space.planes) - 1
    plane.name = TASK_ENV_PLANE
    options = result.options.to_proto(repository_path=result.logdir, session_id=result.run_name)
    values: list[tuple[str, str, Any]] = [
        ("profile_start_time", "uint64_value", result.start_wall_ns),
        ("profile_stop_time", "uint64_value", result.stop_wall_ns),
        ("profile_options", "bytes_value", options.SerializeToString()),
    ]
    if result.framework:  # read by the analysis (`framework_of`) as TensorFlow's plane has none
        values.append(("framework", "str_value", result.framework))
    for meta_id, (name, kind, value) in enumerate(values, start=1):
        plane.stat_metadata[meta_id].id = meta_id
        plane.stat_metadata[meta_id].name = name
        stat = plane.stats.add()
        stat.metadata_id = meta_id
        setattr(stat, kind, value)


# the frameworks a program imports, by their top module: the first imported names it
FRAMEWORK_MODULES = (("torch", "pytorch"), ("tensorflow", "tensorflow"), ("jax", "jax"))


def imported_framework() -> str:
    """The one framework the program imported, or "" when none or several (which one the
    steps use is then unknown)."""
    found = [name for module, name in FRAMEWORK_MODULES if module in sys.modules]
    return found[0] if len(found) == 1 else ""


def save(space: XSpace | bytes, result: CaptureResult, run_dir: Path | None = None) -> Path:
    """Write ``space`` (into ``run_dir`` if given, else a new run directory) as a new file:
    never over an existing profile. When the host file's name is taken (another process
    saving the same name at the same instant), the next free run name is used, with a
    warning. On failure keep it (in a temp dir if possible) and say where."""
    from stepscope import log

    if run_dir is None:
        run_dir = run_directory(result.logdir, result.run_name, result.hostname)
    name = host_file_name(result.hostname)
    target = run_dir / name
    data = space if isinstance(space, bytes) else space.SerializeToString()
    try:
        while True:
            try:
                tmpfiles.write_new(target, data)
                # a save killed earlier (SIGKILL, power loss) left its temporary file in a
                # run directory nothing writes to again: removed now
                tmpfiles.sweep_stale_runs(target.parent.parent)
                return target.parent
            except FileExistsError:
                taken = target
                target = run_directory(result.logdir, run_dir.name, result.hostname) / name
                log.warn(
                    f"stepscope: {taken} already exists (another process saved the same "
                    f"host name); this profile is saved as {target} instead. Name each "
                    "process (hostname=, or a rank: docs/jobs.md) to keep them in one run"
                )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        fallback = Path(tempfile.gettempdir()) / "stepscope-unsaved" / result.run_name
        try:
            kept = tmpfiles.write_new(_unused(fallback / name), data)
            where = f"the profile was written to {kept} instead"
        except OSError:
            where = "the profile is kept in this exception: call .save_to(path)"
        raise ProfileSaveError(
            f"could not save the profile to {target}: {reason}; {where}", data, target
        ) from exc


def _unused(path: Path) -> Path:
    """``path``, or ``path`` with ``.2``, ``.3``... before its suffix, the first not there."""
    candidate, n = path, 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name[: -len(HOST_SUFFIX)]}.{n}{HOST_SUFFIX}")
        n += 1
    return candidate


def save_profile(result: CaptureResult, run_dir: Path | None = None) -> Path:
    """Build and write one capture (into ``run_dir`` if given, else a new run directory): a
    deferred PyTorch save where the session's one bridge keeps its trace (decision 910,
    `stepscope.xspace.deferred`), else the merged XSpace by `save`."""
    bridge = result.bridges.deferred() if result.bridges is not None else None
    if bridge is None:
        return save(build_profile(result), result, run_dir)
    return _save_deferred(result, bridge, run_dir)


def _save_deferred(result: CaptureResult, bridge: Any, run_dir: Path | None) -> Path:
    """stepscope's own planes, torch's trace as exported and what merging them needs, as
    three new files of the run (the host file last: a reader never finds it without the
    others). Where the export fails with the profiler's events still held, the eager save."""
    from stepscope.xspace import deferred as layout

    assert result.bridges is not None
    given = run_dir
    space = _own_space(result)
    if run_dir is None:
        run_dir = run_directory(result.logdir, result.run_name, result.hostname)
    stem = host_file_name(result.hostname)[: -len(HOST_SUFFIX)]
    names = [f"{stem}{s}" for s in (layout.TRACE_SUFFIX, layout.META_SUFFIX, layout.HOST_SUFFIX)]
    base, suffix = run_dir, 2
    while any(os.path.lexists(run_dir / n) for n in [*names, f"{stem}{HOST_SUFFIX}"]):
        run_dir, suffix = base.with_name(f"{base.name}_{suffix}"), suffix + 1
    trace, meta, host = (run_dir / n for n in names)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        handle, tmp = tmpfiles.mkstemp(run_dir)
        os.close(handle)
    except OSError:
        return save(build_profile(result), result, given)
    try:
        try:
            bridge.export(Path(tmp))
        except Exception:
            if bridge.deferrable():  # nothing taken: the eager save says what fails
                Path(tmp).unlink(missing_ok=True)
                return save(build_profile(result), result, given)
            raise
        space.warnings.extend(result.bridges.warnings)  # the torch trace's own: when read
        doc = layout.meta_of(
            bridge.sync,
            bridge.logs,
            bridge.cuda,
            result.start_perf_ns,
            result.stop_perf_ns,
            bridge.title,
        )
        try:
            os.link(tmp, trace)
        except FileExistsError:
            raise
        except OSError:  # no hard links here: the name was checked free above
            os.replace(tmp, trace)
        tmpfiles.write_new(meta, json.dumps(doc).encode("utf-8"))
        tmpfiles.write_new(host, space.SerializeToString())
    except OSError as exc:
        raise ProfileSaveError(
            f"could not save the profile to {host}: {exc.strerror or exc}; torch's trace is "
            f"at {trace} if it was written",
            space,
            host,
        ) from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
        result.bridges.close()
    tmpfiles.sweep_stale_runs(run_dir.parent)
    return run_dir
