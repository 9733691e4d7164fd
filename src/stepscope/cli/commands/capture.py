"""`stepscope capture grpc://h1:p1,grpc://h2:p2 --logdir L`: capture from profiler servers.

The workers run ``stepscope.server.start(port)`` or TensorFlow's
``tf.profiler.experimental.server.start(port)``. One result line per worker; the exit status
is 1 only when no worker produced data ("No trace event was collected"), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when the command runs, not for `stepscope --help`
    from stepscope.capture.remote.client import TraceResult

TOKEN_ENV = "STEPSCOPE_PROFILER_TOKEN"


def _level(low: int, high: int) -> object:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer from {low} to {high}")
        return value

    return parse


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError("must be an integer > 0")
    return value


def _recent(text: str) -> int:
    """``30s``, ``2m``, ``500ms`` or plain milliseconds -> milliseconds."""
    units = (("ms", 1), ("s", 1000), ("m", 60_000))
    for suffix, scale in units:
        number = text.removesuffix(suffix)
        if number != text and number.replace(".", "", 1).isdigit():
            value = int(float(number) * scale)
            break
    else:
        value = int(text) if text.isdigit() else 0
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a duration like 30s, 2m or 500ms")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "capture",
        help="capture a profile from running profiler servers (gRPC, TensorFlow's protocol)",
        description="Capture DURATION ms from every worker at once (one Profile request each, "
        "one session) into LOGDIR/plugins/profile/<session>/<host_port>.xplane.pb, or "
        "<host>.<task>.xplane.pb for the workers of a job whose recordings name them apart "
        "(TensorFlow's tasks: vm.worker1). Workers run "
        "stepscope.server.start(port) or tf.profiler.experimental.server.start(port).",
    )
    parser.add_argument(
        "service_addr", help="comma-separated worker addresses, e.g. grpc://h1:6009,grpc://h2:6009"
    )
    # not required by the parser: --monitor writes nothing (checked in run)
    parser.add_argument("--logdir", help="log directory to write the run into (required)")
    parser.add_argument(
        "--duration-ms", type=_positive, default=2000, help="how long to record (default 2000)"
    )
    parser.add_argument(
        "--tries",
        type=_positive,
        default=3,
        help="attempts per worker when it is unavailable or busy (default 3)",
    )
    parser.add_argument(
        "--delay-ms",
        type=int,
        default=0,
        help="start recording this long after the request, on every worker at the same time",
    )
    parser.add_argument(
        "--host-tracer-level",
        type=_level(0, 3),
        default=2,
        help="0 off, 1 user annotations, 2 (default) + expensive ops, 3 verbose",
    )
    parser.add_argument(
        "--python-tracer-level",
        type=_level(0, 1),
        default=0,
        help="1 records every Python call (default 0)",
    )
    parser.add_argument(
        "--device-tracer-level", type=_level(0, 1), default=1, help="0 off, 1 on (default)"
    )
    parser.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV),
        help=f"token the servers require (default: ${TOKEN_ENV}); sent as "
        "'authorization: Bearer <token>'",
    )
    parser.add_argument(
        "--recent",
        type=_recent,
        metavar="DURATION",
        help="instead of recording, get the last DURATION (30s, 2m) the workers' flight "
        "recorders kept (stepscope.recorder.start); they save it on their side too",
    )
    parser.add_argument("--session-id", help="run name (default: the local time)")
    parser.add_argument(
        "--monitor",
        action="store_true",
        help="instead of capturing, print each worker's monitoring summary",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress display")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from stepscope.capture.options import ProfilerOptions
    from stepscope.capture.remote.client import NoTraceCollectedError, monitor, trace
    from stepscope.capture.remote.paths import parse_service_addresses
    from stepscope.cli.progress import showing
    from stepscope.errors import StepscopeError

    if args.delay_ms < 0:
        raise StepscopeError("--delay-ms must be >= 0")
    if args.monitor:
        for address in parse_service_addresses(args.service_addr):
            print(f"== {address}")
            print(monitor(address, args.duration_ms, 2, token=args.token))
        return 0
    if not args.logdir:
        raise StepscopeError("capture: give --logdir, the log directory to write the run into")
    options = ProfilerOptions(
        host_tracer_level=args.host_tracer_level,
        python_tracer_level=args.python_tracer_level,
        device_tracer_level=args.device_tracer_level,
        delay_ms=args.delay_ms,
    )
    try:
        result = trace(
            args.service_addr,
            args.logdir,
            args.recent or args.duration_ms,
            num_tracing_attempts=args.tries,
            options=options,
            session_id=args.session_id,
            token=args.token,
            recent=args.recent is not None,
            progress=not args.no_progress and showing(),
            verbose=showing(),
            stream=sys.stderr,
        )
    except NoTraceCollectedError as exc:
        print(f"stepscope: {exc}", file=sys.stderr)
        return 1
    for line in saved_lines(result):
        print(line)
    return 0


def saved_lines(result: TraceResult) -> list[str]:
    """One line per directory that received a worker's file, the run directory first (so
    ``RUN=$(stepscope capture ... | head -1)`` works); a directory nothing was written to is
    never named (a worker's file kept in the fallback directory, one the server wrote on
    its own disk)."""
    total = len(result.workers)
    counts: dict[Path, int] = {}
    for worker in result.workers:
        if worker.path is not None:
            counts[worker.path.parent] = counts.get(worker.path.parent, 0) + 1
    order = sorted(counts, key=lambda d: (d != result.run_dir, str(d)))
    return [
        f"{where}  ({counts[where]} of {total} worker(s) saved"
        + ("" if where == result.run_dir else ", not in the log directory")
        + ")"
        for where in order
    ]
