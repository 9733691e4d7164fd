"""What runs inside a worker process around a per-host task: the file's path as this worker
sees it (``$STEPSCOPE_PATH_MAP``), whether it can open the file at all, glibc's malloc
thresholds for the task (`stepscope.executor.malloc`), and a copy of the file's bytes that
the driver shipped when no worker could read the path (decision 130)."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import replace

from stepscope.executor.base import HostOutcome, HostTask, TaskFn, run_task
from stepscope.executor.malloc import keep_freed_memory

PATH_MAP_ENV = "STEPSCOPE_PATH_MAP"  # "DRIVER_PREFIX=WORKER_PREFIX[;...]", on a worker


def path_map() -> list[tuple[str, str]]:
    """This process's ``$STEPSCOPE_PATH_MAP`` pairs, longest prefix first."""
    pairs = []
    for item in os.environ.get(PATH_MAP_ENV, "").split(";"):
        old, sep, new = item.partition("=")
        if sep and old.strip():
            pairs.append((old.strip(), new.strip()))
    return sorted(pairs, key=lambda p: -len(p[0]))


def mapped(path: str) -> str:
    """``path`` (the driver's) as this process reaches it."""
    for old, new in path_map():
        if path == old or path.startswith(old.rstrip("/") + "/"):
            return new.rstrip("/") + path[len(old.rstrip("/")) :]
    return path


def unreadable_reason(path: str) -> str:
    """Why this process cannot open ``path`` ("" when it can): missing mount, permissions,
    no credentials or file-system package for a URL."""
    from stepscope.xspace.io import is_url

    try:
        if is_url(path):
            import fsspec

            filesystem, inner = fsspec.core.url_to_fs(path)
            filesystem.info(inner)
        else:
            os.close(os.open(path.removeprefix("file://"), os.O_RDONLY))
    except Exception as exc:  # anything that stops the open: the task fails the same way
        lines = str(exc).splitlines()
        text = getattr(exc, "strerror", None) or (lines[0] if lines else "")
        return f"{type(exc).__name__}: {text or 'no message'}"
    return ""


def worker_name() -> str:
    """This Dask worker's address (its name too when it has one), else the process id."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"
    name = str(worker.name) if worker.name is not None else ""
    if name and name != worker.address and not name.isdigit():
        return f"{worker.address} ({name})"
    return str(worker.address)


def run_in_pool(fn: TaskFn, task: HostTask, retries: int) -> HostOutcome:
    """A local pool worker's task: malloc kept for its length (the process is stepscope's)."""
    with keep_freed_memory():
        return run_task(fn, task, retries)


def run_on_dask(fn: TaskFn, task: HostTask, retries: int) -> HostOutcome:
    """A Dask worker's task: the path mapped for this worker, checked before anything heavy
    (a worker that cannot open it says so, and the driver tries another), then run."""
    where = worker_name()
    path = mapped(task.host.path)
    reason = unreadable_reason(path)
    if reason:
        shown = path if path == task.host.path else f"{path} (mapped by ${PATH_MAP_ENV})"
        return HostOutcome(
            task.host.host, None, f"cannot open {shown}: {reason}", where=where, unreadable=True
        )
    if path != task.host.path:
        task = replace(task, host=replace(task.host, path=path))
    with keep_freed_memory():
        outcome = run_task(fn, task, retries)
    return replace(outcome, where=where)


def run_shipped(fn: TaskFn, task: HostTask, data: bytes, retries: int) -> HostOutcome:
    """The task on a copy of the file's bytes, which the driver read and sent: written to a
    private directory under the same file name (the name tells the format), removed after."""
    where = worker_name()
    folder = tempfile.mkdtemp(prefix="stepscope-shipped-")
    try:
        local = os.path.join(folder, os.path.basename(task.host.path.rstrip("/")))
        with open(local, "wb") as f:
            f.write(data)
        del data
        copy = replace(task, host=replace(task.host, path=local))
        with keep_freed_memory():
            outcome = run_task(fn, copy, retries)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if outcome.error:  # the error names the copy: name the file the user knows
        outcome = replace(outcome, error=outcome.error.replace(local, task.host.path))
    return replace(outcome, where=f"{where}, from bytes shipped by the driver")
