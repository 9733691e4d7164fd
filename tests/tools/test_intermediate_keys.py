"""Intermediates are named by typed keys, each declared once (`stepscope.tools.context.Key`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.tools import _analysis
from stepscope.tools.context import Key, ProfileStore, ToolContext
from stepscope.tools.registry import all_tools
from tests.support.fixtures import ctl_run_dir


def test_a_name_declared_by_two_modules_raises() -> None:
    Key("test.only_here", module="tests.a")
    Key("test.only_here", module="tests.a")  # the same module again (a reload) is fine
    with pytest.raises(RuntimeError, match=r"declared in tests\.a and in tests\.b"):
        Key("test.only_here", module="tests.b")
    with pytest.raises(ValueError, match="separates variants"):
        Key("test:variant")


def test_variants_keep_the_names_the_summary_cache_holds() -> None:
    assert _analysis.STEP_DB.at("marker").name == "step_db:marker"
    assert _analysis.HLO_METRICS.at(1, 2).name == "xla.hlo_metrics:1:2"
    assert _analysis.UTILIZATION.at(None).name == "utilization:None"


def test_the_store_keeps_values_by_key_name(tmp_path: Path) -> None:
    from stepscope.model import open_run

    all_tools()
    run = open_run(str(ctl_run_dir(tmp_path)))
    ctx = ToolContext(run, "h", ProfileStore(use_cache=False))
    db = _analysis.step_db(ctx, "h")
    assert ctx.store.intermediates()[(run.hosts[0].path, "step_db:auto")] is db
