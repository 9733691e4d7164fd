"""The default executor: a pool of local worker processes (``--workers N``).

Workers are started from a fork server (Linux) or spawned (elsewhere), never forked from the
caller, because the caller may be a threaded web server. A worker process that dies (killed
for memory, a crash in native code) breaks the pool and every task in flight with it: those
are run again one at a time in a new pool, so the one that kills its worker is known; it gets
``retries`` more attempts, then is reported as failed. At most two tasks per worker are in
flight, so a crash puts few tasks under suspicion.
"""

from __future__ import annotations

import logging
import multiprocessing
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from stepscope.executor.base import (
    DEFAULT_RETRIES,
    HostOutcome,
    HostTask,
    ProgressFn,
    TaskFn,
    report,
)
from stepscope.executor.worker import run_in_pool

log = logging.getLogger(__name__)


def _context() -> multiprocessing.context.BaseContext:
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")


class LocalExecutor:
    """``workers`` processes on this machine; the pool lives until `close`."""

    name = "local"

    def __init__(self, workers: int, retries: int = DEFAULT_RETRIES) -> None:
        if workers < 1:
            raise ValueError("a local pool needs at least one worker")
        self.workers = workers
        self.retries = retries
        self._pool: ProcessPoolExecutor | None = None

    def worker_cache(self, here: str) -> str:
        return here  # the workers are this machine's processes

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=_context())
        return self._pool

    def _reset_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None

    def map(
        self, fn: TaskFn, tasks: Sequence[HostTask], progress: ProgressFn | None = None
    ) -> Iterator[tuple[int, HostOutcome]]:
        total = len(tasks)
        crashes = [0] * total
        todo = list(range(total))
        todo.reverse()  # popped from the end: first task first
        suspects: list[int] = []  # in flight when a worker died: re-run one at a time
        done = 0
        while todo or suspects:
            alone = not todo
            window = 1 if alone else 2 * self.workers  # few in flight: few suspects
            queue = [suspects.pop(0)] if alone else todo
            pool = self._get_pool()
            running: dict[Future[HostOutcome], int] = {}
            broken = False
            while (queue or running) and not broken:
                while queue and len(running) < window:
                    i = queue.pop()
                    running[pool.submit(run_in_pool, fn, tasks[i], self.retries)] = i
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    i = running.pop(future)
                    try:
                        outcome = future.result()
                    except BrokenProcessPool:
                        broken = True
                        if not alone:
                            suspects.append(i)
                            continue
                        crashes[i] += 1  # it ran alone: it killed the worker
                        if crashes[i] <= self.retries:
                            suspects.append(i)
                            if progress is not None:
                                progress(tasks[i].host.host, "retrying", done, total)
                            continue
                        outcome = HostOutcome(
                            tasks[i].host.host,
                            None,
                            f"{tasks[i].host.path}: the worker process analyzing it died "
                            f"{crashes[i]} times (out of memory? try fewer --workers)",
                            crashes[i],
                        )
                    done += 1
                    report(progress, outcome, done, total)
                    yield i, outcome
            if broken:
                suspects += running.values()  # lost with the pool
                log.warning(
                    "a worker process died; re-running %d task(s) one at a time", len(suspects)
                )
                self._reset_pool()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
