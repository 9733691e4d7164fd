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

A process-wide setting: only for commands that end when their one answer is printed (never
``serve``, ``server`` or ``capture``, never the library in a user's process), and never over
the user's own ``MALLOC_*``, ``GLIBC_TUNABLES`` or ``NUMPY_MADVISE_HUGEPAGE`` settings.
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
_KEEP = 2**31 - 1  # mallopt takes an int: blocks up to 2 GiB come from the reused heap
_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")
NUMPY_HUGEPAGE = "NUMPY_MADVISE_HUGEPAGE"


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to keep and reuse freed memory, and NumPy (when it is not loaded
    yet) to leave its arrays in plain pages; False where malloc cannot or should not be told
    (not glibc, or the user tuned malloc already)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault(NUMPY_HUGEPAGE, "0")  # the user's own value stays
    if not sys.platform.startswith("linux") or any(v in os.environ for v in _USER_SETTINGS):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library symbols to call
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # musl and other C libraries without these parameters answer 0: nothing changed
    done = bool(mallopt(_M_MMAP_THRESHOLD, _KEEP)) and bool(mallopt(_M_TRIM_THRESHOLD, _KEEP))
    log.debug("malloc keeps freed memory: %s", done)
    return done
