"""`stepscope export RUN --host H --format chrome-trace -o OUT.json[.gz]`: the whole trace or a
time window as Chrome-trace JSON (Perfetto, chrome://tracing, and stepscope itself read it).

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
from pathlib import Path
from typing import IO, TextIO

from stepscope import tmpfiles
from stepscope.errors import StepscopeError

FORMATS = ("chrome-trace",)
PROGRESS_MIN_EVENTS = 500_000
GZIP_LEVEL = 3  # ~3x faster than gzip's default 9 on JSON, a few percent larger


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="write a trace (or a time window of it) as Chrome-trace JSON"
    )
    parser.add_argument("path", help="run directory, log directory with one run, or profile file")
    parser.add_argument("--host", help="the host to export (needed when the run has several)")
    parser.add_argument("--format", choices=FORMATS, default="chrome-trace")
    parser.add_argument(
        "-o", "--output", required=True, help="output file; .gz compresses; '-' writes to stdout"
    )
    parser.add_argument("--start-ms", type=float, help="window start, ms after the trace start")
    parser.add_argument("--end-ms", type=float, help="window end, ms after the trace start")
    parser.add_argument("--no-cache", action="store_true", help="convert again, ignoring the cache")
    parser.set_defaults(func=run)


def _open(path: str) -> tuple[TextIO, str]:
    """(stream, temporary name) for ``path``: written beside it and renamed into place at the
    end (`_finish`), so a full disk or Ctrl-C never leaves a truncated file that looks whole."""
    if path == "-":
        return sys.stdout, ""
    try:
        directory = os.path.dirname(os.path.abspath(path))
        tmpfiles.sweep_stale(Path(directory))
        handle, tmp = tmpfiles.mkstemp(directory)
        raw = os.fdopen(handle, "wb")
        if path.endswith(".gz"):
            zipped = gzip.GzipFile(
                filename=os.path.basename(path), fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL
            )
            return _closing_both(zipped, raw), tmp
        return io.TextIOWrapper(raw, encoding="utf-8"), tmp
    except OSError as exc:
        raise StepscopeError(f"cannot write {path}: {exc.strerror or exc}") from None


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
    from stepscope.model import open_host, open_run
    from stepscope.model.load import stderr_progress
    from stepscope.tools.trace_viewer.chrome_trace import chrome_trace_chunks

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

    out, tmp = _open(args.output)
    try:
        for chunk in chrome_trace_chunks(profile, start, end, progress=progress):
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
