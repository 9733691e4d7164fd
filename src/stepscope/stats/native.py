"""The optional C sweeps of the analysis (`_sweeps.c`), or None.

Without a compiler, or with ``STEPSCOPE_PURE_PYTHON=1`` (as for the XSpace decoder), the NumPy
versions beside each use run instead; both give the same results (tests compare them).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

# Every function the callers use: an extension built from an older `_sweeps.c` (an editable
# install not rebuilt after an update) lacks some, and is then not used at all rather than
# failing with AttributeError in the middle of an analysis.
_FUNCTIONS = (
    "hold_walk",
    "nest_parents",
    "nest_self_time",
    "op_sums",
    "stat_sums",
    "step_type_unions",
    "sum_by_row",
    "window_bounds",
    "union_in_order",
    "window_pairs_into",
    "union_in_runs",
    "step_type_unions_in_runs",
)


def _load() -> ModuleType | None:
    if os.environ.get("STEPSCOPE_PURE_PYTHON") == "1":
        return None
    try:
        module = importlib.import_module("stepscope.stats._sweeps")
    except ImportError:
        return None
    if not all(hasattr(module, name) for name in _FUNCTIONS):
        return None
    return module


sweeps = _load()
