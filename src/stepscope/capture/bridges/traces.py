"""Existing traces -> a stepscope run: `import_traces` (``stepscope import``) and the
``on_trace_ready`` handler for programs that drive ``torch.profiler`` themselves.

A run is ``<logdir>/plugins/profile/<run>/<host>.xplane.pb``, one file per host, the layout
every stepscope tool (and XProf) reads. Each file is converted once, at import, by its input
format (`stepscope.xspace.formats`), so opening the run later costs no parsing: Kineto traces
(``*.pt.trace.json[.gz]``, one per rank) are named ``rank<N>`` from their ``distributedInfo``
(else their file name); XSpace files (``*.xplane.pb[.gz]``) are copied as they are, under
their file's host name. Two files that
claim the same host get ``_2``, ``_3``... suffixes, with a warning: merging two ranks'
events into one host would be wrong.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from stepscope import tmpfiles
from stepscope.errors import StepscopeError
from stepscope.logdir import (
    PROFILE_DIRS,
    host_file_name,
    new_run_dir,
    run_directory,
    run_name_for,
)
from stepscope.records import record
from stepscope.xspace import formats
from stepscope.xspace.io import is_url, write_url, write_xspace
from stepscope.xspace.partial import partial_reads
from stepscope.xspace.proto.xplane_pb2 import XSpace


@record
class ImportedHost:
    source: str
    host: str
    events: int
    rank: int | None = None
    world_size: int | None = None


@record(frozen=False)
class ImportResult:
    run_dir: Path | str  # a URL when the log directory is one
    hosts: list[ImportedHost] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # "path: why" for files not imported


def trace_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files named by ``paths``; a directory stands for the traces found under it."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _may_be_trace(p.name))
            if not found:
                raise StepscopeError(
                    f"{path}: no traces found (looked for {formats.expected_names()})"
                )
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise StepscopeError(f"{path}: no such file or directory")
    return list(dict.fromkeys(files))


def _plane_stat(space: XSpace, plane_name: str, stat_name: str) -> Any:
    for plane in space.planes:
        if plane.name != plane_name:
            continue
        for stat in plane.stats:
            if plane.stat_metadata[stat.metadata_id].name == stat_name:
                kind = stat.WhichOneof("value")
                return getattr(stat, kind) if kind else None
    return None


def _may_be_trace(name: str) -> bool:
    """Whether a file found in a directory given to import is worth converting."""
    return any(f.host_file(name) or f.probe_name(name) for f in formats.all_formats())


def _convert(path: Path) -> tuple[XSpace, str]:
    found = formats.of_local_file(path)
    if found is None:
        raise StepscopeError(f"{path}: not a profile file (expected {formats.expected_names()})")
    return found.to_xspace(str(path))


@record
class Converted:
    """One trace converted to ``staged`` (a temporary file in the run directory)."""

    staged: str
    host: str  # the host the trace names (before two files claiming one host are told apart)
    events: int
    rank: int | None
    world_size: int | None
    partial: tuple[str, ...] = ()  # what says the file was read in part (`partial_reads`)


def convert_to(path: str, staged: str) -> Converted:
    """Converts one trace and writes it as the XSpace ``staged``; only this small record
    comes back, so worker processes can convert many files at once."""
    space, host = _convert(Path(path))
    rank = _plane_stat(space, "/host:CPU", "rank")
    world = _plane_stat(space, "/host:CPU", "world_size")
    events = sum(len(line.events) for plane in space.planes for line in plane.lines)
    del space.hostnames[:]
    space.hostnames.append(host)
    write_xspace(space, staged)
    return Converted(staged, host, events, rank, world, partial_reads(space.warnings))


def _partly(path: Path, partial: Sequence[str]) -> list[str]:
    """The warnings of a file read in part (a cut or repaired trace): the import goes on with
    what was read, and says so (decision 582)."""
    return [f"{path}: read in part, {what}" for what in partial]


# convert_all(files, staged paths) -> per file a Converted or its one-line error.
ConvertAll = Callable[[list[Path], list[str]], list["Converted | str"]]


def import_traces(
    paths: Sequence[str | os.PathLike[str]],
    logdir: str | os.PathLike[str],
    run_name: str | None = None,
    progress: Callable[[str], None] | None = None,
    convert_all: ConvertAll | None = None,
) -> ImportResult:
    """Convert ``paths`` into one new run under ``logdir`` (see the module docstring).

    Files that cannot be read are listed in ``failures``; when none can, nothing is written
    and `StepscopeError` says why. ``convert_all`` converts the files elsewhere (worker
    processes, a cluster), each into its own staged file of a local run directory.
    """
    files = trace_files(paths)
    if not files:
        raise StepscopeError("no trace files given")
    result = ImportResult(_new_run(logdir, run_name))
    try:
        if convert_all is not None and isinstance(result.run_dir, Path) and len(files) > 1:
            _import_staged(files, result, convert_all)
        else:
            _import_files(files, result, progress)
    except OSError as exc:  # a full disk, a read-only directory: nothing half-written is left
        _remove_run(result.run_dir)
        where = getattr(exc, "filename", None) or result.run_dir
        raise StepscopeError(
            f"cannot write the run {result.run_dir}: {where}: {exc.strerror or exc}; "
            "nothing was imported"
        ) from None
    if not result.hosts:
        raise StepscopeError("nothing imported: " + "; ".join(result.failures))
    if isinstance(result.run_dir, Path):
        tmpfiles.sweep_stale_runs(result.run_dir.parent)  # leftovers of killed saves
    worlds = {h.world_size for h in result.hosts if isinstance(h.world_size, int)}
    ranks = {h.rank for h in result.hosts if isinstance(h.rank, int)}
    if len(worlds) == 1 and ranks and len(ranks) < next(iter(worlds)):
        result.warnings.append(
            f"{len(ranks)} of {next(iter(worlds))} ranks imported: the multi-host tools show "
            "only these"
        )
    return result


def _new_run(logdir: str | os.PathLike[str], run_name: str | None) -> Path | str:
    """The new run's directory: a local path, or a URL when ``logdir`` is one (fsspec)."""
    local = new_run_dir("validate", run_name)  # checks the name; the place is decided below
    if not is_url(logdir):
        return new_run_dir(logdir, run_name)
    import fsspec

    base = f"{os.fspath(logdir).rstrip('/')}/{'/'.join(PROFILE_DIRS)}/{local.name}"
    try:
        filesystem, _ = fsspec.core.url_to_fs(base)
    except (ValueError, ImportError) as exc:
        raise StepscopeError(f"{logdir}: cannot open this URL: {exc}") from None
    candidate, suffix = base, 2
    while filesystem.exists(candidate):
        candidate, suffix = f"{base}_{suffix}", suffix + 1
    return candidate


