"""Skipping a test module whose optional package is not installed, without importing it.

`pytest.importorskip` at a module's top imports the package when the module is collected,
and collection imports every test module whatever the tier `-m` then keeps: Playwright's
sync API and Dask's `distributed` cost the default run ~0.6 s of CPU each time, for browser
and integration tests it deselects (decision 764). A module calls `skip_without` instead and
imports the package inside the tests or fixtures that use it.
"""

from __future__ import annotations

import importlib.util

import pytest


def skip_without(module: str, reason: str | None = None) -> None:
    """Skip the calling test module when ``module`` cannot be found (it is not imported)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(reason or f"{module} is not installed", allow_module_level=True)
