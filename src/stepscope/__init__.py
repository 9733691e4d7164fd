"""stepscope: the TensorFlow Profiler's toolset for every ML framework."""

from __future__ import annotations

from stepscope._version import __version__

TYPE_CHECKING = False  # not typing's: importing typing costs as much as the rest of this
if TYPE_CHECKING:
    from stepscope import client, data, keras, recorder, server
    from stepscope.capture.annotations import trace
    from stepscope.capture.options import ProfilerOptions
    from stepscope.capture.session import (
        ProfilerAlreadyRunningError,
        ProfilerNotRunningError,
        profile,
        start,
        stop,
        wait,
    )
    from stepscope.capture.step import step, steps
    from stepscope.sql import query
    from stepscope.tools.analysis import Analysis

__all__ = [
    "Analysis",
    "ProfilerAlreadyRunningError",
    "ProfilerNotRunningError",
    "ProfilerOptions",
    "__version__",
    "client",
    "data",
    "keras",
    "profile",
    "query",
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


# The capture API, imported on first use too: the CLI (`stepscope` imports this package) and
# analysis never need it, and it costs 10-25 ms of a cached `stepscope tool` answer. The first
# use binds every name here, so later lookups (`stepscope.trace` in a loop) are plain ones.
_CAPTURE_API = frozenset(
    {
        "ProfilerAlreadyRunningError",
        "ProfilerNotRunningError",
        "ProfilerOptions",
        "profile",
        "start",
        "step",
        "steps",
        "stop",
        "trace",
        "wait",
    }
)


def __getattr__(name: str) -> object:
    if name == "Analysis":  # the analysis API: NumPy and the tools, only when asked for
        from stepscope.tools.analysis import Analysis

        globals()["Analysis"] = Analysis
        return Analysis
    if name == "query":  # SQL over a run (the `sql` extra: DuckDB, pyarrow)
        from stepscope.sql import query

        globals()["query"] = query
        return query
    if name in _CAPTURE_API:
        from stepscope import capture

        globals().update({n: getattr(capture, n) for n in _CAPTURE_API})
        return globals()[name]
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f"stepscope.{name}")
    raise AttributeError(f"module 'stepscope' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_MODULES, *_CAPTURE_API, "Analysis", "query"})
