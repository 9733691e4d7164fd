"""``stepscope.recorder``: the flight recorder (see `stepscope.capture.recorder`).

import stepscope.recorder
stepscope.recorder.start("logs", keep_steps=50)
"""

from __future__ import annotations

from stepscope.capture.recorder import (
    InvalidRecorderConfigError,
    PendingSave,
    Recorder,
    RecorderConfig,
    RecorderNotRunningError,
    Triggers,
    current,
    is_running,
    save,
    start,
    stop,
)

__all__ = [
    "InvalidRecorderConfigError",
    "PendingSave",
    "Recorder",
    "RecorderConfig",
    "RecorderNotRunningError",
    "Triggers",
    "current",
    "is_running",
    "save",
    "start",
    "stop",
]
