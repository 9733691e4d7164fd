"""The optional C sweeps of the analysis (`_sweeps.c`), or None.

Without a compiler, or with ``STEPSCOPE_PURE_PYTHON=1`` (as for the XSpace decoder), the NumPy
versions beside each use run instead; both give the same results (tests compare them).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("STEPSCOPE_PURE_PYTHON") == "1":
        return None
    try:
        return importlib.import_module("stepscope.stats._sweeps")
    except ImportError:
        return None


sweeps = _load()
