"""Finding runs and hosts under a log directory (local paths or fsspec URLs).

Which files are profiles, of which format and host, is each input format's declaration
(`stepscope.xspace.formats`); this module walks the folders and asks them. With the formats
declared today:
- TensorFlow: ``<logdir>/[<tbrun>/]plugins/profile/<session>/<host>.xplane.pb[.gz]``; each
  session directory is one run, each file one host.
- PyTorch: ``*.pt.trace.json[.gz]`` anywhere; the files of one directory form one run, one host
  per file (``{worker}.{time_ns}.pt.trace.json`` -> host ``worker``), unless they were
  recorded far apart in time: then each group of them is a run (``<folder>@<UTC start>``,
  `_by_time`). Other ``.json[.gz]`` files are Kineto traces too when they hold a JSON object
  with ``traceEvents`` (found by content, as ``stepscope report FILE`` reads them), outside
  TensorFlow session directories.
A single profile file (any ``.xplane.pb``, ``.json``, ``.json.gz``) is also a one-host run.
"""

from __future__ import annotations

import contextlib
import posixpath
from typing import Any

from stepscope.errors import NotFoundError
from stepscope.log import module_logger
from stepscope.logdir import is_run_dir
from stepscope.model import fs
from stepscope.model.hung_stack import hung_thread_stack
from stepscope.records import record
from stepscope.xspace import formats
from stepscope.xspace.formats import InputFormat

_sniffed: dict[tuple[str, str], InputFormat | None] = {}  # (path, signature) -> probed format


@record
class HostFile:
    """One host's profile file in a run, with its format and size."""

    host: str
    path: str
    format: str  # an input format's name (stepscope.xspace.formats): "xspace", "kineto"
    size_bytes: int


@record
class Run:
    """A profiling run: its directory and the profile file of each host."""

    name: str  # relative to the log directory, '/'-separated
    path: str  # the run directory (or the file, for a single-file run)
    hosts: tuple[HostFile, ...]
    # the flight recorder's ``<host>.recorder.json`` files: it saved this run (`saved_by`)
    recorder_markers: tuple[str, ...] = ()

    @property
    def host_names(self) -> list[str]:
        return [h.host for h in self.hosts]

    def host(self, name: str) -> HostFile:
        for host in self.hosts:
            if host.host == name:
                return host
        raise NotFoundError(
            f"run {self.name!r} has no host {name!r}; hosts: {', '.join(self.host_names)}"
        )

    @property
    def size_bytes(self) -> int:
        return sum(h.size_bytes for h in self.hosts)


logger = module_logger(__name__)


def format_of(path: str) -> str | None:
    """The name of the format a file given by itself is read as, or None."""
    found = formats.claiming(path)
    return found.name if found is not None else None


def host_name_of(path: str) -> str:
    """The host a profile file stands for, from its name."""
    found = formats.claiming(path)
    base = formats.base_name(path)
    return found.host_name(base) if found is not None else base


def _probed(path: str) -> InputFormat | None:
    """The format a file's first bytes show (for names that prove nothing alone)."""
    name = formats.base_name(path)
    candidates = [f for f in formats.all_formats() if f.probe_name(name)]
    if not candidates:
        return None
    try:
        key = (path, fs.signature(path))
    except OSError:
        return None
    if key not in _sniffed:
        head = fs.read_head(path, max(f.probe_bytes for f in candidates))
        _sniffed[key] = formats.probing(head, name)
    return _sniffed[key]


def _unique_hosts(hosts: list[HostFile]) -> tuple[HostFile, ...]:
    """Disambiguate equal host names (two traces of one worker) with a numeric suffix."""
    seen: dict[str, int] = {}
    out = []
    for host in sorted(hosts, key=lambda h: (h.host, h.path)):
        count = seen.get(host.host, 0)
        seen[host.host] = count + 1
        out.append(
            host
            if count == 0
            else HostFile(f"{host.host}.{count}", host.path, host.format, host.size_bytes)
        )
    return tuple(out)


