"""Options and output shared by commands that analyze many hosts at once: where the per-host
work runs (``--workers N``, ``--dask ADDRESS``), per-host progress on stderr, and the report of
hosts that could not be analyzed (exit status 3: a partial result)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator

from stepscope.cli.progress import showing
from stepscope.executor.dask_connect import DEFAULT_TIMEOUT_S, SCHEDULER_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stepscope.executor import Executor, ProgressFn

PARTIAL_EXIT = 3  # the result is printed but some hosts are missing from it
LINE_PER_HOST_MAX = 64  # more hosts than this: progress lines every 5% instead


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("many hosts (ALL_HOSTS)")
    group.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="local worker processes for the per-host work (default: one per CPU core; "
        "0: in this process; small runs are analyzed in this process unless N is given)",
    )
    add_dask_arguments(group)


def add_dask_arguments(parser: argparse._ActionsContainer) -> None:
    """--dask / --dask-scheduler-file (one of them) and --dask-timeout."""
    dask = parser.add_mutually_exclusive_group()
    dask.add_argument(
        "--dask",
        metavar="ADDRESS",
        help=f"run the per-host work on a Dask cluster (tcp://scheduler:8786; default "
        f"${SCHEDULER_ENV}); workers read the profiles themselves",
    )
    dask.add_argument(
        "--dask-scheduler-file",
        metavar="FILE",
        help="the Dask cluster whose scheduler wrote FILE (dask scheduler --scheduler-file)",
    )
    parser.add_argument(
        "--dask-timeout",
        type=_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="how long to wait for the Dask scheduler, and for a first worker when it has "
        f"none, before failing (default {DEFAULT_TIMEOUT_S:g})",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def executor_from(args: argparse.Namespace) -> Executor | None:
    """The executor the user asked for, or None to let each request choose by its size."""
    import os

    scheduler_file = getattr(args, "dask_scheduler_file", None)
    if (
        args.workers is None
        and not args.dask
        and not scheduler_file
        and not os.environ.get(SCHEDULER_ENV, "").strip()
    ):
        return None
    from stepscope.executor import make_executor  # its pools load only when asked for

    return make_executor(
        workers=args.workers,
        dask=args.dask,
        scheduler_file=scheduler_file,
        dask_timeout_s=getattr(args, "dask_timeout", DEFAULT_TIMEOUT_S),
    )


@contextlib.contextmanager
def executor_for(args: argparse.Namespace) -> Iterator[Executor | None]:
    """`executor_from` for the whole command: every fan-out of the command (the tools'
    per-host summaries, then the trace viewer's per-host indexes) runs before it is closed."""
    executor = executor_from(args) if hasattr(args, "workers") else None
    try:
        yield executor
    finally:
        if executor is not None:
            executor.close()


def host_progress() -> ProgressFn:
    """Per-host progress on stderr: a line redrawn in place on a terminal; elsewhere one line
    per host (every 5% beyond 64 hosts); failures and retries always get their own line."""
    started = time.monotonic()
    tty = sys.stderr.isatty()
    state = {"failed": 0, "cached": 0, "open": False, "last_pct": -1}

    def report(host: str, status: str, done: int, total: int) -> None:
        if status not in ("failed", "retrying") and not showing():
            return  # --quiet: failures are still told
        elapsed = f"{time.monotonic() - started:5.1f}s"
        if status == "failed":
            state["failed"] += 1
        counts = f"{done}/{total} hosts" + (
            f", {state['failed']} failed" if state["failed"] else ""
        )
        if status in ("failed", "retrying"):
            if state["open"]:
                sys.stderr.write("\n")
                state["open"] = False
            print(f"[{elapsed}] {host}: {status} ({counts})", file=sys.stderr, flush=True)
            return
        if tty:
            sys.stderr.write(f"\r[{elapsed}] {counts}: {host[:40]:<40}")
            state["open"] = done < total
            if done >= total:
                sys.stderr.write("\n")
            sys.stderr.flush()
            return
        pct = 100 * done // max(total, 1)
        if total <= LINE_PER_HOST_MAX or pct // 5 > state["last_pct"] // 5 or done == total:
            state["last_pct"] = pct
            print(f"[{elapsed}] {host}: {status} ({counts})", file=sys.stderr, flush=True)

    return report


def partial_lines(partial: dict[str, tuple[str, ...]], many_hosts: bool) -> list[str]:
    """The hosts read in part (`ToolContext.partial_reads`), as the report and stderr say it."""
    lines = []
    for host, warnings in partial.items():
        for warning in warnings:
            lines.append(f"{host}: {warning}" if many_hosts else warning)
    return lines


def report_partial(partial: dict[str, tuple[str, ...]]) -> None:
    """Says on stderr that the answer comes from part of a recording (the JSON says it in
    ``partial_reads``)."""
    if not partial:
        return
    print(
        "stepscope: warning: partial data, the answer covers what could be read:", file=sys.stderr
    )
    for line in partial_lines(partial, many_hosts=True):
        print(f"  {line}", file=sys.stderr)


def report_moved(moved: dict[str, str]) -> None:
    """Warns of the hosts some Dask workers could not open (each analyzed elsewhere): a
    worker without the files is a setup to fix, even when the result is whole."""
    if not moved:
        return
    print(
        f"stepscope: warning: {len(moved)} host(s) could not be opened on some Dask workers "
        "and were analyzed elsewhere (see `stepscope doctor --dask`):",
        file=sys.stderr,
    )
    shown = list(moved.items())
    for host, line in shown[:LINE_PER_HOST_MAX]:
        print(f"  {host}: {line}", file=sys.stderr)
    if len(shown) > LINE_PER_HOST_MAX:
        print(f"  ... and {len(shown) - LINE_PER_HOST_MAX} more", file=sys.stderr)


def report_failed(failed: dict[str, str], moved: dict[str, str] | None = None) -> int:
    """Prints the hosts left out (and those analyzed elsewhere than first sent); the exit
    status (0, or PARTIAL_EXIT when some failed)."""
    report_moved(moved or {})
    if not failed:
        return 0
    print(f"stepscope: warning: {len(failed)} host(s) left out of the result:", file=sys.stderr)
    for host, error in failed.items():
        print(f"  {host}: {error}", file=sys.stderr)
    return PARTIAL_EXIT
