"""Run summaries of the real fixtures, built once per session (the diff tests)."""

from __future__ import annotations

from functools import cache

import pytest

from stepscope.model import open_run
from stepscope.stats.compare import RunDiff, RunSummary, diff_runs
from stepscope.tools._compare import run_summary
from stepscope.tools.context import ProfileStore, ToolContext
from tests.support.fixtures import FIXTURES


@cache
def path_summary(path: str, host: str | None = None) -> RunSummary:
    """The summary of the run at ``path`` (``host``, default its first; ALL_HOSTS for a
    job), uncached on disk, once."""
    run = open_run(path)
    chosen = run.host_names[0] if host is None else host
    return run_summary(ToolContext(run, chosen, ProfileStore(use_cache=False)))


def fixture_summary(relative: str) -> RunSummary:
    return path_summary(str(FIXTURES / relative))


# The core-wait tests (decisions 950, 991): the verdict's words when the candidate's extra
# wait for a CPU core is the change, and a gate the change fails
LOAD = "the machine's load, not the program"
LOAD_RULE = "step_time.mean>+10%"


def loaded_diff(base: RunSummary, loaded: RunSummary, wait_ns: int) -> RunDiff:
    """The diff of a run whose steps never waited for a core and the same run whose steps
    each waited ``wait_ns``, checked to be that and read as all of the change."""
    assert base.core_wait_ns is not None and not base.core_wait_ns.any()
    assert loaded.core_wait_ns is not None
    assert loaded.core_wait_ns.tolist() == [wait_ns] * loaded.n_steps
    diff = diff_runs(base, loaded)
    assert diff.core_wait_share == pytest.approx(1.0)
    return diff
