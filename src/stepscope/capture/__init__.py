"""Collect while the program runs: session, annotations, step markers, host and Python tracers.

Everything here imports only the standard library at import time (``import stepscope`` must
stay fast); protobuf and the XSpace builder are loaded when a profile is saved.
"""

from stepscope.capture.annotations import trace
from stepscope.capture.options import InvalidOptionsError, ProfilerOptions
from stepscope.capture.session import (
    ProfilerAlreadyRunningError,
    ProfilerNotRunningError,
    is_running,
    profile,
    start,
    stop,
    wait,
)
from stepscope.capture.step import step, steps

__all__ = [
    "InvalidOptionsError",
    "ProfilerAlreadyRunningError",
    "ProfilerNotRunningError",
    "ProfilerOptions",
    "is_running",
    "profile",
    "start",
    "step",
    "steps",
    "stop",
    "trace",
    "wait",
]
