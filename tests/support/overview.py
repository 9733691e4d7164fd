"""The overview page of a run built in a test: from a run directory, or from a synthetic
trace written as one (the tests of advice that the overview tool gives, not the stats)."""

from __future__ import annotations

from pathlib import Path

from stepscope.model import open_run
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.overview_page import OverviewPage
from stepscope.tools.registry import get_tool
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace


def overview_of_run(run_dir: str | Path) -> OverviewPage:
    """The overview of the run's first host, with no cache."""
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    page = get_tool("overview_page").build(ctx)
    assert isinstance(page, OverviewPage)
    return page


def overview_of(builder: XSpaceBuilder, tmp_path: Path) -> OverviewPage:
    """The overview of ``builder``'s trace, written as a run under ``tmp_path``."""
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    write_xspace(builder.build(), run_dir / "vm.xplane.pb")
    return overview_of_run(run_dir)