def _remove_run(run_dir: Path | str) -> None:
    if isinstance(run_dir, Path):
        shutil.rmtree(run_dir, ignore_errors=True)


def _import_files(
    files: list[Path], result: ImportResult, progress: Callable[[str], None] | None
) -> None:
    claimed: dict[str, str] = {}
    for path in files:
        if progress is not None:
            progress(f"importing {path}")
        try:
            space, host = _convert(path)
        except StepscopeError as exc:
            result.failures.append(str(exc))
            continue
        base, suffix = host, 2
        while host in claimed:
            host, suffix = f"{base}_{suffix}", suffix + 1
        if host != base:
            result.warnings.append(
                f"{path} and {claimed[base]} are both host {base!r}: {path.name} is host {host!r}"
            )
        claimed[host] = str(path)
        result.warnings.extend(_partly(path, partial_reads(space.warnings)))
        del space.hostnames[:]
        space.hostnames.append(host)
        if isinstance(result.run_dir, Path):
            write_xspace(space, result.run_dir / host_file_name(host))
        else:
            write_url(f"{result.run_dir}/{host_file_name(host)}", space.SerializeToString())
        rank = _plane_stat(space, "/host:CPU", "rank")
        world = _plane_stat(space, "/host:CPU", "world_size")
        events = sum(len(line.events) for plane in space.planes for line in plane.lines)
        result.hosts.append(ImportedHost(str(path), host, events, rank, world))


def _import_staged(files: list[Path], result: ImportResult, convert_all: ConvertAll) -> None:
    """Converts ``files`` with ``convert_all`` into staged files, then names each host (the
    order of ``files`` decides the suffixes of hosts claimed twice) and moves it in place."""
    assert isinstance(result.run_dir, Path)
    staged = [str(result.run_dir / f".importing-{i}.xplane.pb") for i in range(len(files))]
    claimed: dict[str, str] = {}
    try:
        for path, done in zip(files, convert_all(files, staged), strict=True):
            if isinstance(done, str):
                result.failures.append(done)
                continue
            host = base = done.host
            suffix = 2
            while host in claimed:
                host, suffix = f"{base}_{suffix}", suffix + 1
            if host != base:
                result.warnings.append(
                    f"{path} and {claimed[base]} are both host {base!r}: "
                    f"{path.name} is host {host!r}"
                )
            claimed[host] = str(path)
            result.warnings.extend(_partly(path, done.partial))
            target = result.run_dir / host_file_name(host)
            if host != done.host:  # the file names its host inside: rewrite it
                space = XSpace()
                space.ParseFromString(Path(done.staged).read_bytes())
                del space.hostnames[:]
                space.hostnames.append(host)
                write_xspace(space, target)
            else:
                tmpfiles.check_replaceable(target)
                os.replace(done.staged, target)
            result.hosts.append(
                ImportedHost(str(path), host, done.events, done.rank, done.world_size)
            )
    finally:
        for name in staged:
            Path(name).unlink(missing_ok=True)


def torch_trace_handler(
    logdir: str | os.PathLike[str], hostname: str | None = None
) -> Callable[[Any], Path]:
    """An ``on_trace_ready`` for ``torch.profiler.profile`` writing each trace as a run.

        with torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1,
                active=3), on_trace_ready=torch_trace_handler("logs")) as prof:
            for batch in loader:
                train(batch)
                prof.step()

    Each active cycle becomes ``<logdir>/plugins/profile/<time>/<host>.xplane.pb`` whose
    ``ProfilerStep#N`` annotations are the steps; the host is ``rank<N>`` under
    torch.distributed, else ``hostname`` (default: this machine's name).
    """
    import tempfile

    from stepscope.xspace.kineto import kineto_bytes_to_xspace

    def handler(prof: Any) -> Path:
        with tempfile.TemporaryDirectory(prefix="stepscope-torch-") as tmp:
            path = Path(tmp) / "trace.pt.trace.json"
            prof.export_chrome_trace(str(path))
            space = kineto_bytes_to_xspace(path.read_bytes(), str(path))
        host = space.hostnames[0] if space.hostnames else ""
        if not host.startswith("rank"):
            host = hostname or socket.gethostname() or "localhost"
        del space.hostnames[:]
        space.hostnames.append(host)
        # Ranks of one job saving in the same second share a run (one host file each).
        run_dir = run_directory(logdir, run_name_for(time.time_ns()), host)
        write_xspace(space, run_dir / host_file_name(host))
        return run_dir

    return handler
