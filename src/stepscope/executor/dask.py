"""Dask distributed executor (``pip install 'stepscope[dask]'``).

The scheduler is given only the host file's path and the task's small arguments; each worker
reads the profile itself (shared file system, or an fsspec URL such as ``gs://`` / ``s3://``)
and returns the summary. Dask retries a task whose worker was lost (``retries``); a task's own
exceptions are retried inside it (`run_task`), so a failure is always a `HostOutcome`.

A worker that cannot open a host's file (a missing mount, permissions, no credentials) is not
the file's fault (decision 130): the host is tried on another worker that has not failed on
that directory, then, when no worker can open it and this process can, the file's bytes are
shipped to a worker (up to `SHIP_MAX_BYTES`, for tasks that can run on a copy) or the task
runs in this process. Each outcome lists the workers that could not open the file and why.
A cluster without workers is waited for up to ``timeout_s``, then the run fails with one line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
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
from stepscope.executor.dask_connect import (
    DEFAULT_TIMEOUT_S,
    SCHEDULER_ENV,
    Scheduler,
    connect,
    resolve,
    wait_for_workers,
    worker_count,
)
from stepscope.executor.worker import run_on_dask, run_shipped, unreadable_reason

__all__ = ["DEFAULT_TIMEOUT_S", "SCHEDULER_ENV", "SHIP_MAX_BYTES", "DaskExecutor"]

SHIP_MAX_BYTES = 128 << 20  # larger files nobody else can read run in this process instead
POLL_S = 1.0  # how often a run with tasks in flight checks that the cluster has workers
DRIVER = "the driver (this process)"


class DaskExecutor:
    """Runs tasks on a Dask cluster: an existing ``distributed.Client``, or the scheduler at
    ``address`` (``tcp://host:8786``), in ``scheduler_file``, or ``$STEPSCOPE_DASK_SCHEDULER``."""

    name = "dask"

    def __init__(
        self,
        client: Any = None,
        address: str | None = None,
        retries: int = DEFAULT_RETRIES,
        scheduler_file: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        ship_max_bytes: int = SHIP_MAX_BYTES,
        worker_cache_dir: str = "",
    ) -> None:
        self.retries = retries
        # "": each worker caches summaries in its own $STEPSCOPE_CACHE_DIR (or user cache)
        self.worker_cache_dir = worker_cache_dir
        self.timeout_s = timeout_s
        self.ship_max_bytes = ship_max_bytes
        self._own_client = client is None
        if client is None:
            scheduler = resolve(address, scheduler_file, timeout_s)
            if scheduler is None:
                raise StepscopeError(
                    f"no Dask scheduler: pass --dask tcp://HOST:8786 or set {SCHEDULER_ENV}"
                )
            client = connect(scheduler, timeout_s)
        else:
            scheduler = Scheduler(str(client.scheduler.address), "the Dask client")
        self.scheduler = scheduler
        self.client = client

    @property
    def workers(self) -> int:
        info = self.client.scheduler_info()
        return sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values())

    def worker_cache(self, here: str) -> str:
        return self.worker_cache_dir  # this process's directory means nothing on the workers

    def map(
        self, fn: TaskFn, tasks: Sequence[HostTask], progress: ProgressFn | None = None
    ) -> Iterator[tuple[int, HostOutcome]]:
        if not tasks:
            return
        wait_for_workers(self.client, self.scheduler.source, self.timeout_s)
        yield from _Run(self, fn, tasks, progress).outcomes()

    def close(self) -> None:
        if self._own_client:
            self.client.close()


