"""Keep freed memory in the process for the CLI's one-shot commands (glibc; decision 68).

An analysis allocates and frees full-size NumPy temporaries (8 B per event each) many times.
glibc serves every block above its mmap threshold (at most 32 MB, so every such array from
about 4M events on) with a fresh mapping and returns it to the kernel when freed: each new
array then costs a page fault per page touched, with the kernel zeroing the pages. At 5M
events that is half of the command's CPU time. Raising the mmap and trim thresholds lets
malloc reuse the freed memory instead, for about 1% more peak resident memory at 5M events.

NumPy, for its part, asks the kernel for transparent huge pages on every array of 4 MiB or
more (``madvise``); where the kernel defragments for such requests (``defrag`` set to
``madvise``, the usual default), a fault then waits for memory compaction, whose cost swings
with what the rest of the machine does: 0.4-1.2 s of system time for the same 5.3M-event
command, against 0.40-0.47 s with 4 KiB pages (decision 261). The same commands ask NumPy
for plain pages (``NUMPY_MADVISE_HUGEPAGE=0``, read when NumPy is imported).

A process-wide setting: only for commands that end when their one answer is printed, and,
bounded, for the ``stepscope serve`` program (decision 335: left to glibc's dynamic
thresholds, a server's worker-thread heap is trimmed after each computed trace viewer window
and faulted back in by the next, doubling its CPU); never ``server`` or ``capture``, never
the library in a user's process (``start_server`` included), and never over the user's own
``MALLOC_*``, ``GLIBC_TUNABLES`` or ``NUMPY_MADVISE_HUGEPAGE`` settings.
"""

from __future__ import annotations

import ctypes
import os
import sys

from stepscope.log import module_logger

log = module_logger(__name__)

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
_KEEP = 2**31 - 1  # mallopt takes an int: blocks up to 2 GiB come from the reused heap
_USER_SETTINGS = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_ARENA_MAX",
    "GLIBC_TUNABLES",
)
NUMPY_HUGEPAGE = "NUMPY_MADVISE_HUGEPAGE"


# `stepscope serve`, a long-lived process: blocks up to glibc's own dynamic ceiling (32 MiB)
# from the heap, and up to 128 MiB of freed memory kept (decision 335)
SERVE_MMAP_BYTES = 32 << 20
SERVE_TRIM_BYTES = 128 << 20
# and every thread on malloc's main arena: a request thread's own arena gave its heaps back
# and faulted them in again while the steps were built (decision 328)
SERVE_ARENAS = 1


def keep_freed_memory(
    mmap_bytes: int = _KEEP, trim_bytes: int = _KEEP, plain_pages: bool = True, arenas: int = 0
) -> bool:
    """Tell glibc's malloc to keep and reuse freed memory (blocks up to ``mmap_bytes`` from
    the heap, up to ``trim_bytes`` of freed memory kept; with ``arenas``, at most that many
    arenas), and NumPy (when it is not loaded yet, ``plain_pages``) to leave its arrays in
    plain pages; False where malloc cannot or should not be told (not glibc, or the user
    tuned malloc already)."""
    if plain_pages and "numpy" not in sys.modules:
        os.environ.setdefault(NUMPY_HUGEPAGE, "0")  # the user's own value stays
    if not sys.platform.startswith("linux") or any(v in os.environ for v in _USER_SETTINGS):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library symbols to call
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # musl and other C libraries without these parameters answer 0: nothing changed
    done = bool(mallopt(_M_MMAP_THRESHOLD, mmap_bytes)) and bool(
        mallopt(_M_TRIM_THRESHOLD, trim_bytes)
    )
    if done and arenas:
        done = bool(mallopt(_M_ARENA_MAX, arenas))
    log.debug("malloc keeps freed memory: %s", done)
    return done