def _host_files(dirpath: str, names: list[str], fmt: InputFormat) -> list[HostFile]:
    """Host files of one directory; one that cannot be read (a dangling symlink, no
    permission) is left out with a warning instead of failing the whole log directory."""
    hosts = []
    for name in names:
        path = fs.join(dirpath, name)
        try:
            hosts.append(HostFile(fmt.host_name(name), path, fmt.name, size_of(path, fmt)))
        except OSError as exc:
            logger.warning("stepscope: skipped %s: %s", path, exc.strerror or exc)
    return hosts


def size_of(path: str, fmt: InputFormat) -> int:
    """A host file's size with its companions' (those there): a deferred save's trace."""
    size = fs.size(path)
    for other in fmt.companions(path):
        with contextlib.suppress(OSError):  # the reader says what is missing
            size += fs.size(other)
    return size


def missing_path(path: str) -> NotFoundError:
    """The error for a path that is not there, with what to give instead: a profile file
    mistyped read "no such directory", which named neither the file nor the kinds of path
    every command takes (decision 612)."""
    return NotFoundError(
        f"{path}: no such file or directory (give a log directory, a run directory "
        f".../plugins/profile/<run>, or a profile file: {formats.expected_names()})"
    )


def discover_runs(logdir: str) -> list[Run]:
    """All runs under ``logdir``, sorted by name. Raises NotFoundError if it does not exist."""
    root = fs.normalize(logdir)
    if not fs.isdir(root):
        if fs.isfile(root):
            return [single_file_run(root)]
        raise missing_path(logdir)
    runs: list[Run] = []
    every = formats.all_formats()
    for dirpath, filenames in fs.walk(root):
        rel = fs.relpath(dirpath, root)
        parts = [] if rel == "." else rel.split("/")
        full_parts = dirpath.rstrip("/").split("/")
        in_session = any(
            f.layout == "session" and f.host_file(name) for f in every for name in filenames
        )
        if is_run_dir(full_parts):
            # a session directory is one run, whatever formats its host files have (a capture
            # saved deferred beside XSpace files, decision 910)
            session = [
                host
                for fmt in every
                if fmt.layout == "session"
                for host in _host_files(dirpath, [n for n in filenames if fmt.host_file(n)], fmt)
            ]
            if session:
                name = "/".join([*parts[:-3], full_parts[-1]])
                markers = tuple(
                    fs.join(dirpath, f) for f in filenames if f.endswith(RECORDER_MARKER)
                )
                runs.append(Run(name, dirpath, _unique_hosts(session), markers))
        for fmt in every:
            if fmt.layout == "session":
                continue
            found = [
                n
                for n in filenames
                if fmt.host_file(n)
                or (not in_session and fmt.probe_name(n) and _probed(fs.join(dirpath, n)) is fmt)
            ]
            hosts = _host_files(dirpath, found, fmt)
            if hosts:
                name = rel if rel != "." else posixpath.basename(root.rstrip("/")) or "."
                for suffix, group in _by_time(hosts, fmt):
                    runs.append(Run(name + suffix, dirpath, _unique_hosts(group)))
    return sorted(runs, key=lambda r: r.name)


# Traces of one folder whose recordings start more than this apart are separate runs (decision
# 186): the ranks of one job start recording within seconds of each other (their profiler
# schedules step together), while a folder that collects traces (a download, torch's
# tensorboard_trace_handler across runs of a script) holds recordings minutes to years apart.
RUN_GAP_NS = 5 * 60 * 10**9
_recorded: dict[tuple[str, str], int | None] = {}  # (path, signature) -> recorded_at


def _recorded_at(path: str, fmt: InputFormat) -> int | None:
    assert fmt.recorded_at is not None
    try:
        key = (path, fs.signature(path))
    except OSError:
        return None
    if key not in _recorded:
        head = fs.read_head(path, fmt.time_bytes)
        _recorded[key] = fmt.recorded_at(head, fs.read_tail(path, fmt.time_bytes))
    return _recorded[key]


