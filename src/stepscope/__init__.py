"""stepscope: the TensorFlow Profiler's toolset for every ML framework."""

from __future__ import annotations

from stepscope._version import __version__
from stepscope.capture import (
    ProfilerAlreadyRunningError,
    ProfilerNotRunningError,
    ProfilerOptions,
    profile,
    start,
    step,
    stop,
    trace,
)

TYPE_CHECKING = False  # not typing's: importing typing costs as much as the rest of this
if TYPE_CHECKING:
    from stepscope import data

__all__ = [
    "ProfilerAlreadyRunningError",
    "ProfilerNotRunningError",
    "ProfilerOptions",
    "__version__",
    "data",
    "profile",
    "start",
    "step",
    "stop",
    "trace",
]


def __getattr__(name: str) -> object:
    # `stepscope.data` is imported on first use: it needs `typing`, which would double the
    # cost of `import stepscope` (a training script pays it at every start).
    if name == "data":
        import importlib

        return importlib.import_module("stepscope.data")
    raise AttributeError(f"module 'stepscope' has no attribute {name!r}")
