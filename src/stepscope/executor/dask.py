"""Dask distributed executor (``pip install 'stepscope[dask]'``).

The scheduler is given only the host file's path and the task's small arguments; each worker
reads the profile itself (shared file system, or an fsspec URL such as ``gs://`` / ``s3://``)
and returns the summary. Dask retries a task whose worker was lost (``retries``); a task's own
exceptions are retried inside it (`run_task`), so a failure is always a `HostOutcome`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from stepscope.errors import StepscopeError
from stepscope.executor.base import (
    DEFAULT_RETRIES,
    HostOutcome,
    HostTask,
    ProgressFn,
    TaskFn,
    report,
    run_task,
)

SCHEDULER_ENV = "STEPSCOPE_DASK_SCHEDULER"


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise StepscopeError(
            "the Dask executor needs dask.distributed: pip install 'stepscope[dask]'"
        ) from exc
    return distributed


class DaskExecutor:
    """Runs tasks on a Dask cluster: an existing ``distributed.Client``, or the scheduler at
    ``address`` (``tcp://host:8786``), or ``$STEPSCOPE_DASK_SCHEDULER``."""

    name = "dask"

    def __init__(
        self,
        client: Any = None,
        address: str | None = None,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        self.retries = retries
        self._own_client = client is None
        if client is None:
            address = address or os.environ.get(SCHEDULER_ENV, "")
            if not address:
                raise StepscopeError(
                    f"no Dask scheduler: pass --dask tcp://HOST:8786 or set {SCHEDULER_ENV}"
                )
            distributed = _distributed()
            try:
                client = distributed.Client(address, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise StepscopeError(
                    f"--dask {address}: cannot reach the Dask scheduler ({exc}); check the "
                    "address and that `dask scheduler` is running"
                ) from exc
        self.client = client

    @property
    def workers(self) -> int:
        info = self.client.scheduler_info()
        return sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values())

    def map(
        self, fn: TaskFn, tasks: Sequence[HostTask], progress: ProgressFn | None = None
    ) -> Iterator[tuple[int, HostOutcome]]:
        distributed = _distributed()
        if not tasks:
            return
        futures = self.client.map(
            run_task,
            [fn] * len(tasks),
            list(tasks),
            [self.retries] * len(tasks),
            retries=self.retries,
            pure=False,  # a rerun must read the files again (they may have changed)
            key=[f"stepscope-{t.host.host}-{os.urandom(4).hex()}" for t in tasks],
        )
        index = {future.key: i for i, future in enumerate(futures)}
        for done, future in enumerate(distributed.as_completed(futures), start=1):
            i = index[future.key]
            try:
                outcome = future.result()
            except Exception as exc:
                outcome = HostOutcome(
                    tasks[i].host.host,
                    None,
                    f"{tasks[i].host.path}: Dask could not run the task ({type(exc).__name__}: "
                    f"{str(exc).splitlines()[0] if str(exc) else 'no message'})",
                    self.retries + 1,
                )
            report(progress, outcome, done, len(tasks))
            future.release()
            yield i, outcome

    def close(self) -> None:
        if self._own_client:
            self.client.close()
