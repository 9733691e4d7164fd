"""A DataLoader with worker processes the trace does not hold (a user's own torch.profiler
run): the advice says how much faster its workers must deliver, not "use num_workers" to a
loop that has them (decision 881). Synthetic profiles built in code."""

from __future__ import annotations

from pathlib import Path

from stepscope.model import open_run
from stepscope.stats.input.worker_loader import worker_loader
from stepscope.stats.steps.breakdown import build_step_db
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS, build
from tests.support.loader import plain_loader_space

WORKERS_NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _loop(wait_ms: int, next_name: str = WORKERS_NEXT) -> XSpaceBuilder:
    """20 iterations: ``wait_ms`` in next(), then 6 ms of model work."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    line = plane.line(1, "python")
    t = 0
    for _ in range(20):
        line.event(next_name, t, wait_ms * MS)
        line.event("aten::mm", t + wait_ms * MS + 10_000, 6 * MS - 20_000)
        t += (wait_ms + 6) * MS
    return builder


def _advice(builder: XSpaceBuilder) -> str:
    profile = build(builder)
    return worker_loader(profile, build_step_db(profile))


def test_workers_slower_than_the_steps_are_told_how_much_faster() -> None:
    said = _advice(_loop(6))
    assert said.startswith(
        "The DataLoader makes its batches in worker processes, and the steps wait for them "
        "50.1% of their time (6.00 ms a batch in next()): the workers delivered a batch every "
        "12.00 ms, where the steps' 6.00 ms of other work would take one. They need about "
        "2.0x their throughput: 2.0x the num_workers where cores are idle"
    )


def test_no_advice_under_the_bar_or_for_an_in_process_loader() -> None:
    assert _advice(_loop(0)) == ""  # next() finds its batch made
    assert _advice(_loop(6, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")) == ""


def _ctx(builder: XSpaceBuilder, tmp_path: Path) -> ToolContext:
    run_dir = tmp_path / "plugins" / "profile" / "2026_12_01_00_00_00"
    write_xspace(builder.build(), run_dir / "host.xplane.pb")
    run = open_run(str(run_dir))
    return ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})


def test_the_pages_give_it_and_captured_workers_keep_their_verdict(tmp_path: Path) -> None:
    from stepscope.tools import input_pipeline_analyzer, overview_page

    ctx = _ctx(_loop(6), tmp_path / "a")
    said = analysis.dataloader_advice(ctx)
    assert "They need about 2.0x their throughput" in said
    overview = overview_page.build(ctx)
    assert said in overview.recommendation.details
    assert not any("DataLoader(num_workers=N" in d for d in overview.recommendation.details)
    assert input_pipeline_analyzer.build(ctx).recommendations[0] == said
    # workers captured (their own verdict, decision 353): not this advice
    captured = plain_loader_space(step_ms=100, wait_ms=60, busy_ms=98, steps=10, cpu=(2, 0.1))
    ctx = _ctx(captured, tmp_path / "b")
    assert analysis.loader_workers(ctx, ctx.host)
    assert analysis.dataloader_advice(ctx) == ""
