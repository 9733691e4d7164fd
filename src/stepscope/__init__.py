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
    steps,
    stop,
    trace,
    wait,
)

TYPE_CHECKING = False  # not typing's: importing typing costs as much as the rest of this
if TYPE_CHECKING:
    from stepscope import client, data, keras, recorder, server

__all__ = [
    "ProfilerAlreadyRunningError",
    "ProfilerNotRunningError",
    "ProfilerOptions",
    "__version__",
    "client",
    "data",
    "keras",
    "profile",
    "recorder",
    "server",
    "start",
    "step",
    "steps",
    "stop",
    "trace",
    "wait",
]


# Public sub-modules, imported on first use: `stepscope.data` needs `typing` (which would
# double the cost of `import stepscope`, paid at every start of a training script), `server`
# and `client` need grpc, `keras` Keras.
_LAZY_MODULES = frozenset({"client", "data", "keras", "recorder", "server"})


def __getattr__(name: str) -> object:
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f"stepscope.{name}")
    raise AttributeError(f"module 'stepscope' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_MODULES})
