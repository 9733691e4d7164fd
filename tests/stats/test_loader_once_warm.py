"""The DataLoader advice judges the steps once warm (decision 537): a torch.compile'd model's
first step compiles for seconds, and over all the steps the loader's share of the step time
fell under the advice's bar while the steps after it waited for input 27% of their time."""

from __future__ import annotations

from pathlib import Path

from stepscope.model import open_run
from stepscope.tools import _analysis as analysis
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.vocab.profiler import STARTED_ON_THREAD_STAT
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS
from tests.support.loader import plain_loader_space

NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _compiled_loop(tmp_path: Path, first_ms: int) -> ToolContext:
    """20 iterations of a 3 ms in-process batch and 7 ms of model work, the first one's
    model work ``first_ms`` long (torch.compile compiling)."""
    builder = XSpaceBuilder("host")
    plane = builder.plane("/host:CPU")
    plane.stats[STARTED_ON_THREAD_STAT] = 1
    line = plane.line(1, "python")
    t = 0
    for k in range(20):
        line.event(NEXT, t, 3 * MS)
        work = (first_ms if k == 0 else 7) * MS
        line.event("Torch-Compiled Region: 0/0", t + 3 * MS + 10_000, work - 20_000)
        t += 3 * MS + work
    run_dir = tmp_path / "plugins" / "profile" / "2026_11_30_00_00_00"
    write_xspace(builder.build(), run_dir / "host.xplane.pb")
    run = open_run(str(run_dir))
    return ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})


def test_a_compiling_first_step_does_not_hide_the_in_process_loader(tmp_path: Path) -> None:
    advice = analysis.dataloader_advice(_compiled_loop(tmp_path, first_ms=2000))
    assert advice.startswith(
        "The DataLoader makes its batches in the training process (num_workers=0): 3.00 ms a "
        "batch, while the steps once warm wait for input 30.1% of their time."
    )


def test_without_a_warm_up_all_the_steps_are_judged(tmp_path: Path) -> None:
    advice = analysis.dataloader_advice(_compiled_loop(tmp_path, first_ms=7))
    assert "while the steps wait for input 30.1% of their time" in advice


def test_captured_workers_are_judged_on_the_steps_once_warm(tmp_path: Path) -> None:
    """Workers busy 98 ms a batch, the steps doing 40 ms of other work (100 ms steps waiting
    60): 3 workers keep up. The first step kept (XProf's rule drops marked step 0) compiles
    for 3 s more: judged over all the kept steps, the workers were "busy" for 415 ms of
    other work a step."""
    space = plain_loader_space(
        step_ms=100, wait_ms=60, busy_ms=98, steps=10, cpu=(2, 0.1), cpu_ms=10, longer=(1, 3000)
    )
    run_dir = tmp_path / "plugins" / "profile" / "2026_11_30_00_00_00"
    write_xspace(space.build(), run_dir / "host.xplane.pb")
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    [found] = analysis.loader_workers(ctx, run.host_names[0])
    assert "num_workers=3 (now 2) would make a batch every 32.67 ms for the steps' 40.00 ms" in (
        found.advice
    )
