"""The server's process keeps the memory it frees for its next requests (glibc's malloc).

A trace viewer window of a 10M-event trace makes and drops tens of megabytes of NumPy
temporaries. With glibc's defaults the heap's top is given back to the system once more
than a few megabytes of it are free, and the next window touches fresh pages again: 2,000
to 5,000 page faults per window, a third or more of its CPU time (decision 241). `stepscope
serve` owns its process and lives for many requests, so it asks glibc to keep up to
`TRIM_THRESHOLD_BYTES` of freed heap and to serve allocations up to
`MMAP_THRESHOLD_BYTES` from the heap (glibc's own largest automatic threshold). Nothing
changes where the C library is not glibc, or where the user set glibc's malloc variables.
"""

from __future__ import annotations

import os
from collections.abc import Callable

M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20
TRIM_THRESHOLD_BYTES = 128 << 20
# the user's own settings of glibc's malloc win
USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")


def _glibc_mallopt() -> Callable[[int, int], int] | None:
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 -- present in glibc only
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt


def keep_freed_memory(
    find: Callable[[], Callable[[int, int], int] | None] = _glibc_mallopt,
) -> bool:
    """Set the process' malloc to keep freed memory (see the module docstring); True when
    set. ``find`` gives glibc's ``mallopt`` (None elsewhere)."""
    if any(name in os.environ for name in USER_SETTINGS):
        return False
    mallopt = find()
    if mallopt is None:
        return False
    # 1 on success; the mmap threshold first: setting either stops glibc's own adjustment
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
