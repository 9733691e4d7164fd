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
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any, cast

from stepscope import tmpfiles
from stepscope.errors import StepscopeError

if TYPE_CHECKING:  # imported when exporting, not for `stepscope --help`
    from stepscope.model import Profile
    from stepscope.stats.trace_index.index import TraceIndex

FORMATS = ("chrome-trace", "perfetto")
PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".pftrace.gz", ".perfetto-trace.gz")
PROGRESS_MIN_EVENTS = 500_000
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
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


@contextlib.contextmanager
def _sink(path: str, binary: bool) -> Iterator[IO[Any]]:
    """The stream the export is written into. A file is written beside ``path`` and renamed
    into place at the end, so a full disk or Ctrl-C never leaves a truncated file that looks
    whole; a FIFO, a device or ``/dev/stdout`` is streamed into, a symlink followed
    (`stepscope.tmpfiles.output`); ``-`` is standard output."""
    if path == "-":
        stdout = sys.stdout
        if stdout is None or stdout.closed:
            raise StepscopeError("-o -: standard output is closed; give a file name with -o")
        yield stdout.buffer if binary else stdout
        stdout.flush()
        return
    with tmpfiles.output(path, user_output=True) as raw:
        zipped = None
        if path.endswith(".gz"):
            name = os.path.basename(path)
            zipped = gzip.GzipFile(filename=name, fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL)
        under = cast(IO[bytes], zipped if zipped is not None else raw)
        if binary:
            buffered = io.BufferedWriter(cast(io.RawIOBase, under))
            yield buffered
            buffered.flush()
            buffered.detach()
        else:
            text = io.TextIOWrapper(under, encoding="utf-8")
            yield text
            text.flush()
            text.detach()  # the file under it is closed (and renamed) by tmpfiles.output
        if zipped is not None:
            zipped.close()  # writes the gzip trailer; the file under it stays open


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

    from stepscope.export.chrome_trace import chrome_trace_chunks
    from stepscope.export.perfetto_trace import perfetto_trace_chunks

    flows = index.flows if index is not None else None
    if fmt == "perfetto":
        depth = np.asarray(index.depth) if index is not None else None
        return perfetto_trace_chunks(profile, start, end, flows, progress, depth)
    return chrome_trace_chunks(profile, start, end, flows=flows, progress=progress)


def run(args: argparse.Namespace) -> int:
    from stepscope.cli.hosts import report_partial
    from stepscope.cli.progress import stderr_progress
    from stepscope.tools.analysis import Analysis

    say = stderr_progress()
    analysis = Analysis(args.path, use_cache=not args.no_cache, progress=say, max_profiles=1)
    target = analysis.run
    if args.host:
        host = target.host(args.host).host
    elif len(target.hosts) == 1:
        host = target.hosts[0].host
    else:
        raise StepscopeError(
            f"run {target.name!r} has {len(target.hosts)} hosts; name one with --host "
            f"({', '.join(target.host_names)})"
        )
    for flag, value in (("--start-ms", args.start_ms), ("--end-ms", args.end_ms)):
        if value is not None and not math.isfinite(value):
            raise StepscopeError(f"{flag} {value}: give a finite number of milliseconds")
    if args.start_ms is not None and args.end_ms is not None and args.end_ms <= args.start_ms:
        raise StepscopeError("--end-ms must be greater than --start-ms")
    profile = analysis.profile(host)
    report_partial(analysis.partial_reads(host))  # the trace written is what could be read
    origin = int(profile.start_ns.min()) if profile.n_events else 0
    start = None if args.start_ms is None else _clamped(origin, args.start_ms)
    end = None if args.end_ms is None else _clamped(origin, args.end_ms)
    started = time.monotonic()
    last = [started]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if total >= PROGRESS_MIN_EVENTS and (now - last[0] > 5 or done == total):
            last[0] = now
            say(f"exported {done:,} / {total:,} events")

    fmt = args.format or ("perfetto" if args.output.endswith(PERFETTO_SUFFIXES) else "chrome-trace")
    index = _cached_index(profile, not args.no_cache)
    streamed = args.output == "-" or tmpfiles.streams_into(args.output)
    try:
        with _sink(args.output, binary=fmt == "perfetto") as out:
            for chunk in _chunks(fmt, profile, start, end, index, progress):
                out.write(chunk)
    except BrokenPipeError:
        # `stepscope export RUN -o - | head`: the reader has what it wanted; the command's
        # exit (`cli.main`) is quiet, as for every command (it read "error: cannot write
        # stdout: Broken pipe", status 2)
        raise
    except OSError as exc:
        where = "stdout" if args.output == "-" else exc.filename or args.output
        left = "" if streamed else "; nothing was written"
        raise StepscopeError(f"cannot write {where}: {exc.strerror or exc}{left}") from None
    if not streamed:
        size = os.path.getsize(args.output)
        print(
            f"wrote {args.output} ({size / 1e6:.1f} MB) in {time.monotonic() - started:.1f} s",
            file=sys.stderr,
        )
    return 0


def _clamped(origin_ns: int, ms: float) -> int:
    """``origin_ns`` + ``ms``, within int64 (a window bound past every event is the same as
    one just past them)."""
    return max(INT64_MIN, min(INT64_MAX, origin_ns + round(ms * 1e6)))
