"""``stepscope.keras``: the Keras 3 profiling callback (see `stepscope.capture.keras`).

Keras itself is imported only when ``ProfileCallback`` is first used.
"""

from __future__ import annotations

from typing import Any

from stepscope.capture.keras import BatchRangeProfiler, parse_profile_batch

__all__ = ["BatchRangeProfiler", "parse_profile_batch"]  # and ProfileCallback, made lazily


def __getattr__(name: str) -> Any:
    if name == "ProfileCallback":
        from stepscope.capture import keras as _impl

        return _impl.ProfileCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
