"""Shared intermediates computed once per (run, host) and reused by many tools.

- `steps/`: where steps are (markers, ProfilerStep#N, Keras batches, device step lines, or
  inferred from the trace's repeating structure), which events work for which step, and the
  step database, each step's time per event type (REFERENCE §4);
- `op_metrics`: per op self and total time on host and devices;
- `input_pipeline`: input ops and the tf.data bottleneck;
- `summary` / `advice` / `device`: several hosts, bottleneck classification, device facts.
"""

from stepscope.stats.events import CATEGORY_NAMES, EventType, classify_events
from stepscope.stats.op_metrics import OpMetrics, OpTable, build_op_metrics
from stepscope.stats.steps.breakdown import StepDb, build_step_db
from stepscope.stats.steps.markers import find_step_markers
from stepscope.stats.steps.types import SOURCES, StepMarkers
from stepscope.stats.summary import StepStats, StepSummary, summarize_steps

__all__ = [
    "CATEGORY_NAMES",
    "SOURCES",
    "EventType",
    "OpMetrics",
    "OpTable",
    "StepDb",
    "StepMarkers",
    "StepStats",
    "StepSummary",
    "build_op_metrics",
    "build_step_db",
    "classify_events",
    "find_step_markers",
    "summarize_steps",
]
