"""Comparing two runs: what `stepscope summary` saves and `stepscope diff` reports.

- `names`: match keys that survive renumbering (ProfilerStep#N, fusion.N, kernel templates);
- `run_summary`: a run's per-step samples and keyed aggregates, saved as a JSON baseline;
- `significance`: the seeded bootstrap and Holm's correction;
- `bounding`: what bounds the steps (the report's limits) in a diff, and the row behind a change;
- `diff`: metric changes, matched rows, the verdict;
- `rules`: the ``--fail-on`` expression language of the CI gate.
"""

from stepscope.stats.compare.diff import MetricChange, RowChange, RunDiff, diff_runs
from stepscope.stats.compare.names import match_key
from stepscope.stats.compare.rules import Rule, RuleResult, evaluate, metric_names, parse_rule
from stepscope.stats.compare.run_summary import (
    NamedRows,
    RunSummary,
    build_run_summary,
    looks_like_summary,
    memory_peak_bytes,
)

__all__ = [
    "MetricChange",
    "NamedRows",
    "RowChange",
    "Rule",
    "RuleResult",
    "RunDiff",
    "RunSummary",
    "build_run_summary",
    "diff_runs",
    "evaluate",
    "looks_like_summary",
    "match_key",
    "memory_peak_bytes",
    "metric_names",
    "parse_rule",
]
