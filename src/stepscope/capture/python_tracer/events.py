"""What the Python tracer records, shared by the tracer, its backends and the saver.

A backend writes each thread's finished calls as ``(code, start_ns, end_ns, depth)`` into a
`PyThreadEvents`; the saver turns them into ``$file.py:LINE qualname`` events.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from types import CodeType

PAUSED, RECORDING, STOPPED = 0, 1, 2
# (code, start_ns, end_ns, depth) in perf_counter_ns
PyEvent = tuple[CodeType, int, int, int]
_HERE = os.path.dirname(os.path.abspath(__file__))
# stepscope's capture code: the capture package and this one
_INTERNAL_DIRS = frozenset({_HERE, os.path.dirname(_HERE)})


@dataclass(eq=False)
class PyThreadEvents:
    """One thread's recorded calls, plus the calls still open (code, start) when it stopped."""

    native_id: int
    ident: int
    name: str
    events: list[PyEvent] = field(default_factory=list)
    stack: list[tuple[CodeType, int]] = field(default_factory=list)


def registered_name(ident: int) -> str:
    """The thread's name, or "" if `threading` has not registered it yet.

    Not `threading.current_thread()`: called that early in a new thread (sys.monitoring sees
    its bootstrap frames) it would create and register a bogus ``Dummy-N`` thread.
    """
    thread = getattr(threading, "_active", {}).get(ident)
    return thread.name if thread is not None else ""


def event_name(code: CodeType, cache: dict[CodeType, str]) -> str:
    """``$file.py:LINE qualname``, TensorFlow's name for a Python function event."""
    name = cache.get(code)
    if name is None:
        qualname = getattr(code, "co_qualname", code.co_name)
        name = f"${os.path.basename(code.co_filename)}:{code.co_firstlineno} {qualname}"
        cache[code] = name
    return name


def is_internal(code: CodeType) -> bool:
    """Frames of stepscope's own capture code (kept out of the saved profile)."""
    return os.path.dirname(code.co_filename) in _INTERNAL_DIRS


def internal_files() -> frozenset[str]:
    """The file names (``co_filename``) of `is_internal` frames: the tracers skip their
    frames before taking from the event budget, so ``max_events`` is spent only on events
    the profile keeps."""
    names: set[str] = set()
    for folder in _INTERNAL_DIRS:
        with contextlib.suppress(OSError):
            names.update(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py"))
    return frozenset(names)
