"""The "bound by" headline on a real V100 training trace (Kineto, rank 1 of 2): 0% input,
3.2% "All Others", 20.6% collectives, 8.8% kernel launch. XProf's first sentence calls it
"POTENTIALLY input-bound" for the 3.2%; diagnostics rate it kernel-launch-bound (high). The
headline names what bounds the step, as the diagnostics do (issue #27, item 6)."""

from __future__ import annotations

import pytest

from stepscope.model import open_run
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from tests.support.fixtures import FIXTURES

pytestmark = [pytest.mark.integration, pytest.mark.untimed]  # a 3 MB trace (decision 43)

V100 = FIXTURES / "kineto" / "v100_training_with_memory.json.gz"


def test_v100_headline_names_the_launch_bound_step_not_input() -> None:
    run = open_run(str(V100))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    overview = get_tool("overview_page").build(ctx)
    # XProf's sentence, unchanged
    assert overview.input_bound.classification == "potential"
    assert overview.input_bound.statement.startswith(
        "Your program is POTENTIALLY input-bound because 3.2% of the total step time"
    )
    limits = {limit.key: limit for limit in overview.bound_by.limits}
    headline = overview.bound_by.headline
    assert overview.bound_by.first == "dispatch", headline
    # launches while the GPU idles: at least XProf's kernel launch time, plus the eager ops'
    # host time between them
    assert limits["dispatch"].percent >= overview.breakdown_percent["kernel_launch"]
    assert limits["collectives"].percent == pytest.approx(20.6, abs=0.1)
    assert limits["compute"].percent == pytest.approx(
        overview.breakdown_percent["device_compute"], abs=0.1
    )
    assert limits["input"].percent < 5
    assert "aten::add_" in headline and "torch.compile" in headline
    # the diagnostics say the same
    found = {f.id: f for f in get_tool("diagnostics").build(ctx).findings}
    assert found["kernel_launch_bound"].severity == "high"
    assert found["dispatch_bound"].severity == "high"
