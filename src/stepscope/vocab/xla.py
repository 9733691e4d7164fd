"""The lines XProf's device tracers (XLA on GPU and TPU, TensorFlow's GPU tracer) give a
device plane besides its streams, as XSpace files hold them."""

from __future__ import annotations

STEPS_LINE = "Steps"  # one event per step on each device (TPU, XLA GPU)
XLA_MODULES_LINE = "XLA Modules"  # one event per program run
XLA_OPS_LINE = "XLA Ops"  # one event per HLO op run: the device's work when it has no streams
# Lines derived from the streams (or holding annotations), in the order the trace viewer
# shows them above the streams.
DERIVED_LINES = (
    STEPS_LINE,
    XLA_MODULES_LINE,
    XLA_OPS_LINE,
    "XLA TraceMe",
    "Framework Name Scope",
    "Framework Ops",
    "Source code",
    "Launch Stats",
    "_counters_",
)
# Lines of asynchronous work summarised elsewhere (their time is in the streams).
ASYNC_LINES = ("Async XLA Ops", "SparseCore Steps")
# Name prefixes of lines that hold annotations or sync waits, not device work.
ANNOTATION_LINE_PREFIXES = ("GPU annotations", "CUDA sync")
