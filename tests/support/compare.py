"""Run summaries of the real fixtures, built once per session (the diff tests)."""

from __future__ import annotations

from functools import cache

from stepscope.model import open_run
from stepscope.stats.compare import RunSummary
from stepscope.tools._compare import run_summary
from stepscope.tools.context import ProfileStore, ToolContext
from tests.support.fixtures import FIXTURES


@cache
def fixture_summary(relative: str) -> RunSummary:
    run = open_run(str(FIXTURES / relative))
    return run_summary(ToolContext(run, run.host_names[0], ProfileStore(use_cache=False)))
