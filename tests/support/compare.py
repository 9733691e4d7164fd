"""Run summaries of the real fixtures, built once per session (the diff tests)."""

from __future__ import annotations

from functools import cache

from stepscope.model import open_run
from stepscope.stats.compare import RunSummary
from stepscope.tools._compare import run_summary
from stepscope.tools.context import ProfileStore, ToolContext
from tests.support.fixtures import FIXTURES


@cache
def path_summary(path: str) -> RunSummary:
    """The summary of the run at ``path`` (its first host), uncached on disk, once."""
    run = open_run(path)
    return run_summary(ToolContext(run, run.host_names[0], ProfileStore(use_cache=False)))


def fixture_summary(relative: str) -> RunSummary:
    return path_summary(str(FIXTURES / relative))
