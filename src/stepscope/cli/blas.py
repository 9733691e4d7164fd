"""One OpenBLAS thread for the processes that only analyse profiles (decision 71)."""

from __future__ import annotations

import os
import sys

# Commands that only read and analyse profiles (not `server`, which runs the user's training
# script in this process, nor `demo`, which trains a small model, nor `capture`); as the
# malloc setting (decision 68), only when the process is the command's own.
ANALYSIS_COMMANDS = frozenset(
    {
        "cache",
        "diff",
        "export",
        "import",
        "info",
        "mcp",
        "query",
        "report",
        "runs",
        "serve",
        "summary",
        "tool",
    }
)


def single_threaded_blas() -> None:
    """Ask OpenBLAS for one thread before numpy loads it (unless the user chose a count).
    stepscope's analysis makes no BLAS call, but OpenBLAS starts a thread per core and sets
    up its buffers when numpy is imported: 0.055 s of CPU on a 2-core machine (numpy's import
    0.116 -> 0.060 s), a tenth of a 0.2M-event Kineto overview. Processes this one starts
    (the executor's workers) inherit the setting; they analyse profiles too."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
