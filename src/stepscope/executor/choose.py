"""Picking the executor from the user's options: ``--dask`` / ``--dask-scheduler-file`` /
``$STEPSCOPE_DASK_SCHEDULER`` first, then ``--workers N`` local processes (default: the CPU
cores this process may use)."""

from __future__ import annotations

import os
from typing import Any

from stepscope.errors import StepscopeError
from stepscope.executor.base import DEFAULT_RETRIES, Executor, InlineExecutor
from stepscope.executor.dask import DEFAULT_TIMEOUT_S, SCHEDULER_ENV, DaskExecutor
from stepscope.executor.local import LocalExecutor

# Below this much profile data in all, a local pool costs more to start than it saves.
POOL_MIN_BYTES = 64 << 20


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def make_executor(
    workers: int | None = None,
    dask: str | None = None,
    client: Any = None,
    retries: int = DEFAULT_RETRIES,
    scheduler_file: str | None = None,
    dask_timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Executor:
    """``client`` (a ``dask.distributed.Client``), ``dask`` (a scheduler address),
    ``scheduler_file`` (written by ``dask scheduler --scheduler-file``) or
    ``$STEPSCOPE_DASK_SCHEDULER`` -> Dask (waiting up to ``dask_timeout_s`` for the scheduler
    and for a first worker); otherwise a local pool of ``workers`` processes (0: run in this
    process)."""
    if client is not None:
        return DaskExecutor(client=client, retries=retries, timeout_s=dask_timeout_s)
    if dask or scheduler_file or os.environ.get(SCHEDULER_ENV, "").strip():
        return DaskExecutor(
            address=dask,
            retries=retries,
            scheduler_file=scheduler_file,
            timeout_s=dask_timeout_s,
        )
    if workers is None:
        workers = default_workers()
    if workers < 0:
        raise StepscopeError(f"--workers {workers}: give 0 (in this process) or more")
    if workers == 0:
        return InlineExecutor(retries=retries)
    return LocalExecutor(workers, retries=retries)
