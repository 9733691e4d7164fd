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
from stepscope.executor.choose import default_workers, make_executor
from stepscope.executor.content import content_hash

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
