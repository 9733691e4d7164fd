"""Reaching a Dask cluster: which scheduler (``--dask``, ``--dask-scheduler-file``,
``$STEPSCOPE_DASK_SCHEDULER``), connecting within a time limit, and waiting for a first
worker, each failure one line that names where the address came from (decision 132)."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from stepscope import log
from stepscope.errors import StepscopeError
from stepscope.records import record

SCHEDULER_ENV = "STEPSCOPE_DASK_SCHEDULER"
DEFAULT_TIMEOUT_S = 60.0  # to reach the scheduler, and again for a first worker


@record
class Scheduler:
    """A Dask scheduler's address and how the user named it."""

    address: str
    source: str  # how the user gave it, for messages: "--dask tcp://..."


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise StepscopeError(
            "the Dask executor needs dask.distributed: pip install 'stepscope[dask]'"
        ) from exc
    return distributed


def _read_scheduler_file(path: str, timeout_s: float) -> str:
    """The address in a scheduler file (``dask scheduler --scheduler-file F`` writes it when
    it starts: waited for up to ``timeout_s``, as a batch job's scheduler may start late)."""
    deadline = time.monotonic() + timeout_s
    told = False
    while True:
        try:
            with open(path, encoding="utf-8") as f:
                found = json.load(f)
            address = found.get("address") if isinstance(found, dict) else None
            if isinstance(address, str) and address:
                return address
            problem = "has no scheduler address (not written by `dask scheduler`?)"
        except FileNotFoundError:
            problem = "does not exist (start `dask scheduler --scheduler-file` first)"
        except (OSError, ValueError) as exc:
            problem = f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
        if time.monotonic() >= deadline:
            raise StepscopeError(
                f"--dask-scheduler-file {path}: {problem}; waited {timeout_s:g} s (--dask-timeout)"
            )
        if not told:
            log.info(f"stepscope: waiting for the Dask scheduler file {path}")
            told = True
        # read again every 0.5 s, the last time at the deadline (a timeout under 0.5 s waited 0.5)
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


def resolve(
    address: str | None = None, scheduler_file: str | None = None, timeout_s: float = 0.0
) -> Scheduler | None:
    """The scheduler the options name: ``--dask``, else ``--dask-scheduler-file``, else
    ``$STEPSCOPE_DASK_SCHEDULER``; None when none is named."""
    if address:
        return Scheduler(address, f"--dask {address}")
    if scheduler_file:
        return Scheduler(
            _read_scheduler_file(scheduler_file, timeout_s),
            f"--dask-scheduler-file {scheduler_file}",
        )
    env = os.environ.get(SCHEDULER_ENV, "").strip()
    if env:
        return Scheduler(env, f"${SCHEDULER_ENV}={env}")
    return None


def connect(scheduler: Scheduler, timeout_s: float) -> Any:
    """A ``distributed.Client`` of ``scheduler``, or one line saying why not."""
    distributed = _distributed()
    try:
        return distributed.Client(scheduler.address, timeout=f"{timeout_s}s")
    except (ValueError, TypeError) as exc:  # an unknown scheme, no port, a malformed address
        raise StepscopeError(
            f"{scheduler.source}: not a Dask scheduler address ({_first_line(exc)}); give "
            "tcp://HOST:8786 (or tls://...)"
        ) from None
    except (OSError, TimeoutError) as exc:
        raise StepscopeError(
            f"{scheduler.source}: cannot reach the Dask scheduler within {timeout_s:g} s "
            f"({_first_line(exc)}); check the address and that `dask scheduler` is running"
        ) from None


def worker_count(client: Any) -> int:
    return len(client.scheduler_info().get("workers", {}))


def wait_for_workers(client: Any, source: str, timeout_s: float) -> None:
    """Returns once the cluster has a worker; one line while it has none, one error line
    after ``timeout_s``."""
    if worker_count(client):
        return
    log.info(
        f"stepscope: waiting for Dask workers (0 connected) at {source}, up to "
        f"{timeout_s:g} s (--dask-timeout)"
    )
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except TimeoutError:
        raise StepscopeError(
            f"{source}: no Dask worker connected within {timeout_s:g} s (--dask-timeout); "
            f"start workers with `dask worker {client.scheduler.address}` or check that they "
            "can reach the scheduler"
        ) from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__
