"""Shared intermediates computed once per (run, host) and reused by many tools.

- `steps/`: where steps are (markers, ProfilerStep#N, Keras batches, device step lines, or
  inferred from the trace's repeating structure), which events work for which step, and the
  step database, each step's time per event type (XProf's `xprof/utils/event_span.h`);
- `events`: the type of every event, which decides where its time goes;
- `op_metrics`: per op self and total time on host and devices;
- `input/`: input ops by category and the tf.data pipelines with their bottleneck;
- `gpu/`: devices, kernels, TensorCore use, device peaks, PyTorch op costs;
- `xla/`: device events tied to HLO instructions and what the XLA tools compute from them;
- `host/`: host time no traced op explains (untraced gaps, Python samples, profiler work);
- `diagnostics/`, `compare/`, `trace_index/`: findings, run comparison, the trace viewer's
  index;
- `summary` / `bound` / `advice`: several hosts, what limits the steps, the advice.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: `stepscope --help` imports this package's step sources
if TYPE_CHECKING:
    from stepscope.stats.events import CATEGORY_NAMES, EventType, classify_events
    from stepscope.stats.op_metrics import OpMetrics, OpTable, build_op_metrics
    from stepscope.stats.steps.breakdown import StepDb, build_step_db
    from stepscope.stats.steps.markers import find_step_markers
    from stepscope.stats.steps.sources import SOURCES
    from stepscope.stats.steps.types import StepMarkers
    from stepscope.stats.summary import StepStats, StepSummary, summarize_steps

# The package's names are imported on first use: importing any sub-module of stats (say the
# step source names for the CLI's choices) must not import NumPy and every analysis.
_HOMES = {
    "CATEGORY_NAMES": "events",
    "EventType": "events",
    "classify_events": "events",
    "OpMetrics": "op_metrics",
    "OpTable": "op_metrics",
    "build_op_metrics": "op_metrics",
    "StepDb": "steps.breakdown",
    "build_step_db": "steps.breakdown",
    "find_step_markers": "steps.markers",
    "SOURCES": "steps.sources",
    "StepMarkers": "steps.types",
    "StepStats": "summary",
    "StepSummary": "summary",
    "summarize_steps": "summary",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'stepscope.stats' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"stepscope.stats.{home}"), name)


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