class _Run:
    """One `DaskExecutor.map`: the futures in flight and each host's history."""

    def __init__(
        self, ex: DaskExecutor, fn: TaskFn, tasks: Sequence[HostTask], progress: ProgressFn | None
    ) -> None:
        self.ex, self.client, self.fn, self.tasks, self.progress = (
            ex,
            ex.client,
            fn,
            tasks,
            progress,
        )
        self.flight: dict[Any, int] = {}  # future -> task index
        self.shipped: dict[Any, Any] = {}  # future of a shipped task -> its data's future
        self.unread: list[dict[str, str]] = [{} for _ in tasks]  # worker -> why not
        self.tried: list[set[str]] = [set() for _ in tasks]  # addresses of those workers
        self.blind: dict[str, set[str]] = {}  # worker address -> folders it could not open
        self.to_ship: list[int] = []
        self.on_driver: list[int] = []
        self.done = 0

    def _submit(self, i: int, workers: list[str] | None = None) -> None:
        future = self.client.submit(
            run_on_dask,
            self.fn,
            self.tasks[i],
            self.ex.retries,
            key=_key(self.tasks[i]),
            retries=self.ex.retries,  # a lost worker
            pure=False,  # a rerun must read the files again (they may have changed)
            workers=workers,
            allow_other_workers=False,
        )
        self.flight[future] = i

    def _ship(self, i: int) -> tuple[int, HostOutcome] | None:
        """Sends the file's bytes with the task; the host's failure when they cannot be read."""
        from stepscope.xspace.io import read_raw_bytes

        task = self.tasks[i]
        try:
            data = self.client.scatter(read_raw_bytes(task.host.path), hash=False)
        except StepscopeError as exc:
            return self._final(i, HostOutcome(task.host.host, None, str(exc), where=DRIVER))
        future = self.client.submit(
            run_shipped,
            self.fn,
            task,
            data,
            self.ex.retries,
            key=_key(task),
            retries=self.ex.retries,
            pure=False,
        )
        self.flight[future] = i
        self.shipped[future] = data
        return None

    def outcomes(self) -> Iterator[tuple[int, HostOutcome]]:
        futures = self.client.map(
            run_on_dask,
            [self.fn] * len(self.tasks),
            list(self.tasks),
            [self.ex.retries] * len(self.tasks),
            retries=self.ex.retries,
            pure=False,
            key=[_key(t) for t in self.tasks],
        )
        self.flight = {future: i for i, future in enumerate(futures)}
        try:
            while self.flight or self.to_ship:
                # One shipped file per worker at a time: this process holds its bytes.
                while self.to_ship and len(self.shipped) < max(1, worker_count(self.client)):
                    failed = self._ship(self.to_ship.pop(0))
                    if failed is not None:
                        yield failed
                if not self.flight:
                    continue
                for future in self._finished():
                    found = self._settle(future)
                    if found is not None:
                        yield found
            for i in self.on_driver:
                outcome = run_task(self.fn, self.tasks[i], self.ex.retries)
                yield self._final(i, replace(outcome, where=DRIVER))
        finally:
            for future in [*self.flight, *self.shipped.values()]:
                future.release()

    def _finished(self) -> list[Any]:
        """Futures done since the last call; waits while the cluster has workers, and fails
        the run once it has had none for the executor's timeout."""
        import distributed

        alone_since: float | None = None
        while True:
            try:
                done = distributed.wait(
                    list(self.flight), timeout=POLL_S, return_when="FIRST_COMPLETED"
                ).done
            except TimeoutError:
                done = set()
            if done:
                return list(done)
            if worker_count(self.client):
                alone_since = None
            elif alone_since is None:
                alone_since = time.monotonic()
            elif time.monotonic() - alone_since > self.ex.timeout_s:
                raise StepscopeError(
                    f"{self.ex.scheduler.source}: the Dask cluster has had no worker for "
                    f"{self.ex.timeout_s:g} s (--dask-timeout) with {len(self.flight)} host(s) "
                    "left: were the workers stopped?"
                )

    def _settle(self, future: Any) -> tuple[int, HostOutcome] | None:
        """The host's final outcome, or None when it goes on elsewhere."""
        i = self.flight.pop(future)
        data = self.shipped.pop(future, None)
        task = self.tasks[i]
        try:
            outcome: HostOutcome = future.result()
        except Exception as exc:
            lines = str(exc).splitlines()
            outcome = HostOutcome(
                task.host.host,
                None,
                f"{task.host.path}: Dask could not run the task ({type(exc).__name__}: "
                f"{lines[0] if lines else 'no message'})",
                self.ex.retries + 1,
            )
        future.release()
        if data is not None:
            data.release()
        if not outcome.unreadable:
            return self._final(i, outcome)
        self.unread[i][outcome.where] = outcome.error
        address = outcome.where.split(" ", 1)[0]
        self.tried[i].add(address)
        self.blind.setdefault(address, set()).add(_folder(task))
        others = self._workers_to_try(i)
        if others:
            self._submit(i, others)
            if self.progress is not None:
                self.progress(task.host.host, "retrying", self.done, len(self.tasks))
            return None
        here = unreadable_reason(task.host.path)
        if not here:
            from stepscope.model import fs
            from stepscope.xspace import formats

            # a host read with companions (a deferred save's trace) is not one file to ship
            alone = not formats.get(task.host.format).companions(task.host.path)
            if task.portable and alone and fs.size(task.host.path) <= self.ex.ship_max_bytes:
                self.to_ship.append(i)
            else:
                self.on_driver.append(i)
            return None
        failed = "; ".join(f"{w}: {why}" for w, why in self.unread[i].items())
        return self._final(
            i,
            HostOutcome(
                task.host.host,
                None,
                f"{task.host.path}: no Dask worker could open it ({failed}), nor {DRIVER} "
                f"({here}); give the workers the same path (a shared mount or an fsspec "
                "URL), or set $STEPSCOPE_PATH_MAP on them",
                len(self.unread[i]),
            ),
        )

    def _workers_to_try(self, i: int) -> list[str]:
        """Workers that have neither failed on this host nor on its directory."""
        folder = _folder(self.tasks[i])
        workers = self.client.scheduler_info().get("workers", {})
        return [
            w for w in workers if w not in self.tried[i] and folder not in self.blind.get(w, ())
        ]

    def _final(self, i: int, outcome: HostOutcome) -> tuple[int, HostOutcome]:
        outcome = replace(outcome, unreadable=False, unread_by=tuple(self.unread[i].items()))
        self.done += 1
        report(self.progress, outcome, self.done, len(self.tasks))
        return i, outcome


def _key(task: HostTask) -> str:
    return f"stepscope-{task.host.host}-{os.urandom(4).hex()}"


def _folder(task: HostTask) -> str:
    return task.host.path.rstrip("/").rpartition("/")[0]