def _by_time(hosts: list[HostFile], fmt: InputFormat) -> list[tuple[str, list[HostFile]]]:
    """The folder's host files as runs: (name suffix, hosts). One run, named after the folder,
    unless their recordings start more than RUN_GAP_NS apart: then each group is a run named
    ``<folder>@<UTC start, YYYY_MM_DD_HH_MM_SS>`` and files that do not say when they were
    recorded stay in the one named after the folder."""
    if len(hosts) < 2 or fmt.recorded_at is None:
        return [("", hosts)]
    timed = sorted(
        ((t, h) for h in hosts if (t := _recorded_at(h.path, fmt)) is not None),
        key=lambda item: (item[0], item[1].path),
    )
    groups: list[list[tuple[int, HostFile]]] = []
    for t, host in timed:
        if groups and t - groups[-1][-1][0] <= RUN_GAP_NS:
            groups[-1].append((t, host))
        else:
            groups.append([(t, host)])
    if len(groups) < 2:
        return [("", hosts)]
    out = [(f"@{_stamp(group[0][0])}", [h for _, h in group]) for group in groups]
    grouped = {h.path for _, h in timed}
    untimed = [h for h in hosts if h.path not in grouped]
    return out + ([("", untimed)] if untimed else [])


def _stamp(ns: int) -> str:
    import time

    seconds = max(0, min(ns // 10**9, 253402300799))  # within years 1970..9999
    return time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(seconds))


# Written by the flight recorder beside each host file it saves (stepscope.capture.recorder):
# the trigger and what it found, and the step summaries it still held.
RECORDER_MARKER = ".recorder.json"
RECORDER_HISTORY = ".recorder_steps.json"
_MARKER_LIMIT = 1 << 20  # a marker holds a reason, a traceback or stacks: far below this
_HISTORY_LIMIT = 64 << 20  # 100,000 steps (the recorder's default bound) take about 5 MB


def _read_json(path: str, limit: int) -> Any:
    """The JSON document at ``path`` (at most ``limit`` bytes), or None when it cannot be
    read or parsed (logged: a damaged marker never hides the run)."""
    import json

    try:
        return json.loads(fs.read_head(path, limit))
    except (OSError, ValueError) as exc:
        logger.warning("stepscope: ignored the flight recorder's file %s: %s", path, exc)
        return None


def _marker_host(run: Run, marker_path: str) -> str:
    """The host whose file the marker sits beside (``<stem>.recorder.json`` beside
    ``<stem>.xplane.pb``), else the run's first host."""
    stem = posixpath.basename(marker_path)[: -len(RECORDER_MARKER)]
    for host in run.hosts:
        if posixpath.basename(host.path).split(".xplane.pb")[0] == stem:
            return host.host
    return run.hosts[0].host if run.hosts else ""


def trigger_step(marker: dict[str, Any]) -> int | None:
    """The step the trigger fired at: a slow step's own number, else the last step the run
    kept (the one the program was in: an exception, a hang, a signal or a request)."""
    step = marker.get("step")
    if isinstance(step, int) and not isinstance(step, bool):
        return step
    kept = marker.get("steps")
    if isinstance(kept, list) and len(kept) == 2 and all(isinstance(k, int) for k in kept):
        return int(kept[1])
    return None


def saved_by(run: Run) -> dict[str, Any] | None:
    """``{"trigger", "reason", "host", "step", "part", "steps", "steps_before", "steps_from",
    "hung"}``
    of a run the flight recorder saved (its first readable host marker; ``step``:
    `trigger_step`, None if unknown; ``part``: "after" for the steps captured in full after a
    trigger, else "before";
    ``steps``: the first and last step kept, ``steps_before``: the steps the recorder saw
    before the first, None when the marker does not say; ``steps_from``: "dataloader_fetches"
    when the recorder found the steps at a DataLoader's fetches, else ""; ``hung``: at a
    hang, where the hung thread was (`hung_stack.hung_thread_stack`), else None), or None.
    Listing runs reads only these small markers."""
    for path in run.recorder_markers:
        data = _read_json(path, _MARKER_LIMIT)
        if isinstance(data, dict):
            kept = data.get("steps")
            before = data.get("steps_before")
            return {
                "trigger": str(data.get("trigger", "")),
                "reason": str(data.get("reason", "")),
                "host": _marker_host(run, path),
                "step": trigger_step(data),
                "part": "after" if data.get("part") == "after" else "before",
                "steps": [int(k) for k in kept]
                if isinstance(kept, list) and _two_ints(kept)
                else None,
                "steps_before": before if _is_int(before) else None,
                "steps_from": str(data.get("steps_from") or ""),
                "hung": hung_thread_stack(data) if data.get("trigger") == "hang" else None,
            }
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _two_ints(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(_is_int(v) for v in value)


def recorder_record(run: Run, host: str | None = None) -> dict[str, Any] | None:
    """What the flight recorder wrote about ``host`` (default: the first host it saved):
    ``{"host", "marker", "history"}``; ``history`` holds the step summaries it still held when
    it saved (``step_num``, ``start_ns`` relative to the profile's start, ``dur_ns``, as
    columns), None when that file is missing or damaged. None for a run it did not save."""
    for path in run.recorder_markers:
        owner = _marker_host(run, path)
        if host not in (None, owner):
            continue
        marker = _read_json(path, _MARKER_LIMIT)
        if not isinstance(marker, dict):
            continue
        history = _read_json(path[: -len(RECORDER_MARKER)] + RECORDER_HISTORY, _HISTORY_LIMIT)
        return {"host": owner, "marker": marker, "history": _history_columns(history)}
    return None


def _history_columns(doc: Any) -> dict[str, list[int]] | None:
    """The history file's rows (``{"fields": [...], "steps": [[...], ...]}``) as columns."""
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        return None
    fields = doc.get("fields") or ["step_num", "start_ns", "dur_ns", "thread_id"]
    wanted = ("step_num", "start_ns", "dur_ns")
    if not all(f in fields for f in wanted):
        return None
    at = [fields.index(f) for f in wanted]
    rows = [r for r in doc["steps"] if isinstance(r, list) and len(r) == len(fields)]
    return {name: [int(r[k]) for r in rows] for name, k in zip(wanted, at, strict=True)}


def single_file_run(path: str) -> Run:
    fmt = formats.claiming(path)
    if fmt is None:
        raise NotFoundError(f"{path}: not a profile file (expected {formats.expected_names()})")
    host = HostFile(fmt.host_name(formats.base_name(path)), path, fmt.name, size_of(path, fmt))
    return Run(posixpath.basename(path), path, (host,))


def _looked_for() -> str:
    found = []
    for fmt in formats.all_formats():
        if not fmt.patterns:  # a format stepscope writes, never named by a user
            continue
        where = "plugins/profile/<run>/" if fmt.layout == "session" else ""
        found.append(f"{where}{fmt.patterns[0]}")
    return " and ".join(found)


def open_run(path: str) -> Run:
    """A run from a run directory, a profile file, or a log directory holding one run."""
    root = fs.normalize(path)
    if fs.isfile(root):
        return single_file_run(root)
    runs = discover_runs(root)
    if not runs:
        raise NotFoundError(f"{path}: no profiles found (looked for {_looked_for()})")
    exact = [r for r in runs if fs.normalize(r.path) == root]
    # Traces loose in the folder given are its run only when no other run lies under it: a
    # torch trace written beside a stepscope run's plugins/profile/ was read in its place.
    if len(exact) == 1 and len(runs) == 1:
        return exact[0]
    if len(exact) > 1:
        names = ", ".join(r.name for r in exact[:10])
        raise NotFoundError(
            f"{path}: its traces were recorded at {len(exact)} times far apart, so they are "
            f"{len(exact)} runs ({names}); give one trace file, or put each run's traces in a "
            "folder of its own (`stepscope serve` shows them all)"
        )
    if len(runs) == 1:
        return runs[0]
    names = ", ".join(_where(r, root) for r in runs[:10])
    raise NotFoundError(
        f"{path}: holds {len(runs)} runs ({names}); name one run directory or trace file"
    )


def _where(run: Run, root: str) -> str:
    """A run as the user can name it under ``root``: its folder, or for traces loose in
    ``root`` itself, its file."""
    if fs.normalize(run.path) == root:
        return ", ".join(posixpath.basename(h.path) for h in run.hosts[:3])
    return fs.relpath(run.path, root)
