"""`stepscope export RUN --host H --format chrome-trace|perfetto -o OUT`: the whole trace or a
time window as Chrome-trace JSON (Perfetto, chrome://tracing, and stepscope itself read it) or
as Perfetto's native protobuf trace (``.pftrace``; ui.perfetto.dev and trace_processor).

The file is streamed: written in chunks while events are formatted, never held in memory.
Large traces report progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

from stepscope import tmpfiles
from stepscope.errors import StepscopeError

if TYPE_CHECKING:  # imported when exporting, not for `stepscope --help`
    from stepscope.model import Profile
    from stepscope.stats.trace_index.index import TraceIndex

FORMATS = ("chrome-trace", "perfetto")
PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".pftrace.gz", ".perfetto-trace.gz")
PROGRESS_MIN_EVENTS = 500_000
GZIP_LEVEL = 3  # ~3x faster than gzip's default 9 on JSON, a few percent larger


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="write a trace (or a time window of it) as Chrome-trace JSON or Perfetto"
    )
    parser.add_argument("path", help="run directory, log directory with one run, or profile file")
    parser.add_argument("--host", help="the host to export (needed when the run has several)")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        help="chrome-trace (JSON) or perfetto (protobuf); default: perfetto for .pftrace[.gz] "
        "outputs, else chrome-trace",
    )
    parser.add_argument(
        "-o", "--output", required=True, help="output file; .gz compresses; '-' writes to stdout"
    )
    parser.add_argument("--start-ms", type=float, help="window start, ms after the trace start")
    parser.add_argument("--end-ms", type=float, help="window end, ms after the trace start")
    parser.add_argument("--no-cache", action="store_true", help="convert again, ignoring the cache")
    parser.set_defaults(func=run)


def _open(path: str, binary: bool = False) -> tuple[IO[Any], str]:
    """(stream, temporary name) for ``path``: written beside it and renamed into place at the
    end (`_finish`), so a full disk or Ctrl-C never leaves a truncated file that looks whole."""
    if path == "-":
        return (sys.stdout.buffer if binary else sys.stdout), ""
    try:
        directory = os.path.dirname(os.path.abspath(path))
        tmpfiles.sweep_stale(Path(directory))
        handle, tmp = tmpfiles.mkstemp(directory)
        raw = os.fdopen(handle, "wb")
        if path.endswith(".gz"):
            zipped = gzip.GzipFile(
                filename=os.path.basename(path), fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL
            )
            return (_Zipped(zipped, raw) if binary else _closing_both(zipped, raw)), tmp
        return (raw if binary else io.TextIOWrapper(raw, encoding="utf-8")), tmp
    except OSError as exc:
        raise StepscopeError(f"cannot write {path}: {exc.strerror or exc}") from None


class _Zipped(io.BufferedWriter):
    """A binary stream into ``zipped`` whose close also closes the file under it."""

    def __init__(self, zipped: gzip.GzipFile, raw: IO[bytes]) -> None:
        super().__init__(zipped)
        self._raw_file = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw_file.close()


def _cached_index(profile: Profile, use_cache: bool) -> TraceIndex | None:
    """The trace viewer's index when it is cached: its flows and depths need no rebuilding."""
    from stepscope.stats.trace_index.index import index_dir, load_index

    target = index_dir(profile) if use_cache else None
    index = load_index(target) if target is not None else None
    return index if index is not None and index.n_events == profile.n_events else None


def _chunks(
    fmt: str,
    profile: Profile,
    start: int | None,
    end: int | None,
    index: TraceIndex | None,
    progress: Callable[[int, int], None],
) -> Iterator[str] | Iterator[bytes]:
    import numpy as np

    from stepscope.tools.trace_viewer.chrome_trace import chrome_trace_chunks
    from stepscope.tools.trace_viewer.perfetto_trace import perfetto_trace_chunks

    flows = index.flows if index is not None else None
    if fmt == "perfetto":
        depth = np.asarray(index.depth) if index is not None else None
        return perfetto_trace_chunks(profile, start, end, flows, progress, depth)
    return chrome_trace_chunks(profile, start, end, flows=flows, progress=progress)


def _closing_both(zipped: gzip.GzipFile, raw: IO[bytes]) -> TextIO:
    """A text stream over ``zipped`` whose close also closes the file under it."""

    class _Text(io.TextIOWrapper):
        def close(self) -> None:
            try:
                super().close()
            finally:
                raw.close()

    return _Text(zipped, encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    from stepscope.cli.progress import stderr_progress
    from stepscope.model import open_host, open_run

    target = open_run(args.path)
    if args.host:
        host = target.host(args.host)
    elif len(target.hosts) == 1:
        host = target.hosts[0]
    else:
        raise StepscopeError(
            f"run {target.name!r} has {len(target.hosts)} hosts; name one with --host "
            f"({', '.join(target.host_names)})"
        )
    if args.start_ms is not None and args.end_ms is not None and args.end_ms <= args.start_ms:
        raise StepscopeError("--end-ms must be greater than --start-ms")
    say = stderr_progress()
    profile = open_host(host, use_cache=not args.no_cache, progress=say)
    origin = int(profile.start_ns.min()) if profile.n_events else 0
    start = None if args.start_ms is None else origin + round(args.start_ms * 1e6)
    end = None if args.end_ms is None else origin + round(args.end_ms * 1e6)
    started = time.monotonic()
    last = [started]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if total >= PROGRESS_MIN_EVENTS and (now - last[0] > 5 or done == total):
            last[0] = now
            say(f"exported {done:,} / {total:,} events")

    fmt = args.format or ("perfetto" if args.output.endswith(PERFETTO_SUFFIXES) else "chrome-trace")
    index = _cached_index(profile, not args.no_cache)
    out, tmp = _open(args.output, binary=fmt == "perfetto")
    try:
        for chunk in _chunks(fmt, profile, start, end, index, progress):
            out.write(chunk)
        if tmp:
            out.close()  # flushes: a full disk shows here too
            os.replace(tmp, args.output)
    except BaseException as exc:
        if tmp:
            with contextlib.suppress(OSError):
                out.close()
            Path(tmp).unlink(missing_ok=True)  # nothing half-written is left behind
        if isinstance(exc, OSError):
            raise StepscopeError(
                f"cannot write {args.output}: {exc.strerror or exc}; nothing was written"
            ) from None
        raise
    if tmp:
        size = os.path.getsize(args.output)
        print(
            f"wrote {args.output} ({size / 1e6:.1f} MB) in {time.monotonic() - started:.1f} s",
            file=sys.stderr,
        )
    return 0
