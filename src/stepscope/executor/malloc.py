"""glibc's malloc thresholds while a per-host task runs in a worker process (decision 131).

An analysis allocates and frees full-size NumPy temporaries many times (decision 68). With
glibc's default dynamic thresholds, freed blocks are reused; a Dask worker instead starts
with ``MALLOC_TRIM_THRESHOLD_=65536`` (Dask's ``distributed.nanny.pre-spawn-environ``), so
glibc gives freed memory back to the kernel almost at once and every new temporary page
faults again: 60-90% more CPU per host (docs/benchmarks.md, "Dask workers and malloc").

A worker process that runs a stepscope task therefore keeps freed memory while the task
runs (thresholds at 2 GiB) and, when the last such task in the process ends, restores
Dask's trim threshold and gives the freed memory back (``malloc_trim``), so between tasks
the worker holds what Dask expects it to. Off with ``STEPSCOPE_WORKER_MALLOC=dask`` (keep
the worker's own settings), and a no-op where the C library has no such parameters.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

ENV_VAR = "STEPSCOPE_WORKER_MALLOC"  # "dask" (or "off"): leave the worker's malloc alone
M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_THRESHOLD = -3
KEEP = 2**31 - 1  # mallopt takes an int: blocks up to 2 GiB come from the reused heap
GLIBC_TRIM_DEFAULT = 128 * 1024  # glibc's default of both thresholds
DASK_TRIM_ENV = "MALLOC_TRIM_THRESHOLD_"

_lock = threading.Lock()
_active = 0  # tasks of this process inside `keep_freed_memory`
_functions: tuple[Any, Any] | None = None


def functions() -> tuple[Any, Any] | None:
    """glibc's ``mallopt`` and ``malloc_trim``, or None (not Linux, not glibc)."""
    global _functions
    if _functions is None:
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(None)
            mallopt, trim = libc.mallopt, libc.malloc_trim
        except (OSError, AttributeError):  # musl has mallopt as a stub and no malloc_trim
            return None
        mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
        _functions = (mallopt, trim)
    return _functions


def enabled() -> bool:
    """Whether tasks in this process change the thresholds (glibc, not turned off)."""
    if os.environ.get(ENV_VAR, "").strip().lower() in ("dask", "off", "0", "no"):
        return False
    return functions() is not None


def setting() -> str:
    """How a task in this process treats malloc, in words (`stepscope doctor`)."""
    trim = os.environ.get(DASK_TRIM_ENV)
    where = f"{DASK_TRIM_ENV}={trim}" if trim is not None else "glibc defaults"
    if not enabled():
        return f"tasks keep this process's malloc settings ({where})"
    return f"tasks keep freed memory while they run, then restore {where} and trim"


def _restored_trim() -> int:
    try:
        return int(os.environ.get(DASK_TRIM_ENV, GLIBC_TRIM_DEFAULT))
    except ValueError:
        return GLIBC_TRIM_DEFAULT


@contextlib.contextmanager
def keep_freed_memory() -> Iterator[None]:
    """Raise the thresholds for the block (the first task of the process to enter); the
    last task to leave restores the trim threshold and returns freed memory to the kernel."""
    global _active
    found = functions() if enabled() else None
    if found is None:
        yield
        return
    mallopt, trim = found
    with _lock:
        _active += 1
        if _active == 1:
            mallopt(M_MMAP_THRESHOLD, KEEP)
            mallopt(M_TRIM_THRESHOLD, KEEP)
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                # The mmap threshold stays fixed (glibc's dynamic one cannot be turned back
                # on); with the trim threshold restored, freed memory goes back as before.
                mallopt(M_MMAP_THRESHOLD, GLIBC_TRIM_DEFAULT)
                mallopt(M_TRIM_THRESHOLD, _restored_trim())
                trim(0)
