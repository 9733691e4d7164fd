"""Per-host work fanned out to a pool of workers: a local process pool or a Dask cluster.

A task is one host file and a function of it that returns a small, picklable summary; only
the file's path travels to the worker, which reads the profile itself (shared file system or
an fsspec URL), and only the summary travels back. Each host succeeds or fails on its own
(`HostOutcome.error`), so one corrupt file never stops the others.
"""

from __future__ import annotations

from stepscope.executor.base import (
    Executor,
    HostOutcome,
    HostTask,
    InlineExecutor,
    ProgressFn,
    TaskFn,
)
from stepscope.executor.content import content_hash

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stepscope.executor.choose import default_workers, make_executor

__all__ = [
    "Executor",
    "HostOutcome",
    "HostTask",
    "InlineExecutor",
    "ProgressFn",
    "TaskFn",
    "content_hash",
    "default_workers",
    "make_executor",
]


def __getattr__(name: str) -> object:
    # The pools (multiprocessing, concurrent.futures' processes, the Dask client) load when
    # one is made: a command on one host never makes one (about 10 ms of every start).
    if name in ("default_workers", "make_executor"):
        from stepscope.executor import choose

        value = getattr(choose, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
