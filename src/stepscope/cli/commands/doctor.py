"""`stepscope doctor [--dask ADDRESS | --dask-scheduler-file FILE] [RUN]`.

Checks, before a long run, what makes a Dask run fail or crawl (decision 134): every worker's
stepscope, Python and NumPy against this process's, whether it can open the run's files and
write its summary cache, whether it sees this process's cache directory (the trace viewer's
indexes travel through it), its memory against the largest host file, its malloc setting,
threads per process, and where its HTTP server listens. One line per problem, with the fix;
exit status 1 when there is any. Without a scheduler, this process alone is checked.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

# Peak memory of one host's task per byte of its file (measured: an XSpace of 1.06M events,
# 30.8 MB: 175 MB for the tools' summaries, 247 MB for the trace viewer's index; a 1.2 MB
# Kineto .json.gz: 28 MB), plus what a worker process holds before any task.
MEMORY_PER_FILE_BYTE = {"gz": 25, "other": 8}
WORKER_BASE_BYTES = 150 << 20
SMALL_TRIM = 1 << 20  # a MALLOC_TRIM_THRESHOLD_ below this costs CPU (Dask sets 65536)


def register(subparsers: argparse._SubParsersAction) -> None:
    from stepscope.cli.hosts import add_dask_arguments

    parser = subparsers.add_parser(
        "doctor",
        help="check a Dask cluster (workers, versions, files, caches, memory) before a run",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    parser.add_argument(
        "run",
        metavar="RUN",
        nargs="?",
        help="a run directory or profile file whose files the workers must open",
    )
    add_dask_arguments(parser)
    parser.set_defaults(func=run)


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _need(path: str, size: int) -> int:
    factor = MEMORY_PER_FILE_BYTE["gz" if path.endswith(".gz") else "other"]
    return WORKER_BASE_BYTES + factor * size


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _major(version: str) -> str:
    return version.split(".")[0]


def _problems(
    who: str, found: dict[str, Any], here: dict[str, Any], largest: tuple[str, int] | None
) -> list[str]:
    """The problems of one worker, each with its fix."""
    out = []
    if found["stepscope"] != here["stepscope"]:
        out.append(
            f"{who} runs stepscope {found['stepscope']}, this process {here['stepscope']}: "
            'install this process\'s version on the workers (docs/pod_scale.md, "Install")'
        )
    if _minor(found["python"]) != _minor(here["python"]):
        out.append(
            f"{who} runs Python {found['python']}, this process {here['python']}: tasks are "
            "pickled between them; use the same Python minor version"
        )
    if found["numpy"] and here["numpy"] and _major(found["numpy"]) != _major(here["numpy"]):
        out.append(
            f"{who} runs NumPy {found['numpy']}, this process {here['numpy']}: summaries are "
            "NumPy arrays sent between them; use the same major version"
        )
    if found["unreadable"]:
        path, why = found["unreadable"][0]
        out.append(
            f"{who} cannot open {len(found['unreadable'])} of the {found['checked']} run "
            f"files checked (first: {path}: {why}): mount the run at the same path there, "
            "give the run as an fsspec URL the workers can read (with their credentials), "
            "or set STEPSCOPE_PATH_MAP=THIS_PREFIX=WORKER_PREFIX in the worker's environment"
            " (meanwhile its hosts run on other workers)"
        )
    if found["own_cache_error"]:
        out.append(
            f"{who} cannot write its summary cache {found['own_cache']} "
            f"({found['own_cache_error']}): set STEPSCOPE_CACHE_DIR to a writable directory "
            "in the worker's environment (a shared one lets workers reuse each other's)"
        )
    if not found["sees_driver_cache"]:
        out.append(
            f"{who} does not see this process's cache directory {here['own_cache']}: the "
            "trace viewer at ALL_HOSTS will convert and index every host in this process; "
            "mount that directory at the same path on the workers (or set "
            "STEPSCOPE_CACHE_DIR on both to one shared directory)"
        )
    elif found["driver_cache_error"]:
        out.append(
            f"{who} cannot write this process's cache directory {here['own_cache']} "
            f"({found['driver_cache_error']}): the trace viewer at ALL_HOSTS will index "
            "every host in this process; make it writable for the workers' user"
        )
    if largest is not None and found["memory_limit"]:
        need = _need(*largest)
        if found["memory_limit"] < need:
            out.append(
                f"{who} may use {_gib(found['memory_limit'])} per worker process, the largest "
                f"host file ({_mb(largest[1])}) needs about {_gib(need)}: give workers more "
                "memory (dask worker --memory-limit) or fewer processes per machine"
            )
    trim = found["malloc_trim"]
    if not found["malloc_kept"] and trim.isdigit() and int(trim) < SMALL_TRIM:
        out.append(
            f"{who} runs tasks with MALLOC_TRIM_THRESHOLD_={trim} and "
            "STEPSCOPE_WORKER_MALLOC=dask: each host takes 60-90% more CPU; unset "
            'STEPSCOPE_WORKER_MALLOC (docs/pod_scale.md, "Memory")'
        )
    if found["threads"] > 1:
        out.append(
            f"{who} runs {found['threads']} threads in one process: per-host work holds "
            "Python's GIL most of the time; start workers with --nworkers N --nthreads 1"
        )
    if found["dashboard"] and _all_interfaces(found["dashboard"]):
        out.append(
            f"{who}'s HTTP server (dashboard, /metrics) listens on all interfaces "
            f"({found['dashboard']}): start workers with --dashboard-address 127.0.0.1:0"
        )
    return out


def _all_interfaces(address: str) -> bool:
    return address.rpartition(":")[0] in ("0.0.0.0", "::", "[::]", "")


def _scheduler_dashboard(dask_scheduler: Any = None) -> str:
    """Runs on the scheduler: where its HTTP server listens."""
    server = getattr(dask_scheduler, "http_server", None)
    if server is None or getattr(server, "port", None) is None:
        return ""
    return f"{getattr(server, 'address', '') or '0.0.0.0'}:{server.port}"


def _describe(found: dict[str, Any]) -> str:
    limit = f", memory limit {_gib(found['memory_limit'])}" if found["memory_limit"] else ""
    return (
        f"stepscope {found['stepscope']}, Python {found['python']}, NumPy {found['numpy']}"
        f"{limit}, {found['threads']} thread(s), cache {found['own_cache']}"
    )


def run(args: argparse.Namespace) -> int:
    import uuid

    from stepscope.executor.dask_connect import connect, resolve
    from stepscope.executor.probe import probe
    from stepscope.store import location

    paths: list[str] = []
    largest: tuple[str, int] | None = None
    if args.run:
        from stepscope.tools.analysis import Analysis

        found_run = Analysis(args.run).run
        paths = [h.path for h in found_run.hosts]
        big = max(found_run.hosts, key=lambda h: h.size_bytes)
        largest = (big.path, big.size_bytes)
        print(
            f"run {found_run.name}: {len(paths)} host file(s), largest {_mb(big.size_bytes)} "
            f"({big.host})"
        )
    cache_dir = str(location.root())
    marker = f".stepscope-doctor-{uuid.uuid4().hex}"
    here = probe(paths, cache_dir, "")
    print(f"this process on {here['host']}: {_describe(here)}")
    problems = [f"this process: {p}" for p in _local_problems(here)]
    scheduler = resolve(args.dask, args.dask_scheduler_file, args.dask_timeout)
    if scheduler is None:
        print("no Dask scheduler given (--dask, --dask-scheduler-file): checked this process only")
    else:
        problems += _cluster(scheduler, connect, paths, cache_dir, marker, here, largest, args)
    if not problems:
        print("no problems found")
        return 0
    print(f"{len(problems)} problem(s):", file=sys.stderr)
    for line in problems:
        print(f"  {line}", file=sys.stderr)
    return 1


def _local_problems(here: dict[str, Any]) -> list[str]:
    out = []
    if here["unreadable"]:
        path, why = here["unreadable"][0]
        out.append(f"cannot open {len(here['unreadable'])} run file(s) (first: {path}: {why})")
    if here["own_cache_error"]:
        out.append(
            f"cannot write the cache directory {here['own_cache']} ({here['own_cache_error']}):"
            " set STEPSCOPE_CACHE_DIR to a writable directory"
        )
    return out


def _cluster(
    scheduler: Any,
    connect: Any,
    paths: list[str],
    cache_dir: str,
    marker: str,
    here: dict[str, Any],
    largest: tuple[str, int] | None,
    args: argparse.Namespace,
) -> list[str]:
    from stepscope.errors import StepscopeError
    from stepscope.executor.dask_connect import wait_for_workers
    from stepscope.executor.probe import probe

    client = connect(scheduler, args.dask_timeout)
    marker_path = os.path.join(cache_dir, marker)
    try:
        os.makedirs(cache_dir, exist_ok=True)
        with open(marker_path, "w", encoding="utf-8") as f:
            f.write("stepscope doctor: workers that see this file share this cache directory\n")
    except OSError:
        marker_path = ""
    try:
        problems = []
        try:  # workers started just before this command may take a moment to connect
            wait_for_workers(client, scheduler.source, args.dask_timeout)
        except StepscopeError as exc:
            problems.append(str(exc))
        workers = client.scheduler_info().get("workers", {})
        print(
            f"scheduler {client.scheduler.address} ({scheduler.source}): {len(workers)} worker(s)"
        )
        where = client.run_on_scheduler(_scheduler_dashboard)
        if where and _all_interfaces(where):
            problems.append(
                f"the scheduler's dashboard listens on all interfaces ({where}): start it with "
                "--dashboard-address 127.0.0.1:8787 and reach it through an SSH tunnel"
            )
        if not workers:
            return problems
        answers = client.run(probe, paths, cache_dir, marker)
        for address, found in sorted(answers.items()):
            name = workers.get(address, {}).get("name")
            who = f"worker {address}" + (
                f" ({name})"
                if name is not None and str(name) != address and not str(name).isdigit()
                else ""
            )
            print(f"{who} on {found['host']}: {_describe(found)}; malloc: {found['malloc']}")
            problems += [f"{p}" for p in _problems(who, found, here, largest)]
        return problems
    finally:
        if marker_path:
            with contextlib.suppress(OSError):
                os.unlink(marker_path)
        client.close()
