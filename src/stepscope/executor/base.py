"""The executor interface, the outcome of one host's task, and the in-process executor."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from stepscope.errors import StepscopeError
from stepscope.log import module_logger
from stepscope.records import record

if TYPE_CHECKING:  # annotations only: the CLI's --help imports this package
    from stepscope.model.runs import HostFile

log = module_logger(__name__)

DEFAULT_RETRIES = 2  # extra attempts after an unexpected failure (a worker lost, an I/O hiccup)


@record
class HostTask:
    """What a worker needs: the host's file and the (picklable) arguments of the function."""

    host: HostFile
    args: Any = None
    # False: the task needs the file at its own path (it leaves entries keyed by the path
    # for the driver), so a copy of its bytes shipped to a worker would not do.
    portable: bool = True


# fn(task) -> summary. Must be a module-level function (pickled by reference).
TaskFn = Callable[[HostTask], Any]
# progress(host, state, done, total): state is "done", "cached", "failed" or "retrying".
ProgressFn = Callable[[str, str, int, int], None]


@record
class HostOutcome:
    """What one host's task gave: its value, or the one-line error that replaced it."""

    host: str
    value: Any = None
    error: str = ""  # one line for the user; "" when the task succeeded
    attempts: int = 1
    seconds: float = 0.0
    where: str = ""  # the Dask worker (or "driver") that ran the task; "" for a local pool
    unreadable: bool = False  # the worker could not open the file: another one may
    # (worker, why it could not open the file) for each worker that could not, in order
    unread_by: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def moved(self) -> str:
        """For a host some workers could not open: who could not, why, and where it ran
        instead (one line); "" otherwise."""
        if not self.unread_by or not self.ok:
            return ""
        tried = "; ".join(f"{worker}: {why}" for worker, why in self.unread_by)
        return f"{tried}; analyzed on {self.where or 'another worker'}"


def is_permanent(exc: BaseException) -> bool:
    """A user-facing error (corrupt, missing or too large file) fails the same way every time,
    so it is not retried; anything else might be transient."""
    return isinstance(exc, StepscopeError)


def error_line(host: HostFile, exc: BaseException) -> str:
    """The one-line message of a failed host: the user error's own text, else the exception
    type and text (the traceback goes to the log, not to the user)."""
    if isinstance(exc, StepscopeError):
        return str(exc)
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{host.path}: analysis failed ({type(exc).__name__}: {text or 'no message'})"


def run_task(fn: TaskFn, task: HostTask, retries: int) -> HostOutcome:
    """Runs one task where it is called, with retries; never raises."""
    started = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            value = fn(task)
            return HostOutcome(task.host.host, value, "", attempt, time.monotonic() - started)
        except Exception as exc:
            if is_permanent(exc) or attempt > retries:
                if not is_permanent(exc):
                    log.debug("%s failed:\n%s", task.host.path, traceback.format_exc())
                line = error_line(task.host, exc)
                return HostOutcome(task.host.host, None, line, attempt, time.monotonic() - started)
            log.info("%s: attempt %d failed (%s); retrying", task.host.path, attempt, exc)


class Executor(Protocol):
    """Runs ``fn`` on every task; yields (index of the task, outcome) as they complete."""

    @property
    def name(self) -> str: ...

    @property
    def workers(self) -> int: ...

    def map(
        self, fn: TaskFn, tasks: Sequence[HostTask], progress: ProgressFn | None = None
    ) -> Iterator[tuple[int, HostOutcome]]: ...

    def worker_cache(self, here: str) -> str:
        """The cache directory for tasks' summaries, given this process's (``here``): the
        same for workers on this machine; "" (each worker's own) on a cluster."""
        ...

    def close(self) -> None: ...


def report(progress: ProgressFn | None, outcome: HostOutcome, done: int, total: int) -> None:
    if progress is not None:
        if not outcome.ok:
            status = "failed"
        else:
            status = "cached" if getattr(outcome.value, "cached", False) else "done"
        progress(outcome.host, status, done, total)


class InlineExecutor:
    """Runs tasks one after the other in this process (one host, or ``--workers 0``)."""

    name = "inline"
    workers = 0

    def __init__(self, retries: int = DEFAULT_RETRIES) -> None:
        self.retries = retries

    def worker_cache(self, here: str) -> str:
        return here

    def map(
        self, fn: TaskFn, tasks: Sequence[HostTask], progress: ProgressFn | None = None
    ) -> Iterator[tuple[int, HostOutcome]]:
        for i, task in enumerate(tasks):
            outcome = run_task(fn, task, self.retries)
            report(progress, outcome, i + 1, len(tasks))
            yield i, outcome

    def close(self) -> None:
        pass
