"""The optional C sweeps of the analysis (`_sweeps.c`), or None.

Without a compiler, or with ``STEPSCOPE_PURE_PYTHON=1`` (as for the XSpace decoder), the NumPy
versions beside each use run instead; both give the same results (tests compare them).
"""

from __future__ import annotations

from stepscope import accelerators

sweeps = accelerators.get("_sweeps")
